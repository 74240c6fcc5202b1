"""cute.arch.mul_hi (the high half of a 32-bit product, as magic-number division uses it: QuACK's FastDivmod) and
cutlass.select_ (cond ? a : b over DSL numbers)."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def _ptx(body):
    @cute.kernel
    def k(g: cute.Tensor, a: cutlass.Uint32, b: cutlass.Uint32, c: cutlass.Int32):
        body(g, a, b, c)

    @cute.jit
    def h(x, a: cutlass.Uint32, b: cutlass.Uint32, c: cutlass.Int32):
        k(x, a, b, c).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        return cute.compile(h, from_dlpack(np.zeros(4, np.int32)), 1, 2, 3).info["ptx"]


def test_mul_hi_is_the_high_half_unsigned_or_signed():
    seen = {}

    def body(g, a, b, c):
        u = cute.arch.mul_hi(a, b)
        s = cute.arch.mul_hi(c, c)
        seen.update(u=type(u), s=type(s))
        g[0] = cutlass.Int32(u)
        g[1] = cutlass.select_(c > 2, s, cutlass.Int32(-1))

    ptx = _ptx(body)
    assert seen == dict(u=cutlass.Uint32, s=cutlass.Int32)
    assert "mul.hi.u32" in ptx and "mul.hi.s32" in ptx
    assert "selp.b32" in ptx or "selp.s32" in ptx or "max.s32" in ptx


def test_mul_hi_refuses_other_widths_at_the_users_line():
    def body(g, a, b, c):
        cute.arch.mul_hi(cutlass.Int64(c), c)  # the user's line

    line = body.__code__.co_firstlineno + 1
    with pytest.raises(Exception, match="32-bit integers, got Int64") as info:
        _ptx(body)
    assert f"test_arch_mul_hi_select.py:{line}" in str(info.value)


def test_select_with_a_static_condition_picks_in_python():
    assert cutlass.select_(True, 1, 2) == 1 and cutlass.select_(False, 1, 2) == 2
