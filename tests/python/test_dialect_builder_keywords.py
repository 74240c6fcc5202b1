"""The `cutlass._mlir.dialects` op builders take their parameters under the names the generated MLIR bindings give
them, because programs pass them by keyword: `llvm.inline_asm(res=None, operands_=[], asm_string=..., constraints=...)`
(the trailing underscore keeps `operands` free for the op's own attribute), `math.exp(operand=v)`, `arith.negf(operand=
v)`, `llvm.intr_ctlz(in_=v, ...)`, `scf.for_(start, stop, step)`, `cute.recast_iter(dst=, src=)`, and llvm.trunc's
third parameter, its overflow flags (`llvm.IntegerOverflowFlags`), which programs written for it pass positionally."""
import inspect

import pytest

import warpweave.cute as cute
from warpweave._mlir.dialects import arith, cute as cute_ir, llvm, math as mmath, scf
from warpweave.cute.runtime import make_fake_compact_tensor
from warpweave.cutlass_dsl import Float32, Int32, T, dsl_user_op

from dsl_helpers import target


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


@dsl_user_op
def fenced_copy(x, *, loc=None, ip=None) -> Int32:
    """Every inline asm parameter by keyword, as a library's GPU-scope fence and a move are written."""
    llvm.inline_asm(res=None, operands_=[], asm_string="fence.acq_rel.gpu;", constraints="", has_side_effects=True,
                    asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
    return Int32(llvm.inline_asm(res=T.i32(), operands_=[Int32(x).ir_value(loc=loc, ip=ip)],
                                 asm_string="mov.b32 $0, $1;", constraints="=r,r", loc=loc, ip=ip))


@dsl_user_op
def keyword_math(x, *, loc=None, ip=None) -> Float32:
    v = Float32(x).ir_value(loc=loc, ip=ip)
    return Float32(arith.negf(operand=mmath.exp2(operand=v)))


@dsl_user_op
def low_half_leading_zeros(x, *, loc=None, ip=None) -> Int32:
    """llvm.trunc with its overflow flags in third place, llvm.intr_ctlz's operand by its name."""
    half = llvm.trunc(T.i16(), Int32(x).ir_value(loc=loc, ip=ip), llvm.IntegerOverflowFlags.none)
    zeros = llvm.intr_ctlz(in_=half, is_zero_poison=False)
    return Int32(llvm.zext(T.i32(), zeros, non_neg=True))


def compile_kernel(body, dtype):
    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        out[tidx] = body(tidx)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        return cute.compile(h, make_fake_compact_tensor(dtype, (32,)))


def test_inline_asm_parameters_by_their_generated_names():
    ptx = compile_kernel(lambda t: fenced_copy(t), Int32).ptx
    assert "fence.acq_rel.gpu;" in ptx
    assert "mov.b32" in ptx


def test_math_and_arith_operand_by_its_generated_name():
    ptx = compile_kernel(lambda t: keyword_math(Float32(t)), Float32).ptx
    assert "ex2.approx" in ptx and "neg.f32" in ptx, ptx


def test_trunc_takes_its_overflow_flags_and_ctlz_its_operand_by_name():
    ptx = compile_kernel(lambda t: low_half_leading_zeros(t), Int32).ptx
    assert "clz.b32" in ptx or "clz.b16" in ptx, ptx


@pytest.mark.parametrize("builder, names", [
    (llvm.inline_asm, ["res", "operands_", "asm_string", "constraints"]),
    (mmath.exp, ["operand"]),
    (arith.negf, ["operand"]),
    (llvm.intr_ctlz, ["in_", "is_zero_poison"]),
    (llvm.trunc, ["res", "arg", "overflow_flags"]),
    (scf.for_, ["start", "stop", "step", "iter_args"]),
    (cute_ir.recast_iter, ["dst", "src"]),
])
def test_positional_parameters_carry_the_generated_names(builder, names):
    params = [p.name for p in inspect.signature(builder).parameters.values()
              if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert params[:len(names)] == names
