"""kind::mxf8f6f4 with 6- and 4-bit operands (Float6E2M3FN, Float6E3M2FN, Float4E2M1FN), without a GPU.

- The block-scaled MMA takes A and B of any of its five formats (PTX ISA, tcgen05.mma: atype / btype of the
  instruction descriptor, e4m3 0, e5m2 1, e2m3 3, e3m2 4, e2m1 5); its 6- and 4-bit operands, K- or MN-major (the
  kind transposes), are read from shared memory unpacked, 16 elements filling 16 bytes, so their tiles are 8-bit
  (Uint8) ones, described as such.
- TMA unpacks them on the way in: a 6-bit tensor, or a 4-bit one loaded with internal_type=Uint8, gets the tensor
  map data type 16U6_ALIGN16B (15) or 16U4_ALIGN16B (14), its extents in elements, its byte strides those of the
  dense global rows; a load counts the bytes it reads (elements x 6 or 4 bits), not the padding it writes.
"""
from __future__ import annotations

import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute

from test_backend_blackwell import _instr_desc, blackwell  # noqa: F401
from test_blockscaled_mma import _compile_fp4_tma_kernel, _compile_nvfp4_mma, recording_encoder, tc

CODES = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
DSL = {"e4m3": cutlass.Float8E4M3FN, "e5m2": cutlass.Float8E5M2, "e2m3": cutlass.Float6E2M3FN,
       "e3m2": cutlass.Float6E3M2FN, "e2m1": cutlass.Float4E2M1FN}


@pytest.mark.parametrize("a,b", [("e2m3", "e4m3"), ("e4m3", "e3m2"), ("e2m1", "e5m2"), ("e3m2", "e2m1"),
                                 ("e2m3", "e2m3")])
def test_sub_byte_pairs_select_the_mixed_atom(a, b):
    import warpweave.utils.blackwell_helpers as sm100

    t = tc()
    K = cutlass.cute.nvgpu.OperandMajorMode.K
    op = t.MmaMXF8F6F4Op(DSL[a], DSL[b], (128, 64, 32), t.CtaGroup.ONE)
    assert op.entry()[1]["id"] == f"blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.{a}x{b}.f32.ue8m0.ss"
    assert (op.a_dtype, op.b_dtype, op.sf_vec_size) == (DSL[a], DSL[b], 32)
    tm = sm100.make_blockscaled_trivial_tiled_mma(DSL[a], DSL[b], K, K, cutlass.Float8E8M0FNU, 32,
                                                  t.CtaGroup.TWO, (256, 128))
    assert type(tm.op).__name__ == "MmaMXF8F6F4Op"
    assert tm.op.entry()[1]["id"] == f"blackwell.tcgen05.mma.cta2.mxf8f6f4.m256n128k32.{a}x{b}.f32.ue8m0.ss"
    d = _instr_desc({"atom": tm.op.entry()[1]["id"]})
    assert ((d >> 7) & 7, (d >> 10) & 7) == (CODES[a], CODES[b])


def test_two_4bit_operands_keep_the_4bit_kinds():
    import warpweave.utils.blackwell_helpers as sm100

    t = tc()
    K = cutlass.cute.nvgpu.OperandMajorMode.K
    fp4 = cutlass.Float4E2M1FN
    tm = sm100.make_blockscaled_trivial_tiled_mma(fp4, fp4, K, K, cutlass.Float8E8M0FNU, 32, t.CtaGroup.ONE,
                                                  (128, 128))
    assert type(tm.op).__name__ == "MmaMXF4Op"


def test_sub_byte_operands_may_be_mn_major_where_the_kind_transposes():
    # PTX ISA, tcgen05.mma "Transpose and Negate operations": kind::mxf8f6f4 transposes A and B, its 6- and 4-bit
    # formats too (CuTe DSL's block-scaled GEMM runs an M-major Float6E3M2FN A so); kind::mxf4 and kind::mxf4nvf4
    # do not, which is refused at the user's line, naming the rule
    import warpweave.utils.blackwell_helpers as sm100

    t = tc()
    K, MN = cutlass.cute.nvgpu.OperandMajorMode.K, cutlass.cute.nvgpu.OperandMajorMode.MN
    op = t.MmaMXF8F6F4Op(cutlass.Float6E2M3FN, cutlass.Float8E4M3FN, (128, 64, 32), t.CtaGroup.ONE,
                         t.OperandSource.SMEM, MN, K)
    assert (op.a_major_mode, op.b_major_mode) == (MN, K)
    tm = sm100.make_blockscaled_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float4E2M1FN, K, MN,
                                                  cutlass.Float8E8M0FNU, 32, t.CtaGroup.ONE, (128, 128))
    assert type(tm.op).__name__ == "MmaMXF8F6F4Op" and tm.op.b_major_mode == MN
    fp4 = cutlass.Float4E2M1FN
    with pytest.raises(Exception, match=r"test_subbyte_mxf8f6f4.py:\d+: .*kind::mxf4 or kind::mxf4nvf4, which "
                                        "cannot transpose"):
        sm100.make_blockscaled_trivial_tiled_mma(fp4, fp4, MN, K, cutlass.Float8E8M0FNU, 32, t.CtaGroup.ONE,
                                                 (128, 128))
    with pytest.raises(Exception, match=r"test_subbyte_mxf8f6f4.py:\d+: .*kind::mxf4nvf4 cannot transpose its "
                                        "operands, so B must be K-major"):
        t.BlockScaledMmaOp.__init__(t.MmaMXF4NVF4Op.__new__(t.MmaMXF4NVF4Op), fp4, fp4, cutlass.Float32,
                                    cutlass.Float8E4M3FN, 16, (128, 64, 64), t.CtaGroup.ONE, t.OperandSource.SMEM,
                                    K, MN)   # CuTe DSL's general constructor, as libraries' subclasses call it
    # the descriptor hook sets the transpose bits of the sub-byte formats, and refuses them for the 4-bit kinds
    for a in ("e2m3", "e3m2", "e2m1"):
        d = _instr_desc({"atom": f"blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.{a}xe4m3.f32.ue8m0.ss",
                         "a_major": "MN"})
        assert (d >> 15) & 1 == 1 and (d >> 16) & 1 == 0 and (d >> 7) & 7 == CODES[a]
    d = _instr_desc({"atom": "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.e2m3xe4m3.f32.ue8m0.ss",
                     "b_major": "MN"})
    assert (d >> 16) & 1 == 1 and (d >> 15) & 1 == 0
    with pytest.raises(Exception, match="kind::mxf4nvf4 cannot transpose"):
        _instr_desc({"atom": "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n64k64.e2m1.f32.ue4m3.ss", "a_major": "MN"})


def _descriptor_constants(ptx):
    """The constant fields OR-ed into the kernel's shared-memory descriptors (swizzle, SBO, LBO, version)."""
    return sorted(set(int(x) for x in re.findall(r"or\.b64\s+%rd\d+,\s*%rd\d+,\s*(\d{12,});", ptx)))


@pytest.mark.parametrize("a,b", [("e2m3", "e4m3"), ("e2m1", "e3m2")])
def test_kernel_reads_sub_byte_tiles_as_8bit_ones(a, b):
    fp8 = _compile_nvfp4_mma(k_tile=128, mxf8=True)
    sub = _compile_nvfp4_mma(k_tile=128, mxf8=True, mxf8_types=(DSL[a], DSL[b]))
    ptx = sub.info["ptx"]
    lines = [l for l in ptx.splitlines() if "tcgen05.mma" in l]
    assert len(lines) == 4 and all("kind::mxf8f6f4.block_scale.scale_vec::1X" in l for l in lines), lines
    for kb in range(4):
        d = _instr_desc({"atom": f"blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n256k32.{a}x{b}.f32.ue8m0.ss",
                         "sfa_id": kb, "sfb_id": kb})
        assert ((d >> 7) & 7, (d >> 10) & 7) == (CODES[a], CODES[b])
        assert re.search(rf"\b{d}\b", ptx), hex(d)
    # one byte an element in shared memory: the descriptors' fields are the 8-bit kernel's
    assert _descriptor_constants(ptx) == _descriptor_constants(fp8.info["ptx"])
    assert sub.cubin    # ptxas assembled it for sm_100a


# --- TMA: unpacking loads ---------------------------------------------------------------------------------------------

def _tma_atoms(a_type, b_type, internal=cutlass.Uint8, m=128, n=256, k=1024, a_major="K"):
    """make_tiled_tma_atom_A/B over (M, K, 1) / (N, K, 1) tensors of a_type / b_type (A K- or M-major, B K-major)
    into Uint8 tiles of a mixed kind::mxf8f6f4 MMA (tile K 128)."""
    from warpweave.cute.nvgpu import cpasync
    from warpweave.cute.runtime import make_ptr
    import warpweave.utils.blackwell_helpers as sm100

    from dsl_helpers import target

    t = tc()
    made = {}
    tiler = (m, n, 128)

    @cute.jit
    def host(a_ptr: cute.Pointer, b_ptr: cute.Pointer):
        major = t.OperandMajorMode[a_major]
        tm = cute.make_tiled_mma(t.MmaMXF8F6F4Op(cutlass.Float6E2M3FN, cutlass.Float8E4M3FN, (m, n, 32),
                                                 t.CtaGroup.ONE, t.OperandSource.SMEM, major))
        a = cute.make_tensor(a_ptr, cute.make_layout((m, k, 1), stride=(k, 1, m * k) if a_major == "K"
                                                     else (1, m, m * k)))
        b = cute.make_tensor(b_ptr, cute.make_layout((n, k, 1), stride=(k, 1, n * k)))
        copy_op = cpasync.CopyBulkTensorTileG2SOp(t.CtaGroup.ONE)
        for which, x, make, tiled in (("A", a, sm100.make_smem_layout_a, cute.nvgpu.make_tiled_tma_atom_A),
                                      ("B", b, sm100.make_smem_layout_b, cute.nvgpu.make_tiled_tma_atom_B)):
            staged = make(tm, tiler, cutlass.Uint8, 2)
            atom, _ = tiled(copy_op, x, cute.slice_(staged, (None, None, None, 0)), tiler, tm, (1, 1, 1, 1),
                            internal_type=internal)
            made[which] = atom

    ptr = lambda dt, a: make_ptr(dt, a, cute.AddressSpace.gmem, assumed_align=32)  # noqa: E731
    with target("sm_100a"):
        cute.compile(host, ptr(a_type, 0x10000), ptr(b_type, 0x80000))
    return made


def test_unpacking_tma_atoms():
    made = _tma_atoms(cutlass.Float6E2M3FN, cutlass.Float4E2M1FN)
    for which, rows, bits, code in (("A", 128, 6, 15), ("B", 256, 4, 14)):
        atom = made[which]
        # a 128-element K row fills one 128-byte swizzled row of bytes; the box counts elements
        assert atom.pack == 1 and atom.element_type is cutlass.Uint8 and atom.swizzle == 128
        assert atom.box == (128, min(rows, 256), 1) and atom.dims == [1, 0, 2]
        assert atom.smem_bytes == rows * 128 * bits // 8     # what the load reads, not the padding it writes
        attrs = atom.tma_desc.attrs
        assert (attrs["data_type"], attrs["gbits"], attrs["ebytes"], attrs["pack"]) == (code, bits, 1, 1)


@pytest.mark.parametrize("a_type,bits,code", [(cutlass.Float6E3M2FN, 6, 15), (cutlass.Float4E2M1FN, 4, 14)])
def test_unpacking_tma_atom_of_an_m_major_operand(a_type, bits, code):
    # M-major A: the tensor map's first dimension is M (16 elements of it fill 16 bytes of shared memory), the box
    # 128 M elements (one 128-byte swizzled row of bytes) by the tile's 128 K; as CuTe DSL's block-scaled GEMM
    # loads an M-major Float6E3M2FN A (its box (128, 128) of 6-bit elements, M first)
    atom = _tma_atoms(a_type, cutlass.Float8E4M3FN, m=128, k=512, a_major="MN")["A"]
    assert atom.element_type is cutlass.Uint8 and atom.swizzle == 128
    assert atom.box == (128, 128, 1) and atom.dims == [0, 1, 2]
    assert atom.smem_bytes == 128 * 128 * bits // 8
    attrs = atom.tma_desc.attrs
    assert (attrs["data_type"], attrs["gbits"], attrs["ebytes"]) == (code, bits, 1)


def test_a_6bit_tensor_unpacks_without_internal_type_and_a_4bit_one_stays_packed():
    made = _tma_atoms(cutlass.Float6E3M2FN, cutlass.Float8E4M3FN, internal=None)
    assert made["A"].tma_desc.attrs["data_type"] == 15 and made["A"].element_type is cutlass.Uint8
    assert made["B"].tma_desc.attrs["data_type"] == "u8" and "gbits" not in made["B"].tma_desc.attrs
    from warpweave.backends.hopper import tma

    assert tma.unpacked_bits(cutlass.Float4E2M1FN, None) == 0
    assert tma.unpacked_bits(cutlass.Float4E2M1FN, cutlass.Uint8) == 4
    assert tma.unpacked_bits(cutlass.Float8E4M3FN, cutlass.Uint8) == 0


def test_unpacking_stores_are_refused_at_the_users_line():
    from warpweave.cute.nvgpu import cpasync
    from warpweave.cute.runtime import make_ptr

    from dsl_helpers import target

    def tma_of_fp6(op, arch):
        @cute.jit
        def host(a_ptr: cute.Pointer):
            a = cute.make_tensor(a_ptr, cute.make_layout((128, 1024), stride=(1024, 1)))
            smem = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0,
                                             cute.make_layout((128, 128), stride=(128, 1)))
            cpasync.make_tiled_tma_atom(op, a, smem, (128, 128), internal_type=cutlass.Uint8)

        with target(arch):
            cute.compile(host, make_ptr(cutlass.Float6E2M3FN, 0x10000, cute.AddressSpace.gmem, assumed_align=32))

    tma_of_fp6(cpasync.CopyBulkTensorTileG2SOp(), "sm_100a")
    with pytest.raises(Exception, match=r"test_subbyte_mxf8f6f4.py:\d+: .*unpacks Float6E2M3FN values into shared "
                                        "memory on loads only"):
        tma_of_fp6(cpasync.CopyBulkTensorTileS2GOp(), "sm_100a")


def test_unpacking_descriptor_counts_elements_and_dense_bytes(monkeypatch):
    tma, seen, T = recording_encoder(monkeypatch)
    kw = dict(rank=3, swizzle="128B", dims="1,0,2", ebytes=1, pack=1, box0=128, box1=128, box2=1,
              backend="blackwell", hook="encode_tma_descriptor")
    tma.encode_descriptor(T(), data_type=15, gbits=6, offset=128, **kw)
    # extents in elements; 1024 6-bit elements are 768 bytes a row; 128 elements of offset are 96 bytes
    assert (seen["dim0"], seen["dim1"], seen["dim2"]) == (1024, 512, 3)
    assert (seen["stride1"], seen["stride2"]) == (768, 768 * 512)
    assert seen["address"] == 0x10000 + 96 and seen["data_type"] == 15
    tma.encode_descriptor(T(), data_type=14, gbits=4, **kw)
    assert (seen["dim0"], seen["stride1"], seen["stride2"]) == (1024, 512, 512 * 512)
    # a row pitch of 416 bytes seen as 554 6-bit elements (415.5 bytes) is the 16-byte step it came from
    assert [tma.unpacked_stride(e, 6) for e in (554, 555, 1024)] == [416, 416, 768]
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        tma.unpacked_stride(547, 6)         # 410.25 bytes: no 16-byte step within a byte
    T.stride = (1000, 1, 512 * 1000)        # 750 bytes: whole, not a multiple of 16
    with pytest.raises(ValueError, match="multiples of 16"):
        tma.encode_descriptor(T(), data_type=15, gbits=6, **kw)


def test_unpacking_descriptor_c_form_scales_by_the_element_bits():
    from warpweave.backends.hopper import tma_export

    class C:
        name, data, rank = "a", "a_data", 3

    _, body = tma_export.descriptor_c(C(), "dst", data_type=15, rank=3, swizzle="128B", dims="1,0,2", ebytes=1,
                                      gbits=6, offset=128, extent0=1024, extent1=512, extent2=1, gstride0=1,
                                      gstride1="a_s1", gstride2="a_s2", box0=128, box1=128, box2=1)
    assert "(int64_t)(128) * 6 / 8" in body
    assert "(a_s1)) * 6 + 64) / 128 * 16" in body and "within a byte of whole bytes" in body
    assert "cuTensorMapEncodeTiled(map, 15, 3" in body


def test_unpacking_load_kernel():
    # A (128 x 128 Float6E2M3FN) and B (256 x 128 Float4E2M1FN) into Uint8 tiles, as QuACK loads them
    compiled = _compile_fp4_tma_kernel(cutlass.Float6E2M3FN, cutlass.Float4E2M1FN, cutlass.Uint8, cutlass.Uint8, 128)
    ptx = compiled.info["ptx"]
    loads = re.findall(r"cp\.async\.bulk\.tensor\.3d[^\n]*", ptx)
    assert len(loads) == 2, loads
    # the bytes read: 128 x 128 6-bit values of A (12 KiB) and 256 x 128 4-bit values of B (16 KiB)
    assert "mbarrier.arrive.expect_tx" in ptx and re.search(r"\b28672\b", ptx), ptx[-3000:]
    # the K coordinate of the boxes counts elements: k-tile * 128 (blockIdx.y << 7)
    assert re.search(r"shl\.b32\s+%r\d+,\s+%r\d+,\s+7;", ptx), ptx[-3000:]
    assert compiled.cubin
