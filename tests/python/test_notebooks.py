"""The notebooks of frontend_python/notebooks run from top to bottom without an error. Without a GPU they compile
their kernels for sm_80 and leave the launches out; with one (and PyTorch) they launch them and check the results
against float64 references, so the GPU machine runs these tests too.

Two ways: in a Jupyter kernel through nbclient (a fresh kernel per notebook, in the notebook's folder, as CI
installs it from requirements.txt), and as a program through `python -m warpweave run nb.ipynb` (the cells in
order in one namespace), which needs no Jupyter packages: where nbclient is missing (the GPU machine's Python),
the first way runs the notebook the second way, so neither is skipped."""
import glob
import importlib.util
import os
import subprocess
import sys
import time

import pytest

NOTEBOOKS = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend_python",
                                         "notebooks"))
PATHS = sorted(glob.glob(os.path.join(NOTEBOOKS, "*.ipynb")))
IDS = [os.path.basename(p) for p in PATHS]
HAVE_JUPYTER = all(importlib.util.find_spec(m) is not None for m in ("nbclient", "nbformat", "ipykernel"))
TIME_LIMIT_S = 300


def _env(tmp_path):
    env = dict(os.environ)
    env.setdefault("WARPWEAVE_CACHE_DIR", str(tmp_path / "cache"))  # cold compilations, the user's cache untouched
    return env


def _run_as_program(path, tmp_path):
    start = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "warpweave", "run", path], cwd=NOTEBOOKS, env=_env(tmp_path),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{os.path.basename(path)} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"
    assert "without error" in r.stdout
    return time.monotonic() - start


def test_the_notebooks_are_there():
    assert {"layouts.ipynb", "tensors.ipynb", "elementwise_add.ipynb", "gemm.ipynb"} <= set(IDS)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_notebook_runs_in_a_kernel(path, tmp_path):
    if not HAVE_JUPYTER:
        elapsed = _run_as_program(path, tmp_path)
        assert elapsed < TIME_LIMIT_S
        return
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    # Stored without outputs: what a reader sees is what the notebook computes, not a stale run.
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path} holds outputs"
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=False,
                            resources={"metadata": {"path": NOTEBOOKS}})
    start = time.monotonic()
    client.execute(env=_env(tmp_path))  # raises CellExecutionError, naming the cell, at the first error
    elapsed = time.monotonic() - start
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    # The pictures the notebook shows are SVG documents, and each notebook shows some.
    svgs = [o.data["image/svg+xml"] for o in outputs
            if o.output_type in ("display_data", "execute_result") and "image/svg+xml" in o.data]
    assert svgs, f"{os.path.basename(path)} shows no picture"
    assert all(s.lstrip().startswith("<svg") for s in svgs)
    assert elapsed < TIME_LIMIT_S, f"{os.path.basename(path)} took {elapsed:.0f} s"


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_notebook_runs_as_a_program(path, tmp_path):
    assert _run_as_program(path, tmp_path) < TIME_LIMIT_S
