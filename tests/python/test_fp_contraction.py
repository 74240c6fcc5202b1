"""A float multiply feeding an add compiles to one FMA, as nvcc (--fmad=true) and CuTe DSL compile kernels: QuACK's
norm backward, whose x_hat * wdy sums are multiply-adds, was 5% slower while each mul and add was written with an
explicit rounding (mul.rn.f32), which ptxas may not contract."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


@cute.kernel
def axpb(x: cute.Tensor, y: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    acc = cutlass.Float32(0.0)
    for i in cutlass.range_constexpr(4):
        acc = acc + x[tidx * 4 + i] * a   # a chain of multiply-adds, as a row reduction
    y[tidx] = acc * b + 1.0


@cute.jit
def host(x: cute.Tensor, y: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32):
    axpb(x, y, a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_multiply_adds_become_fmas(arch):
    with target(arch):
        ptx = cute.compile(host, from_dlpack(np.zeros(128, np.float32)), from_dlpack(np.zeros(32, np.float32)),
                           2.0, 3.0).ptx
    assert len(re.findall(r"\bfma\.rn\.f32\b", ptx)) >= 4, ptx
    assert not re.search(r"\b(mul|add)\.rn\.f32\b", ptx), ptx
