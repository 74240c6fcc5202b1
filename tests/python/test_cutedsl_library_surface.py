"""What CuTe DSL libraries (QuACK) call besides the IR: every cute function and tensor method takes `loc=` / `ip=`
as their @dsl_user_op helpers pass them on, `cute.size` of a tiled copy, CuTe DSL's names of backend operations
(`warp.MmaFP8Op`, `cpasync.ReductionOp`, `CopyReduceBulkTensorTileS2GOp`), and `base_dsl.runtime.cuda`."""
import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_compact_tensor, make_fake_tensor
from warpweave.cutlass_dsl import Float32, Int32, dsl_user_op

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


@dsl_user_op
def copy_row(src, dst, i, *, loc=None, ip=None):
    """A library helper: passes its loc/ip on to every cute call, as QuACK's do."""
    shape = cute.shape(src, loc=loc, ip=ip)
    n = cute.size(shape, mode=[1], loc=loc, ip=ip)
    frag = cute.make_rmem_tensor_like(src[i, None], loc=loc, ip=ip)
    frag.store(src.__getitem__((i, None), loc=loc, ip=ip).load(loc=loc, ip=ip), loc=loc, ip=ip)
    cute.autovec_copy(frag, dst[i, None], loc=loc, ip=ip)
    return n


@cute.kernel
def rows_kernel(src: cute.Tensor, dst: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    copy_row(src, dst, tidx)


@cute.jit
def rows_host(src: cute.Tensor, dst: cute.Tensor):
    rows_kernel(src, dst).launch(grid=[1, 1, 1], block=[8, 1, 1])


def test_cute_calls_and_tensor_methods_take_loc_and_ip():
    src = make_fake_compact_tensor(cutlass.Float32, (8, 4), stride_order=(1, 0))
    with target("sm_80"):
        c = cute.compile(rows_host, src, src)
    assert c.cubin


def test_size_of_a_tiled_copy_is_its_threads():
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    tc = cute.make_tiled_copy_tv(atom, cute.make_layout((4, 32), stride=(32, 1)), cute.make_layout((1, 4)))
    assert cute.size(tc) == 128


def test_cutedsl_names_of_backend_operations():
    warp, cpasync = cute.nvgpu.warp, cute.nvgpu.cpasync
    op = warp.MmaFP8Op(cutlass.Float8E4M3FN, cutlass.Float32, (16, 8, 32))
    assert isinstance(op, cute.nvgpu.warp.MmaFP8Op) and op.ab_dtype is cutlass.Float8E4M3FN
    assert "a_dtype=Float8E4M3FN, b_dtype=Float8E4M3FN" in repr(op)  # the manifest's op, both inputs of one type
    red = cpasync.CopyReduceBulkTensorTileS2GOp(cpasync.ReductionOp.ADD)
    assert red.reduction_op is cpasync.ReductionOp.ADD and cpasync.ReductionKind is cpasync.ReductionOp
    with pytest.raises(TypeError, match="reduction_op must be a cpasync.ReductionOp"):
        cpasync.CopyReduceBulkTensorTileS2GOp("add")


@cute.jit
def reduce_store_host(t: cute.Tensor):
    smem = cute.make_layout((16, 16), stride=(16, 1))
    cute.nvgpu.cpasync.make_tiled_tma_atom(  # BADR
        cute.nvgpu.cpasync.CopyReduceBulkTensorTileS2GOp(cute.nvgpu.cpasync.ReductionOp.MIN), t, smem, (16, 16))


def test_a_tma_reduction_the_type_lacks_is_refused_at_the_users_line():
    t = make_fake_tensor(cutlass.Float32, (64, 64), (64, 1), assumed_align=16)
    with pytest.raises(TypeError, match="reduction MIN does not combine Float32") as e, target("sm_90a"):
        cute.compile(reduce_store_host, t)
    assert e.value.location == (THIS, line_in(THIS, "# BADR"))


def test_runtime_cuda_helpers():
    driver = pytest.importorskip("cuda.bindings.driver")
    from warpweave.base_dsl.runtime.cuda import checkCudaErrors, load_cubin_module_data

    assert checkCudaErrors((driver.CUresult.CUDA_SUCCESS,)) is None
    assert checkCudaErrors((driver.CUresult.CUDA_SUCCESS, 7)) == 7
    assert checkCudaErrors((driver.CUresult.CUDA_SUCCESS, 7, 8)) == (7, 8)
    with pytest.raises(RuntimeError, match=r"CUDA error 1 \(CUDA_ERROR_INVALID_VALUE\)"):
        checkCudaErrors((driver.CUresult.CUDA_ERROR_INVALID_VALUE, None))
    with pytest.raises(RuntimeError, match="takes the cubin's bytes"):
        load_cubin_module_data("not bytes")


def test_runtime_cuda_names_the_driver_and_reads_device_attributes(monkeypatch):
    """`cuda` is the driver bindings (QuACK reads its CUdevice_attribute and wraps get_device_attribute in its
    compile workers); get_device_attribute is the driver's value, or a CUDA error naming the attribute."""
    driver = pytest.importorskip("cuda.bindings.driver")
    from warpweave.base_dsl.runtime import cuda as rt

    assert rt.cuda is driver
    attr = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    ok, bad = driver.CUresult.CUDA_SUCCESS, driver.CUresult.CUDA_ERROR_INVALID_DEVICE

    class Driver:
        def __init__(self, err):
            self.err, self.asked = err, []

        def cuInit(self, flags):  # noqa: N802 - the driver's name
            return (ok,)

        def cuDeviceGetAttribute(self, attribute, device):  # noqa: N802
            self.asked.append((attribute, device))
            return self.err, 233472

    fake = Driver(ok)
    monkeypatch.setattr(rt, "_driver", fake)
    assert rt.get_device_attribute(attr, 1) == 233472 and fake.asked == [(attr, 1)]
    monkeypatch.setattr(rt, "_driver", Driver(bad))
    with pytest.raises(RuntimeError, match="MAX_SHARED_MEMORY_PER_MULTIPROCESSOR.*CUDA_ERROR_INVALID_DEVICE"):
        rt.get_device_attribute(attr)


def test_operations_not_built_yet_are_named_and_refused_where_made():
    """Libraries list CuTe DSL's operations in tables at import (QuACK's copy_utils): the names exist, and making one
    the backend does not build is an error at the user's line."""
    tcgen05 = cute.nvgpu.tcgen05
    for name in ("Ld16x32bx2Op", "St16x32bx2Op", "LdRed16x32bx2Op", "LdRed32x32bOp"):
        cls = getattr(tcgen05, name)
        with pytest.raises(NotImplementedError, match=f"tcgen05.{name} .* not built by the Blackwell backend") as e:
            cls(tcgen05.Repetition.x1)  # BADT
        assert e.value.location == (THIS, line_in(THIS, "# BADT"))
    with pytest.raises(TypeError, match="block_copy: expected a TMA atom") as e:
        cutlass.utils.block_copy(None, None, None)  # BADB
    assert e.value.location == (THIS, line_in(THIS, "# BADB"))


@cute.kernel
def partition_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    a = smem.allocate_tensor(Int32, cute.make_layout(32), partition=cutlass.utils.SmemPartition.RESERVED)
    b = smem.allocate_array(Int32, 32, partition=cutlass.utils.SmemPartition.USER)
    a[tidx] = tidx
    cute.arch.sync_threads()
    out[tidx] = a[31 - tidx] + cute.make_tensor(b, cute.make_layout(32))[tidx] * 0


@cute.jit
def partition_host(out: cute.Tensor):
    partition_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_shared_memory_partitions_are_accepted():
    with target("sm_80"):
        assert cute.compile(partition_host, make_fake_compact_tensor(cutlass.Int32, (32,))).cubin
    with pytest.raises(TypeError, match="partition must be a SmemPartition"), target("sm_80"):
        cute.compile(bad_partition_host, make_fake_compact_tensor(cutlass.Int32, (32,)))


@cute.kernel
def bad_partition_kernel(out: cute.Tensor):
    cutlass.utils.SmemAllocator().allocate_array(Int32, 32, partition="reserved")


@cute.jit
def bad_partition_host(out: cute.Tensor):
    bad_partition_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


# --- what QuACK's norms, cross-entropy and top-k reach for on the GPU --------------------------------------------

_TOINT = {}


@cute.kernel
def _inline_ptx_kernel(x: cute.Tensor, n: cutlass.Int32):
    smem = cutlass.utils.SmemAllocator()
    buf = smem.allocate_array(cutlass.Float32, 4, byte_alignment=16)
    # a shared-memory address is 32 bits, a global one 64, and both known only when the kernel runs
    _TOINT["smem"] = (type(buf.toint()), buf.toint().is_static)
    _TOINT["gmem"] = (type(x.iterator.toint()), x.iterator.toint().is_static)
    cute.arch.inline_ptx("st.shared.f32 [{$r0}], {$r1};", read_only_args=[buf.toint(), cutlass.Float32(1.5)])
    cute.arch.inline_ptx("{\n\t.reg .s32 t;\n\tadd.s32 t, {$r0}, {$r1};\n\t}", read_only_args=[n, 7])
    cute.arch.inline_ptx("st.global.f32 [{$r0}], {$r1};", read_only_args=[x.iterator, 2.0])


@cute.jit
def _inline_ptx_host(x: cute.Tensor, n: cutlass.Int32):
    _inline_ptx_kernel(x, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_inline_ptx_reads_its_operands_in_their_registers():
    with target("sm_90a"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        ptx = cute.compile(_inline_ptx_host, t, 3).ptx
    assert _TOINT == {"smem": (cutlass.Int32, False), "gmem": (cutlass.Int64, False)}
    assert "st.shared.f32 [%r" in ptx and "st.global.f32 [%rd" in ptx     # 32- and 64-bit addresses
    assert re.search(r"add\.s32 t, %r\d+, %r\d+;", ptx)                    # n and 7 in 32-bit registers


@pytest.mark.parametrize("ptx, args, what", [
    ("mov.b32 %r1, {$r2};", [1, 2], r"reads \{\$r2\}, but read_only_args has 2 values"),
    ("mov.b32 $0, {$r0};", [1], "a '\\$' outside an operand"),
    ("nop;", ["x"], r"read_only_args\[0\] is a number or a pointer, got str"),
    ("", [], "non-empty string"),
])
def test_inline_ptx_refuses_at_the_users_line(ptx, args, what):
    @cute.kernel
    def k(x: cute.Tensor):
        cute.arch.inline_ptx(ptx, read_only_args=args)  # the-inline-line

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"), pytest.raises(Exception, match=what) as e:
        cute.compile(host, make_fake_tensor(cutlass.Float32, (8,), (1,)))
    assert f"{os.path.basename(THIS)}:{line_in(THIS, '# the-inline-line')}" in str(e.value)


def test_memspaces_compare_with_cute_address_spaces():
    """QuACK tests `t.memspace != cute.AddressSpace.rmem` before converting a fragment."""
    assert cute.AddressSpace.rmem == "rmem" and cute.AddressSpace.smem != "rmem"
    seen = {}

    @cute.kernel
    def k(x: cute.Tensor):
        frag = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        seen["rmem"] = frag.memspace == cute.AddressSpace.rmem and frag.memspace != cute.AddressSpace.gmem
        seen["gmem"] = x.memspace == cute.AddressSpace.gmem

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        cute.compile(host, make_fake_tensor(cutlass.Float32, (8,), (1,)))
    assert seen == {"rmem": True, "gmem": True}


def test_dsl_numbers_are_tvm_ffi_arguments():
    """QuACK passes Int32(ignore_index) to functions compiled with --enable-tvm-ffi."""
    tvm_ffi = pytest.importorskip("tvm_ffi")
    echo = tvm_ffi.convert(lambda *a: a)
    assert tuple(echo(cutlass.Int32(-100), cutlass.Float32(2.5), cutlass.Boolean(True), cutlass.Uint8(7))) == \
        (-100, 2.5, 1, 7)


@pytest.mark.parametrize("pred_shape, ok", [((1, 1, 1), True), ((2, 1, 1), True), ((8, 1, 1), True),
                                            ((3, 1, 1), False)])
def test_a_predicate_per_block_of_the_value_mode(pred_shape, ok):
    """QuACK predicates a row of eight floats, copied 128 bits (two atom instances) at a time, with one Boolean: a
    predicate tensor may have one per element, one per atom instance, or one per block of the source's first
    mode; any other count is refused at the user's line."""
    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        frag = cute.make_rmem_tensor(cute.make_layout(((8, 1), 1, 1)), cutlass.Float32)
        frag.fill(1.0)
        pred = cute.make_rmem_tensor(cute.make_layout(pred_shape), cutlass.Boolean)
        for i in cutlass.range_constexpr(cute.size(pred)):
            pred[i] = tidx + i < n
        dst = cute.make_tensor(x.iterator, cute.make_layout(((8, 1), 1, 1)))
        atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits_per_copy=128)
        cute.copy(atom, frag, dst, pred=pred)  # the-pred-copy

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        t = make_fake_tensor(cutlass.Float32, (64,), (1,), assumed_align=16)
        if ok:
            ptx = cute.compile(host, t, 5).ptx
            assert ptx.count("st.global.v4") + ptx.count("st.global.f32") + ptx.count("st.global.b32") >= 2
        else:
            with pytest.raises(Exception, match=r"pred has 3 predicates; the copy has 8 elements") as e:
                cute.compile(host, t, 5)
            assert f"{os.path.basename(THIS)}:{line_in(THIS, '# the-pred-copy')}" in str(e.value)
