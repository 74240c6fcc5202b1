"""python -m warpweave run: CuTe DSL-style programs (written here, in that import style) run unchanged, as
`python prog.py` would run them, and compile-only runs compile their kernels without a GPU."""
import json
import os
import subprocess
import sys
import textwrap

import pytest


def run(tmp_path, source, *args, name="prog.py", runner_args=(), extra_env=None):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    extra_env = extra_env or {}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **extra_env}
    for name in ("WARPWEAVE_ARCH", "CUTE_DSL_ARCH"):
        if name not in extra_env:
            env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "warpweave", "run", *runner_args, str(path), *args],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_program_runs_as_main_with_its_argv(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 41\n")
    r = run(tmp_path, """
        import sys
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import from_dlpack
        import warpweave
        import helper_mod  # the program's directory leads sys.path, as with `python prog.py`

        def main():
            print("argv", sys.argv[1:], "name", __name__)
            print("same", cutlass is warpweave, cute is warpweave.cute, from_dlpack is warpweave.cute.runtime.from_dlpack)
            print("helper", helper_mod.VALUE + 1)

        if __name__ == "__main__":
            main()
        """, "--M", "3", "x")
    assert r.returncode == 0, r.stderr
    assert "argv ['--M', '3', 'x'] name __main__" in r.stdout
    assert "same True True True" in r.stdout and "helper 42" in r.stdout


def test_exit_status_and_errors_are_the_programs(tmp_path):
    r = run(tmp_path, "import sys\nimport cutlass\nsys.exit(3)\n")
    assert r.returncode == 3
    r = run(tmp_path, "import cutlass\n\ndef f():\n    raise ValueError('broken here')\n\nf()\n")
    assert r.returncode != 0 and "broken here" in r.stderr and "prog.py\", line 4" in r.stderr
    r = run(tmp_path, "import cutlass.utils.no_such_helpers\n")
    assert r.returncode != 0 and "warpweave.utils.no_such_helpers does not exist" in r.stderr


def test_missing_program_and_compile_only_without_target(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("WARPWEAVE_ARCH", None)
    env.pop("CUTE_DSL_ARCH", None)
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", str(tmp_path / "absent.py")], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 2 and "no such file" in r.stdout
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", "--compile-only", str(tmp_path / "absent.py")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "--arch" in r.stderr


def test_cute_dsl_arch_names_the_target_as_in_cute_dsl(tmp_path):
    """CUTE_DSL_ARCH, which CuTe DSL programs and their build jobs set to compile without a GPU, names the target
    where WARPWEAVE_ARCH is not set (which wins where both are), for compile-only runs too."""
    program = """
        import cutlass
        import cutlass.cute as cute
        from cutlass.base_dsl import BaseDSL

        @cute.jit
        def f(a: cutlass.Int32):
            cute.printf("{}", a)

        cute.compile(f, cutlass.Int32(1))
        print("arch", BaseDSL._get_dsl().envar.arch)
        """
    r = run(tmp_path, program, extra_env={"CUTE_DSL_ARCH": "sm_90a"})
    assert r.returncode == 0 and "arch sm_90a" in r.stdout, r.stderr
    r = run(tmp_path, program, extra_env={"CUTE_DSL_ARCH": "sm_90a", "WARPWEAVE_ARCH": "sm_80"})
    assert r.returncode == 0 and "arch sm_80" in r.stdout, r.stderr
    r = run(tmp_path, program, runner_args=("--compile-only",), extra_env={"CUTE_DSL_ARCH": "sm_100a"})
    assert r.returncode == 0 and "arch sm_100a" in r.stdout, r.stderr


HOST_PRINT = """
    import cutlass
    import cutlass.cute as cute

    @cute.jit
    def show(a: cutlass.Int32, b: cutlass.Constexpr[int]):
        print("traced", b)
        cute.printf("a={} b={} layout={}", a, b, cute.make_layout((a, b)))

    show(cutlass.Int32(8), 2)
    compiled = cute.compile(show, cutlass.Int32(8), 2)
    compiled(cutlass.Int32(5))       # Constexpr arguments may be left out of a compiled call
    compiled(cutlass.Int32(6), 2)
    """


def test_host_printf_prints_each_call_with_its_values(tmp_path):
    r = run(tmp_path, HOST_PRINT, runner_args=("--arch", "sm_80"))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines.count("traced 2") == 2  # Python's print runs while tracing: once per compilation
    assert [l for l in lines if l.startswith("a=")] == ["a=8 b=2 layout=(8,2):(1,8)", "a=5 b=2 layout=(5,2):(1,5)",
                                                        "a=6 b=2 layout=(6,2):(1,6)"]


KERNEL_PROGRAM = """
    import cutlass
    import cutlass.cute as cute
    import numpy as np
    from cutlass.cute.runtime import from_dlpack

    @cute.kernel
    def add_one(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x[tidx] = x[tidx] + 1.0

    @cute.jit
    def launch(x: cute.Tensor):
        cute.printf("launching for {}", cute.size(x))
        add_one(x).launch(grid=[1, 1, 1], block=[cute.size(x), 1, 1])

    x = from_dlpack(np.zeros(32, np.float32))
    f = cute.compile(launch, x)
    print("compiled", f.cubin is not None and len(f.cubin) > 0)
    f(x)
    print("after the call")
    """


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compile_only_stops_at_the_first_launch(tmp_path, arch):
    r = run(tmp_path, KERNEL_PROGRAM, runner_args=("--compile-only", "--arch", arch))
    assert r.returncode == 0, r.stderr
    assert "compiled True" in r.stdout
    assert "after the call" not in r.stdout and "launching for" not in r.stdout
    assert "would launch add_one" in r.stdout and "prog.py:20 " in r.stdout
    assert f"launch for {arch}: add_one" in r.stdout


def test_compile_only_a_finally_checking_the_launch_not_made_ends_at_the_launch(tmp_path):
    """A program whose `finally` checks what a launch did (an expected failure) ends at the launch not made; an
    error of its own, raised without a launch behind it, stays an error."""
    src = KERNEL_PROGRAM.replace("    f(x)\n", "    failed = False\n    try:\n        f(x)\n    finally:\n"
                                 "        assert failed\n")
    r = run(tmp_path, src, runner_args=("--compile-only", "--arch", "sm_80"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "would launch add_one" in r.stdout and "cleanup raised AssertionError" in r.stdout
    assert "after the call" not in r.stdout
    r = run(tmp_path, src.replace("    failed = False\n", "    failed = False\n    assert failed, 'mine'\n"),
            runner_args=("--compile-only", "--arch", "sm_80"))
    assert r.returncode != 0 and "AssertionError: mine" in r.stderr


def test_compile_only_skip_goes_on_and_runs_host_prints(tmp_path):
    r = run(tmp_path, KERNEL_PROGRAM, runner_args=("--compile-only", "--arch", "sm_80", "--on-launch", "skip"))
    assert r.returncode == 0, r.stderr
    assert "launching for 32" in r.stdout and "after the call" in r.stdout
    assert "1 compiled function(s), 1 launching call(s) not made" in r.stdout


def test_compile_only_makes_torch_cuda_tensors_in_host_memory(tmp_path):
    pytest.importorskip("torch")
    r = run(tmp_path, """
        import torch
        import cutlass.cute as cute
        from cutlass.cute.runtime import from_dlpack
        assert torch.cuda.is_available()
        a = torch.randn(4, 8, device=torch.device("cuda"))
        b = torch.zeros(4, 8).cuda()
        c = a.to("cuda:0")
        print(a.device, b.device, c.device, torch.cuda.current_stream().cuda_stream)
        """, runner_args=("--compile-only", "--arch", "sm_80"))
    assert r.returncode == 0, r.stderr
    assert "cpu cpu cpu 0" in r.stdout


def test_compile_only_torch_graphs_and_events_time_nothing(tmp_path):
    pytest.importorskip("torch")
    r = run(tmp_path, """
        import math
        import torch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            pass
        g.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()
        torch.cuda.synchronize()
        print("elapsed nan", math.isnan(start.elapsed_time(end)))
        """, runner_args=("--compile-only", "--arch", "sm_80"))
    assert r.returncode == 0, r.stderr
    assert "elapsed nan True" in r.stdout


BENCHMARKED = KERNEL_PROGRAM.split("f = cute.compile")[0] + """
    import math
    f = cute.compile(launch, x)
    t = cute.testing.benchmark(f, kernel_arguments=cute.testing.JitArguments(x), warmup_iterations=2, iterations=5)
    print("time is nan", math.isnan(t))
    """


def test_compile_only_benchmark_reaches_the_launches_it_would_time(tmp_path):
    # One call: its launch is reached (recorded as not made, or the program ends there), nothing is timed.
    r = run(tmp_path, BENCHMARKED, runner_args=("--compile-only", "--arch", "sm_80", "--on-launch", "skip"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("would launch add_one; not made") == 1 and "time is nan True" in r.stdout
    assert "1 launching call(s) not made" in r.stdout
    r = run(tmp_path, BENCHMARKED, runner_args=("--compile-only", "--arch", "sm_80"))
    assert r.returncode == 0, r.stderr
    assert "(the program ends here)" in r.stdout and "time is nan" not in r.stdout


def notebook(tmp_path, cells):
    nb = {"cells": [{"cell_type": "markdown", "source": ["# a notebook\n"]}] +
          [{"cell_type": "code", "source": textwrap.dedent(c).splitlines(True), "outputs": []} for c in cells],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    p = tmp_path / "nb.ipynb"
    p.write_text(json.dumps(nb))
    return p


def test_notebook_cells_run_in_order_in_one_namespace(tmp_path):
    notebook(tmp_path, ["import cutlass\nimport cutlass.cute as cute\n%matplotlib inline\n",
                        """
                        @cute.jit
                        def show(n: cutlass.Int32):
                            cute.printf("n = {}", n)
                        """,
                        "show(cutlass.Int32(7))\nprint(__name__)\n",
                        "raise RuntimeError('cell three fails')\n",
                        "print('after the failing cell')\n"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "WARPWEAVE_ARCH": "sm_80"}
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", str(tmp_path / "nb.ipynb")], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 1
    assert "n = 7\n__main__" in r.stdout and "skipped the IPython line '%matplotlib inline'" in r.stdout
    assert "cell three fails" in r.stderr and "nb.ipynb#cell4" in r.stderr  # the failing cell's own name
    assert "after the failing cell" not in r.stdout
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", "--keep-going", str(tmp_path / "nb.ipynb")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1 and "after the failing cell" in r.stdout
    assert "5 code cell(s) run, 4 without error; failed: cell 4" in r.stdout


def test_notebook_cells_keep_their_own_future_flags(tmp_path):
    # Annotations are evaluated (the runner's own `from __future__ import annotations` is not inherited): cute.struct
    # fields are annotations, and one sized by a local variable must see its value.
    notebook(tmp_path, ["""
        def sized(n):
            class S:
                field: tuple[int, n]
            return S.__annotations__["field"]
        print(sized(4))
        """])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", str(tmp_path / "nb.ipynb")], capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "tuple[int, 4]" in r.stdout


def test_notebook_compile_only_skips_launches_and_goes_on(tmp_path):
    notebook(tmp_path, ["""
        import cutlass
        import cutlass.cute as cute

        @cute.kernel
        def k():
            cute.printf("device")

        @cute.jit
        def hello():
            cute.printf("host")
            k().launch(grid=(1, 1, 1), block=(32, 1, 1))
        """,
        "cutlass.cuda.initialize_cuda_context()\nhello()\nc = cute.compile[cute.KeepPTX](hello)\nc()\n",
        "print('last cell')\n"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "WARPWEAVE_DUMP_DIR": str(tmp_path / "dump")}
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", "--compile-only", "--arch", "sm_90a",
                        str(tmp_path / "nb.ipynb")], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("host\n") == 2 and "last cell" in r.stdout
    assert r.stdout.count("would launch k; not made") == 2
    assert any(f.endswith(".ptx") for f in os.listdir(tmp_path / "dump"))  # KeepPTX kept it
    # --on-launch stop ends the cell at its first launch (the rest would use results not computed); the next runs.
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", "--compile-only", "--arch", "sm_90a",
                        "--on-launch", "stop", str(tmp_path / "nb.ipynb")], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("host\n") == 0 and "last cell" in r.stdout  # the host print comes with the launch
    assert r.stdout.count("would launch k; not made (the rest of the cell is not run)") == 1
    assert "3 code cell(s) run, 3 without error (1 ended at a launch not made)" in r.stdout


def test_notebook_checks_after_launches_not_made_are_reported_apart(tmp_path):
    notebook(tmp_path, ["""
        import numpy as np
        import cutlass
        import cutlass.cute as cute
        from cutlass.cute.runtime import from_dlpack

        @cute.kernel
        def fill(x: cute.Tensor):
            x[cute.arch.thread_idx()[0]] = 1.0

        @cute.jit
        def run(x: cute.Tensor):
            fill(x).launch(grid=(1, 1, 1), block=(8, 1, 1))
        """,
        "x = np.zeros(8, np.float32)\nrun(from_dlpack(x))\nassert (x == 1).all(), 'results differ'\n",
        "assert False, 'a check that no launch precedes'\n",
        "run(from_dlpack(x))\nundefined_name\n",
        "print('last cell')\n"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", "--compile-only", "--arch", "sm_80", "--keep-going",
                        str(tmp_path / "nb.ipynb")], capture_output=True, text=True, env=env, timeout=300)
    # Only a failed check (AssertionError) after a launch the cell did not make is set apart; the other failures
    # (a check with no launch before it, any other error after a launch) are errors.
    assert r.returncode == 1
    assert "cell 2: a check failed after a launch not made" in r.stdout and "results differ" in r.stdout
    assert ("5 code cell(s) run, 2 without error; checks after launches not made: cell 2; failed: cell 3, cell 4"
            in r.stdout)
    assert "last cell" in r.stdout
