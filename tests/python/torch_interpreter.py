"""The interpreter that tests running programs with torch use (warpweave's own environment need not have torch):
WARPWEAVE_TORCH_PYTHON, else the one scripts/cutedsl_examples.sh makes at build/cutedsl-venv."""
import functools
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@functools.lru_cache(maxsize=None)
def python_with_torch():
    """The first of the candidates that imports torch, or None."""
    for p in (os.environ.get("WARPWEAVE_TORCH_PYTHON"), os.path.join(ROOT, "build", "cutedsl-venv", "bin", "python")):
        if p and os.path.exists(p) and subprocess.run([p, "-c", "import torch"], capture_output=True).returncode == 0:
            return p
    return None


def torch_python():
    """python_with_torch(), or the calling test skipped where there is none."""
    py = python_with_torch()
    if py is None:
        pytest.skip("no Python with torch (set WARPWEAVE_TORCH_PYTHON, or build/cutedsl-venv)")
    return py
