"""cutlass.range(..., unroll=N) and unroll_full reach the compiler as the loop's unrolling (an LLVM loop annotation
on the loop, as CuTe DSL writes it): unroll=1 keeps one copy of the body (nothing unrolled, nothing peeled: QuACK's
sm_90 GEMM mainloop had one extra k-block's warpgroup MMAs when the hint was dropped), unroll=N writes N copies in
the unrolled loop, no hint leaves the compiler's heuristics. A count that is not a non-negative integer known
while tracing is refused at the user's line. Checked on the PTX, without a GPU."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def horner_kernel(unroll, static_trips=None):
    """A chain of multiply-adds over a loop: each copy of the body in the PTX is one fma."""
    @cute.kernel
    def kern(g: cute.Tensor, n: cutlass.Int32):
        acc = cutlass.Float32(0.0)
        x = cutlass.Float32(1.5)
        for i in cutlass.range(static_trips if static_trips is not None else n, unroll=unroll):
            acc = acc * x + g[i]
        g[0] = acc

    @cute.jit
    def host(g: cute.Tensor, n: cutlass.Int32):
        kern(g, n).launch(grid=[1, 1, 1], block=[32, 1, 1])
    return host


def compile(host):
    with target("sm_90a"):
        return cute.compile(host, from_dlpack(np.zeros(64, np.float32)), 5)


def compile_fmas(host):
    c = compile(host)
    return c, len(re.findall(r"\bfma\.rn\.f32\b", c.ptx))


def test_unroll_1_keeps_one_copy_of_a_runtime_loops_body():
    c, fmas = compile_fmas(horner_kernel(1))
    assert fmas == 1, c.ptx
    assert "unroll = <disable = true>" in c.ir


def test_unroll_1_keeps_a_static_loop_rolled():
    # 16 known trips: without the hint the compiler unrolls it completely (the first trip folds: 0 * x + g[0])
    _, default = compile_fmas(horner_kernel(None, static_trips=16))
    _, rolled = compile_fmas(horner_kernel(1, static_trips=16))
    assert default == 15 and rolled == 1


@pytest.mark.parametrize("n", [2, 4, 8])
def test_unroll_n_writes_n_copies_of_the_body(n):
    c, fmas = compile_fmas(horner_kernel(n))
    # n copies in the unrolled loop, at most n more for the trips left over
    assert n <= fmas <= 2 * n, (n, fmas)
    assert f"unroll = <count = {n} : i32>" in c.ir


def test_unroll_full_and_no_hint():
    none = compile(horner_kernel(None)).ir
    assert "loop_annotation" not in none
    assert compile(horner_kernel(0)).ir == none  # CuTe DSL's count 0: the compiler's choice, as with no hint

    @cute.kernel
    def kern(g: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.range(n, unroll_full=True):
            g[i] = g[i] + 1.0

    @cute.jit
    def host(g: cute.Tensor, n: cutlass.Int32):
        kern(g, n).launch(grid=[1, 1, 1], block=[32, 1, 1])
    assert "unroll = <full = true>" in compile(host).ir


def test_for_generate_takes_the_hint():
    @cute.kernel
    def kern(g: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.for_generate(0, n, 1, unroll=1):
            g[i] = g[i] * 1.5 + 1.0

    @cute.jit
    def host(g: cute.Tensor, n: cutlass.Int32):
        kern(g, n).launch(grid=[1, 1, 1], block=[32, 1, 1])
    c, fmas = compile_fmas(host)
    assert fmas == 1 and "unroll = <disable = true>" in c.ir, c.ptx


@pytest.mark.parametrize("bad, message", [(-1, "cannot be negative"), (1.5, "integer known while tracing"),
                                          (True, "integer known while tracing")])
def test_a_bad_count_is_refused_at_the_users_line(bad, message):
    with pytest.raises(DSLTypeError, match=message) as e:
        compile(horner_kernel(bad))
    assert "test_loop_unroll_hints.py:25" in str(e.value)


def test_a_runtime_count_is_refused():
    @cute.kernel
    def kern(g: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.range(n, unroll=n):
            g[i] = g[i] + 1.0

    @cute.jit
    def host(g: cute.Tensor, n: cutlass.Int32):
        kern(g, n).launch(grid=[1, 1, 1], block=[32, 1, 1])
    with pytest.raises(DSLTypeError, match="integer known while tracing") as e:
        compile(host)
    assert "test_loop_unroll_hints.py:" in str(e.value)


def test_range_constexpr_takes_the_unroll_hints_of_range():
    # FlashAttention writes cutlass.range_constexpr(n, unroll_full=True): a loop unrolled in Python already is
    @cute.kernel
    def kern(g: cute.Tensor):
        acc = cutlass.Float32(0.0)
        for i in cutlass.range_constexpr(4, unroll_full=True):
            acc = acc + g[i]
        for i in cutlass.range_constexpr(2, unroll=2):
            acc = acc + g[4 + i]
        g[0] = acc

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(host, from_dlpack(np.zeros(8, np.float32)))
    assert '"scf.for"' not in c.ir and c.ir.count("llvm.fadd") + c.ir.count("arith.addf") == 6
