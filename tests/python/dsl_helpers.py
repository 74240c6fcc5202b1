"""Shared helpers of the DSL tests: compiling for a target without a GPU, GPU availability, and the source line a
diagnostic should name."""
import json
import os
import re
import subprocess
import sys

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


_SASS_OPCODE = re.compile(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", re.M)


def sass_opcodes(cubin_or_sass) -> list:
    """The opcodes of a cubin's SASS (or of SASS text already disassembled), in order, guards left out."""
    sass = cubin_or_sass if isinstance(cubin_or_sass, str) else _core.disassemble_sass(cubin_or_sass)
    return _SASS_OPCODE.findall(sass)


@pytest.fixture
def fresh_compilations(monkeypatch):
    """Every compilation of the test runs the compiler (no JIT cache): the test reads what that compilation made."""
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


_EACH_TARGET = """
import json, os, sys

out = {}
for arch in sys.argv[1:]:
    os.environ["WARPWEAVE_ARCH"] = arch
    try:
        compile_program()
        out[arch] = "compiled"
    except Exception as e:
        out[arch] = [type(e).__name__, str(e), list(getattr(e, "location", None) or [])]
print(json.dumps(out))
"""


def compile_in_fresh_process(tmp_path, name: str, program: str, *archs: str):
    """Runs `program` (Python source defining compile_program()) in an interpreter of its own, which compiles it for
    each of archs in turn: a process's first trace loads only its target's backends, which some diagnostics depend
    on. Returns the script's path and, per target, "compiled" or [exception type, message, location]."""
    script = tmp_path / name
    script.write_text(program + _EACH_TARGET)  # the program's lines keep their numbers
    env = {k: v for k, v in os.environ.items() if k != "WARPWEAVE_ARCH"}
    env["WARPWEAVE_DISABLE_CACHE"] = "1"
    r = subprocess.run([sys.executable, str(script), *archs], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return script, json.loads(r.stdout.strip().splitlines()[-1])


def compile_body(body, arch="sm_80", dtype="int32", n=16):
    """The compiled function of a one-warp kernel whose body is body(x), x a tensor of n elements of the numpy
    dtype, for `arch`."""
    import numpy as np
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def k(x: cute.Tensor):
        body(x)

    @cute.jit
    def h(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(n, dtype)))


def kernel_ptx(body, arch="sm_80"):
    """The PTX of a one-warp kernel whose body is body(x), x a tensor of 16 Int32, compiled for `arch`."""
    return compile_body(body, arch).info["ptx"]
