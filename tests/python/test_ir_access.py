"""CuTe DSL's extension surface: @dsl_user_op functions writing IR (`cutlass._mlir.ir`, `dialects.llvm` / `arith`,
`cutlass_dsl.T`), inline PTX through llvm.inline_asm, IR values and DSL numbers mixed both ways, and the mistakes
that must be DSL errors at the user's line: a malformed asm string, constraints that do not match the operands, an
IR value used outside its kernel, a user op whose IR type is not the one its number is made of."""
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir import ir
from warpweave._mlir.dialects import arith, llvm
from warpweave.cute.runtime import from_dlpack, make_fake_compact_tensor
from warpweave.cutlass_dsl import Boolean, Float32, Int32, T, Uint32, dsl_user_op

from dsl_helpers import line_in, requires_gpu, target

THIS = os.path.abspath(__file__)
N = 64


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")  # each compilation makes its PTX here, through the assembler


# --- user ops, as CuTe DSL libraries write them -------------------------------------------------------------------

@dsl_user_op
def lane_id(*, loc=None, ip=None) -> Int32:
    return Int32(llvm.inline_asm(T.i32(), [], "mov.u32 $0, %laneid;", "=r", has_side_effects=True))


@dsl_user_op
def add_s32(a, b, *, loc=None, ip=None) -> Int32:
    return Int32(llvm.inline_asm(T.i32(), [Int32(a).ir_value(loc=loc, ip=ip), Int32(b).ir_value(loc=loc, ip=ip)],
                                 "add.s32 $0, $1, $2;", "=r,r,r"))


DIVMOD_ASM = "{\n\t.reg .u32 q;\n\tdiv.u32 q, $2, $3;\n\tmov.u32 $0, q;\n\trem.u32 $1, $2, $3;\n\t}"


@dsl_user_op
def divmod_u32(a, b, *, loc=None, ip=None):
    """Two results through an LLVM struct, taken apart with llvm.extractvalue."""
    pair = llvm.StructType.get_literal([T.i32(), T.i32()])
    s = llvm.inline_asm(pair, [Uint32(a).ir_value(loc=loc, ip=ip), Uint32(b).ir_value(loc=loc, ip=ip)],
                        DIVMOD_ASM, "=r,=r,r,r")
    return Uint32(llvm.extractvalue(T.i32(), s, [0])), Uint32(llvm.extractvalue(T.i32(), s, [1]))


@dsl_user_op
def relu(x, *, loc=None, ip=None) -> Float32:
    return Float32(arith.maxnumf(Float32(x).ir_value(loc=loc, ip=ip), Float32(0.0).ir_value(loc=loc, ip=ip)))


@cute.kernel
def asm_kernel(out: cute.Tensor, x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    out[tidx, 0] = lane_id()
    out[tidx, 1] = add_s32(tidx, 1000)
    q, r = divmod_u32(tidx + 7, 3)
    out[tidx, 2] = Int32(q) * 10 + Int32(r)
    # IR values and numbers mixed: a number plus an IR value, an arith op of a number and an IR value
    v = arith.addi(Int32(tidx).ir_value(), arith.constant(T.i32(), 5))
    out[tidx, 3] = Int32(2) * tidx + v
    out[tidx, 4] = arith.muli(tidx, arith.constant(T.i32(), 3))  # an IR value stored as the tensor's type
    out[tidx, 5] = Int32(relu(x[tidx]) * 2.0)


@cute.jit
def asm_host(out: cute.Tensor, x: cute.Tensor):
    asm_kernel(out, x).launch(grid=[1, 1, 1], block=[N, 1, 1])


def expected(x):
    t = np.arange(N)
    return np.stack([t % 32, t + 1000, ((t + 7) // 3) * 10 + (t + 7) % 3, 2 * t + t + 5, 3 * t,
                     (np.maximum(x, 0) * 2).astype(np.int32)], axis=1).astype(np.int32)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_inline_asm_reaches_the_ptx_unchanged_and_assembles(arch):
    out = make_fake_compact_tensor(cutlass.Int32, (N, 6), stride_order=(1, 0))
    x = make_fake_compact_tensor(cutlass.Float32, (N,))
    with target(arch):
        c = cute.compile(asm_host, out, x)
    assert c.cubin  # the assembler (nvJitLink or ptxas) accepted the PTX
    ptx = c.ptx
    reg = r"%r\d+"
    assert re.search(rf"mov\.u32 {reg}, %laneid;", ptx)
    assert re.search(rf"add\.s32 {reg}, {reg}, {reg};", ptx)
    # the multi-line string as written, its operands in registers
    assert re.search(rf"\{{\s*\.reg \.u32 q;\s*div\.u32 q, {reg}, {reg};\s*mov\.u32 {reg}, q;\s*"
                     rf"rem\.u32 {reg}, {reg}, {reg};\s*\}}", ptx), ptx
    assert "max.f32" in ptx  # arith.maxnumf


def test_asm_without_results_and_with_a_clobber():
    def body(out, t):
        r = llvm.inline_asm(None, [Int32(t).ir_value()], "// ww-fence $0\n\tmembar.cta;", "r,~{memory}",
                            has_side_effects=True)
        assert r is None
        out[t] = t

    ptx = compile_body(body).ptx
    assert re.search(r"// ww-fence %r\d+\s+membar\.cta;", ptx), ptx


def test_the_ir_types_read_back():
    assert T.i32() == ir.IntegerType.get_signless(32) and str(T.i32()) == "i32"
    assert ir.IntegerType(T.i64()).width == 64 and ir.IntegerType.isinstance(T.bool())
    assert not ir.IntegerType.isinstance(T.f32()) and ir.F32Type.isinstance(T.f32())
    assert T.f16() == ir.F16Type.get() and T.bf16() != T.f16() and ir.FloatType(T.bf16()).width == 16
    v = ir.VectorType.get([2, 4], T.f32())
    assert str(v) == "vector<2x4xf32>" and v.shape == [2, 4] and v.element_type == T.f32()
    assert T.vector(4, T.i8()) == ir.Type.parse("vector<4xi8>")
    s = llvm.StructType.get_literal([T.i32(), v, T.f64()])
    assert llvm.StructType(ir.Type.parse(str(s))).body == [T.i32(), v, T.f64()]
    with pytest.raises(ValueError, match="cannot cast type f32 to IntegerType"):
        ir.IntegerType(T.f32())
    with pytest.raises(ValueError, match="positive integers"):
        ir.VectorType.get([0], T.f32())


# --- mistakes -----------------------------------------------------------------------------------------------------

def compile_body(body, arch="sm_80"):
    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        body(out, tidx)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, make_fake_compact_tensor(cutlass.Int32, (32,)))


def raises_at(exc, text, marker, body):
    with pytest.raises(exc, match=text) as e:
        compile_body(body)
    assert e.value.location == (THIS, line_in(THIS, "# " + marker)), (e.value.location, str(e.value))
    return e.value


def test_a_malformed_asm_string_is_refused_at_the_users_line():
    def body(out, t):
        out[t] = Int32(llvm.inline_asm(T.i32(), [Int32(t).ir_value()], "{\n\tmovv.u32 $0, $1;\n\t}", "=r,r"))  # BAD1

    e = raises_at(cutlass.CompilationError, "assembler refused this inline asm", "BAD1", body)
    assert "movv" in str(e)


def test_asm_operand_placeholders_out_of_range_and_stray_dollars():
    raises_at(ValueError, r"\$2 names no operand.*\$0\.\.\$1", "BAD2", lambda out, t: out.__setitem__(
        t, Int32(llvm.inline_asm(T.i32(), [Int32(t).ir_value()], "add.s32 $0, $1, $2;", "=r,r"))))  # BAD2
    raises_at(ValueError, "starts no operand reference", "BAD3", lambda out, t: out.__setitem__(
        t, Int32(llvm.inline_asm(T.i32(), [], "mov.u32 $0, $x;", "=r"))))  # BAD3


@pytest.mark.parametrize("res, operands, constraints, exc, message", [
    ("i32", 1, "=r,r,r", ValueError, r"2 input\(s\), 1 operand\(s\)"),
    ("i32", 2, "=r,r", ValueError, r"1 input\(s\), 2 operand\(s\)"),
    ("pair", 1, "=r,r", ValueError, r"1 output\(s\), the result type .* gives 2"),
    (None, 1, "=r,r", ValueError, r"1 output\(s\), the result type None gives 0"),
    ("i32", 1, "=r,x", ValueError, "constraint 'x' is not one NVPTX knows"),
    ("i32", 1, "+r", ValueError, "no read-write constraint"),
    ("i32", 1, "=r,1", ValueError, "tied to output 1, which does not exist"),
    ("f64", 1, "=r,r", TypeError, "output \\$0 of type f64 does not fit constraint '=r'"),
    ("i32", 1, "=r,h", TypeError, "input \\$1 of type i32 does not fit constraint 'h'"),
])
def test_constraints_that_do_not_match_are_refused(res, operands, constraints, exc, message):
    def body(out, t):
        ty = {"i32": T.i32(), "f64": T.f64(), "pair": llvm.StructType.get_literal([T.i32(), T.i32()]), None: None}
        ops = [Int32(t).ir_value() for _ in range(operands)]
        llvm.inline_asm(ty[res], ops, "mov.u32 $0, 0;", constraints)  # BADC

    raises_at(exc, message, "BADC", body)


def test_an_immediate_constraint_given_a_runtime_value_names_its_asm():
    def body(out, t):
        out[t] = Int32(llvm.inline_asm(T.i32(), [Int32(t).ir_value()], "mov.u32 $0, $1;", "=r,i"))  # BADI

    raises_at(cutlass.CompilationError, "immediate constraint", "BADI", body)
    ptx = compile_body(lambda out, t: out.__setitem__(
        t, Int32(llvm.inline_asm(T.i32(), [Int32(7).ir_value()], "mov.u32 $0, $1;", "=r,i")))).ptx
    assert re.search(r"mov\.u32 %r\d+, 7;", ptx), ptx  # a constant is an immediate


def test_a_user_op_returning_the_wrong_ir_type():
    @dsl_user_op
    def as_float(x, *, loc=None, ip=None):
        return Float32(llvm.inline_asm(T.i32(), [Int32(x).ir_value()], "mov.b32 $0, $1;", "=r,r"))  # BADT

    raises_at(TypeError, "Float32 is made from an IR value of type f32, this one is i32", "BADT",
              lambda out, t: out.__setitem__(t, Int32(as_float(t))))
    raises_at(TypeError, r"extractvalue: field \[1\] of .* is f32, the result type given is i32", "BADX",
              lambda out, t: llvm.extractvalue(T.i32(), llvm.mlir_undef(  # BADX
                  llvm.StructType.get_literal([T.i32(), T.f32()])), [1]))
    raises_at(TypeError, "operands of one type expected, got i32, f32", "BADA",
              lambda out, t: arith.addi(Int32(t), Float32(1.0)))  # BADA


def test_ir_values_outside_their_kernel():
    kept = []

    def body(out, t):
        kept.append(Int32(t).ir_value())
        out[t] = Int32(kept[0])

    compile_body(body)
    with pytest.raises(RuntimeError, match="used outside a kernel"):
        arith.addi(kept[0], kept[0])
    with pytest.raises(RuntimeError, match="another kernel or trace"):
        compile_body(lambda out, t: out.__setitem__(t, Int32(kept[0])))  # a value of the earlier compilation
    with pytest.raises(RuntimeError, match="while a @cute.jit or @cute.kernel function is traced"):
        Int32(3).ir_value()

    # In host code an IR value is one of the host side (CuTe DSL's host functions are IR too): arithmetic on it
    # computes there, but device code given it is refused at the user's line.
    @cute.jit
    def host_side(out: cute.Tensor):
        v = Int32(3).ir_value()
        llvm.inline_asm(T.i32(), [v], "mov.b32 $0, $1;", "=r,r")  # BADH

    with pytest.raises(TypeError, match="on a value of the host side") as e, target("sm_80"):
        cute.compile(host_side, make_fake_compact_tensor(cutlass.Int32, (32,)))
    assert e.value.location == (THIS, line_in(THIS, "# BADH"))


def test_cutlass_names_of_the_extension_surface():
    from warpweave import migrate

    with migrate.cutlass_alias():
        from cutlass._mlir import ir as cir
        from cutlass._mlir.dialects import arith as carith, llvm as cllvm
        from cutlass._mlir.extras import types as cT
        from cutlass.base_dsl.typing import Integer, Numeric
        from cutlass.cutlass_dsl import T as dslT, dsl_user_op as op, Int32 as I32
        from cutlass.cute.arch.nvvm_wrappers import FULL_MASK, WARP_SIZE, vote_ballot_sync
    assert cir.Value is ir.Value and cllvm.inline_asm is llvm.inline_asm and carith.addi is arith.addi
    assert cT is dslT and dslT.i32() == T.i32() and op is dsl_user_op and I32 is cutlass.Int32
    assert issubclass(I32, Integer) and issubclass(Integer, Numeric)
    assert (FULL_MASK, WARP_SIZE) == (0xFFFFFFFF, 32) and vote_ballot_sync is cute.arch.vote_ballot_sync


# --- on the GPU -----------------------------------------------------------------------------------------------------

@requires_gpu
def test_inline_asm_kernel_computes_on_the_gpu():
    import torch

    x = torch.randn(N, device="cuda") * 10
    out = torch.full((N, 6), -1, dtype=torch.int32, device="cuda")
    asm_host(from_dlpack(out), from_dlpack(x))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), expected(x.cpu().numpy()))
