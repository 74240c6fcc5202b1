"""The vector, math and scf dialects user code writes with `cutlass._mlir`, CuTe DSL's `Vector` and
`get_mlir_types`, objects carrying IR values (`__extract_mlir_values__` / `__new_from_mlir_values__`), `Arch` from
the backends, the preprocessor libraries extend, and the mistakes that must be DSL errors at the user's line: an
unknown dialect op, a vector position outside the vector, a yield of the wrong types."""
import ast
import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir import ir
from warpweave._mlir.dialects import arith, llvm, math as mmath, scf, vector
from warpweave.base_dsl import BaseDSL
from warpweave.base_dsl.arch import Arch
from warpweave.base_dsl.typing import Vector, get_mlir_types
from warpweave._dsl.base.ir_values import bit_width
from warpweave.cute.runtime import make_fake_compact_tensor
from warpweave.cutlass_dsl import Float32, Int32, T, Uint32, dsl_user_op

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def compile_body(body, arch="sm_90a", dtype=cutlass.Int32):
    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        body(out, tidx)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, make_fake_compact_tensor(dtype, (32,)))


def raises_at(exc, text, marker, body):
    with pytest.raises(exc, match=text) as e:
        compile_body(body)
    assert e.value.location == (THIS, line_in(THIS, "# " + marker)), (e.value.location, str(e.value))
    return e.value


# --- user ops mixing IR values and DSL values -------------------------------------------------------------------

@dsl_user_op
def pack_halves(a, b, *, loc=None, ip=None) -> Uint32:
    """Two 16-bit halves of numbers into one word, through a vector: numbers in, an IR vector built, bitcast, a
    number out."""
    v = vector.from_elements(T.vector(2, T.i16()), [arith.trunci(T.i16(), Int32(a).ir_value(loc=loc, ip=ip)),
                                                    arith.trunci(T.i16(), Int32(b).ir_value(loc=loc, ip=ip))])
    w = vector.bitcast(T.vector(1, T.i32()), v, loc=loc, ip=ip)
    return Uint32(vector.extract(w, dynamic_position=[], static_position=[0], loc=loc, ip=ip))


@dsl_user_op
def fast_gelu_ish(x, *, loc=None, ip=None) -> Float32:
    """math ops on the IR value of a number, and arithmetic of the number rebuilt from them."""
    v = Float32(x).ir_value(loc=loc, ip=ip)
    t = mmath.tanh(mmath.fma(v, arith.constant(T.f32(), 0.79788456), arith.constant(T.f32(), 0.0)))
    return Float32(x) * (Float32(t) + 1.0) * 0.5


def test_vector_and_math_ops_trace_and_compile():
    def body(out, t):
        w = pack_halves(t, t + 1)
        y = fast_gelu_ish(Float32(t))
        vec = Vector.from_elements((Float32(y), Float32(2.0)), Float32)
        lo, hi = vec.bitcast(cutlass.Int64).bitcast(Float32).to_elements()
        out[t] = Int32(w) + Int32(lo + hi)

    c = compile_body(body)
    assert c.cubin
    ptx = c.ptx
    assert re.search(r"fma\.rn\.f32\s+%r\d+, %r\d+, 0f3F4C422A, 0f00000000;", ptx), ptx  # math.fma, our constant
    # math.tanh, expanded to its rational approximation, whose own quotient is the hardware's approximate one
    assert "div.approx.f32" in ptx


def test_mlir_helpers_arith_bitcast_takes_the_value_first():
    """QuACK's complex numbers: two f32 lanes packed into one f64 and split again (cutlass._mlir_helpers.arith,
    whose bitcast is (value, type); the dialect's ops are there too)."""
    from warpweave._mlir_helpers.arith import bitcast, extui, trunci
    from warpweave._mlir_helpers import arith as helpers

    def body(out, t):
        lo = bitcast(Float32(t) + 0.5, T.i32())
        hi = bitcast(Float32(t) * 2.0, T.i32())
        packed = bitcast(arith.ori(extui(T.i64(), lo), arith.shli(extui(T.i64(), hi), arith.constant(T.i64(), 32))),
                         T.f64())
        bits = bitcast(packed, T.i64())
        re = Float32(bitcast(trunci(T.i32(), bits), T.f32()))
        im = Float32(bitcast(helpers.trunci(T.i32(), helpers.shrui(bits, arith.constant(T.i64(), 32))), T.f32()))
        out[t] = Int32(re + im)

    assert compile_body(body).cubin
    raises_at(cutlass.DSLError, "changes the width", "WIDE", lambda out, t: bitcast(Float32(t), T.i64()))  # WIDE


def test_scf_regions_written_through_insertion_points():
    def body(out, t):
        ti = Int32(t).ir_value()
        cond = arith.cmpi(arith.CmpIPredicate.slt, ti, arith.constant(T.i32(), 16))
        if_op = scf.IfOp(cond, [T.i32()], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.yield_([arith.addi(ti, arith.constant(T.i32(), 100))])
        with ir.InsertionPoint(if_op.else_block):
            scf.yield_([arith.muli(ti, arith.constant(T.i32(), 2))])
        r = if_op.results[0]
        loop = scf.ForOp(arith.constant(T.i32(), 0), ti, arith.constant(T.i32(), 1), [r])
        with ir.InsertionPoint(loop.body):
            (acc,) = loop.inner_iter_args
            scf.yield_([arith.addi(acc, loop.induction_variable)])
        out[t] = Int32(loop.results[0]) + 1  # an IR value of scf back as a number

    c = compile_body(body)
    assert c.cubin and "setp" in c.ptx


def test_user_objects_carry_ir_values_through_get_mlir_types():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __extract_mlir_values__(self):
            return [self.a.ir_value(), self.b.ir_value()]

        def __new_from_mlir_values__(self, values):
            return Pair(Int32(values[0]), Float32(values[1]))

    seen = []

    def body(out, t):
        p = Pair(Int32(t), Float32(1.5))
        seen.append(get_mlir_types([p, Int32(t), 3]))
        q = p.__new_from_mlir_values__(p.__extract_mlir_values__())
        out[t] = q.a + Int32(q.b)

    compile_body(body)
    assert seen[0] == [T.i32(), T.f32(), T.i32()]
    assert Int32.mlir_type == T.i32() and Float32.mlir_type == T.f32()


class Counter:
    """A library's state object of IR values (CuTe DSL's protocol), as tile schedulers and pipeline states are."""

    def __init__(self, count, total):
        self.count, self.total = count, total

    def __extract_mlir_values__(self):
        return [self.count.ir_value(), self.total.ir_value()]

    def __new_from_mlir_values__(self, values):
        return Counter(Int32(values[0]), Float32(values[1]))


@cute.kernel
def carry_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    c = Counter(Int32(0), Float32(0.0))
    for i in range(tidx):
        c = Counter(c.count + 1, c.total + 0.5)   # an object of IR values, carried through the dynamic loop
    if tidx > 3:
        c = Counter(c.count * 2, c.total)
    out[tidx] = c.count + Int32(c.total)


@cute.jit
def carry_host(out: cute.Tensor):
    carry_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_objects_of_ir_values_are_carried_through_dynamic_control_flow():
    with target("sm_90a"):
        c = cute.compile(carry_host, make_fake_compact_tensor(cutlass.Int32, (32,)))
    assert c.cubin


def test_functional_if_and_while():
    from warpweave.cutlass_dsl import and_, extract_mlir_values, if_generate, new_from_mlir_values, not_, \
        while_generate, yield_out

    def body(out, t):
        t = Int32(t)
        r = if_generate(and_(t > 2, t < 20), lambda a: a * 3, lambda a: a + 1, [t], [Int32])
        ctx = while_generate([r], lambda x: x < 100)
        with ctx as (x,):
            yield_out([x * 2])
        flag = if_generate(not_(t == 5), lambda: Boolean(True), lambda: Boolean(False), None, [Boolean])
        pair = (ctx.results[0], Float32(1.0))
        again = new_from_mlir_values(pair, extract_mlir_values(pair))
        out[t] = again[0] + Int32(flag) + Int32(again[1])

    from warpweave.cutlass_dsl import Boolean
    c = compile_body(body)
    assert c.cubin


# --- architectures, from the backends -----------------------------------------------------------------------------

def test_arch_members_come_from_the_backends_and_order_by_capability():
    names = [a.name for a in Arch]
    assert {"sm_80", "sm_90", "sm_90a", "sm_100a", "sm_100f"} <= set(names)
    assert Arch.sm_80 < Arch.sm_90 < Arch.sm_90a < Arch.sm_100 and not Arch.sm_100a < Arch.sm_90a
    assert Arch.sm_100a.is_family_of(Arch.sm_100f) and not Arch.sm_90a.is_family_of(Arch.sm_100f)
    with target("sm_90a"):
        assert BaseDSL._get_dsl().get_arch_enum() is Arch.sm_90a
    with target("sm_80"):
        assert BaseDSL._get_dsl().get_arch_enum() < Arch.sm_90


def test_a_library_extends_the_preprocessor():
    """QuACK wraps DSLPreprocessor.visit_If; the wrapped method is what rewrites the kernels it compiles after, and
    a rewrite kept on disk from before the extension is not reused."""
    from warpweave._dsl.tracing import ast_rewrite
    from warpweave.base_dsl.ast_preprocessor import DSLPreprocessor

    before = ast_rewrite.preprocessor_extensions()
    original = DSLPreprocessor.visit_If
    calls = []

    def visit_if(self, node: ast.If):
        calls.append(node.lineno)
        return original(self, node)

    DSLPreprocessor.visit_If = visit_if
    try:
        assert ast_rewrite.preprocessor_extensions() != before

        @cute.kernel
        def k(out: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            if tidx < 4:
                out[tidx] = tidx

        @cute.jit
        def h(out: cute.Tensor):
            k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

        with target("sm_90a"):
            cute.compile(h, make_fake_compact_tensor(cutlass.Int32, (32,)))
        assert calls == [line_in(THIS, "if tidx < 4:")]
    finally:
        DSLPreprocessor.visit_If = original
    assert ast_rewrite.preprocessor_extensions() == before


# --- mistakes -----------------------------------------------------------------------------------------------------

def test_an_unknown_dialect_op_is_an_error_at_the_users_line():
    raises_at(AttributeError, "vector dialect has no op 'shuffle_all'", "BADV",
              lambda out, t: vector.shuffle_all(Int32(t).ir_value()))  # BADV
    raises_at(AttributeError, "llvm dialect has no op 'call_intrinsic_x'", "BADL",
              lambda out, t: llvm.call_intrinsic_x())  # BADL
    assert not hasattr(mmath, "no_such_op") and hasattr(mmath, "exp")


def test_vector_and_scf_mistakes_name_the_users_line():
    raises_at(ValueError, r"position \[4\] is outside vector<4xf32>", "BADP",
              lambda out, t: vector.extract(llvm.mlir_undef(T.vector(4, T.f32())), [], [4]))  # BADP
    raises_at(TypeError, "elements of vector<2xi32> are i32, got f32", "BADE",
              lambda out, t: vector.from_elements(T.vector(2, T.i32()), [Float32(1.0), Int32(t)]))  # BADE

    def bad_yield(out, t):
        op = scf.IfOp(arith.cmpi(arith.CmpIPredicate.eq, Int32(t), Int32(0)), [T.i32()], has_else=True)
        with ir.InsertionPoint(op.then_block):
            scf.yield_([Float32(1.0).ir_value()])  # BADY

    raises_at(TypeError, r"scf.yield_ of \(f32\) in scf.if with results \(i32\)", "BADY", bad_yield)
    raises_at(ValueError, "outside the block of an scf op", "BADO",
              lambda out, t: scf.yield_([]))  # BADO


def test_a_carried_object_that_changes_its_types_is_refused():
    @cute.kernel
    def k(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        c = Counter(Int32(0), Float32(0.0))
        if tidx > 3:
            c = Counter(Float32(1.0), Float32(0.0))  # BADC
        out[tidx] = Int32(c.total)

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with pytest.raises(TypeError, match=r"variable 'c' \(Counter of IR values \(i32, f32\)\) becomes \(f32, f32\)"), \
            target("sm_90a"):
        cute.compile(h, make_fake_compact_tensor(cutlass.Int32, (32,)))


def test_a_user_op_returning_the_wrong_ir_type_for_a_vector():
    raises_at(TypeError, r"a Vector of vector<2xi32> holds i32, not Float32", "BADW",
              lambda out, t: Vector(llvm.mlir_undef(T.vector(2, T.i32())), dtype=Float32))  # BADW


def test_cutlass_alias_names():
    from warpweave import migrate

    with migrate.cutlass_alias():
        from cutlass._mlir.dialects import math as cm, scf as cs, vector as cv
        from cutlass._mlir_helpers.vector import Vector as CV
        from cutlass.base_dsl.enums import Arch as CA
        from cutlass.base_dsl.typing import get_mlir_types as g
        from cutlass.cute.tensor import TensorSSA, _Tensor
        from cutlass.cute.nvgpu.tcgen05.mma import CtaGroup  # noqa: F401 - a submodule of a backend's namespace
        import cutlass.cute.typing as ct
        from cutlass.cute.typing import Optional, Type  # Python's typing names, where CuTe DSL's typing has them
        from cutlass.cutlass_dsl import Constexpr
        from cutlass.utils.smem_allocator import SmemAllocator
        from cutlass.utils.dynamic_persistent_tile_scheduler import ClcDynamicPersistentTileScheduler
        from cutlass._mlir.dialects.cute import AddressSpace as IrAddressSpace
        from cutlass.pipeline.helpers import MbarrierArray, NamedBarrier
        from cutlass.pipeline.sm90 import PipelineTmaAsync
        from cutlass.pipeline.sm100 import PipelineTmaUmma
        from cutlass.base_dsl import extract_mlir_values, new_from_mlir_values, get_mlir_types as base_types
        from cutlass.base_dsl.dsl import JitCompiledFunction
        from cutlass.cute.typing import sym_int64
    import typing
    assert Type is typing.Type and Optional is typing.Optional and Constexpr is cutlass.Constexpr
    assert SmemAllocator is cutlass.utils.SmemAllocator
    assert ClcDynamicPersistentTileScheduler is cutlass.utils.ClcDynamicPersistentTileScheduler
    assert [m.name for m in IrAddressSpace] == [m.name for m in cute.AddressSpace]
    from warpweave.base_dsl import dsl as base_dsl_dsl
    assert (extract_mlir_values, new_from_mlir_values, base_types) == (
        base_dsl_dsl.extract_mlir_values, base_dsl_dsl.new_from_mlir_values, get_mlir_types)
    assert JitCompiledFunction is cutlass.cutlass_dsl.JitCompiledFunction and sym_int64 is cute.sym_int64
    assert (MbarrierArray, NamedBarrier, PipelineTmaAsync, PipelineTmaUmma) == (
        cutlass.pipeline.MbarrierArray, cutlass.pipeline.NamedBarrier, cutlass.pipeline.PipelineTmaAsync,
        cutlass.pipeline.PipelineTmaUmma)
    assert cv.extract is vector.extract and cs.IfOp is scf.IfOp and cm.exp is mmath.exp
    assert CV is Vector and CA is Arch and g is get_mlir_types
    assert _Tensor is cute.Tensor and TensorSSA is cute.TensorSSA and ct.Int32 is cutlass.Int32


# --- llvm pointer/integer and width casts ----------------------------------------------------------------------

def test_llvm_pointer_integer_and_width_casts():
    def body(out, t):
        smem = cutlass.utils.SmemAllocator()
        buf = smem.allocate_array(cutlass.Int32, 32)
        s32 = llvm.ptrtoint(T.i32(), buf.llvm_ptr)               # a shared-memory pointer's 32-bit address
        g64 = llvm.ptrtoint(T.i64(), (out.iterator + t).llvm_ptr)  # a global one's 64-bit address
        wide = llvm.zext(T.i64(), s32)
        back = llvm.inttoptr(llvm.PointerType.get(1), g64)
        out[t] = Int32(llvm.trunc(T.i32(), wide)) + Int32(llvm.trunc(T.i32(), llvm.ptrtoint(T.i64(), back))) + \
            Int32(llvm.sext(T.i64(), Int32(t).ir_value()) == 0)

    assert compile_body(body).cubin

    def smem_address(out, t):
        buf = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int32, 32)
        out[t] = Int32(llvm.trunc(T.i32(), llvm.zext(T.i64(), llvm.ptrtoint(T.i32(), buf.llvm_ptr))))

    ptx = compile_body(smem_address).ptx
    # the value stored is the shared-memory window's own 32-bit address, not a generic (64-bit) one cut short
    assert re.search(r"mov\.b32\s+%r\d+, __ww_dynamic_smem;", ptx), ptx


def test_llvm_casts_refuse_the_wrong_kinds_and_widths():
    raises_at(Exception, "ptrtoint takes a pointer", "not-a-pointer",
              lambda out, t: llvm.ptrtoint(T.i64(), Int32(t).ir_value()))  # not-a-pointer
    raises_at(Exception, "must widen", "zext-narrows",
              lambda out, t: llvm.zext(T.i16(), Int32(t).ir_value()))  # zext-narrows
    raises_at(Exception, "inttoptr takes an integer", "inttoptr-of-pointer",
              lambda out, t: llvm.inttoptr(llvm.PointerType.get(1), out.iterator.llvm_ptr))  # inttoptr-of-pointer


# --- NVVM ops come from the backends ------------------------------------------------------------------------------

@cute.kernel
def nvvm_wait_kernel(out: cute.Tensor):
    from warpweave._mlir.dialects import nvvm

    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    bar = smem.allocate_array(cutlass.Int64, 1)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.sync_threads()
    # a shared-memory pointer as an IR value (!llvm.ptr<3>), DSL numbers as the other operands
    done = nvvm.mbarrier_try_wait_parity_timelimit(T.bool(), bar.llvm_ptr, Int32(0), Int32(1000))
    out[tidx] = Int32(cutlass.Boolean(done))


@cute.jit
def nvvm_wait_host(out: cute.Tensor):
    nvvm_wait_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_nvvm_ops_of_a_generation_come_from_its_backend():
    from warpweave._mlir.dialects import nvvm

    with target("sm_90a"):
        c = cute.compile(nvvm_wait_host, make_fake_compact_tensor(cutlass.Int32, (32,)))
    assert re.search(r"mbarrier\.try_wait\.parity\.shared::cta\.b64 p, \[%r\d+\], %r\d+, %r\d+;", c.ptx), c.ptx
    with pytest.raises(AttributeError, match="no loaded backend offers nvvm.no_such_op"):
        nvvm.no_such_op
    assert bit_width(ir.Type("!llvm.ptr<3>")) == 32 and bit_width(ir.Type("!llvm.ptr<1>")) == 64


def test_leading_dim_of_a_tensor():
    def tensor(shape, stride):
        return cute.make_tensor(cute.make_ptr(cutlass.Float16, 0, cute.AddressSpace.gmem),
                                cute.make_layout(shape, stride=stride))

    assert tensor((8, 16), (16, 1)).leading_dim == 1 and tensor((8, 16), (1, 8)).leading_dim == 0
    assert tensor((1, 16), (1, 2)).leading_dim is None  # a mode of extent 1 leads nothing
    assert tensor(((2, 4), 8), ((1, 2), 8)).leading_dim == (0, 0)


def test_for_generate_is_a_loop_of_the_kernel_and_yield_out_ends_its_body():
    import warpweave as cutlass
    import warpweave.cute as cute
    from warpweave import for_generate, yield_out

    from dsl_helpers import target
    from warpweave.cute.runtime import from_dlpack
    import numpy as np

    @cute.kernel
    def k(dst: cute.Tensor, src: cute.Tensor, n: cutlass.Int32):
        for i in for_generate(0, n):  # a runtime bound: an scf.for of the kernel
            dst[i] = src[i] * 2.0
            yield_out()
        for j in for_generate(2):     # static bounds: a Python loop
            dst[j] = 0.0

    @cute.jit
    def h(dst: cute.Tensor, src: cute.Tensor, n: cutlass.Int32):
        k(dst, src, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    x = from_dlpack(np.zeros(16, np.float32))
    with target("sm_80"):
        c = cute.compile(h, x, x, cutlass.Int32(16))
    assert "scf.for" in c.ir and c.ir.count("scf.for") == 1


def test_mlir_helpers_op_names_the_dsls_own_files_and_materializes_its_roots_at_the_first_question():
    """QuACK resets `_DSL_PACKAGE_ROOT(S)` to a fresh process's state, asks once and expects the roots back: the
    DSL's own files (its package, a backend's Python) are framework frames; a user's file and a sibling folder
    whose name only begins like the package's are not."""
    import warpweave._mlir_helpers.op as op
    from warpweave._dsl.host import kernel_trace

    saved = (op._DSL_PACKAGE_ROOT, op._DSL_PACKAGE_ROOTS)
    try:
        op._DSL_PACKAGE_ROOT, op._DSL_PACKAGE_ROOTS = "", None
        op._is_framework_frame.cache_clear()
        assert op._is_framework_frame(kernel_trace.__file__)
        assert op._DSL_PACKAGE_ROOTS is not None and op._DSL_PACKAGE_ROOT == op._DSL_PACKAGE_ROOTS[0]
        assert not op._is_framework_frame(__file__)
        assert not op._is_framework_frame(op._DSL_PACKAGE_ROOT + "_other/x.py")
        assert not op._is_framework_frame("")
    finally:
        op._DSL_PACKAGE_ROOT, op._DSL_PACKAGE_ROOTS = saved
        op._is_framework_frame.cache_clear()


def test_mlir_helpers_math_rcp_of_dsl_numbers_exact_or_approximate():
    """QuACK's sigmoid: cutlass._mlir_helpers.math.rcp(x, approx=True, ftz=True) of a Float32 is the hardware's
    approximate reciprocal; without approx it is the correctly rounded 1/x; a constant folds exactly; ftz without
    approx is refused at the user's line. The dialect's ops stay reachable under their own names."""
    from warpweave._mlir_helpers import math as mm

    assert float(mm.rcp(Float32(4.0)).value) == 0.25 and float(mm.rcp(Float32(-0.5), approx=True).value) == -2.0
    assert mm.exp2 is mmath.exp2

    def body(out, t):
        x = Float32(t) + 1.0
        out[t] = Int32(mm.rcp(x, approx=True, ftz=True) * 1000.0 + mm.rcp(x) * 1000.0)

    ptx = compile_body(body).ptx
    assert "rcp.approx.ftz.f32" in ptx and re.search(r"\b(rcp\.rn\.f32|div\.rn\.f32)", ptx), ptx[-2000:]
    raises_at(cutlass.DSLError, "ftz= needs approx", "FTZ", lambda out, t: mm.rcp(Float32(t), ftz=True))  # FTZ


def test_a_tensor_ssa_has_the_ir_vector_type_of_its_values():
    """QuACK's stochastic rounding reads `ir.VectorType(src_vec.type)` of a TensorSSA and extracts its lanes with
    the vector dialect: the type is that of the values' vector, and the lanes extracted are the values."""
    def body(out, t):
        frag = cute.make_rmem_tensor((8,), Float32)
        frag.fill(Float32(t))
        ssa = frag.load()
        vt = ir.VectorType(ssa.type)
        assert vt.shape == [8] and str(vt.element_type) == "f32"
        lane = vector.extract(ssa, dynamic_position=[], static_position=[vt.shape[0] - 1])
        out[t] = Int32(Float32(lane))

    assert compile_body(body).cubin
