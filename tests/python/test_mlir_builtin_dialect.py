"""cutlass._mlir.dialects.builtin: unrealized_conversion_cast sees a value as a type of the same bits (the value
itself, a bitcast, ptrtoint / inttoptr), as CuTe DSL's libraries use it; casts that would need a later conversion
are refused at the user's line, and the dialect has no ops it cannot honour."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir import ir
from warpweave._mlir.dialects import builtin, llvm

from dsl_helpers import line_in, target

CASE = {}


@cute.kernel
def casts(x: cutlass.Float32, n: cutlass.Int32, out: cute.Tensor):
    i32 = ir.IntegerType.get_signless(32)
    bits = builtin.unrealized_conversion_cast([i32], [x])         # f32 as i32
    back = builtin.UnrealizedConversionCastOp([ir.F32Type.get()], [bits]).result
    same = builtin.unrealized_conversion_cast([i32], [n])         # i32 as itself
    out[0] = cutlass.Int32(bits) + cutlass.Int32(same)
    out[1] = cutlass.Int32(cutlass.Float32(back))
    if cutlass.const_expr(CASE.get("kind") == "width"):
        builtin.unrealized_conversion_cast([ir.IntegerType.get_signless(64)], [n])  # wider
    if cutlass.const_expr(CASE.get("kind") == "many"):
        builtin.unrealized_conversion_cast([i32, i32], [n, n])  # two values


@cute.jit
def launch(x: cutlass.Float32, n: cutlass.Int32, out: cute.Tensor):
    casts(x, n, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def _compile():
    from warpweave.cute.runtime import make_fake_tensor
    with target("sm_80"):
        return cute.compile(launch, cutlass.Float32(1.5), cutlass.Int32(2),
                            make_fake_tensor(cutlass.Int32, (2,), stride=(1,)))


def test_same_bits_casts_are_bitcasts_or_the_value():
    CASE.clear()
    c = _compile()
    assert "llvm.bitcast" in c.ir and "unrealized_conversion_cast" not in c.ir
    assert "mov.b32" in c.ptx or "st.global" in c.ptx


@pytest.mark.parametrize("kind,text,message", [("width", "# wider", "not a view of the same bits"),
                                               ("many", "# two values", "one value to one type")])
def test_casts_needing_a_conversion_refused_at_the_users_line(kind, text, message):
    CASE["kind"] = kind
    try:
        with pytest.raises(Exception, match=message) as e:
            _compile()
        assert e.value.location == (__file__, line_in(__file__, text))
    finally:
        CASE.clear()


def test_no_module_op():
    assert not hasattr(builtin, "ModuleOp")
    assert hasattr(llvm, "bitcast")
