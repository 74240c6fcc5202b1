"""`python -m warpweave alias --install`: `import cutlass` gives warpweave in every process of an environment.

Checked in a fresh virtual environment (no pip: its site-packages reaches this checkout and the test environment's
packages through a plain path .pth), through subprocesses: the interpreter itself, a multiprocessing spawn child
(a new interpreter that is not told anything by its parent's sys.meta_path) and a pytest run with two xdist
workers where xdist is installed. --uninstall takes the alias away again.
"""
import os
import subprocess
import sys
import sysconfig
import textwrap
import venv

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("aliasenv")
    venv.EnvBuilder(with_pip=False).create(str(d))
    py = str(d / "bin" / "python")
    site_dir = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
    paths = [os.path.join(ROOT, p) for p in ("frontend_python", "conformance", "pipelines")]
    paths.append(sysconfig.get_paths()["purelib"])  # numpy, protobuf, pytest of the environment running the tests
    with open(os.path.join(site_dir, "test_deps.pth"), "w") as f:
        f.write("\n".join(paths) + "\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    return py, site_dir, clean


def _run(env, *args, cwd=None):
    py, _, clean = env
    return subprocess.run([py, *args], capture_output=True, text=True, env=clean, cwd=cwd, timeout=300)


PROGRAM = textwrap.dedent("""
    import multiprocessing as mp
    import sys

    def child(q):
        import cutlass.cute as cute
        import warpweave.cute
        q.put((cute is warpweave.cute, "warpweave" in sys.modules))

    if __name__ == "__main__":
        # at start-up the hook is in place and warpweave itself is not loaded yet (the .pth line defers it)
        started_light = "warpweave.alias_hook" in sys.modules and "warpweave._core" not in sys.modules
        import cutlass
        import warpweave
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        same_in_child, _ = q.get(timeout=240)
        p.join(240)
        print("RESULT", started_light, cutlass is warpweave, same_in_child, p.exitcode)
""")


def test_alias_install_reaches_subprocesses_and_spawn_children(env, tmp_path):
    py, site_dir, _ = env
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)

    before = _run(env, str(prog))
    assert "No module named 'cutlass'" in before.stderr, before.stderr[-2000:]

    r = _run(env, "-m", "warpweave", "alias", "--install")
    assert r.returncode == 0, r.stderr
    pth = os.path.join(site_dir, "warpweave_cutlass_alias.pth")
    assert os.path.exists(pth) and pth in r.stdout

    r = _run(env, "-m", "warpweave", "alias")
    assert r.stdout.startswith("installed:"), r.stdout

    r = _run(env, str(prog))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "RESULT True True True 0" in r.stdout, r.stdout + r.stderr[-2000:]

    # installing twice leaves one hook (the line finds the module already loaded on a second .pth read)
    r = _run(env, "-c", "import site, sys; site.addsitedir(sys.argv[1]); from warpweave import alias_hook; "
                        "import importlib.abc; "
                        "print(sum(isinstance(f, alias_hook.CutlassAliasFinder) for f in sys.meta_path))", site_dir)
    assert r.stdout.strip() == "1", r.stdout + r.stderr

    r = _run(env, "-m", "warpweave", "alias", "--uninstall")
    assert r.returncode == 0 and "removed" in r.stdout
    assert not os.path.exists(pth)
    after = _run(env, str(prog))
    assert "No module named 'cutlass'" in after.stderr, after.stderr[-2000:]


def test_alias_in_pytest_xdist_workers(env, tmp_path):
    pytest.importorskip("xdist", reason="pytest-xdist is not installed in the test environment")
    _run(env, "-m", "warpweave", "alias", "--install")
    try:
        t = tmp_path / "test_uses_cutlass.py"
        t.write_text("import cutlass.cute as cute\n\n"
                     "def test_a():\n    assert cute.size(cute.make_layout((4, 8))) == 32\n\n"
                     "def test_b():\n    import os; assert os.environ.get('PYTEST_XDIST_WORKER')\n")
        r = _run(env, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", str(t), cwd=str(tmp_path))
        assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
    finally:
        _run(env, "-m", "warpweave", "alias", "--uninstall")


def test_alias_site_dir_option_and_missing_warpweave(env, tmp_path):
    """--site-dir writes where it is told; a .pth line whose warpweave is gone does nothing (no start-up error)."""
    py, _, clean = env
    d = tmp_path / "site"
    r = _run(env, "-m", "warpweave", "alias", "--install", "--site-dir", str(d))
    assert r.returncode == 0 and (d / "warpweave_cutlass_alias.pth").exists()
    base = getattr(sys, "_base_executable", sys.executable)
    # an interpreter without this checkout on its path reads the line: nothing installed, nothing printed
    r = subprocess.run([base, "-S", "-c", "import site, sys; site.addsitedir(sys.argv[1]); "
                        "print('warpweave.alias_hook' in sys.modules)", str(d)],
                       capture_output=True, text=True, env=clean, timeout=60)
    assert r.stdout.strip() == "False" and r.stderr == "", r.stdout + r.stderr
    r = _run(env, "-m", "warpweave", "alias", "--uninstall", "--site-dir", str(d))
    assert r.returncode == 0 and not (d / "warpweave_cutlass_alias.pth").exists()
