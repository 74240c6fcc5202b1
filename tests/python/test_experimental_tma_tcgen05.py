"""cutlass.experimental.cuda's tensor maps and the tensor-copy / tcgen05 primitives of cutlass.experimental.
primitives: what a tensor map encodes at a call (the driver's fields, in the tensor map's order, from the call's
tensor and extents), the instruction descriptors' bit fields, the PTX the primitives emit, and errors at the user's
line where the target lacks an instruction."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.experimental.cuda as cuda
from warpweave import ext
from warpweave.experimental import primitives as prims

from dsl_helpers import line_in, target


def _encoded(monkeypatch, compiled, call_args):
    """[the attributes each tensor map's producer handed to the encoding hook] for one call of `compiled`."""
    seen = []

    def fake_host_call(backend, hook, attrs, size):
        seen.append(dict(attrs, backend=backend, hook=hook))
        return bytes(size)

    monkeypatch.setattr(ext, "host_call", fake_host_call)
    (env, _, _, _, tensors), _ = compiled._read_call(call_args, {})
    for h in compiled.host_arguments.values():
        assert len(h.value(tensors[h.tensor_index], env)) == 128
    return seen


@cute.kernel
def _two_maps(a: cuda.TensorMap, b: cuda.TensorMap):
    prims.prefetch_tensormap(a.get_ptr())
    prims.prefetch_tensormap(b.get_ptr())


@cute.jit
def _host_maps(x: cute.Tensor, y: cute.Tensor):
    # x: (M, K) row-major, mapped K innermost; y: the raw form, strides in 16-byte units
    a = cuda.create_tensor_map_tiled_from_view(x, box_dims=(32, 64), stride_order=(1, 0),
                                               swizzle=cuda.TensorMapSwizzle.s128b)
    b = cuda.create_tensor_map_tiled(global_address=y.iterator.toint(), dtype=cutlass.Float16,
                                     global_dims=[y.shape[1], y.shape[0]], global_strides=[y.shape[1] * 2 // 16],
                                     box_dims=[32, 16], swizzle=cuda.TensorMapSwizzle.s64b)
    assert a.box_dims == (64, 32) and a.global_tx_bytes().value == 64 * 32 * 2
    assert b.box_dims == (32, 16) and b.shared_storage_bytes == 32 * 16 * 2
    _two_maps(a, b).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_tensor_map_fields_follow_each_call(monkeypatch):
    fake = cute.runtime.make_fake_compact_tensor(cutlass.Float16, (cute.sym_int(), cute.sym_int(divisibility=16)),
                                                 stride_order=(1, 0))
    with target("sm_90a"):
        compiled = cute.compile(_host_maps, fake, fake)   # once: each call encodes its own extents
        for m, k in ((128, 64), (256, 192)):
            x = np.zeros((m, k), np.float16)
            y = np.zeros((m + 8, k), np.float16)
            seen = _encoded(monkeypatch, compiled,
                               (cute.runtime.from_dlpack(x).mark_compact_shape_dynamic(mode=1, divisibility=16)
                                .mark_compact_shape_dynamic(mode=0),
                                cute.runtime.from_dlpack(y).mark_compact_shape_dynamic(mode=1, divisibility=16)
                                .mark_compact_shape_dynamic(mode=0)))
            a, b = seen[0], seen[1]
            assert a["address"] == x.ctypes.data and b["address"] == y.ctypes.data
            # dimension 0 is the contiguous mode (K), its stride implicit; strides in bytes
            assert (a["rank"], a["dim0"], a["dim1"], a["stride1"]) == (2, k, m, k * 2)
            assert (a["box0"], a["box1"], a["swizzle"], a["data_type"]) == (64, 32, 3, 6)  # 128B; f16
            assert (b["dim0"], b["dim1"], b["stride1"], b["box0"], b["box1"]) == (k, m + 8, k * 2, 32, 16)
            assert b["swizzle"] == 2 and a["hook"] == "encode_tma_descriptor"


def test_tensor_map_packed_formats_are_blackwells():
    @cute.jit
    def host(x: cute.Tensor):
        cuda.create_tensor_map_tiled_from_view(x, box_dims=(8, 128), dtype=cutlass.Uint8,
                                               tma_format=cuda.TensorMapDataFormat.B4X16)

    fake = cute.runtime.make_fake_compact_tensor(cutlass.Uint8, (64, 128), stride_order=(1, 0))
    with target("sm_90a"):
        with pytest.raises(ext.DSLValueError, match="packed sub-byte formats") as e:
            cute.compile(host, fake)
    assert f"{__file__}:" in str(e.value) or "test_experimental_tma_tcgen05.py" in str(e.value)
    with target("sm_100a"):
        cute.compile(host, fake)


def test_swizzle_names_its_mma_layout():
    with target("sm_100a"):
        assert cuda.TensorMapSwizzle.s128b.to(prims.Tcgen05SmemSwizzle) == prims.Tcgen05SmemSwizzle.SWIZZLE_128B
        assert cuda.TensorMapSwizzle.s32b.to(prims.Tcgen05SmemSwizzle).value == 6
        with pytest.raises(TypeError):
            cuda.TensorMapSwizzle.s64b.to(int)


def test_instruction_descriptor_fields():
    with target("sm_100a"):
        d = prims.Tcgen05InstrDesc.build(c_dtype=cutlass.Float32, a_dtype=cutlass.BFloat16, b_dtype=cutlass.BFloat16,
                                         b_major=1, n_dim=96, m_dim=128)
        # [4,6) D f32 = 1, [7,10) / [10,13) A / B bf16 = 1, [16] B MN-major, [17,23) N >> 3, [24,29) M >> 4
        assert d.value == (1 << 4) | (1 << 7) | (1 << 10) | (1 << 16) | (12 << 17) | (8 << 24)
        assert (d.m_dim, d.n_dim, d.a_major, d.b_major) == (128, 96, 0, 1)
        f8 = prims.Tcgen05InstrDesc.build(c_dtype=cutlass.Float16, a_dtype=cutlass.Float8E5M2,
                                          b_dtype=cutlass.Float8E4M3FN, n_dim=8, m_dim=64)
        assert f8.value == (0 << 4) | (1 << 7) | (0 << 10) | (1 << 17) | (4 << 24)
        mx = prims.Tcgen05MxInstrDesc.build(a_dtype=cutlass.Float8E4M3FN, b_dtype=cutlass.Float8E4M3FN,
                                            scale_format=1, n_dim=256, m_dim=256)
        # [17,23) N >> 3, [23] ue8m0 scales, [27,29) M >> 7, scale-factor ids at [29,31) (A) and [4,6) (B)
        assert mx.value == (32 << 17) | (1 << 23) | (2 << 27)
        ids = mx.set_sf_ids(a_sf_id=3, b_sf_id=2)
        assert ids.value & 0xFFFFFFFF == mx.value | (3 << 29) | (2 << 4)
        assert isinstance(ids, prims.Tcgen05MxInstrDesc)
        with pytest.raises(ext.DSLValueError, match="multiple of 8"):
            prims.Tcgen05InstrDesc.build(c_dtype=cutlass.Float32, n_dim=100, m_dim=128)
        assert prims.TmemAddr.from_row_col(32, 17).value == (32 << 16) | 17


@cute.kernel
def _tma_copy_kernel(desc: cuda.TensorMap):
    smem = cutlass.Array(cutlass.Float16, (64, 64), space=cutlass.AddressSpace.smem)
    mbar = cutlass.Array(cutlass.Int64, 1, space=cutlass.AddressSpace.smem)
    prims.cp_async_bulk_tensor_shared_cta_global(smem, desc.get_ptr(), (0, 64), mbar)
    prims.cp_async_bulk_tensor_global_shared_cta(desc.get_ptr(), smem, (64, 0))


@cute.jit
def _tma_copy_host(x: cute.Tensor):
    _tma_copy_kernel(cuda.create_tensor_map_tiled_from_view(x, box_dims=(64, 64))).launch(grid=(1, 1, 1),
                                                                                         block=(32, 1, 1))


def test_tensor_copies_take_the_map_as_a_grid_constant():
    fake = cute.runtime.make_fake_compact_tensor(cutlass.Float16, (128, 128), stride_order=(1, 0))
    with target("sm_90a"):
        ptx = cute.compile(_tma_copy_host, fake, options="--keep-ptx").ptx
    assert re.search(r"\.param \.align 64 \.b8 \w+_param_0\[128\]", ptx)   # the map itself, by value
    assert "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx


@cute.kernel
def _prefetch_kernel(x: cute.Tensor):
    prims.prefetch_tensormap(x.iterator)


@cute.jit
def _prefetch_host(x: cute.Tensor):
    _prefetch_kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_tensor_copy_on_sm80_names_the_users_line():
    fake = cute.runtime.make_fake_compact_tensor(cutlass.Float16, (128, 128), stride_order=(1, 0))
    with target("sm_80"):
        with pytest.raises(ext.DSLError, match="tensor-copy engine") as e:
            cute.compile(_tma_copy_host, fake)   # the tensor map, made on the host
        where = line_in(__file__, "_tma_copy_kernel(cuda.create_tensor_map_tiled_from_view(")
        assert f"test_experimental_tma_tcgen05.py:{where}:" in str(e.value)
        with pytest.raises(ext.DSLError, match="sm_80") as e:
            cute.compile(_prefetch_host, fake)   # a primitive taking a map, in the kernel
        where = line_in(__file__, "prims.prefetch_tensormap(x.iterator)")
        assert f"test_experimental_tma_tcgen05.py:{where}:" in str(e.value)


@cute.kernel
def _mma_kernel():
    smem = cutlass.Array(cutlass.Float16, (128, 64), space=cutlass.AddressSpace.smem)
    tptr = cutlass.Array(cutlass.Int32, 1, space=cutlass.AddressSpace.smem)
    tmem = prims.make_tmem_ptr(tptr.load(), cutlass.Float32)
    desc = prims.Tcgen05SmemDesc.build(smem, leading_byte_offset=16, stride_byte_offset=1024,
                                       layout=prims.Tcgen05SmemSwizzle.SWIZZLE_128B)
    idesc = prims.Tcgen05InstrDesc.build(c_dtype=cutlass.Float32, n_dim=128, m_dim=128)
    prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, tmem, desc.advance_start_address(32), desc,
                      idesc, False, collector_op=prims.Tcgen05MMACollectorOp.LASTUSE)
    v = prims.tcgen05_ld("32x32b", tmem, num=2)
    prims.tcgen05_wait("load")
    shape, multicast = prims.S2TCopyMode.S2T_32x128b_WARPX4
    prims.tcgen05_cp(shape, tmem.subview(64), desc, multicast=multicast,
                     src_format=prims.Tcgen05CpSrcFormat.B6X16_P32)
    cute.printf("%f", v[1])


@cute.jit
def _mma_host():
    _mma_kernel().launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tcgen05_mma_with_runtime_descriptors():
    with target("sm_100a"):
        ptx = cute.compile(_mma_host, options="--keep-ptx").ptx
    assert "tcgen05.mma.cta_group::1.kind::f16.collector::a::lastuse [" in ptx
    assert "tcgen05.ld.sync.aligned.32x32b.x2.b32" in ptx and "tcgen05.wait::ld.sync.aligned;" in ptx
    assert "tcgen05.cp.cta_group::1.32x128b.warpx4.b8x16.b6x16_p32 [" in ptx


@cute.kernel
def _ashift_with_collector():
    tptr = cutlass.Array(cutlass.Int32, 1, space=cutlass.AddressSpace.smem)
    tmem = prims.make_tmem_ptr(tptr.load(), cutlass.Float32)
    idesc = prims.Tcgen05InstrDesc.build(c_dtype=cutlass.Float32, n_dim=128, m_dim=128)
    prims.tcgen05_mma(prims.Tcgen05MMAKind.F16, prims.CTAGroup.CTA_1, tmem, tmem, cutlass.Int64(0), idesc, True,
                      a_shift=True, collector_op=prims.Tcgen05MMACollectorOp.FILL)


@cute.jit
def _ashift_host():
    _ashift_with_collector().launch(grid=(1, 1, 1), block=(128, 1, 1))


def test_tcgen05_mma_qualifiers_ptx_refuses_together_name_the_line():
    with target("sm_100a"):
        with pytest.raises(ext.DSLError, match="collector") as e:
            cute.compile(_ashift_host)
    where = line_in(__file__, "a_shift=True, collector_op=prims.Tcgen05MMACollectorOp.FILL")
    assert f"test_experimental_tma_tcgen05.py:{where - 1}:" in str(e.value)


def test_tcgen05_on_sm90a_names_the_users_line():
    with target("sm_90a"):
        with pytest.raises(ext.DSLError) as e:
            cute.compile(_mma_host)
    where = line_in(__file__, "desc = prims.Tcgen05SmemDesc.build(smem")
    assert f"test_experimental_tma_tcgen05.py:{where}:" in str(e.value) and "sm_90a" in str(e.value)


@cute.kernel
def _one_map(a: cuda.TensorMap):
    prims.prefetch_tensormap(a.get_ptr())


@cute.jit
def _host_pointer_map(p: cute.Pointer, m: cutlass.Int32, k: cutlass.Int32):
    t = cute.make_tensor(p, cute.make_layout((k, m), stride=(1, k)))
    _one_map(cuda.create_tensor_map_tiled_from_view(t, box_dims=(64, 16))).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_tensor_map_over_a_pointer_argument(monkeypatch):
    """A tensor made over a pointer argument, with extents from integer arguments: its map takes the call's address
    and extents."""
    make_ptr = cute.runtime.make_ptr
    with target("sm_90a"):
        compiled = cute.compile(_host_pointer_map, make_ptr(cutlass.Float16, 0, cute.AddressSpace.gmem,
                                                            assumed_align=16), cutlass.Int32(1), cutlass.Int32(1))
        for m, k in ((32, 64), (48, 128)):
            (a,) = _encoded(monkeypatch, compiled, (make_ptr(cutlass.Float16, 0x10000, cute.AddressSpace.gmem,
                                                             assumed_align=16), m, k))
            assert (a["address"], a["dim0"], a["dim1"], a["stride1"], a["box0"], a["box1"]) == \
                (0x10000, k, m, 2 * k, 64, 16)


@cute.kernel
def _replace_kernel(words: cute.Tensor, rows: cutlass.Int32):
    desc = words.iterator
    prims.tensormap_replace(prims.TensormapField.GLOBAL_DIM, desc, new_value=rows, ord=1)
    prims.tensormap_replace(prims.TensormapField.GLOBAL_ADDRESS, desc, new_value=cutlass.Int64(4096))


@cute.jit
def _replace_host(words: cute.Tensor, rows: cutlass.Int32):
    _replace_kernel(words, rows).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_tensormap_replace_fields(arch):
    words = cute.runtime.make_fake_compact_tensor(cutlass.Int64, (16,))
    with target(arch):
        ptx = cute.compile(_replace_host, words, cutlass.Int32(1), options="--keep-ptx").ptx
    assert re.search(r"tensormap\.replace\.tile\.global_dim\.global\.b1024\.b32 \[%rd\d+\], 1, %r\d+;", ptx)
    assert re.search(r"tensormap\.replace\.tile\.global_address\.global\.b1024\.b64 \[%rd\d+\], %rd\d+;", ptx)
