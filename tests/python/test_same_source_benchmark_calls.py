"""bench_same_source --benchmark-calls: which example programs it finds (those that call the testing module's
benchmark, for a target a Hopper GPU runs), and its driver: every spelling of a program's benchmark call reaches the
one shared timer, the program runs as __main__ with its arguments and its exit status is the process's, the library's
own timing keeps its own benchmark. Without a GPU the timer's torch is a stand-in (a package of that name first on
the path, timing with the host clock): the driver's text is the one the GPU runs use."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location(
    "same_source_benchmark_calls", os.path.join(ROOT, "benchmarks", "python", "same_source_benchmark_calls.py"))
calls = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(calls)

MAIN = '\nif __name__ == "__main__":\n    pass\n'


def _write(root, rel, text):
    path = root / "examples" / "python" / "CuTeDSL" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


CALL = "import cutlass.cute.testing as testing\ntesting.benchmark(f)\n"


def test_discovery_keeps_the_programs_that_call_benchmark_for_the_targets_a_hopper_gpu_runs(tmp_path):
    found = {
        "cute/ampere/kernel/x/module_call.py": CALL,
        "cute/ampere/kernel/x/imported_name.py": "from cutlass.cute.testing import benchmark as bm\nbm(f)\n",
        "cute/ampere/kernel/x/cutlass_testing.py": "from cutlass import testing\nx = testing.benchmark(f)\n",
        "cute/hopper/kernel/y/dotted.py": "import cutlass\ncutlass.cute.testing.benchmark(f, use_cuda_graphs=True)\n",
        "dsl_tutorials/hopper_feature.py": "# needs Hopper\n" + CALL,
    }
    left_out = {
        # for Blackwell (its folder, or tcgen05 in a tutorial's source), or distributed
        "cute/blackwell/kernel/z/gemm.py": CALL,
        "cute/blackwell/kernel/distributed/ar.py": CALL,
        "experimental/primitives/tutorial/t.py": "# tcgen05\nimport cutlass\ncutlass.testing.benchmark(f)\n",
        # no benchmark call: the word in a comment, a string, a definition, a call of another module's
        "cute/ampere/kernel/x/mentions.py": "# benchmark(f)\ns = 'testing.benchmark(f)'\ndef benchmark(g):\n"
                                            "    pass\ntorch.utils.benchmark.Timer()\n",
        "cute/ampere/kernel/x/not_python.py": "def (:\n testing.benchmark(f)\n",
    }
    for rel, text in {**found, **left_out}.items():
        _write(tmp_path, rel, text + MAIN)
    _write(tmp_path, "cute/ampere/kernel/x/no_main.py", CALL)
    assert calls.discover(str(tmp_path)) == sorted(found)


def test_print_table_geomean_counts_only_programs_both_sides_ran(capsys):
    def side(ok, *us):
        return dict(ok=ok, calls=[dict(us=u) for u in us], detail="exit 0" if ok else "AssertionError: x")
    rows = {"a.py": dict(cutedsl=side(True, 10.0, 40.0), warpweave=side(True, 5.0, 40.0)),   # ratios 2 and 1
            "b.py": dict(cutedsl=side(True, 8.0), warpweave=side(True, 16.0)),               # 0.5
            "c.py": dict(cutedsl=side(True, 1.0), warpweave=side(False, 0.1))}               # a failing side
    g = calls.print_table(rows)
    assert g == pytest.approx((2 ** 0.5 * 0.5) ** 0.5)
    out = capsys.readouterr().out
    assert "a.py[1]" in out and "FAIL: AssertionError" in out and "2 of 3 programs" in out


# A stand-in for torch's CUDA events: the host clock (no GPU here).
FAKE_TORCH = '''
import time
class _Event:
    def __init__(self, enable_timing=False):
        self.t = None
    def record(self, stream=None):
        self.t = time.perf_counter()
    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3
    def synchronize(self):
        pass
class cuda:
    Event = _Event
    synchronize = staticmethod(lambda: None)
    ExternalStream = staticmethod(lambda handle: handle)
'''

# Three spellings of the call (the module re-exported by cute, the name imported, cutlass.testing), workspaces from a
# generator or fixed, graphs asked for; a call from a module of the library's (its autotuner) is not the program's.
PROGRAM = '''
import sys
import cutlass
import cutlass.cute as cute
import cutlass.cute.testing
from cutlass.cute.testing import benchmark
from cutlass import testing

seen = []
def f(*args, **kwargs):
    seen.append((args, kwargs))

made = []
def workspace():
    made.append(1)
    return testing.JitArguments(len(made), x=2)

us = cute.testing.benchmark(f, workspace_generator=workspace, workspace_count=1, warmup_iterations=0, iterations=1)
benchmark(f, kernel_arguments=testing.JitArguments(7), use_cuda_graphs=True)
try:  # the library's own timer (it may want a GPU: whether it runs here does not matter, only that it is its own)
    exec("testing.benchmark(lambda: None)", dict(__name__="cutlass.library_module", testing=testing))
except Exception as e:
    print("the library's benchmark raised", type(e).__name__)
testing.benchmark(lambda: None)
print("PROGRAM", __name__, sys.argv[1:], len(made), sorted({a for a, _ in seen}), us > 0, flush=True)
sys.exit(int(sys.argv[1]))
'''


def _driver_and_program(tmp_path):
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    (tmp_path / "prog").mkdir()
    prog = tmp_path / "prog" / "p.py"
    prog.write_text(textwrap.dedent(PROGRAM))
    driver = tmp_path / "driver.py"
    driver.write_text(calls.BENCHMARK_CALLS_DRIVER)
    return str(driver), str(prog)


def _check(out, rc, calls_recorded, status):
    assert rc == status
    line = next(l for l in out.splitlines() if l.startswith("PROGRAM "))
    # as __main__, its arguments; 2 workspaces made (at least 2 from a generator), both used; the time returned
    assert line == f"PROGRAM __main__ ['{status}'] 2 [(1,), (2,), (7,)] True"
    assert [c["workspaces"] for c in calls_recorded] == [2, 1, 1]      # the library's own call is not recorded
    assert [c["cuda_graphs_requested"] for c in calls_recorded] == [False, True, False]
    assert all(c["us"] > 0 and len(c["rounds_us"]) == 10 for c in calls_recorded)


def test_driver_under_warpweave_reaches_the_shared_timer_and_keeps_the_exit_status(tmp_path, monkeypatch):
    driver, prog = _driver_and_program(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the stand-in torch, after the checkout's folders
    for status in (0, 3):
        res = calls.run_side(sys.executable, driver, prog, [str(status)], warpweave=True, timeout=120)
        assert res["ok"] == (status == 0), res["tail"]
        _check(res["tail"], res["rc"], res["calls"], status)


def test_driver_under_cutedsl_reaches_the_shared_timer(tmp_path):
    py = os.environ.get("WARPWEAVE_CUTEDSL_PYTHON", "")
    if not py or subprocess.run([py, "-c", "import cutlass.cute.testing"], capture_output=True).returncode:
        pytest.skip("WARPWEAVE_CUTEDSL_PYTHON names no interpreter with CuTe DSL (not a dependency of warpweave)")
    driver, prog = _driver_and_program(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)
    p = subprocess.run([py, driver, prog, "3"], cwd=os.path.dirname(prog), env=env, capture_output=True, text=True,
                       timeout=300)
    line = next(l for l in p.stdout.splitlines() if l.startswith("WW_TIMING "))
    _check(p.stdout, p.returncode, json.loads(line[len("WW_TIMING "):])["calls"], 3)


_CUTLASS = os.environ.get("WARPWEAVE_CUTLASS_DIR", "")
REAL = pytest.mark.skipif(not os.path.isdir(os.path.join(_CUTLASS, calls.ALL_ROOT)),
                          reason="WARPWEAVE_CUTLASS_DIR names no checkout of NVIDIA/cutlass (CuTe DSL's programs are "
                                 "fetched, never committed)")


@REAL
def test_discovery_in_the_example_set():
    found = calls.discover(_CUTLASS)
    for rel in ("cute/ampere/kernel/dense_gemm/sgemm.py", "cute/ampere/kernel/dense_gemm/tensorop_gemm.py",
                "cute/hopper/kernel/dense_gemm/dense_gemm.py", "dsl_tutorials/programmatic_dependent_launch.py"):
        assert rel in found
    assert not [p for p in found if "blackwell" in p or "distributed" in p]
    assert set(calls.EXTRA_ARGS) <= set(found)
    for rel, args in calls.EXTRA_ARGS.items():  # a flag the program has
        assert all(f'"{a}"' in open(os.path.join(_CUTLASS, calls.ALL_ROOT, rel)).read() for a in args), rel


@REAL
def test_a_real_programs_benchmark_call_reaches_the_shared_timer(tmp_path):
    """Compile-only: the program's first launch (its reference check skipped) is the shared timer's call."""
    py = os.environ.get("WARPWEAVE_EXAMPLES_PYTHON", sys.executable)
    if subprocess.run([py, "-c", "import torch, cuda.bindings"], capture_output=True).returncode:
        pytest.skip(f"{py} lacks torch or cuda-bindings, which CuTe DSL's examples import "
                    "(set WARPWEAVE_EXAMPLES_PYTHON)")
    driver = tmp_path / "driver.py"
    driver.write_text(calls.BENCHMARK_CALLS_DRIVER)
    rel = "cute/ampere/kernel/elementwise/elementwise_add.py"
    path = os.path.join(_CUTLASS, calls.ALL_ROOT, rel)
    cmd, env = calls.side_command(py, str(driver), [path] + calls.EXTRA_ARGS[rel] + ["--M", "256", "--N", "512",
                                                                                       "--skip_ref_check"], True)
    cmd[cmd.index("run") + 1:cmd.index("run") + 1] = ["--compile-only", "--arch", "sm_80"]
    p = subprocess.run(cmd, cwd=os.path.dirname(path), env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-2000:]
    assert f"at {driver}:" in out and "would launch" in out, out[-2000:]
    assert 'WW_TIMING {"calls": []}' in out


def test_a_side_past_its_timeout_is_ended_and_reported(tmp_path):
    driver, _ = _driver_and_program(tmp_path)
    prog = tmp_path / "prog" / "slow.py"
    prog.write_text("import time\ntime.sleep(60)\n")
    res = calls.run_side(sys.executable, driver, str(prog), [], warpweave=True, timeout=3)
    assert not res["ok"] and res["detail"] == "timed out after 3 s" and res["wall_s"] < 30


def test_rounds_alternate_the_order_and_each_call_keeps_the_median_of_its_rounds(tmp_path, monkeypatch):
    order = []
    times = {"cutedsl": iter([10.0, 14.0, 11.0]), "warpweave": iter([9.0, 30.0, 8.0])}

    def fake_side(python, driver, path, args, warpweave, timeout, root=None):
        side = "warpweave" if warpweave else "cutedsl"
        order.append(side)
        return dict(ok=True, calls=[dict(us=next(times[side]))], wall_s=1.0, detail="exit 0")

    monkeypatch.setattr(calls, "run_side", fake_side)
    rows = calls.compare(str(tmp_path), ["p.py"], "cd", "ww", timeout=10, report=lambda *a, **k: None, rounds=3)
    # the second round runs warpweave first: neither side is always the one after the other's full-load run
    assert order == ["cutedsl", "warpweave", "warpweave", "cutedsl", "cutedsl", "warpweave"]
    row = rows["p.py"]
    assert row["cutedsl"]["calls"][0]["us"] == 11.0 and row["warpweave"]["calls"][0]["us"] == 9.0
    assert row["warpweave"]["calls"][0]["us_rounds"] == [9.0, 30.0, 8.0] and row["warpweave"]["rounds"] == 3


def test_a_side_failing_in_a_round_fails_and_ends_the_rounds(tmp_path, monkeypatch):
    runs = []

    def fake_side(python, driver, path, args, warpweave, timeout, root=None):
        runs.append(warpweave)
        ok = not (warpweave and len(runs) > 2)
        return dict(ok=ok, calls=[dict(us=5.0)] if ok else [], wall_s=1.0, detail="exit 0" if ok else "Boom: x")

    monkeypatch.setattr(calls, "run_side", fake_side)
    rows = calls.compare(str(tmp_path), ["p.py"], "cd", "ww", timeout=10, report=lambda *a, **k: None, rounds=4)
    assert len(runs) == 4  # two rounds: the second's warpweave failed, so no third
    assert not rows["p.py"]["warpweave"]["ok"] and rows["p.py"]["warpweave"]["detail"] == "Boom: x"
    assert rows["p.py"]["cutedsl"]["ok"] and calls.ratios(rows["p.py"]) == []
