"""Blackwell in the DSL, without a GPU: tcgen05 ops, their tiled MMAs and descriptors, tensor memory.

- The op classes with CuTe DSL's constructors (CtaGroup, OperandSource, OperandMajorMode) select the manifest's
  atoms and refuse bad arguments at the user's line.
- The tiled MMA's A, B and C thread-value layouts are CuTe's SM100 ones (the thread mode counts CTAs; each CTA of a
  pair holds its half of A's rows, B's columns and D's rows).
- The accumulator fragment's tensor-memory layout against the PTX ISA's data-path layouts A, B, D and F, stated
  here cell by cell from the ISA's description, not from the code's formula.
- make_tmem_copy's partitions against the PTX ISA's tcgen05.ld/st fragment layouts (register r of lane l of warp
  w holds lane 32 w + f(l, r), column g(l, r)), for every thread and value, and end to end: the register a thread
  loads is paired by partition_D with the element of D that the MMA wrote into that cell.
- The UMMA descriptor's (major, swizzle, LBO, SBO) of the helpers' layouts and the refusal of unreadable ones; the
  instruction descriptor in the PTX of a compiled kernel; a kernel's SASS (UTCHMMA, UTCBAR, LDTM, tensor-memory
  allocation), no local memory.
"""
from __future__ import annotations

import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core

from dsl_helpers import sass_opcodes, target

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
LANE = 1 << 16


def tc():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


def helpers():
    import warpweave.utils.blackwell_helpers as sm100

    return sm100


def mma(m, n, cta=1, ab=cutlass.Float16, a_major="K", b_major="K"):
    t = tc()
    op = t.MmaF16BF16Op(ab, cutlass.Float32, (m, n, 16), t.CtaGroup.TWO if cta == 2 else t.CtaGroup.ONE,
                        t.OperandSource.SMEM, t.OperandMajorMode[a_major], t.OperandMajorMode[b_major])
    return cute.make_tiled_mma(op)


# --- ops --------------------------------------------------------------------------------------------------------

def test_ops_select_their_atoms():
    t = tc()
    cases = [
        (t.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (128, 256, 16), t.CtaGroup.ONE),
         "blackwell.tcgen05.mma.cta1.f16.m128n256k16.bf16.f32.ss"),
        (t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (256, 128, 16), t.CtaGroup.TWO),
         "blackwell.tcgen05.mma.cta2.f16.m256n128k16.f16.f32.ss"),
        (t.MmaTF32Op((128, 64, 8), t.CtaGroup.ONE), "blackwell.tcgen05.mma.cta1.tf32.m128n64k8.tf32.f32.ss"),
        (t.MmaI8Op(cutlass.Int8, (128, 128, 32), t.CtaGroup.ONE), "blackwell.tcgen05.mma.cta1.i8.m128n128k32.s8.s32.ss"),
        (t.MmaF8F6F4Op(cutlass.Float8E4M3FN, cutlass.Float32, (256, 256, 32), t.CtaGroup.TWO),
         "blackwell.tcgen05.mma.cta2.f8f6f4.m256n256k32.e4m3.f32.ss"),
    ]
    for op, ident in cases:
        assert op.entry()[1]["id"] == ident
        atom = cute.make_mma_atom(op)
        assert atom.manifest["id"] == ident
    a = t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE, t.OperandSource.SMEM,
                       t.OperandMajorMode.MN, t.OperandMajorMode.K)
    b = t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE)
    assert a != b and a.a_major_mode == t.OperandMajorMode.MN and b.a_major_mode == t.OperandMajorMode.K
    assert str(t.CtaGroup.TWO) == "2" and t.CtaGroup.TWO == 2 and repr(t.CtaGroup.ONE) == "CtaGroup.ONE"


def test_ops_refuse_bad_arguments_at_the_users_line():
    t = tc()
    with pytest.raises(Exception, match=r"test_tcgen05_dsl.py:\d+: .*cta_group must be"):
        t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), 3)
    with pytest.raises(Exception, match=r"test_tcgen05_dsl.py:\d+: .*A in tensor memory is K-major"):
        t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE, t.OperandSource.TMEM,
                       t.OperandMajorMode.MN)
    with pytest.raises(Exception, match=r"test_tcgen05_dsl.py:\d+: .*a_major_mode must be"):
        t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE, t.OperandSource.SMEM, "k")
    # the members' names, as the manifest spells them, are accepted
    assert t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE, "SMEM",
                          "MN").a_major_mode == t.OperandMajorMode.MN
    # the manifest's rules name the broken one
    with pytest.raises(Exception, match="cta_group 1 takes M 64 or 128"):
        cute.make_mma_atom(t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (256, 64, 16), t.CtaGroup.ONE))


# --- tiled MMA layouts --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("m,n,cta", [(128, 256, 1), (64, 128, 1), (256, 256, 2), (128, 64, 2)])
def test_tiled_mma_layouts_split_the_tile_between_the_ctas(m, n, cta):
    tm = mma(m, n, cta)
    assert cute.size(tm.thr_id.shape) == cta
    atom = tm.atom
    for tv, rows, cols in ((atom.layout_a_tv, m, 16), (atom.layout_b_tv, n, 16), (atom.layout_c_tv, m, n)):
        assert cute.size(tv, mode=[0]) == cta
        seen = set()
        for v in range(cta):
            for i in range(rows // cta * cols):
                x = tv((v, i))
                r, c = x % rows, x // rows
                # CTA v holds rows [v rows/cta, (v+1) rows/cta) of the operand, all of its columns
                assert v * rows // cta <= r < (v + 1) * rows // cta, (v, i, r)
                seen.add(x)
        assert seen == set(range(rows * cols))
    assert tm.partition_shape_C((m, n)) == ((m // cta, n), 1, 1)
    assert tm.partition_shape_A((m, 64)) == ((m // cta, 16), 1, 4)


# --- the accumulator in tensor memory ------------------------------------------------------------------------------

def _cell(layout, m, n):
    off = layout(((m, n), 0, 0))
    return off // LANE, off % LANE


def test_accumulator_layout_d_and_a_one_row_per_lane():
    # PTX ISA data-path layouts D (M = 128, one CTA) and A (M = 256, two CTAs: 128 rows each): row i of the CTA's D
    # is lane i, column j is column j.
    for m, cta in ((128, 1), (256, 2)):
        tm = mma(m, 128, cta)
        frag = tm.make_fragment_C(tm.partition_shape_C((m, 128)))
        assert frag.memspace == "tmem"
        for i in (0, 1, 31, 32, 100, 127):
            for j in (0, 5, 127):
                assert _cell(frag.layout, i, j) == (i, j)


def test_accumulator_layout_f_m64_uses_the_first_16_lanes_of_each_warp():
    # Layout F (M = 64, one CTA): rows 0-15 in lanes 0-15, rows 16-31 in lanes 32-47, rows 32-47 in lanes 64-79,
    # rows 48-63 in lanes 96-111; columns as they are.
    tm = mma(64, 64, 1)
    frag = tm.make_fragment_C(tm.partition_shape_C((64, 64)))
    want_lanes = list(range(0, 16)) + list(range(32, 48)) + list(range(64, 80)) + list(range(96, 112))
    for i in range(64):
        assert _cell(frag.layout, i, 7) == (want_lanes[i], 7)


def test_accumulator_layout_b_folds_the_column_halves():
    # Layout B (M = 128, two CTAs: 64 rows each): the first N/2 columns in lanes 0-63, the others in lanes 64-127,
    # at columns 0 .. N/2 - 1.
    n = 128
    tm = mma(128, n, 2)
    frag = tm.make_fragment_C(tm.partition_shape_C((128, n)))
    assert _cell(frag.layout, 0, 0) == (0, 0)
    assert _cell(frag.layout, 63, 63) == (63, 63)
    assert _cell(frag.layout, 0, 64) == (64, 0)
    assert _cell(frag.layout, 10, 100) == (74, 36)
    cells = {_cell(frag.layout, i, j) for i in range(64) for j in range(n)}
    assert len(cells) == 64 * n and max(c for _, c in cells) == n // 2 - 1 and max(lane for lane, _ in cells) == 127


def test_accumulator_columns_and_refusals():
    from warpweave import utils

    tm = mma(128, 256, 1)
    frag = tm.make_fragment_C(tm.partition_shape_C((128, 256)))
    assert utils.get_num_tmem_alloc_cols(frag) == 256
    assert utils.get_num_tmem_alloc_cols(tm.make_fragment_C(tm.partition_shape_C((128, 256)) + (2,))) == 512
    assert utils.get_num_tmem_alloc_cols(mma(128, 48, 1).make_fragment_C(((128, 48), 1, 1))) == 64
    with pytest.raises(Exception, match="512"):
        tm.make_fragment_C(tm.partition_shape_C((128, 256)) + (3,))
    # where the next tensor may start, and the allocation bounds, by CuTe DSL's names
    assert tc().find_tmem_tensor_col_offset(frag) == 256
    assert tc().find_tmem_tensor_col_offset(mma(128, 128, 2).make_fragment_C(((64, 128), 1, 1))) == 64
    assert cute.arch.get_max_tmem_alloc_cols("sm_100") == 512 and cute.arch.get_min_tmem_alloc_cols("sm_100") == 32
    t = tc()
    f16acc = cute.make_tiled_mma(t.MmaF16BF16Op(cutlass.Float16, cutlass.Float16, (128, 64, 16), t.CtaGroup.ONE))
    with pytest.raises(Exception, match="Float16.*not supported"):
        f16acc.make_fragment_C(f16acc.partition_shape_C((128, 64)))


# --- tensor-memory copies against the PTX ISA's fragment layouts ------------------------------------------------------

# (lane within the 32 (or 16) lanes of the instruction, 32-bit column) of register r of lane l, PTX ISA
# "Matrix fragments for shape .32x32b / .16x256b / .16x128b / .16x64b" (columns of one repetition; repetition k
# adds k times the repetition's columns)
def _frag_32x32b(l, r):
    return l, r


def _frag_16x256b(l, r):
    k, r = divmod(r, 4)
    return l // 4 + 8 * (r // 2), 2 * (l % 4) + r % 2 + 8 * k


def _frag_16x128b(l, r):
    k, r = divmod(r, 2)
    return l // 4 + 8 * r, l % 4 + 4 * k


def _frag_16x64b(l, r):
    return l // 4 + 8 * (l % 2), (l // 2) % 2 + 2 * r


_FRAGMENTS = {"Ld32x32bOp": (_frag_32x32b, 32, 1), "Ld16x256bOp": (_frag_16x256b, 16, 8),
              "Ld16x128bOp": (_frag_16x128b, 16, 4), "Ld16x64bOp": (_frag_16x64b, 16, 2)}


def _tmem_tile(rows_per_cta, n, cta, cols):
    tm = mma(rows_per_cta * cta, n, cta)
    frag = tm.make_fragment_C(tm.partition_shape_C((rows_per_cta * cta, n)))
    tile = cute.flat_divide(frag[((None, None), 0, 0)], (rows_per_cta, cols))
    return tm, frag, tile


@pytest.mark.parametrize("op,num,m,cta,cols", [("Ld32x32bOp", 32, 128, 1, 32), ("Ld32x32bOp", 8, 128, 1, 32),
                                                ("Ld32x32bOp", 16, 256, 2, 64), ("Ld16x256bOp", 4, 128, 1, 32),
                                                ("Ld16x128bOp", 8, 128, 1, 32), ("Ld16x256bOp", 2, 64, 1, 32),
                                                ("Ld16x64bOp", 16, 128, 1, 32), ("Ld16x64bOp", 8, 64, 1, 32)])
def test_tmem_copy_partition_matches_the_fragment_layout(op, num, m, cta, cols):
    t = tc()
    rows = m // cta
    frag_of, lanes, cols_per_rep = _FRAGMENTS[op]
    tm, frag, tile = _tmem_tile(rows, 128, cta, cols)
    atom = cute.make_copy_atom(getattr(t, op)(t.Repetition[f"x{num}"]), cutlass.Float32)
    one = tile[(None, None, 0, 0)]
    copy = t.make_tmem_copy(atom, one)
    per_thread = cute.size(one) // 128
    inst_regs = cute.size(atom.layout_dst_tv, mode=[1])
    inst_cols = cols_per_rep * num
    d_layout = frag.layout
    cells = set()
    for tid in range(128):
        w, l = divmod(tid, 32)
        # (one instruction's values, the tile's rest modes), as CuTe partitions: value v of instance v // inst_regs
        part = copy.get_slice(tid).partition_S(cute.make_tensor(frag.iterator, one.layout))
        assert cute.size(part, mode=[0]) == inst_regs
        for v in range(per_thread):
            off = part.iterator.offset + part.layout(v)
            lane, col = divmod(off, LANE)
            j, r = divmod(v, inst_regs)
            fl, fc = frag_of(l, r)
            # instance j: over the lane halves (16-lane shapes) first, then the column blocks
            halves = 32 // lanes if rows == 128 else 1
            h, blk = j % halves, j // halves
            assert (lane, col) == (32 * w + 16 * h + fl, fc + blk * inst_cols), (tid, v)
            cells.add(off)
    # every cell of the tile exactly once
    assert len(cells) == cute.size(one)
    # the register holding a cell is paired (partition_D of a tile of D's coordinates) with the element whose
    # accumulator the MMA wrote there
    coords = cute.flat_divide(cute.make_identity_tensor((rows, 128)), (rows, cols))
    pd = copy.get_slice(5).partition_D(coords)
    ps = copy.get_slice(5).partition_S(cute.make_tensor(frag.iterator, tile.layout))
    for v in range(per_thread):
        mi, ni = pd[(v, 0, 0, 0, 1)]
        assert ni >= cols      # the second column block of the tile
        assert d_layout(((mi, ni), 0, 0)) == ps.iterator.offset + ps.layout((v, 0, 0, 0, 1)), v


def test_tmem_copy_refuses_what_the_atom_cannot_reach():
    t = tc()
    # M = 64 (layout F): rows live in lanes 0-15 of each warp; a 32-lane .32x32b load would read lanes 16-31 too
    tm, frag, tile = _tmem_tile(64, 128, 1, 32)
    atom = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition.x16), cutlass.Float32)
    with pytest.raises(Exception, match="reaches cells outside the tile"):
        t.make_tmem_copy(atom, tile[(None, None, 0, 0)])
    with pytest.raises(Exception, match="tensor memory"):
        t.make_tmem_copy(atom, cute.make_identity_tensor((128, 32)))


# --- descriptors ------------------------------------------------------------------------------------------------

def _desc_kind():
    from warpweave.backends.blackwell import tcgen05_mma

    return tcgen05_mma.UmmaSmemDescriptorKind()


def _smem_tile(layout, dtype):
    from warpweave import ext

    return cute.make_tensor(ext.make_pointer(None, dtype, "smem", 1024), layout)


@pytest.mark.parametrize("dtype,which,major,want", [
    (cutlass.Float16, "A", "K", ("K", 128, 16, 1024)),
    (cutlass.BFloat16, "B", "K", ("K", 128, 16, 1024)),
    (cutlass.Float16, "A", "MN", ("MN", 128, 8192, 1024)),
    (cutlass.Float16, "B", "MN", ("MN", 128, 8192, 1024)),
    (cutlass.TFloat32, "A", "K", ("K", 128, 16, 1024)),
    (cutlass.Float8E4M3FN, "B", "K", ("K", 128, 16, 1024)),
])
def test_umma_descriptor_of_the_helpers_layouts(dtype, which, major, want):
    sm100 = helpers()
    t = tc()
    tm = sm100.make_trivial_tiled_mma(dtype, t.OperandMajorMode[major], t.OperandMajorMode[major],
                                      cutlass.Float32, t.CtaGroup.ONE, (128, 128))
    k_tile = 128 * 8 // dtype.width                                  # 128 bytes of K per stage
    make = sm100.make_smem_layout_a if which == "A" else sm100.make_smem_layout_b
    staged = make(tm, (128, 128, k_tile), dtype, 3)
    assert cute.size(staged.outer, mode=[3]) == 3
    tile = _smem_tile(staged, dtype)
    kind = _desc_kind()
    # every k-block of every stage is a tile the descriptor describes, all with the same strides
    for kb in range(cute.size(staged.outer, mode=[2])):
        for s in range(3):
            assert kind.form(which.lower(), tile[(None, 0, kb, s)]) == want


def test_umma_descriptor_refuses_unreadable_layouts():
    kind = _desc_kind()
    plain = _smem_tile(cute.make_layout((128, 16), stride=(16, 1)), cutlass.Float16)       # rows of 32 bytes
    with pytest.raises(Exception, match="not a layout tcgen05.mma reads"):
        kind.form("a", plain)
    neither = _smem_tile(cute.make_layout((128, 16), stride=(32, 2)), cutlass.Float16)
    with pytest.raises(Exception, match="contiguous neither"):
        kind.form("a", neither)
    swz = _smem_tile(cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((128, 16), stride=(64, 1))),
                     cutlass.Float16)
    with pytest.raises(Exception, match="swizzle"):
        kind.form("a", swz)


# --- a kernel -------------------------------------------------------------------------------------------------------


def _compile_small_gemm(ab=cutlass.Float16, m=128, n=64, k_tile=64, ld=("Ld32x32bOp", 32), epi_cols=32, op=None,
                        arch="sm_100a"):
    """op: a function of no arguments making the MMA op (else make_trivial_tiled_mma's for ab)."""
    import numpy as np

    import warpweave.pipeline as pipeline
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    t = tc()
    sm100 = helpers()

    @cute.kernel
    def kern(tiled_mma: cute.TiledMma, g: cute.Tensor, sA_layout: cute.ComposedLayout,
             sB_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 2, byte_alignment=8)
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        sA = smem.allocate_tensor(ab, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(ab, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(utils.get_num_tmem_alloc_cols(tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((m, n)))))
        if tidx == 0:
            cute.arch.mbarrier_init(bars, cutlass.Int32(1))
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32),
                               tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((m, n))).layout)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        if warp == 0:
            for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, 0], tCrB[None, None, kb, 0], acc)
                tiled_mma.set(t.Field.ACCUMULATE, True)
            t.commit(bars)
        cute.arch.mbarrier_wait(bars, cutlass.Int32(0))
        epi = cute.flat_divide(acc[((None, None), 0, 0)], (m, epi_cols))
        atom = cute.make_copy_atom(getattr(t, ld[0])(t.Repetition[f"x{ld[1]}"]), cutlass.Float32)
        t2r = t.make_tmem_copy(atom, epi[(None, None, 0, 0)])
        thr = t2r.get_slice(tidx)
        tT = thr.partition_S(epi)
        tG = thr.partition_D(cute.flat_divide(g, (m, epi_cols)))
        r = cute.make_rmem_tensor(tG[(None, None, None, 0, 0)].shape, cutlass.Float32)
        for j in cutlass.range_constexpr(cute.size(epi, mode=[3])):
            cute.copy(t2r, tT[(None, None, None, 0, j)], r)
            cute.autovec_copy(r, tG[(None, None, None, 0, j)])
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(acc.iterator)

    @cute.jit
    def host(g: cute.Tensor):
        tiled_mma = cute.make_tiled_mma(op()) if op is not None else sm100.make_trivial_tiled_mma(
            ab, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32, t.CtaGroup.ONE, (m, n))
        sA = sm100.make_smem_layout_a(tiled_mma, (m, n, k_tile), ab, 1)
        sB = sm100.make_smem_layout_b(tiled_mma, (m, n, k_tile), ab, 1)
        kern(tiled_mma, g, sA, sB).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros((m, n), np.float32)), options="-v")


def test_instruction_descriptor_in_the_ptx():
    # kind::f16, f16 x f16 -> f32, K-major, M = 128, N = 64: D format f32 (1 << 4), N >> 3 at bit 17, M >> 4 at 24
    compiled = _compile_small_gemm()
    want = (1 << 4) | ((64 >> 3) << 17) | ((128 >> 4) << 24)
    assert re.search(rf"\b{want}\b", compiled.info["ptx"]) or f"0x{want:x}" in compiled.info["ptx"].lower() or \
        f"0x{want:08X}" in compiled.info["ptx"], compiled.info["ptx"][-3000:]
    bf = _compile_small_gemm(cutlass.BFloat16)
    want_bf = want | (1 << 7) | (1 << 10)            # A and B format bf16
    assert re.search(rf"\b{want_bf}\b", bf.info["ptx"]) or f"0x{want_bf:08X}" in bf.info["ptx"]


@SASS
@pytest.mark.parametrize("ld", [("Ld32x32bOp", 32), ("Ld32x32bOp", 8), ("Ld16x256bOp", 4)])
def test_small_tcgen05_kernel_sass(ld):
    compiled = _compile_small_gemm(ld=ld)
    print(compiled.info["jit_log"])
    ops = sass_opcodes(compiled.cubin)
    count = lambda p: sum(1 for o in ops if o.startswith(p))  # noqa: E731
    assert count("UTCHMMA") == 4                       # 64 of K in four instructions of K = 16
    assert count("UTCBAR") == 1
    per_thread = 128 * 64 // 128
    regs_per_ld = ld[1] if ld[0] == "Ld32x32bOp" else 4 * ld[1]
    assert count("LDTM") == per_thread // regs_per_ld, ops
    assert count("UTCATOMSWS") >= 2                     # alloc and dealloc
    assert not any(o.startswith(("LDL", "STL")) for o in ops)


@SASS
def test_tmem_store_then_load_round_trip_compiles():
    # registers -> tensor memory (tcgen05.st) -> registers (tcgen05.ld) over the same partition
    import numpy as np

    import warpweave.pipeline as pipeline
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    t = tc()

    @cute.kernel
    def kern(tiled_mma: cute.TiledMma, g: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(32)
        tmem.wait_for_alloc()
        frag = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((128, 32)))
        # CuTe DSL's cute.arch form of TmemAllocator.retrieve_ptr
        acc = cute.make_tensor(cute.arch.retrieve_tmem_ptr(cutlass.Float32, 16, hold), frag.layout)[((None, None), 0, 0)]
        st = t.make_tmem_copy(cute.make_copy_atom(t.St32x32bOp(t.Repetition.x16), cutlass.Float32), acc)
        ld = t.make_tmem_copy(cute.make_copy_atom(t.Ld32x32bOp(t.Repetition.x16), cutlass.Float32), acc)
        src = st.get_slice(tidx).partition_D(acc)
        gpart = ld.get_slice(tidx).partition_D(g)
        r = cute.make_rmem_tensor(src.shape, cutlass.Float32)
        for i in cutlass.range_constexpr(cute.size(r)):
            r[i] = cutlass.Float32(tidx + i)
        cute.copy(st, r, src)
        cute.arch.fence_view_async_tmem_store()
        back = cute.make_rmem_tensor(src.shape, cutlass.Float32)
        cute.copy(ld, ld.get_slice(tidx).partition_S(acc), back)
        cute.autovec_copy(back, gpart)
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(acc.iterator)

    @cute.jit
    def host(g: cute.Tensor):
        kern(mma(128, 32), g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        compiled = cute.compile(host, from_dlpack(np.zeros((128, 32), np.float32)))
    ops = sass_opcodes(compiled.cubin)
    assert sum(o.startswith("STTM.x16") for o in ops) == 2 and sum(o.startswith("LDTM.x16") for o in ops) == 2
    # the store's registers are waited for by the program's fence; of the two loads, the second waits for the first
    # and nothing for the last (its reads are ordered after it, as in CuTe DSL: a program fences where it hands
    # tensor memory back)
    ptx = compiled.info["ptx"]
    assert "tcgen05.wait::st" in ptx and ptx.count("tcgen05.wait::ld") == 1
    assert ptx.rindex("tcgen05.wait::ld") < ptx.rindex("tcgen05.ld.sync")


def _s2t_kernel(op_name, smem_layout, cols, tiles=2):
    import numpy as np

    import warpweave.pipeline as pipeline
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    t = tc()

    @cute.kernel
    def kern(g: cute.Tensor):
        smem = utils.SmemAllocator()
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        s = smem.allocate_tensor(cutlass.Float16, smem_layout, 1024)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(32)
        tmem.wait_for_alloc()
        # rows in lanes, two fp16 values per 32-bit column
        tm = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float16), cute.make_layout((128, cols * tiles),
                                                                                   stride=(2 * LANE, 1)))
        s2t = t.make_s2t_copy(cute.make_copy_atom(getattr(t, op_name)(t.CtaGroup.ONE), cutlass.Float16), tm)
        thr = s2t.get_slice(0)
        src = t.get_s2t_smem_desc_tensor(s2t, thr.partition_S(s))
        if cute.arch.make_warp_uniform(cute.arch.warp_idx()) == 0:
            cute.copy(s2t, src, thr.partition_D(tm))
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(tm.iterator)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(4, np.float32)))


@SASS
def test_s2t_copy_128x256b_and_128x128b():
    # canonical no-swizzle K-major tiles: 8 x 16-byte core matrices, 128 bytes each; 16 row groups 256 bytes apart
    # (two core matrices of K per 32-byte row) and the K halves 128 bytes apart
    two_tiles = cute.make_layout(((8, 16), ((8, 2), 2)), stride=((8, 128), ((1, 64), 2048)))
    compiled = _s2t_kernel("Cp128x256bOp", two_tiles, 16)
    ops = sass_opcodes(compiled.cubin)
    assert sum(o == "UTCCP.T.S" for o in ops) == 2, ops
    half = cute.make_layout(((8, 16), (8, 2)), stride=((8, 64), (1, 1024)))
    ops = sass_opcodes(_s2t_kernel("Cp128x128bOp", half, 8).cubin)
    assert sum(o == "UTCCP.T.S.128dp128bit" for o in ops) == 2, ops


def test_s2t_copy_refuses_unreadable_tiles_and_other_shapes():
    with pytest.raises(Exception, match="not a layout tcgen05.mma reads"):
        _s2t_kernel("Cp128x256bOp", cute.make_layout((128, 32), stride=(32, 1)), 16)
    with pytest.raises(Exception, match="supported ops are"):
        _s2t_kernel("Cp4x256bOp", cute.make_layout((128, 32), stride=(32, 1)), 16)


@pytest.mark.parametrize("stages", ["0,1", "s,s+1"])
def test_gemm_accumulates_in_place_only(stages):
    # cute.gemm(tiled_mma, d, a, b, c) with a c other than d is refused at the user's line
    _gemm_d_c(stages, refused=True)


def test_gemm_takes_d_and_c_sliced_alike_by_a_dynamic_stage():
    # tCtAcc[None, None, None, state.index] written twice, as CuTe DSL's programs pass d and c: one address
    _gemm_d_c("s,s", refused=False)


def _gemm_d_c(stages, refused):
    import numpy as np

    import warpweave.pipeline as pipeline
    from warpweave import utils
    from warpweave.cute.runtime import from_dlpack

    sm = helpers()
    t = tc()

    @cute.kernel
    def kern(tiled_mma: cute.TiledMma, sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
             s: cutlass.Int32):
        smem = utils.SmemAllocator()
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        sA = smem.allocate_tensor(cutlass.Float16, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(cutlass.Float16, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(128)
        tmem.wait_for_alloc()
        layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C((128, 64)) + (2,)).layout
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), layout)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        d_stage, c_stage = {"0,1": (0, 1), "s,s+1": (s, s + 1), "s,s": (s, s)}[stages]
        cute.gemm(tiled_mma, acc[(None, None, None, d_stage)], tCrA[None, None, 0, 0], tCrB[None, None, 0, 0],
                  acc[(None, None, None, c_stage)])

    @cute.jit
    def host(g: cute.Tensor, s: cutlass.Int32):
        tm = sm.make_trivial_tiled_mma(cutlass.Float16, t.OperandMajorMode.K, t.OperandMajorMode.K, cutlass.Float32,
                                       t.CtaGroup.ONE, (128, 64))
        kern(tm, sm.make_smem_layout_a(tm, (128, 64, 64), cutlass.Float16, 1),
             sm.make_smem_layout_b(tm, (128, 64, 64), cutlass.Float16, 1), s).launch(grid=[1, 1, 1],
                                                                                      block=[128, 1, 1])

    with target("sm_100a"):
        if not refused:
            assert "tcgen05.mma" in cute.compile(host, from_dlpack(np.zeros(4, np.float32)), 1).info["ptx"]
            return
        with pytest.raises(Exception, match=r"test_tcgen05_dsl.py:\d+: .*accumulates into D in place"):
            cute.compile(host, from_dlpack(np.zeros(4, np.float32)), 1)


def test_tmem_copy_ops_take_cute_dsl_pack_arguments():
    t = tc()
    atom = cute.make_copy_atom(t.Ld32x32bOp(t.Repetition.x32, t.Pack.NONE), cutlass.Float32)
    assert atom.manifest["id"] == "blackwell.tcgen05.ld.32x32b.x32"
    assert cute.make_copy_atom(t.St16x256bOp(t.Repetition.x2, t.Unpack.NONE),
                               cutlass.Float32).manifest["id"] == "blackwell.tcgen05.st.16x256b.x2"
    with pytest.raises(Exception, match=r"test_tcgen05_dsl.py:\d+: .*pack=Pack.PACK_16b_IN_32b is not supported"):
        t.Ld16x128bOp(t.Repetition.x4, t.Pack.PACK_16b_IN_32b)
