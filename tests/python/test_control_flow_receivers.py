"""Method receivers of a dynamic region (objects it may change in place) that are not defined before it: one made
under a false const_expr and used under the same condition inside a run-time loop is simply not carried; one that
is really used there without a definition still names the variable and the user's line."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def make(flag):
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        if cutlass.const_expr(flag):
            helper = cute.make_layout(4)
        acc = cutlass.Int32(0)
        for i in cutlass.range(n):
            if cutlass.const_expr(flag):
                acc = acc + cute.size(helper)
            acc = acc + i
        g[0] = acc

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


@pytest.mark.parametrize("flag", [False, True])
def test_receiver_under_a_static_condition(flag):
    with target("sm_80"):
        ptx = cute.compile(make(flag), from_dlpack(np.zeros(4, np.int32)), 3).info["ptx"]
    assert "st.global" in ptx


def test_receiver_used_without_a_definition_is_named():
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.range(n):
            if i > 0:
                state.advance()  # noqa: F821 - defined only inside the loop, on a later line
            state = cute.make_layout(4)
        g[0] = n

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"), pytest.raises(Exception, match=r"test_control_flow_receivers\.py:\d+"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)), 3)
