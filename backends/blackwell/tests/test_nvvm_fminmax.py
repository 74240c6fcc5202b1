"""cutlass._mlir.dialects.nvvm.fmax / fmin (CuTe DSL's NVVM ops, which attention's softmax calls for a row maximum
of three values at a time) on the Blackwell targets (the Ampere backend's ops, which later generations build on), without a GPU: the maximum or minimum of two or three f32 IR
values (the three-input instruction is sm_100's), with ftz and nan; bad operands refused at the user's line."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def _ptx(arch, which, three, **flags):
    from warpweave._mlir.dialects import nvvm

    op = getattr(nvvm, which)

    @cute.kernel
    def k(g: cute.Tensor):
        a, b, c = g[0], g[1], g[2]
        kw = dict(flags, c=c.ir_value()) if three else dict(flags)
        g[3] = cutlass.Float32(op(a.ir_value(), b.ir_value(), **kw))

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target(arch):
        c = cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
        assert c.cubin   # ptxas assembled it for the target
        return c.ptx


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a", "sm_110a"])
@pytest.mark.parametrize("which", ["fmax", "fmin"])
def test_two_and_three_values(arch, which):
    name = which[1:]
    assert re.search(rf"\b{name}\.f32\s+%\w+, %\w+, %\w+;", _ptx(arch, which, False))
    assert re.search(rf"\b{name}\.f32\s+%\w+, %\w+, %\w+, %\w+;", _ptx(arch, which, True))


def test_ftz_and_nan():
    assert re.search(r"\bmax\.ftz\.NaN\.f32\s+%\w+, %\w+, %\w+, %\w+;",
                     _ptx("sm_100a", "fmax", True, ftz=True, nan=True))


def test_bad_operands_are_refused_at_the_users_line():
    with pytest.raises(Exception, match=r"test_nvvm_fminmax.py:\d+: .*f32 values"):
        _ptx_of_ints()


def _ptx_of_ints():
    from warpweave._mlir.dialects import nvvm

    @cute.kernel
    def k(g: cute.Tensor):
        g[0] = cutlass.Int32(nvvm.fmax(g[0].ir_value(), g[1].ir_value()))

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_100a"):
        return cute.compile(h, from_dlpack(np.zeros(4, np.int32))).ptx
