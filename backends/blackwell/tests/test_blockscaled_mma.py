"""The block-scaled tcgen05 MMA (kind::mxf4nvf4 .block_scale.scale_vec::4X), without a GPU.

- tcgen05.MmaMXF4NVF4Op(sf_dtype, instruction_shape, cta_group, a_src), CuTe DSL's constructor, selects the
  manifest's atom and refuses what the instruction cannot do at the user's line.
- Its instruction descriptor against the PTX ISA's block-scaled form, bit by bit: [4,6) SFB id, [7,10) A format,
  [10,12) B format (E2M1 = 1 for the 4-bit kinds), [13]/[14] negate A/B, [17,23) N >> 3, [23] scale type (UE4M3 0,
  UE8M0 1), [24,27) reserved, [27,29) M >> 7, [29,31) SFA id, [31] 0 (K = 64); no D format (D is f32).
- The atoms assemble with ptxas for sm_100a, the PTX holding the instruction and the SASS UTCOMMA (.2CTA for a pair).
- 4-bit operands in shared memory: make_smem_layout_atom of Float4E2M1FN and the UMMA descriptor's form of a tile
  of it (packed two to a byte: 128-byte swizzled rows of 256 elements).
"""
from __future__ import annotations

import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core

from test_backend_blackwell import _instr_desc, _probe, _ptx_pattern, _sass_opcodes, blackwell  # noqa: F401


def tc():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


def test_op_selects_its_atom():
    t = tc()
    cases = [
        (t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 256, 64), t.CtaGroup.ONE, t.OperandSource.SMEM),
         "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n256k64.e2m1.f32.e4m3.ss"),
        (t.MmaMXF4NVF4Op(cutlass.Float8E8M0FNU, (256, 128, 64), t.CtaGroup.TWO),
         "blackwell.tcgen05.mma.cta2.mxf4nvf4.m256n128k64.e2m1.f32.ue8m0.ss"),
    ]
    for op, ident in cases:
        assert op.entry()[1]["id"] == ident
        atom = cute.make_mma_atom(op)
        assert atom.a_dtype is cutlass.Float4E2M1FN and atom.b_dtype is cutlass.Float4E2M1FN
        assert atom.acc_dtype is cutlass.Float32
    assert cute.size(cute.make_tiled_mma(cases[1][0]).thr_id.shape) == 2


def test_op_refuses_bad_arguments_at_the_users_line():
    t = tc()
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*A is read from shared memory"):
        t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 256, 64), t.CtaGroup.ONE, t.OperandSource.TMEM)
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*(no loaded backend|M is 128|breaks)"):
        cute.make_mma_atom(t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (64, 256, 64), t.CtaGroup.ONE))
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*sf_dtype Float16 breaks"):
        cute.make_mma_atom(t.MmaMXF4NVF4Op(cutlass.Float16, (128, 256, 64), t.CtaGroup.ONE))
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*(no loaded backend|K is 64|breaks)"):
        cute.make_mma_atom(t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 256, 32), t.CtaGroup.ONE))


def test_blockscaled_trivial_tiled_mma_and_the_sfb_tma_op():
    # CuTe DSL's sm100_utils.make_blockscaled_trivial_tiled_mma(a, b, a_major, b_major, sf_dtype, sf_vec_size,
    # cta_group, mma_tiler_mn): nvfp4 (e2m1 with a factor per 16 values) is kind::mxf4nvf4 scale_vec::4X, K = 64
    import warpweave.utils.blackwell_helpers as h

    t, fp4, K = tc(), cutlass.Float4E2M1FN, tc().OperandMajorMode.K
    for cta, mn, sf, ident in ((t.CtaGroup.ONE, (128, 64), cutlass.Float8E4M3FN,
                                "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n64k64.e2m1.f32.e4m3.ss"),
                               (t.CtaGroup.TWO, (256, 128), cutlass.Float8E8M0FNU,
                                "blackwell.tcgen05.mma.cta2.mxf4nvf4.m256n128k64.e2m1.f32.ue8m0.ss")):
        tm = h.make_blockscaled_trivial_tiled_mma(fp4, fp4, K, K, sf, 16, cta, mn)
        assert tm.op.entry()[1]["id"] == ident
        # the form with one type for A and B
        assert h.make_blockscaled_trivial_tiled_mma(fp4, K, K, sf, 16, cta, mn).op.entry()[1]["id"] == ident
    # MXFP4 (a ue8m0 factor per 32 e2m1 values) is kind::mxf4 scale_vec::2X; MXFP8 kind::mxf8f6f4 scale_vec::1X,
    # K = 32, either major
    ue8m0, fp8 = cutlass.Float8E8M0FNU, cutlass.Float8E5M2
    assert h.make_blockscaled_trivial_tiled_mma(fp4, K, K, ue8m0, 32, t.CtaGroup.ONE, (128, 64)).op.entry()[1]["id"] \
        == "blackwell.tcgen05.mma.cta1.mxf4.m128n64k64.e2m1.f32.ue8m0.ss"
    mx8 = h.make_blockscaled_trivial_tiled_mma(fp8, t.OperandMajorMode.MN, K, ue8m0, 32, t.CtaGroup.TWO, (256, 128))
    assert mx8.op.entry()[1]["id"] == "blackwell.tcgen05.mma.cta2.mxf8f6f4.m256n128k32.e5m2.f32.ue8m0.ss"
    assert mx8.op.a_major_mode == t.OperandMajorMode.MN and mx8.op.sf_dtype is ue8m0
    for bad in ((cutlass.Float8E4M3FN, fp4, ue8m0, 16), (fp8, fp8, ue8m0, 16),
                (fp8, fp8, cutlass.Float8E4M3FN, 32), (fp4, fp4, cutlass.Float8E4M3FN, 32)):
        with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*none of this backend's block-scaled"):
            h.make_blockscaled_trivial_tiled_mma(bad[0], bad[1], K, K, bad[2], bad[3], t.CtaGroup.ONE, (128, 128))
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*kind::mxf4 or kind::mxf4nvf4, which cannot "
                                        "transpose"):
        h.make_blockscaled_trivial_tiled_mma(fp4, fp4, t.OperandMajorMode.MN, K, cutlass.Float8E4M3FN, 16,
                                             t.CtaGroup.ONE, (128, 128))
    # B's scale factors: a 2-CTA MMA multicasts them to its pair; one CTA multicasts along a cluster's M only
    pair, one = cute.make_layout(2), cute.make_layout(1)
    assert repr(h.cluster_shape_to_tma_atom_SFB((2, 1), pair)).startswith("cpasync.CopyBulkTensorTileG2SMulticastOp")
    assert repr(h.cluster_shape_to_tma_atom_SFB((2, 1), one)).startswith("cpasync.CopyBulkTensorTileG2SMulticastOp")
    assert repr(h.cluster_shape_to_tma_atom_SFB((1, 4), one)) == "cpasync.CopyBulkTensorTileG2SOp(cta_group=1)"


def test_pointers_name_their_element_type_as_value_type():
    from warpweave.cute.runtime import make_ptr

    p = make_ptr(cutlass.Float4E2M1FN, 0x10000, cute.AddressSpace.gmem, assumed_align=16)
    assert p.value_type is cutlass.Float4E2M1FN


def test_atom_set_is_the_isa_shapes(blackwell):
    # kind::mxf4nvf4 with A in shared memory: one CTA M = 128, N = 8..256 in steps of 8; a pair M = 256, N in steps
    # of 16; ue4m3 (e4m3) or ue8m0 scale factors
    got = sorted(a["id"] for a in blackwell.atoms + blackwell.all_instances()
                 if ".mxf4nvf4." in a["id"] and not a["id"].startswith("blackwell.prim.")  # the primitives': elsewhere
                 and "k96" not in a["id"])                              # sm_103a's: test_sm103_blockscaled.py
    want = sorted([f"blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n{n}k64.e2m1.f32.{sf}.ss"
                   for n in range(8, 257, 8) for sf in ("e4m3", "ue8m0")] +
                  [f"blackwell.tcgen05.mma.cta2.mxf4nvf4.m256n{n}k64.e2m1.f32.{sf}.ss"
                   for n in range(16, 257, 16) for sf in ("e4m3", "ue8m0")])
    assert got == want
    for a in blackwell.all_instances():
        if a["id"] == "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n8k64.e2m1.f32.e4m3.ss":
            assert [(o["name"], o["role"]) for o in a["operands"]] == [
                ("d", "TMEM_ADDRESS"), ("a", "SMEM_DESCRIPTOR"), ("b", "SMEM_DESCRIPTOR"),
                ("idesc", "INSTRUCTION_DESCRIPTOR"), ("scale_a", "TMEM_ADDRESS"), ("scale_b", "TMEM_ADDRESS"),
                ("enable_input_d", "PREDICATE")]
            assert a["python_params"] == {"ab_dtype": "Float4E2M1FN", "acc_dtype": "Float32",
                                          "sf_dtype": "Float8E4M3FN", "shape_mnk": "(128,8,64)", "cta_group": "1",
                                          "a_src": "SMEM"}


def _ref(m, n, scale, sfa_id=0, sfb_id=0, negate_a=0, negate_b=0):
    e2m1 = 1
    return (sfb_id << 4 | e2m1 << 7 | e2m1 << 10 | negate_a << 13 | negate_b << 14 | (n >> 3) << 17 | scale << 23
            | (m >> 7) << 27 | sfa_id << 29)


@pytest.mark.parametrize("cta,m,n,sf", [(1, 128, 256, "e4m3"), (1, 128, 8, "ue8m0"), (2, 256, 256, "e4m3"),
                                        (2, 256, 16, "ue8m0")])
@pytest.mark.parametrize("ids", [(0, 0), (1, 2), (3, 3)])
def test_instr_desc_bits(cta, m, n, sf, ids):
    atom = f"blackwell.tcgen05.mma.cta{cta}.mxf4nvf4.m{m}n{n}k64.e2m1.f32.{sf}.ss"
    scale = {"e4m3": 0, "ue8m0": 1}[sf]
    assert _instr_desc({"atom": atom, "sfa_id": ids[0], "sfb_id": ids[1]}) == _ref(m, n, scale, *ids)
    assert _instr_desc({"atom": atom, "negate_a": 1}) == _ref(m, n, scale, negate_a=1)


@pytest.mark.parametrize("cta,m,n,ab,majors", [(1, 128, 64, "e4m3", ("K", "K")), (2, 256, 256, "e5m2", ("MN", "K")),
                                                (1, 128, 8, "e5m2", ("K", "MN"))])
def test_mxf8_instr_desc_bits(cta, m, n, ab, majors):
    # kind::mxf8f6f4's block-scaled form: the types as kind::f8f6f4 numbers them (e4m3 0, e5m2 1), the majors at
    # bits 15 and 16, ue8m0 scale factors (bit 23), M in units of 128
    atom = f"blackwell.tcgen05.mma.cta{cta}.mxf8f6f4.m{m}n{n}k32.{ab}.f32.ue8m0.ss"
    code = {"e4m3": 0, "e5m2": 1}[ab]
    want = (2 << 4 | code << 7 | code << 10 | (majors[0] == "MN") << 15 | (majors[1] == "MN") << 16 | (n >> 3) << 17
            | 1 << 23 | (m >> 7) << 27 | 1 << 29)
    got = _instr_desc({"atom": atom, "sfa_id": 1, "sfb_id": 2, "a_major": majors[0], "b_major": majors[1]})
    assert got == want, (hex(got), hex(want))


@pytest.mark.parametrize("attrs,message", [
    ({"atom": "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n64k64.e2m1.f32.e4m3.ss", "b_major": "MN"}, "K-major"),
    ({"atom": "blackwell.tcgen05.mma.cta1.mxf4.m128n64k64.e2m1.f32.e4m3.ss"}, "ue8m0"),
    ({"atom": "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.e4m3.f32.e4m3.ss"}, "ue8m0"),
    ({"atom": "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n64k64.e2m1.f32.e4m3.ss", "saturate": 1}, "saturate"),
    ({"atom": "blackwell.tcgen05.mma.cta1.f16.m128n64k16.f16.f32.ss", "sfa_id": 1}, "block-scaled"),
])
def test_instr_desc_refusals(attrs, message):
    with pytest.raises(Exception, match=message):
        _instr_desc(attrs)


@pytest.mark.parametrize("ident,vec,sass", [
    ("blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n256k64.e2m1.f32.e4m3.ss", "4X", "UTCOMMA"),
    ("blackwell.tcgen05.mma.cta2.mxf4nvf4.m256n64k64.e2m1.f32.ue8m0.ss", "4X", "UTCOMMA"),
    ("blackwell.tcgen05.mma.cta1.mxf4.m128n128k64.e2m1.f32.ue8m0.ss", "2X", "UTCOMMA"),
    ("blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n128k32.e4m3.f32.ue8m0.ss", "1X", "UTCQMMA"),
    ("blackwell.tcgen05.mma.cta2.mxf8f6f4.m256n64k32.e5m2.f32.ue8m0.ss", "1X", "UTCQMMA")])
def test_atoms_compile_with_expected_ptx_and_sass(ident, vec, sass):
    ins, result = _probe(ident, {})
    assert _ptx_pattern(ins, {}).search(result["ptx"])
    assert f".block_scale.scale_vec::{vec}" in result["ptx"]
    if not _core.sass_tool_available():
        pytest.skip("PTX and ptxas checked; no SASS disassembler (nvdisasm) to check the opcodes")
    ops = _sass_opcodes(_core.disassemble_sass(result["cubin"]))
    want = sass + ".2CTA" if ".cta2." in ident else sass
    assert any(o == want or o.startswith(want + ".") for o in ops), sorted(ops)
    assert ins["sass_opcodes"] == [want]


def test_4bit_smem_layout_atom_and_descriptor_form():
    from warpweave import ext
    from warpweave.backends.blackwell import tcgen05_mma

    t = tc()
    atom = t.make_smem_layout_atom(t.SmemLayoutAtomKind.K_SW128, cutlass.Float4E2M1FN)
    # 8 rows of 128 bytes = 256 packed 4-bit elements, swizzled in 16-byte (32-element) units
    assert cute.size(atom.outer) == 8 * 256
    assert (atom.inner.num_bits, atom.inner.num_base, atom.inner.num_shift) == (3, 5, 3)
    # the helpers' A and B layouts of an nvf4 tiled MMA: each instruction's (MN, 64) tile (64 elements = 32 bytes of
    # K) is K-major with 128-byte rows (1024 bytes between 8-row groups), for every k-block and stage
    import warpweave.utils.blackwell_helpers as sm100

    tm = cute.make_tiled_mma(t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 256, 64), t.CtaGroup.ONE))
    kind = tcgen05_mma.UmmaSmemDescriptorKind()
    for which, make in (("a", sm100.make_smem_layout_a), ("b", sm100.make_smem_layout_b)):
        staged = make(tm, (128, 256, 256), cutlass.Float4E2M1FN, 2)
        tile = cute.make_tensor(ext.make_pointer(None, cutlass.Float4E2M1FN, "smem", 1024), staged)
        assert cute.size(staged.outer, mode=[2]) == 4
        for kb in range(4):
            for st in range(2):
                assert kind.form(which, tile[(None, 0, kb, st)]) == ("K", 128, 16, 1024)
    with pytest.raises(Exception, match="not a 4, 8, 16 or 32-bit type"):
        t.make_smem_layout_atom(t.SmemLayoutAtomKind.K_SW128, cutlass.Float6E2M3FN)


# --- a kernel -------------------------------------------------------------------------------------------------------

def _compile_nvfp4_mma(k_tile=256, companions=False, mxf8=False, mxf8_types=None, sfb_shift=None):
    """One CTA: A and B (Float4E2M1FN) and their scale factors in shared memory, the scale factors copied into
    tensor memory where blockscaled_layout puts them (after the accumulator's columns) with tcgen05.Cp4x32x128bOp,
    the MMA warp issuing the tile's k-blocks with Field.SFA / Field.SFB set to each k-block's scale factors, or
    (companions) with one cute.gemm over the whole tile given the scale factors with A and B. mxf8: MXFP8 instead
    (Float8E4M3FN A and B, or mxf8_types' A and B, a Float8E8M0FNU factor per 32 values, K = 32 an instruction).
    sfb_shift(acc_ptr, bidx): where the MMAs read SFB from, moved at run time (QuACK's odd N tiles)."""
    import numpy as np

    import warpweave.pipeline as pipeline
    import warpweave.utils.blackwell_helpers as sm100
    import warpweave.utils.blockscaled_layout as bsl
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    from dsl_helpers import target

    t = tc()
    m, n, vec = 128, 256, 32 if mxf8 else 16
    tiler = (m, n, k_tile)
    ab, sf = (cutlass.Float8E4M3FN, cutlass.Float8E8M0FNU) if mxf8 else (cutlass.Float4E2M1FN, cutlass.Float8E4M3FN)
    ab, b_type = mxf8_types or (ab, ab)
    # kind::mxf8f6f4 reads 6- and 4-bit operands a byte an element: their tiles are Uint8 ones (as QuACK's)
    sa_type, sb_type = ((cutlass.Uint8 if x.width < 8 else x for x in (ab, b_type)) if mxf8_types
                        else (ab, b_type))

    @cute.kernel
    def kern(tiled_mma: cute.TiledMma, g: cute.Tensor, sA_layout: cute.ComposedLayout,
             sB_layout: cute.ComposedLayout, sfa_staged: cute.Layout, sfb_staged: cute.Layout):
        sfa_layout = cute.slice_(sfa_staged, (None, None, None, 0))
        sfb_layout = cute.slice_(sfb_staged, (None, None, None, 0))
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 2, byte_alignment=8)
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        sA = smem.allocate_tensor(sa_type, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(sb_type, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        sSFA = smem.allocate_tensor(sf, sfa_staged, 128)
        sSFB = smem.allocate_tensor(sf, sfb_staged, 128)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(512)
        if tidx == 0:
            cute.arch.mbarrier_init(bars, cutlass.Int32(1))
        tmem.wait_for_alloc()
        acc_ptr = tmem.retrieve_ptr(cutlass.Float32)
        acc = cute.make_tensor(acc_ptr, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((m, n))).layout)
        sfa_ptr = cute.recast_ptr(acc_ptr + t.find_tmem_tensor_col_offset(acc), dtype=sf)
        tSFA = cute.make_tensor(sfa_ptr, bsl.make_tmem_layout_sfa(tiled_mma, tiler, vec, sfa_layout))
        sfb_ptr = cute.recast_ptr(acc_ptr + t.find_tmem_tensor_col_offset(acc) + t.find_tmem_tensor_col_offset(tSFA),
                                  dtype=sf)
        tSFB = cute.make_tensor(sfb_ptr, bsl.make_tmem_layout_sfb(tiled_mma, tiler, vec, sfb_layout))
        tSFB_mma = tSFB
        if cutlass.const_expr(sfb_shift is not None):
            tSFB_mma = cute.make_tensor(sfb_shift(sfb_ptr, cute.arch.block_idx()[0]), tSFB.layout)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        # the scale factors, shared -> tensor memory, as CuTe DSL's block-scaled kernels copy them
        s2t_atom = cute.make_copy_atom(t.Cp4x32x128bOp(t.CtaGroup.ONE), sf)
        copies = []
        for s_sf, t_sf in ((sSFA, tSFA), (sSFB, tSFB)):
            s_c, t_c = cute.filter_zeros(s_sf), cute.filter_zeros(t_sf)
            s2t = t.make_s2t_copy(s2t_atom, t_c)
            thr = s2t.get_slice(0)
            src = t.get_s2t_smem_desc_tensor(s2t, thr.partition_S(s_c))
            copies.append((s2t, src, thr.partition_D(t_c)))
        if warp == 0:
            for s2t, src, dst in copies:
                cute.copy(s2t, src[(None, None, None, None, 0)], dst)
            if cutlass.const_expr(companions):
                # ACCUMULATE as set (False) for the first k-block, then on: the k-blocks add up
                cute.gemm(tiled_mma, acc, [tCrA[None, None, None, 0], tSFA], [tCrB[None, None, None, 0], tSFB], acc)
            else:
                for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                    tiled_mma.set(t.Field.SFA, tSFA[(None, None, kb)].iterator)
                    tiled_mma.set(t.Field.SFB, tSFB_mma[(None, None, kb)].iterator)
                    cute.gemm(tiled_mma, acc, tCrA[None, None, kb, 0], tCrB[None, None, kb, 0], acc)
                    tiled_mma.set(t.Field.ACCUMULATE, True)
            t.commit(bars)
        cute.arch.mbarrier_wait(bars, cutlass.Int32(0))
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(acc_ptr)

    @cute.jit
    def host(g: cute.Tensor):
        op = t.MmaMXF8Op(ab, (m, n, 32), t.CtaGroup.ONE) if mxf8 else t.MmaMXF4NVF4Op(sf, (m, n, 64), t.CtaGroup.ONE)
        if mxf8_types:
            op = t.MmaMXF8F6F4Op(ab, b_type, (m, n, 32), t.CtaGroup.ONE)
        tiled_mma = cute.make_tiled_mma(op)
        sA = sm100.make_smem_layout_a(tiled_mma, tiler, sa_type, 1)
        sB = sm100.make_smem_layout_b(tiled_mma, tiler, sb_type, 1)
        sfa = bsl.make_smem_layout_sfa(tiled_mma, tiler, vec, 1)
        sfb = bsl.make_smem_layout_sfb(tiled_mma, tiler, vec, 1)
        kern(tiled_mma, g, sA, sB, sfa, sfb).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros((m, n), np.float32)), options="-v")


def _mma_lines_and_predicates(ptx):
    """The tcgen05.mma lines of a kernel's PTX and, for each, its enable_input_d as a constant where the PTX sets
    the predicate from one (setp with two literals, or mov.pred)."""
    consts = {}
    for reg, val in re.findall(r"mov\.pred\s+(%p\d+),\s*(-?\d+);", ptx):
        consts[reg] = int(val) != 0
    for op, reg, x, y in re.findall(r"setp\.(\w+)\.\w+\s+(%p\d+),\s*(-?\d+),\s*(-?\d+);", ptx):
        consts[reg] = {"ne": int(x) != int(y), "eq": int(x) == int(y)}.get(op)
    lines = [l for l in ptx.splitlines() if "tcgen05.mma" in l]
    return lines, [consts.get(re.search(r"(%p\d+);", l).group(1)) for l in lines]


def test_scale_factors_given_with_a_and_b_read_as_the_fields_would():
    # cute.gemm(tiled_mma, acc, [tCrA, tCtSFA], [tCrB, tCtSFB], acc) over the whole tile: the same instructions,
    # each k-block's scale-factor columns, as setting Field.SFA / Field.SFB per k-block; only the first k-block
    # takes ACCUMULATE as set (False), the others add to it
    by_fields = _compile_nvfp4_mma().info["ptx"]
    with_ab = _compile_nvfp4_mma(companions=True).info["ptx"]
    lines_f, pred_f = _mma_lines_and_predicates(by_fields)
    lines_c, pred_c = _mma_lines_and_predicates(with_ab)
    assert len(lines_c) == len(lines_f) == 4
    scale_cols = lambda ptx: [tuple(m.groups()) for m in re.finditer(  # noqa: E731
        r"tcgen05\.mma\.[^\n]*\[(%r\d+)\], \[(%r\d+)\], %p\d+;", ptx)]
    adds = lambda ptx: dict(re.findall(r"add\.s32\s+(%r\d+),\s+%r\d+,\s+(\d+);", ptx))  # noqa: E731
    cols = lambda ptx: [tuple(int(adds(ptx).get(r, 0)) for r in regs) for regs in scale_cols(ptx)]  # noqa: E731
    assert cols(with_ab) == cols(by_fields) == [(256 + 4 * kb, 272 + 8 * kb) for kb in range(4)]
    assert pred_c == pred_f == [False, True, True, True], (pred_c, pred_f)


def test_mxf8_kernel_reads_one_scale_factor_byte_per_k_block():
    # MXFP8 (K = 32 an instruction, a factor per 32 values): the four k-blocks of a 128-wide tile share a 128 x 4
    # block of scale factors (one tcgen05.cp per 128 rows), each instruction reading its byte of the same columns
    # through the descriptor's scale-factor ids
    compiled = _compile_nvfp4_mma(k_tile=128, mxf8=True)
    ptx = compiled.info["ptx"]
    lines, preds = _mma_lines_and_predicates(ptx)
    assert len(lines) == 4 and all(".kind::mxf8f6f4.block_scale.scale_vec::1X" in l for l in lines), lines
    assert preds == [False, True, True, True]
    assert len(re.findall(r"tcgen05\.cp\.cta_group::1\.32x128b\.warpx4", ptx)) == 3   # SFA 1 block, SFB 2
    descs = [_instr_desc({"atom": "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n256k32.e4m3.f32.ue8m0.ss",
                          "sfa_id": kb, "sfb_id": kb}) for kb in range(4)]
    for d in descs:
        assert re.search(rf"\b{d}\b", ptx) or f"0x{d:x}" in ptx.lower(), hex(d)


def test_scale_factor_companions_are_tensor_memory_tensors():
    from warpweave import ext
    t = tc()
    op = t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 128, 64), t.CtaGroup.ONE)
    with pytest.raises(ext.DSLTypeError, match="tensor memory"):
        op.companion_inputs([_FakeSmem()], [_FakeSmem()], 0, 0)
    with pytest.raises(ext.DSLValueError, match="one scale-factor tensor"):
        op.companion_inputs([], [_FakeSmem()], 0, 0)


class _FakeSmem:
    memspace = "smem"


def test_nvfp4_mma_kernel():
    compiled = _compile_nvfp4_mma()
    ptx = compiled.info["ptx"]
    insts = [l for l in ptx.splitlines() if "tcgen05.mma" in l]
    assert len(insts) == 4 and all(".kind::mxf4nvf4.block_scale.scale_vec::4X" in l for l in insts), insts
    # every k-block's scale factors start at byte 0 of their columns: one descriptor for all
    want = _ref(128, 256, 0)
    assert re.search(rf"\b{want}\b", ptx) or f"0x{want:x}" in ptx.lower(), ptx[-3000:]
    # the scale factors' columns: SFA after the accumulator's 256, 4 columns a k-block; SFB after SFA's 16, 8 columns
    # a k-block (two 128-row blocks of N = 256); operands of the instructions in order
    adds = dict(re.findall(r"add\.s32\s+(%r\d+),\s+%r\d+,\s+(\d+);", ptx))
    scales = [tuple(int(adds[r]) if r in adds else 0 for r in m.groups())
              for m in re.finditer(r"tcgen05\.mma\.[^\n]*\[(%r\d+)\], \[(%r\d+)\], %p\d+;", ptx)]
    assert scales == [(256 + 4 * kb, 272 + 8 * kb) for kb in range(4)], scales
    # packed 4-bit operands in shared memory: A (128 x 256, 16 KiB) at 1024 (after the barriers, aligned to the
    # swizzle's period), B right after it; each k-block 32 bytes further
    offs = {int(v) for v in adds.values()}
    assert {1024 + 32 * kb for kb in range(4)} <= offs and {1024 + 16384 + 32 * kb for kb in range(4)} <= offs, offs
    print(compiled.info["jit_log"])
    if not _core.sass_tool_available():
        pytest.skip("PTX checked; no SASS disassembler (nvdisasm) to check the opcodes")
    ops = re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)",
                     _core.disassemble_sass(compiled.cubin), re.M)
    count = lambda p: sum(1 for o in ops if o == p or o.startswith(p + "."))  # noqa: E731
    assert count("UTCOMMA") == 4, sorted(set(ops))   # 256 of K in four instructions of K = 64
    # the scale factors' shared -> tensor memory copies: a 32x128b.warpx4 per 512-byte block, 4 of SFA and 8 of SFB,
    # into the 48 columns after the accumulator's 256, each block 4 columns
    cols = sorted(int(x, 16) for x in re.findall(r"UTCCP\.T\.S\.4x32dp128bit\s+tmem\[UR\d+\+0x([0-9a-f]+)\]",
                                                 _core.disassemble_sass(compiled.cubin)))
    assert cols == [256 + 4 * i for i in range(12)], cols
    assert len(re.findall(r"tcgen05\.cp\.cta_group::1\.32x128b\.warpx4", ptx)) == 12
    assert count("UTCBAR") == 1
    assert not any(o.startswith(("LDL", "STL")) for o in ops)
    assert "0 bytes stack frame" in compiled.info["jit_log"] or "spill" not in compiled.info["jit_log"]


# --- TMA of packed 4-bit operands -------------------------------------------------------------------------------------

def _fp4_tma_atoms(m=512, k=1024):
    """make_tiled_tma_atom_A/B of an nvfp4 tiled MMA over K-major (M, K, 1) / (N, K, 1) Float4E2M1FN tensors."""
    from warpweave.cute.nvgpu import cpasync
    from warpweave.cute.runtime import make_ptr
    import warpweave.utils.blackwell_helpers as sm100

    from dsl_helpers import target

    t = tc()
    made = {}

    @cute.jit
    def host(a_ptr: cute.Pointer):
        tm = cute.make_tiled_mma(t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 256, 64), t.CtaGroup.ONE))
        a = cute.make_tensor(a_ptr, cute.make_layout((m, k, 1), stride=(k, 1, m * k)))
        for which, make, tiler in (("A", sm100.make_smem_layout_a, cute.nvgpu.make_tiled_tma_atom_A),
                                   ("B", sm100.make_smem_layout_b, cute.nvgpu.make_tiled_tma_atom_B)):
            staged = make(tm, (128, 256, 256), cutlass.Float4E2M1FN, 2)
            atom, _ = tiler(cpasync.CopyBulkTensorTileG2SOp(t.CtaGroup.ONE), a,
                            cute.slice_(staged, (None, None, None, 0)), (128, 256, 256), tm, (1, 1, 1, 1))
            made[which] = atom

    with target("sm_100a"):
        cute.compile(host, make_ptr(cutlass.Float4E2M1FN, 0x10000, cute.AddressSpace.gmem, assumed_align=32))
    return made


def test_fp4_tma_atoms_move_bytes():
    made = _fp4_tma_atoms()
    for which, rows in (("A", 128), ("B", 256)):
        atom = made[which]
        # 256 elements of K = 128 bytes: one 128-byte swizzled box of u8 along K, up to 256 rows of it
        assert atom.pack == 2 and atom.dims == [1, 0, 2] and atom.swizzle == 128
        assert atom.box == (128, min(rows, 256), 1)
        assert atom.smem_bytes == rows * 256 // 2
        assert atom.boxes == [((0, 0, 0), 0)]
        attrs = atom.tma_desc.attrs
        assert attrs["data_type"] == "u8" and attrs["pack"] == 2 and attrs["ebytes"] == 1
        assert (attrs["box0"], attrs["box1"]) == (128, min(rows, 256))


def recording_encoder(monkeypatch):
    """(Hopper's tma module, the attributes its encoder's last host call got, a K-major (512, 1024, 3) tensor at
    0x10000 as the encoder reads a call's tensor)."""
    from warpweave.backends.hopper import tma

    seen = {}
    monkeypatch.setattr(tma.ext, "host_call", lambda backend, hook, attrs, n: seen.update(attrs) or b"\0" * n)

    class T:
        data_ptr = 0x10000
        shape = (512, 1024, 3)
        stride = (1024, 1, 512 * 1024)

    return tma, seen, T


def test_fp4_tma_descriptor_halves_the_contiguous_mode(monkeypatch):
    tma, seen, T = recording_encoder(monkeypatch)
    tma.encode_descriptor(T(), data_type="u8", rank=3, swizzle="128B", dims="1,0,2", ebytes=1, pack=2, box0=128,
                          box1=128, box2=1, backend="blackwell", hook="encode_tma_descriptor")
    # 1024 4-bit values of K are 512 bytes; rows 512 bytes apart, batches 256 KiB apart
    assert (seen["dim0"], seen["dim1"], seen["dim2"]) == (512, 512, 3)
    assert (seen["stride1"], seen["stride2"]) == (512, 512 * 512)
    T.shape = (512, 1023, 3)
    with pytest.raises(ValueError, match="even contiguous extent"):
        tma.encode_descriptor(T(), data_type="u8", rank=3, swizzle="128B", dims="1,0,2", ebytes=1, pack=2,
                              box0=128, box1=128, box2=1, backend="blackwell", hook="encode_tma_descriptor")


def _compile_fp4_tma_kernel(a_type=cutlass.Float4E2M1FN, b_type=cutlass.Float4E2M1FN, smem_type=None,
                            internal_type=None, k_tile=256):
    """One CTA loads the k-tile blockIdx.y of A (128 x k_tile) and B (256 x k_tile), Float4E2M1FN (or a_type and
    b_type under an nvfp4 MMA, or kind::mxf8f6f4's where they differ), with TMA into one stage of the helpers'
    layouts of smem_type (the global types by default; internal_type passed on to the atoms) and waits on an
    mbarrier for the bytes the global types count."""
    from warpweave.cute.nvgpu import cpasync
    from warpweave.cute.runtime import make_ptr
    import warpweave.utils.blackwell_helpers as sm100
    from warpweave import utils

    from dsl_helpers import target

    t = tc()
    m, n, k = 128, 256, 1024
    tiler = (128, 256, k_tile)
    sa_type, sb_type = smem_type or a_type, smem_type or b_type

    @cute.kernel
    def kern(tma_a: cute.CopyAtom, mA: cute.Tensor, tma_b: cute.CopyAtom, mB: cute.Tensor,
             sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout, nbytes: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        _, kt, _ = cute.arch.block_idx()
        smem = utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        sA = smem.allocate_tensor(sa_type, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(sb_type, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        gA = cute.local_tile(mA, (128, k_tile), (None, None, None))
        gB = cute.local_tile(mB, (256, k_tile), (None, None, None))
        tAsA, tAgA = cpasync.tma_partition(tma_a, 0, cute.make_layout(1), cute.group_modes(sA, 0, 3),
                                           cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(tma_b, 0, cute.make_layout(1), cute.group_modes(sB, 0, 3),
                                           cute.group_modes(gB, 0, 2))
        if tidx == 0:
            cute.arch.mbarrier_init(bar, cutlass.Int32(1))
        cute.arch.sync_threads()
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(tma_a, tAgA[(None, 0, kt, 0)], tAsA[(None, 0)], tma_bar_ptr=bar)
            cute.copy(tma_b, tBgB[(None, 0, kt, 0)], tBsB[(None, 0)], tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, cutlass.Int32(0))

    @cute.jit
    def host(a_ptr: cute.Pointer, b_ptr: cute.Pointer):
        fp4 = cutlass.Float4E2M1FN
        op = (t.MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (m, n, 64), t.CtaGroup.ONE) if a_type is fp4 and b_type is fp4
              else t.MmaMXF8F6F4Op(a_type, b_type, (m, n, 32), t.CtaGroup.ONE))
        tm = cute.make_tiled_mma(op)
        a = cute.make_tensor(a_ptr, cute.make_layout((m, k, 1), stride=(k, 1, m * k)))
        b = cute.make_tensor(b_ptr, cute.make_layout((n, k, 1), stride=(k, 1, n * k)))
        sA_st = sm100.make_smem_layout_a(tm, tiler, sa_type, 1)
        sB_st = sm100.make_smem_layout_b(tm, tiler, sb_type, 1)
        sA = cute.slice_(sA_st, (None, None, None, 0))
        sB = cute.slice_(sB_st, (None, None, None, 0))
        op = cpasync.CopyBulkTensorTileG2SOp(t.CtaGroup.ONE)
        tma_a, mA = cute.nvgpu.make_tiled_tma_atom_A(op, a, sA, tiler, tm, (1, 1, 1, 1), internal_type=internal_type)
        tma_b, mB = cute.nvgpu.make_tiled_tma_atom_B(op, b, sB, tiler, tm, (1, 1, 1, 1), internal_type=internal_type)
        nbytes = cute.size_in_bytes(a_type, sA) + cute.size_in_bytes(b_type, sB)
        kern(tma_a, mA, tma_b, mB, sA_st, sB_st, nbytes).launch(grid=[1, k // k_tile, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, make_ptr(a_type, 0x10000, cute.AddressSpace.gmem, assumed_align=32),
                            make_ptr(b_type, 0x80000, cute.AddressSpace.gmem, assumed_align=32), options="-v")


def test_fp4_tma_kernel():
    compiled = _compile_fp4_tma_kernel()
    ptx = compiled.info["ptx"]
    loads = re.findall(r"cp\.async\.bulk\.tensor\.3d[^\n]*", ptx)
    assert len(loads) == 2, loads
    # the expected bytes: 16 KiB of A and 32 KiB of B, packed
    assert "mbarrier.arrive.expect_tx" in ptx and re.search(r"\b49152\b", ptx), ptx[-3000:]
    # the K coordinate of the boxes is in bytes: k-tile * 128 (blockIdx.y << 7), not elements (<< 8)
    assert re.search(r"shl\.b32\s+%r\d+,\s+%r\d+,\s+7;", ptx) and not re.search(r"shl\.b32\s+%r\d+,\s+%r\d+,\s+8;",
                                                                               ptx), ptx[-3000:]
    if not _core.sass_tool_available():
        pytest.skip("PTX checked; no SASS disassembler (nvdisasm) to check the opcodes")
    sass = _core.disassemble_sass(compiled.cubin)
    assert len(re.findall(r"\bUTMALDG\.3D\b", sass)) == 2, sass[-2000:]
    assert "LDL" not in sass and "STL" not in sass


def test_s2t_scale_copy_refuses_other_tensors_at_the_users_line():
    from warpweave import ext

    t = tc()
    atom = cute.make_copy_atom(t.Cp4x32x128bOp(t.CtaGroup.ONE), cutlass.Float8E4M3FN)
    plain = cute.make_tensor(ext.make_pointer(None, cutlass.Float8E4M3FN, "tmem", 16),
                             cute.make_layout((128, 16), stride=(4 << 16, 1)))
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*blocks of 128 rows x 4 scale factors"):
        t.make_s2t_copy(atom, plain)
    wide = cute.make_copy_atom(t.Cp4x32x128bOp(t.CtaGroup.ONE), cutlass.Float16)
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*8-bit scale factors"):
        t.make_s2t_copy(wide, plain)


def test_block_scaled_base_class_builds_a_library_subclass():
    # QuACK's MmaMXF4NVF4Op subclass calls CuTe DSL's general constructor with its own scale vector
    t = tc()
    K = cutlass.cute.nvgpu.OperandMajorMode.K

    class Op(t.MmaMXF4NVF4Op):
        def __init__(self, sf_dtype, sf_vec_size, shape):
            t.BlockScaledMmaOp.__init__(self, cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, cutlass.Float32,
                                        sf_dtype, sf_vec_size, shape, t.CtaGroup.ONE, t.OperandSource.SMEM, K, K)
            self._verify()

    for vec, sf, ident in ((16, cutlass.Float8E4M3FN, "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n128k64.e2m1.f32.e4m3.ss"),
                           (32, cutlass.Float8E8M0FNU, "blackwell.tcgen05.mma.cta1.mxf4.m128n128k64.e2m1.f32.ue8m0.ss")):
        op = Op(sf, vec, (128, 128, 64))
        assert isinstance(op, t.BlockScaledMmaOp) and isinstance(op, t.MmaMXF4NVF4Op)
        assert (op.sf_dtype, op.sf_vec_size, op.a_dtype, op.b_dtype, op.acc_dtype) == (
            sf, vec, cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, cutlass.Float32)
        assert op.entry()[1]["id"] == ident
        assert cute.make_mma_atom(op).a_dtype is cutlass.Float4E2M1FN
    assert isinstance(t.MmaMXF8Op(cutlass.Float8E5M2, (128, 128, 32), t.CtaGroup.ONE, t.OperandSource.SMEM, K, K),
                      t.BlockScaledMmaOp)
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*Float8E4M3FN scale factor per 32"):
        Op(cutlass.Float8E4M3FN, 32, (128, 128, 64))
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*accumulate in Float32"):
        t.BlockScaledMmaOp.__init__(Op.__new__(Op), cutlass.Float4E2M1FN, cutlass.Float4E2M1FN, cutlass.Float16,
                                    cutlass.Float8E4M3FN, 16, (128, 128, 64), t.CtaGroup.ONE, t.OperandSource.SMEM,
                                    K, K)


def test_mixed_format_mxf8_kernel_names_both_formats_in_its_descriptor():
    # kind::mxf8f6f4 takes A and B of different formats (PTX ISA: the descriptor's atype, bits 7-9, and btype,
    # bits 10-12): e5m2 A (1) with e4m3 B (0), the same instruction text as MXFP8's
    compiled = _compile_nvfp4_mma(k_tile=128, mxf8=True, mxf8_types=(cutlass.Float8E5M2, cutlass.Float8E4M3FN))
    ptx = compiled.info["ptx"]
    lines, preds = _mma_lines_and_predicates(ptx)
    assert len(lines) == 4 and all("tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale.scale_vec::1X" in l
                                   for l in lines), lines
    for kb in range(4):
        d = _instr_desc({"atom": "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n256k32.e5m2xe4m3.f32.ue8m0.ss",
                         "sfa_id": kb, "sfb_id": kb})
        assert (d >> 7) & 7 == 1 and (d >> 10) & 7 == 0
        assert re.search(rf"\b{d}\b", ptx) or f"0x{d:x}" in ptx.lower(), hex(d)


def test_mixed_format_op_selects_its_atom_and_refuses_other_formats_at_the_users_line():
    t = tc()
    K = cutlass.cute.nvgpu.OperandMajorMode.K
    op = t.MmaMXF8F6F4Op(cutlass.Float8E4M3FN, cutlass.Float8E5M2, (256, 128, 32), t.CtaGroup.TWO)
    assert op.entry()[1]["id"] == "blackwell.tcgen05.mma.cta2.mxf8f6f4.m256n128k32.e4m3xe5m2.f32.ue8m0.ss"
    assert (op.a_dtype, op.b_dtype, op.sf_dtype, op.sf_vec_size) == (
        cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float8E8M0FNU, 32)
    assert isinstance(op, t.BlockScaledMmaOp)
    # the general constructor picks it for two 8-bit formats
    class Op(t.MmaMXF8Op):
        def __init__(self):
            t.BlockScaledMmaOp.__init__(self, cutlass.Float8E5M2, cutlass.Float8E4M3FN, cutlass.Float32,
                                        cutlass.Float8E8M0FNU, 32, (128, 64, 32), t.CtaGroup.ONE,
                                        t.OperandSource.SMEM, K, K)

    assert Op().entry()[1]["id"] == "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.e5m2xe4m3.f32.ue8m0.ss"
    # a 4-bit B with a factor per 16 is no kind::mxf8f6f4 (whose scale vector is 1X, 32 elements)
    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*none of this backend's block-scaled"):
        import warpweave.utils.blackwell_helpers as sm100
        sm100.make_blockscaled_trivial_tiled_mma(cutlass.Float8E4M3FN, cutlass.Float4E2M1FN, K, K,
                                                 cutlass.Float8E8M0FNU, 16, t.CtaGroup.ONE, (128, 128))


@pytest.mark.parametrize("a,b", [("e4m3", "e5m2"), ("e5m2", "e4m3"), ("e3m2", "e2m1"), ("e2m3", "e4m3")])
def test_mixed_instr_desc_codes(a, b):
    # the hook numbers every kind::mxf8f6f4 format as the PTX ISA does (e4m3 0, e5m2 1, e2m3 3, e3m2 4, e2m1 5)
    code = {"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}
    d = _instr_desc({"atom": f"blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.{a}x{b}.f32.ue8m0.ss"})
    assert (d >> 7) & 7 == code[a] and (d >> 10) & 7 == code[b]
    with pytest.raises(Exception, match="kind::mxf8f6f4 takes"):
        _instr_desc({"atom": f"blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k32.{a}xf16.f32.ue8m0.ss"})


def _whole_columns(ptr, bidx):
    # two 32-bit columns further on odd CTAs: a run-time column, the byte within it known
    return cute.recast_ptr(cute.recast_ptr(ptr, dtype=cutlass.Float32) + cutlass.Int32((bidx % 2) * 2),
                           dtype=ptr.dtype)


def test_scale_factors_at_a_run_time_column_keep_their_bytes_in_the_descriptor():
    base = _compile_nvfp4_mma(k_tile=128, mxf8=True).info["ptx"]
    moved = _compile_nvfp4_mma(k_tile=128, mxf8=True, sfb_shift=_whole_columns).info["ptx"]
    lines, preds = _mma_lines_and_predicates(moved)
    assert len(lines) == 4 and preds == [False, True, True, True]
    for kb in range(4):
        d = _instr_desc({"atom": "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n256k32.e4m3.f32.ue8m0.ss",
                         "sfa_id": kb, "sfb_id": kb})
        assert re.search(rf"\b{d}\b", moved) or f"0x{d:x}" in moved.lower(), hex(d)
    # the SFB column now depends on the CTA: the block index is read, and the column is computed from it
    assert "%ctaid.x" in moved and "%ctaid.x" not in base


def test_scale_factors_at_a_run_time_byte_are_refused_at_the_users_line():
    def odd_bytes(ptr, bidx):
        return ptr + cutlass.Int32(bidx % 2)

    with pytest.raises(Exception, match=r"test_blockscaled_mma.py:\d+: .*byte within their tensor-memory column"):
        _compile_nvfp4_mma(k_tile=128, mxf8=True, sfb_shift=odd_bytes)
