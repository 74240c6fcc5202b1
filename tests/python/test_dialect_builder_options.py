"""The op builders' optional keywords, as the generated MLIR bindings have them: `results=` on arith.cmpi / cmpf /
select, the binary ops and llvm.insertvalue (the stated result types; ones the op does not have are refused),
`fastmath=` on arith.cmpf / extf / truncf and the float binary ops (arith.FastMathFlags, combinable with |: carried
to the code, so a compare and select under nnan become a min), `roundingmode=` on arith.truncf (to nearest even,
the conversion's own rounding, is honoured; a directed rounding is refused at the user's line, never compiled as
another)."""
import re

import pytest

import warpweave.cute as cute
from warpweave._mlir.dialects import arith, llvm
from warpweave.cute.runtime import make_fake_compact_tensor
from warpweave.cutlass_dsl import Float16, Float32, Int32, T, dsl_user_op

from dsl_helpers import target


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def ptx_of(body):
    """PTX of a one-warp kernel writing body(a, b) (Float32 results of two loaded Float32 values) to out."""
    @cute.kernel
    def k(x: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        out[tidx] = body(x[tidx], x[tidx + 32])

    @cute.jit
    def h(x: cute.Tensor, out: cute.Tensor):
        k(x, out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        return cute.compile(h, make_fake_compact_tensor(Float32, (64,)),
                            make_fake_compact_tensor(Float32, (32,))).info["ptx"]


def _select_smaller(fastmath):
    @dsl_user_op
    def f(a, b, *, loc=None, ip=None) -> Float32:
        va, vb = Float32(a).ir_value(), Float32(b).ir_value()
        c = arith.cmpf(arith.CmpFPredicate.OLT, va, vb, fastmath=fastmath, results=[T.bool()])
        return Float32(arith.select(c, va, vb, results=[T.f32()]))
    return f


def test_cmpf_fastmath_reaches_the_code():
    # without flags, a compare and select of floats is not a min (NaN operands pick differently); nnan makes it one
    plain = ptx_of(_select_smaller(None))
    fast = ptx_of(_select_smaller(arith.FastMathFlags.nnan | arith.FastMathFlags.nsz))
    assert "setp" in plain and not re.search(r"\bmin\.f32", plain)
    assert re.search(r"\bmin\.f32", fast) and "setp" not in fast


def test_flags_by_name_and_all_of_them():
    for flags in ("fast", True, arith.FastMathFlags.fast, int(arith.FastMathFlags.nnan)):
        assert re.search(r"\bmin\.f32", ptx_of(_select_smaller(flags)))


def test_conversions_take_fastmath_and_truncf_takes_rounding_to_nearest_even():
    @dsl_user_op
    def f(a, b, *, loc=None, ip=None) -> Float32:
        h = arith.truncf(Float16.mlir_type, Float32(a).ir_value(), roundingmode=arith.RoundingMode.to_nearest_even,
                         fastmath=arith.FastMathFlags.contract)
        return Float32(arith.extf(Float32.mlir_type, h, fastmath=arith.FastMathFlags.nnan))

    ptx = ptx_of(f)
    assert "cvt.rn.f16.f32" in ptx and "cvt.f32.f16" in ptx


@pytest.mark.parametrize("mode", ["toward_zero", "upward", "downward", "to_nearest_away"])
def test_a_rounding_the_conversion_does_not_do_is_refused_at_the_users_line(mode):
    @dsl_user_op
    def f(a, b, *, loc=None, ip=None) -> Float32:
        h = arith.truncf(Float16.mlir_type, Float32(a).ir_value(), roundingmode=getattr(arith.RoundingMode, mode))
        return Float32(arith.extf(Float32.mlir_type, h))

    with pytest.raises(Exception, match=f"roundingmode={mode} is not supported") as info:
        ptx_of(f)
    assert "test_dialect_builder_options.py:" in str(info.value)     # the user's line, not the builder's


@pytest.mark.parametrize("build", [
    lambda a, b, fa, fb: arith.cmpi(arith.CmpIPredicate.slt, a, b, results=[T.i32()]),
    lambda a, b, fa, fb: arith.cmpf(arith.CmpFPredicate.OLT, fa, fb, results=[T.f32()]),
    lambda a, b, fa, fb: arith.select(arith.cmpi(arith.CmpIPredicate.slt, a, b), a, b, results=[T.i64()]),
    lambda a, b, fa, fb: arith.addi(a, b, results=[T.i16()]),
    lambda a, b, fa, fb: arith.addf(fa, fb, results=T.f32()),      # a type, not a list of them
    lambda a, b, fa, fb: llvm.insertvalue(llvm.mlir_undef(llvm.StructType.get_literal([T.i32(), T.i32()])), a,
                                          [0], results=[llvm.StructType.get_literal([T.i32()])]),
])
def test_results_that_are_not_the_ops_are_refused(build):
    @dsl_user_op
    def f(a, b, *, loc=None, ip=None) -> Float32:
        build(Int32(Float32(a)).ir_value(), Int32(Float32(b)).ir_value(), Float32(a).ir_value(),
              Float32(b).ir_value())
        return Float32(a)

    with pytest.raises(Exception, match=r"results (are|is a list)"):
        ptx_of(f)


def test_results_that_are_the_ops_are_taken():
    @dsl_user_op
    def f(a, b, *, loc=None, ip=None) -> Float32:
        x, y = Int32(Float32(a)).ir_value(), Int32(Float32(b)).ir_value()
        c = arith.cmpi(arith.CmpIPredicate.slt, x, y, results=[T.bool()])
        s = arith.select(c, x, y, results=[T.i32()])
        st = llvm.StructType.get_literal([T.i32(), T.i32()])
        pair = llvm.insertvalue(llvm.mlir_undef(st), s, [1], results=[st])
        return Float32(Int32(llvm.extractvalue(T.i32(), pair, [1])))

    assert "min.s32" in ptx_of(f)


def test_bad_flags_are_refused():
    with pytest.raises(Exception, match="fastmath is a FastMathFlags value"):
        ptx_of(_select_smaller("fastest"))
    with pytest.raises(Exception, match="fastmath is a FastMathFlags value"):
        ptx_of(_select_smaller(1 << 9))
