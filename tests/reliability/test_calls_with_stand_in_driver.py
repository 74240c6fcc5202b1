"""Calls that launch, on a machine without a GPU: the stand-in CUDA driver (tests/python/data/mock_libcuda.c) takes
the launches, so the general call path, the generated fast path and their refusals run as on a GPU. A host
division by a runtime argument is checked on every path: a zero divisor is refused at the division's line, and the
fast path (which checks it) is kept, the native one (which would not) is not built."""
import os
import subprocess
import sys

import pytest

import aot_helpers as aot

PROGRAM = '''
import os, sys
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


@cute.kernel
def k(a: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    a[tidx] = n


@cute.jit
def host(a: cute.Tensor, d: cutlass.Int32):
    k(a, 1024 // d).launch(grid=[1, 1, 1], block=[32, 1, 1])  # DIV


@cute.jit
def grid_by_extents(a: cute.Tensor, b: cute.Tensor):
    k(a, 1).launch(grid=[a.shape[0] // (b.shape[0] - 4), 1, 1], block=[32, 1, 1])  # GRID


def line(marker):
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(marker))


def refused(call, marker, text):
    try:
        call()
    except cutlass.DSLError as e:
        assert e.location == (__file__, line(marker)), (e.location, str(e))
        assert text in str(e), str(e)
        return
    raise AssertionError("accepted")


a = from_dlpack(np.zeros(32, np.int32))
c = cute.compile(host, a, cutlass.Int32(4))
c(a, cutlass.Int32(4))  # the general path, which then builds the fast one
assert c._fast and c._native is not None  # both fast paths check the divisor; a zero one goes the Python way
c(a, cutlass.Int32(-3))
for call in (lambda: c(a, cutlass.Int32(0)), lambda: host(a, cutlass.Int32(0))):
    refused(call, "# DIV", "integer division by zero")
dyn = lambda n: from_dlpack(np.zeros(n, np.int32)).mark_layout_dynamic()
g = cute.compile(grid_by_extents, dyn(32), dyn(8))
g(dyn(32), dyn(8))
g(dyn(32), dyn(8))
for _ in range(2):
    refused(lambda: g(dyn(32), dyn(4)), "# GRID", "has no grid for these arguments: division by zero")
print("ALL HELD")
'''


@pytest.mark.stand_in_driver
@pytest.mark.skipif(not aot.cc(), reason="needs a C compiler for the stand-in driver")
def test_host_divisions_are_checked_on_every_call_path(tmp_path):
    mock = aot.build_mock_driver(str(tmp_path))
    prog = tmp_path / "calls.py"
    prog.write_text(PROGRAM)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WARPWEAVE_ARCH="sm_80",
               WARPWEAVE_DISABLE_CACHE="1")
    r = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=300,
                       cwd=str(tmp_path))
    assert r.returncode == 0 and "ALL HELD" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
