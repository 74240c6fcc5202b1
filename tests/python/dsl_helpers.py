"""Shared helpers of the DSL tests: compiling for a target without a GPU, GPU availability, and the source line a
diagnostic should name."""
import os

import pytest

from warpweave import _core


def has_gpu() -> bool:
    try:
        return _core.driver_available() and _core.device_count() > 0
    except RuntimeError:
        return False


def has_torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def line_in(path: str, text: str) -> int:
    """The number of the first line of the file `path` that contains `text`: the line an error should point at."""
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if text in line:
                return i
    raise AssertionError(text)


requires_gpu = pytest.mark.skipif(not (has_gpu() and has_torch_cuda()),
                                  reason="needs a CUDA GPU and PyTorch with CUDA (runs on the GPU machine)")


class target:
    """Compile for `arch` without a GPU (WARPWEAVE_ARCH), restoring the environment after."""

    def __init__(self, arch):
        self.arch = arch

    def __enter__(self):
        self.prev = os.environ.get("WARPWEAVE_ARCH")
        os.environ["WARPWEAVE_ARCH"] = self.arch

    def __exit__(self, *exc):
        if self.prev is None:
            os.environ.pop("WARPWEAVE_ARCH", None)
        else:
            os.environ["WARPWEAVE_ARCH"] = self.prev
        return False
