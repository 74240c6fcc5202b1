"""bench_same_source --compile-time: its driver times the program's compile call alone and, under warpweave, reports
the stages of what the call compiled; the stages are parts of the timed call, and the table puts each checkout
measured beside CuTe DSL's figure with their ratios (of the medians, and the median of the rounds' ratios)."""
import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("bench_same_source",
                                               os.path.join(ROOT, "benchmarks", "python", "bench_same_source.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

PROGRAM = '''
import cutlass
import cutlass.cute as cute


@cute.kernel
def scale_kernel(x: cute.Tensor, y: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    y[t] = x[t] * 2.0


@cute.jit
def scale(x: cute.Tensor, y: cute.Tensor):
    scale_kernel(x, y).launch(grid=[1, 1, 1], block=[32, 1, 1])
'''

COMPILE = '''
import cutlass, cutlass.cute as cute
from cutlass.cute.runtime import make_fake_tensor
t = lambda: make_fake_tensor(cutlass.Float32, (32,), stride=(1,), assumed_align=16)
cute.compile(mod.scale, t(), t())
'''


def test_the_driver_times_the_compile_call_and_reports_its_stages(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "scale.py").write_text(PROGRAM)
    prog = dict(path="examples/scale.py", cd_compile=COMPILE)
    driver = tmp_path / "driver.py"
    driver.write_text(bench._compile_driver(str(tmp_path), prog))
    env = bench.ww_env({"WARPWEAVE_DISABLE_CACHE": "1"})
    p = subprocess.run([sys.executable, "-m", "warpweave", "run", "--compile-only", "--arch", "sm_80", str(driver)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    wall, cpu = map(float, next(l for l in lines if l.startswith("WW_COMPILE_TIME ")).split()[1:])
    stages = dict((kv.split("=")[0], float(kv.split("=")[1]))
                  for kv in next(l for l in lines if l.startswith("WW_COMPILE_STAGES ")).split()[1:])
    assert set(stages) == set(bench.STAGES)
    assert all(v > 0 for v in stages.values()), stages
    assert wall > 0 and cpu > 0
    assert sum(stages.values()) <= wall * 1.01   # the stages run inside the timed call, one after another


def test_the_table_gives_each_checkout_its_ratios_to_cutedsl(capsys):
    stages = {s: 1.0 for s in bench.STAGES}
    times = {"prog": {"cutedsl": [(100.0, 80.0, {}), (300.0, 90.0, {}), (200.0, 85.0, {})],
                      "warpweave:before": [(150.0, 60.0, stages)] * 3,
                      "warpweave:after": [(50.0, 40.0, dict(stages, trace=7.0))] * 3}}
    bench.print_compile_times(times)
    rows = capsys.readouterr().out.splitlines()
    before = next(r for r in rows if "warpweave:before" in r).split()
    after = next(r for r in rows if "warpweave:after" in r).split()
    assert before[1:5] == ["150", "60", "0.75", "0.71"]    # medians: CuTe DSL 200 ms wall, 85 ms CPU
    assert after[1:5] == ["50", "40", "0.25", "0.47"]
    assert before[5] == "0.75" and after[5] == "0.25"        # round by round: 1.5, 0.5, 0.75 and 0.5, 1/6, 0.25
    assert after[6] == "7" and before[6] == "1"              # the stages' columns start with the trace
