"""cute.experimental.iket (in-kernel event tracing's named ranges) for sm_100a: a kernel with nested ranges, indexed
by compile-time and loop integers, compiles to the code it has without them (no recording outside a tracing run).
The markers are the frontend's (tests/python/test_iket_markers.py checks their arguments)."""
from __future__ import annotations

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")


def _compile(kernel):
    @cute.jit
    def host(x: cute.Tensor):
        kernel(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(32, np.float32)))


@cute.kernel
def plain(x: cute.Tensor):
    # the loop written in the kernel, as in `traced`: a rolled loop (unroll=1) in both
    tidx, _, _ = cute.arch.thread_idx()
    for k in cutlass.range(4, unroll=1):
        x[tidx] = x[tidx] + 1.0


@cute.kernel
def traced(x: cute.Tensor):
    cute.experimental.iket.range_push("kernel")
    tidx, _, _ = cute.arch.thread_idx()
    for k in cutlass.range(4, unroll=1):
        cute.experimental.iket.range_push("step", k)
        cute.experimental.iket.range_push("inner", 3)
        x[tidx] = x[tidx] + 1.0
        cute.experimental.iket.range_pop()
        cute.experimental.iket.range_pop()
    cute.experimental.iket.range_pop()


def _instructions(ptx):
    return [l.strip() for l in ptx.splitlines() if l.strip() and not l.strip().startswith(("//", ".visible",
                                                                                         ".entry", ".globl"))
            and "plain" not in l and "traced" not in l]


def test_ranges_compile_to_the_kernel_without_them():
    a, b = _compile(plain), _compile(traced)
    assert _instructions(a.ptx) == _instructions(b.ptx)
