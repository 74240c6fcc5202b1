"""sm_103a's 4-bit block-scaled MMAs with K = 96 (CuTe DSL's SM103MmaMXF4NVF4Op and SM103MmaMXF4Op), without a GPU.

- The ops select their sm_103a atoms (K = 96) and refuse other K and other targets at the user's line.
- The instruction descriptor: sm_100a's block-scaled form plus bit 31 (PTX ISA, "K Dimension": dense K = 96 is 1).
- The shared-memory descriptor whose leading field is the address of the next buffer (LBO mode 1, byte address
  absolute): its bits, and its refusals (the PTX ISA allows it with the 128-byte swizzle and base offset 0 only).
- The atoms and that descriptor assemble with ptxas for sm_103a, the PTX holding .block16 / .block32.
- A kernel issuing the MMA through cute.mma_atom_call with make_umma_smem_desc(..., next_src=...) descriptors.
"""
from __future__ import annotations

import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.registry.plugins import registry

from test_backend_blackwell import (  # noqa: F401
    _emit_hook, _instr_desc, _probe, _ptx_pattern, _smem_desc_ref, blackwell,
)


def tc():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


def _on(arch):
    from warpweave._dsl.base import trace

    return trace.tracing(trace.TraceState(target={"name": arch}))


def test_ops_select_their_k96_atoms():
    t = tc()
    with _on("sm_103a"):
        cases = [
            (t.SM103MmaMXF4NVF4Op(cutlass.Float8E8M0FNU, (256, 256, 96), t.CtaGroup.TWO, t.OperandSource.SMEM),
             "blackwell.tcgen05.mma.cta2.mxf4nvf4.m256n256k96.e2m1.f32.ue8m0.ss"),
            (t.SM103MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 64, 96), t.CtaGroup.ONE),
             "blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n64k96.e2m1.f32.e4m3.ss"),
            (t.SM103MmaMXF4Op((128, 128, 96), t.CtaGroup.ONE, t.OperandSource.SMEM),
             "blackwell.tcgen05.mma.cta1.mxf4.m128n128k96.e2m1.f32.ue8m0.ss"),
        ]
        for op, ident in cases:
            assert op.entry()[1]["id"] == ident
            atom = cute.make_mma_atom(op)
            assert atom.a_dtype is cutlass.Float4E2M1FN and atom.acc_dtype is cutlass.Float32
            assert op.shape_mnk[2] == 96 and type(op).__name__.startswith("SM103")


def test_ops_refuse_other_k_and_other_targets_at_the_users_line():
    t = tc()
    with _on("sm_103a"):
        with pytest.raises(Exception, match=r"test_sm103_blockscaled.py:\d+: .*(K is 96|breaks)"):
            cute.make_mma_atom(t.SM103MmaMXF4NVF4Op(cutlass.Float8E4M3FN, (128, 256, 64), t.CtaGroup.ONE))
        with pytest.raises(Exception, match=r"test_sm103_blockscaled.py:\d+: .*A is read from shared memory"):
            t.SM103MmaMXF4Op((128, 128, 96), t.CtaGroup.ONE, t.OperandSource.TMEM)
    with _on("sm_100a"):
        with pytest.raises(Exception, match=r"test_sm103_blockscaled.py:\d+: .*sm_103a"):
            cute.make_mma_atom(t.SM103MmaMXF4Op((128, 128, 96), t.CtaGroup.ONE))


def test_families_are_sm103a_only(blackwell):
    fams = {f["id"]: f for f in blackwell.families}
    for kind, vec in (("mxf4nvf4", "block16"), ("mxf4", "block32")):
        f = fams[f"blackwell.sm103.tcgen05.mma.{kind}"]
        assert list(f["template"]["targets"]) == ["sm_103a"]
        assert f".block_scale.{vec} " in f["template"]["ptx_template"]
    ins = [p for p in blackwell.primitives if p["id"] == "blackwell.sm103.tcgen05.make_smem_desc_next"]
    assert [list(p["targets"]) for p in ins] == [["sm_103a"]]


def test_k96_atom_set_is_the_isa_shapes(blackwell):
    # as sm_100a's K = 64 sets: one CTA M = 128, N = 8..256 in steps of 8; a pair M = 256, N in steps of 16
    for kind, sfs in (("mxf4nvf4", ("e4m3", "ue8m0")), ("mxf4", ("ue8m0",))):
        got = sorted(a["id"] for a in blackwell.atoms + blackwell.all_instances()
                     if f".{kind}." in a["id"] and "k96" in a["id"])
        want = sorted([f"blackwell.tcgen05.mma.cta1.{kind}.m128n{n}k96.e2m1.f32.{sf}.ss"
                       for n in range(8, 257, 8) for sf in sfs] +
                      [f"blackwell.tcgen05.mma.cta2.{kind}.m256n{n}k96.e2m1.f32.{sf}.ss"
                       for n in range(16, 257, 16) for sf in sfs])
        assert got == want


def _ref(m, n, scale, sfa_id=0, sfb_id=0):
    e2m1 = 1
    return (sfb_id << 4 | e2m1 << 7 | e2m1 << 10 | (n >> 3) << 17 | scale << 23 | (m >> 7) << 27 | sfa_id << 29
            | 1 << 31)


@pytest.mark.parametrize("kind,cta,m,n,sf", [("mxf4nvf4", 1, 128, 256, "e4m3"), ("mxf4nvf4", 2, 256, 256, "ue8m0"),
                                             ("mxf4", 1, 128, 8, "ue8m0"), ("mxf4", 2, 256, 16, "ue8m0")])
@pytest.mark.parametrize("ids", [(0, 0), (2, 0), (0, 2), (2, 2)])
def test_instr_desc_sets_k96(kind, cta, m, n, sf, ids):
    atom = f"blackwell.tcgen05.mma.cta{cta}.{kind}.m{m}n{n}k96.e2m1.f32.{sf}.ss"
    got = _instr_desc({"atom": atom, "sfa_id": ids[0], "sfb_id": ids[1]})
    assert got == _ref(m, n, {"e4m3": 0, "ue8m0": 1}[sf], *ids), hex(got)
    # the K = 64 atom of the same shape differs in bit 31 alone
    assert got ^ _instr_desc({"atom": atom.replace("k96", "k64"), "sfa_id": ids[0], "sfb_id": ids[1]}) == 1 << 31


def test_instr_desc_refuses_k96_of_mxf8():
    with pytest.raises(RuntimeError, match="4-bit kinds"):
        _instr_desc({"atom": "blackwell.tcgen05.mma.cta1.mxf8f6f4.m128n64k96.e4m3.f32.ue8m0.ss"})


NEXT = "blackwell.sm103.tcgen05.make_smem_desc_next"


def _next_desc_value(addr, nxt, attrs):
    b, _ = _emit_hook(NEXT, {"addr": [lambda b, p: b.constant_int(addr, "i32")],
                             "next_addr": [lambda b, p: b.constant_int(nxt, "i32")]}, attrs,
                      lambda b, out, res: b.op0("llvm.store", [res["desc"][0], out], "alignment = 8 : i64"))
    ptx = _core.compile(str(b), registry.target_named("sm_103a").as_dict(), want_cubin=False)["ptx"]
    m = re.search(r"st\.global\.(?:b|u)64\s+\[%rd\d+\],\s*(-?\d+);", ptx)
    assert m, ptx
    return int(m.group(1)) & (2 ** 64 - 1)


@pytest.mark.parametrize("addr,nxt,sbo", [(0x400, 0x8400, 1024), (0x430, 0x10400, 1024), (0x3FFF0, 0x0, 2048),
                                          (0x12360, 0x2C400, 1024)])
def test_next_descriptor_bits(blackwell, addr, nxt, sbo):
    got = _next_desc_value(addr, nxt, {"stride_byte_offset": sbo})
    # the leading field is next_addr's (x >> 4) mod 2^14, LBO mode 1, the rest as the relative form's
    assert got == _smem_desc_ref(addr, 0, sbo, "128B", lbo_mode=1) | ((nxt >> 4) & 0x3FFF) << 16
    assert (got >> 16) & 0x3FFF == (nxt >> 4) & 0x3FFF and (got >> 52) & 1 == 1 and (got >> 49) & 7 == 0


@pytest.mark.parametrize("attrs,message", [
    ({"stride_byte_offset": 1024, "swizzle": "64B"}, "128B"),
])
def test_next_descriptor_refusals(blackwell, attrs, message):
    with pytest.raises(Exception, match=message):
        _next_desc_value(0x400, 0x800, attrs)


@pytest.mark.parametrize("ident,vec", [
    ("blackwell.tcgen05.mma.cta1.mxf4nvf4.m128n256k96.e2m1.f32.e4m3.ss", "block16"),
    ("blackwell.tcgen05.mma.cta2.mxf4nvf4.m256n256k96.e2m1.f32.ue8m0.ss", "block16"),
    ("blackwell.tcgen05.mma.cta1.mxf4.m128n128k96.e2m1.f32.ue8m0.ss", "block32"),
    ("blackwell.tcgen05.mma.cta2.mxf4.m256n64k96.e2m1.f32.ue8m0.ss", "block32")])
def test_atoms_assemble_for_sm103a(ident, vec):
    ins, result = _probe(ident, {}, target="sm_103a")
    assert _ptx_pattern(ins, {}).search(result["ptx"])
    assert f".block_scale.{vec} " in result["ptx"]
    assert result["cubin"]       # ptxas for sm_103a took it


# --- a kernel: the MMA warp's instructions as CuTe DSL's sm_103a GEMMs issue them ----------------------------------

def _compile_k96_kernel(vec=16, cta=1):
    """One CTA (or a pair): A and B stages in shared memory as bytes, K-major under the 128-byte swizzle (rows of
    128 bytes = 256 4-bit values, in 16-byte K blocks); three K = 96 instructions cover a stage and a half, the third
    reading its last 16 bytes a row from the next stage (make_umma_smem_desc's next_src), issued with
    cute.mma_atom_call; the scale factors' tensor-memory layout from make_tmem_layout_sfa of their own shape."""
    import numpy as np

    import warpweave.pipeline as pipeline
    import warpweave.utils.blockscaled_layout as bsl
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    from dsl_helpers import target

    t = tc()
    m, n = 128 * cta, 256
    sf = cutlass.Float8E8M0FNU
    nsf = 96 // vec

    @cute.kernel
    def kern(tiled_mma: cute.TiledMma, g: cute.Tensor, sA_layout: cute.ComposedLayout,
             sB_layout: cute.ComposedLayout, sfa_layout: cute.Layout, sfb_layout: cute.Layout):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = utils.SmemAllocator()
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        sA = smem.allocate_tensor(cutlass.Uint8, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(cutlass.Uint8, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        sSFA = smem.allocate_tensor(sf, sfa_layout, 128)
        sSFB = smem.allocate_tensor(sf, sfb_layout, 128)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(512)
        tmem.wait_for_alloc()
        acc_ptr = tmem.retrieve_ptr(cutlass.Float32)
        acc = cute.make_tensor(acc_ptr, tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((m, n))).layout)
        # one scale factor a step along K: the i-th instruction's start at step i * nsf
        it = cute.make_layout(((((32, 4), 1), (vec, 1)), 1, 4 * nsf))
        sfa_ptr = cute.recast_ptr(acc_ptr + t.find_tmem_tensor_col_offset(acc), dtype=sf)
        tSFA = cute.make_tensor(sfa_ptr, bsl.make_tmem_layout_sfa(tiled_mma, (m, n, 384), vec, it))
        # the scale factors as the kernels lay them out ((8, 4, 4) rows a chunk), shared -> tensor memory
        t_sfa = cute.make_tensor(sfa_ptr, bsl.make_tmem_layout_sfa(tiled_mma, (m, n, 384), vec, sfa_layout))
        sfb_ptr = cute.recast_ptr(acc_ptr + t.find_tmem_tensor_col_offset(acc) + t.find_tmem_tensor_col_offset(t_sfa),
                                  dtype=sf)
        t_sfb = cute.make_tensor(sfb_ptr, bsl.make_tmem_layout_sfb(tiled_mma, (m, n, 384), vec, sfb_layout))
        s2t_atom = cute.make_copy_atom(t.Cp4x32x128bOp(t.CtaGroup(cta)), sf)
        copies = []
        for s_sf, t_sf in ((sSFA, t_sfa), (sSFB, t_sfb)):
            s_c, t_c = cute.filter_zeros(s_sf), cute.filter_zeros(t_sf)
            s2t = t.make_s2t_copy(s2t_atom, t_c)
            thr = s2t.get_slice(0)
            copies.append((s2t, t.get_s2t_smem_desc_tensor(s2t, thr.partition_S(s_c)), thr.partition_D(t_c)))
        if warp == 0:
            for s2t, src, dst in copies:
                cute.copy(s2t, src, dst)
            for i, (cur, nxt) in enumerate(((0, 0), (3, 0), (6, 1))):
                tiled_mma.set(t.Field.SFA, tSFA[(None, None, i * nsf)].iterator)
                tiled_mma.set(t.Field.SFB, tSFA[(None, None, i * nsf)].iterator)
                ad = t.make_umma_smem_desc(sA[(None, 0, cur, 0)].iterator, sA[(None, 0, cur, 0)].layout, "k",
                                           next_src=sA[(None, 0, 0, nxt)].iterator)
                bd = t.make_umma_smem_desc(sB[(None, 0, cur, 0)].iterator, sB[(None, 0, cur, 0)].layout, "k",
                                           next_src=sB[(None, 0, 0, nxt)].iterator)
                one = cute.make_layout(1, stride=0)
                # the accumulator as one atom's tile (rank 1), as the kernels hand it over
                d = acc[(None, 0, 0)]
                cute.mma_atom_call(tiled_mma, d, cute.make_tensor(ad, one), cute.make_tensor(bd, one), d)
                tiled_mma.set(t.Field.ACCUMULATE, True)
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(acc_ptr)

    @cute.jit
    def host(g: cute.Tensor):
        op = t.SM103MmaMXF4NVF4Op(sf, (m, n, 96), t.CtaGroup(cta)) if vec == 16 else \
            t.SM103MmaMXF4Op((m, n, 96), t.CtaGroup(cta))
        tiled_mma = cute.make_tiled_mma(op)
        atom = t.make_smem_layout_atom(t.SmemLayoutAtomKind.K_SW128, cutlass.Uint8)
        sA = t.tile_to_mma_shape(atom, (((m // cta, 16), 1, 8, 2)))
        sB = t.tile_to_mma_shape(atom, (((n // cta, 16), 1, 8, 2)))
        # CuTe DSL's sm_103a kernels' scale-factor chunk: 128 rows as (8, 4, 4) x 4 factors, 512 bytes
        chunk = cute.make_layout(((8, 4, 4), (vec, 4)), stride=((16, 128, 4), (0, 1)))
        sfa = cute.tiled_product(chunk, cute.make_layout((m // cta // 128, 384 // (4 * vec))))
        sfb = cute.tiled_product(chunk, cute.make_layout((n // 128, 384 // (4 * vec))))
        kern(tiled_mma, g, sA, sB, sfa, sfb).launch(grid=[cta, 1, 1], block=[128, 1, 1], cluster=[cta, 1, 1])

    with target("sm_103a"):
        return cute.compile(host, from_dlpack(np.zeros((m, n), np.float32)), options="-v")


@pytest.mark.parametrize("vec", [16, 32])
def test_k96_kernel_issues_three_instructions_with_next_descriptors(vec):
    ptx = _compile_k96_kernel(vec).info["ptx"]
    mma = re.findall(r"tcgen05\.mma\.cta_group::1\.kind::(\w+)\.block_scale\.(block\d+) \[%r\d+\], %rd\d+, "
                     r"%rd\d+, (%r\d+),", ptx)
    assert [m[:2] for m in mma] == [("mxf4nvf4" if vec == 16 else "mxf4", f"block{vec}")] * 3
    idesc = [int(re.search(rf"mov\.b32\s+{re.escape(m[2])},\s*(-?\d+);", ptx).group(1)) & 0xFFFFFFFF for m in mma]
    assert all(d >> 31 == 1 for d in idesc)                    # K = 96
    # instruction i starts at scale factor i * 96 / vec: byte (i * nsf) % 4 of its column (SFA / SFB ids)
    nsf = 96 // vec
    assert [((d >> 29) & 3, (d >> 4) & 3) for d in idesc] == [((i * nsf) % 4,) * 2 for i in range(3)]
    # every descriptor: SBO 1024, version 1, LBO mode 1 (the leading field an address), 128-byte swizzle
    assert ptx.count(str(_smem_desc_ref(0, 0, 1024, "128B", lbo_mode=1))) >= 3
    # the scale factors' copies: one 32x128b.warpx4 per 512-byte chunk, A's 384 / (4 vec) chunks along K and B's
    # twice as many (256 rows: 2 chunks a K step)
    k_chunks = 384 // (4 * vec)
    assert len(re.findall(r"tcgen05\.cp\.cta_group::1\.32x128b\.warp", ptx)) == 3 * k_chunks


def test_mma_atom_call_refuses_an_atom_of_no_instruction_at_the_users_line():
    from warpweave.cute.nvgpu import MmaUniversalOp

    atom = cute.make_mma_atom(MmaUniversalOp(cutlass.Float32))
    with pytest.raises(Exception, match=r"test_sm103_blockscaled.py:\d+: .*mma_atom_call"):
        cute.mma_atom_call(atom, None, None, None, None)


def test_make_umma_smem_desc_refuses_a_wrong_major_at_the_users_line():
    from warpweave import ext

    t = tc()
    atom = t.make_smem_layout_atom(t.SmemLayoutAtomKind.K_SW128, cutlass.Uint8)
    staged = t.tile_to_mma_shape(atom, ((128, 16), 1, 8, 2))
    ptr = ext.make_pointer(None, cutlass.Uint8, "smem", 1024)
    tile = cute.make_tensor(ptr, staged)[(None, 0, 3, 0)]
    with pytest.raises(Exception, match=r"test_sm103_blockscaled.py:\d+: .*K-major, not 'mn'"):
        t.make_umma_smem_desc(tile.iterator, tile.layout, "mn")
    with pytest.raises(Exception, match=r"test_sm103_blockscaled.py:\d+: .*major must be"):
        t.make_umma_smem_desc(tile.iterator, tile.layout, "row")
