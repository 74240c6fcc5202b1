"""A chained comparison (`a < b < c`) in a @cute.jit / @cute.kernel function means what Python means,
`a < b and b < c` with b evaluated once: on runtime values it is the two comparisons combined (not a Python truth
value asked of the first one, which a runtime Boolean has not), on static values Python's own result, and an
operand after a comparison already false is not evaluated."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_compact_tensor

from dsl_helpers import target


@cute.jit
def chained_and_spelled_out(x: cutlass.Int32, y: cutlass.Int32):
    r = cutlass.Int32(0)
    if 0 < x % 4 < y:
        r = cutlass.Int32(1)
    s = cutlass.Int32(0)
    if 0 < x % 4 and x % 4 < y:
        s = cutlass.Int32(1)
    cute.printf("chained=%d and=%d\n", r, s)


def test_a_chain_of_runtime_values_is_the_conjunction(capsys):
    with target("sm_90a"):
        c = cute.compile(chained_and_spelled_out, cutlass.Int32(3), cutlass.Int32(5))
    cases = [(3, 5), (3, 2), (4, 5), (1, 2), (6, 1)]
    for x, y in cases:
        c(cutlass.Int32(x), cutlass.Int32(y))
    out = capsys.readouterr().out.split()
    want = [int(0 < x % 4 < y) for x, y in cases]
    assert out[0::2] == [f"chained={w}" for w in want] and out[1::2] == [f"and={w}" for w in want], out


CALLS = []


def middle(v):
    CALLS.append(v)
    return v


@cute.jit
def static_chains(x: cutlass.Constexpr):
    assert (1 < x <= 3) == (1 < x and x <= 3)
    assert (0 <= middle(x) < 10 != 11) is True
    assert (x > 100 < middle(-1)) is False  # the right operand of a settled chain is not evaluated
    assert (1 in (1, 2) != False) is True  # noqa: E712 - membership in a chain


@pytest.mark.parametrize("x", [0, 2, 3, 7])
def test_a_chain_of_static_values_is_pythons(x):
    CALLS.clear()
    with target("sm_90a"):
        cute.compile(static_chains, x)
    assert CALLS == [x]


@cute.kernel
def clamp_kernel(t: cute.Tensor, lo: cutlass.Int32, hi: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    if lo <= tidx < hi:
        t[tidx] = cutlass.Int32(1)


@cute.jit
def clamp(t: cute.Tensor, lo: cutlass.Int32, hi: cutlass.Int32):
    clamp_kernel(t, lo, hi).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_chain_in_a_kernel_compiles_to_both_comparisons():
    with target("sm_90a"):
        c = cute.compile(clamp, make_fake_compact_tensor(cutlass.Int32, (32,)), cutlass.Int32(2), cutlass.Int32(9))
    ptx = c.ptx
    assert ptx.count("setp.") >= 2, ptx
