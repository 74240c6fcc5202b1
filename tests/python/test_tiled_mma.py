"""Tiled MMA and tiled copy partitioning, checked on the CPU (no tracing): partition_A/B/C of identity tensors
give each thread's coordinates, which must be the PTX ISA's fragment formulas for mma.sync m16n8k16; retile must
pair every ldmatrix value with the MMA fragment register that expects the same (row, column)."""
import itertools

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.tensor import CoordIterator, Tensor
from warpweave.cute.nvgpu import warp


def mma_16816(layout=(1, 1, 1), perm=None):
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    return cute.make_tiled_mma(op, cute.make_layout(layout), permutation_mnk=perm)


def coords(t):
    return [t[i] for i in range(cute.size(t))]


# PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type": groupID = lane >> 2,
# threadID_in_group = lane % 4.
def ptx_a(lane, i):
    g, q = lane >> 2, lane % 4
    return g + 8 * ((i >> 1) & 1), 2 * q + (i & 1) + 8 * (i >> 2)


def ptx_b(lane, i):  # (n, k)
    g, q = lane >> 2, lane % 4
    return g, 2 * q + (i & 1) + 8 * (i >> 1)


def ptx_c(lane, i):
    g, q = lane >> 2, lane % 4
    return g + 8 * (i >> 1), 2 * q + (i & 1)


def test_single_atom_partitions_follow_the_ptx_fragments():
    tm = mma_16816()
    assert tm.size == 32 and tm.shape_mnk == (16, 8, 16)
    cA = cute.make_identity_tensor((16, 16))
    cB = cute.make_identity_tensor((8, 16))
    cC = cute.make_identity_tensor((16, 8))
    for lane in range(32):
        thr = tm.get_slice(lane)
        pa, pb, pc = thr.partition_A(cA), thr.partition_B(cB), thr.partition_C(cC)
        assert cute.size(pa) == 8 and cute.size(pb) == 4 and cute.size(pc) == 4
        assert coords(pa) == [ptx_a(lane, i) for i in range(8)]
        assert coords(pb) == [ptx_b(lane, i) for i in range(4)]
        assert coords(pc) == [ptx_c(lane, i) for i in range(4)]


def test_partition_of_a_memory_layout_gives_offsets():
    # A row-major (16, 16) tile: offset = 16 m + k; lane 5 holds rows 1 and 9, columns 2, 3, 10, 11.
    tm = mma_16816()
    t = Tensor(CoordIterator(0), cute.make_layout((16, 16), stride=(16, 1)))
    p = tm.get_slice(5).partition_A(t)
    assert str(p.layout) == "((2,2,2),1,1):((1,128,8),0,0)"
    assert p.iterator.base == 16 * 1 + 2
    assert [p[i] for i in range(8)] == [16 * m + k for m, k in (ptx_a(5, i) for i in range(8))]


@pytest.mark.parametrize("atoms,perm,tile", [((2, 2, 1), (32, 32, 16), (64, 64, 32)),
                                             ((2, 2, 1), None, (32, 16, 16)),
                                             ((1, 4, 1), (16, 64, 16), (32, 128, 32))])
def test_tiled_partitions_cover_the_tile_once(atoms, perm, tile):
    tm = mma_16816(atoms, perm)
    M, N, K = tile
    for which, shape, part in (("A", (M, K), "partition_A"), ("B", (N, K), "partition_B"),
                               ("C", (M, N), "partition_C")):
        ident = cute.make_identity_tensor(shape)
        seen = {}
        for t in range(tm.size):
            for c in coords(getattr(tm.get_slice(t), part)(ident)):
                seen.setdefault(c, set()).add(t)
        assert set(seen) == set(itertools.product(range(shape[0]), range(shape[1]))), which
        if which == "C":  # every C element has exactly one owner
            assert all(len(s) == 1 for s in seen.values())
        else:  # an A (B) element is held by the warps of every N (M) position of the atom layout
            copies = atoms[1] if which == "A" else atoms[0]
            assert all(len(s) == copies for s in seen.values()), which


def test_tiled_c_partition_matches_warp_and_permutation():
    # 2x2 warps, permutation N = 32: warp w holds M rows 16*(w%2) + ..., N columns 8*(w//2) + 16*r + ...
    tm = mma_16816((2, 2, 1), (32, 32, 16))
    pc = tm.get_slice(70).partition_C(cute.make_identity_tensor((32, 32)))  # warp 2: m 0, n 1; lane 6
    assert cute.shape(pc) == ((2, 2), 1, 2)
    lane, wm, wn = 6, 0, 1
    want = [(m + 16 * wm, n + 8 * wn + 16 * r) for r in range(2) for (m, n) in (ptx_c(lane, i) for i in range(4))]
    assert coords(pc) == want
    assert tm.partition_shape_C((128, 128)) == ((2, 2), 4, 8)
    assert tm.partition_shape_A((128, 32)) == ((2, 2, 2), 4, 2)
    assert tm.partition_shape_B((128, 32)) == ((2, 2), 8, 2)


def _fragment_positions(layout):
    """offset in a compact fragment -> its linear position."""
    return {layout(i): i for i in range(cute.size(layout))}


@pytest.mark.parametrize("which,transpose", [("A", False), ("A", True), ("B", False), ("B", True)])
def test_ldmatrix_retile_feeds_each_register_its_mma_element(which, transpose):
    tm = mma_16816((2, 2, 1), (32, 32, 16))
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(transpose, 4), cutlass.Float16)
    shape = (64, 32) if which == "A" else (64, 32)
    ident = cute.make_identity_tensor(shape)
    tiled_copy = cute.make_tiled_copy_A(atom, tm) if which == "A" else cute.make_tiled_copy_B(atom, tm)
    for t in (0, 5, 37, 70, 127):
        thr_mma = tm.get_slice(t)
        part = thr_mma.partition_A(ident) if which == "A" else thr_mma.partition_B(ident)
        frag_layout = cute.make_layout(cute.shape(part))
        frag = Tensor(CoordIterator(0), frag_layout)
        pos = _fragment_positions(frag_layout)
        thr_copy = tiled_copy.get_slice(t)
        got = thr_copy.partition_D(ident)         # the element each copy value delivers to this thread
        dst = thr_copy.retile(frag)               # the fragment offset each copy value is written to
        assert cute.size(got) == cute.size(dst) == cute.size(part)
        for j in range(cute.size(got)):
            assert part[pos[dst[j]]] == got[j], (t, j)


def test_ldmatrix_x4_reads_whole_rows_per_thread():
    # Non-transposed ldmatrix on a K-major A tile: each thread supplies the address of one 8-element row.
    tm = mma_16816((2, 2, 1), (32, 32, 16))
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
    tc = cute.make_tiled_copy_A(atom, tm)
    src = tc.get_slice(9).partition_S(cute.make_identity_tensor((32, 16)))
    first = [src[j] for j in range(8)]
    assert len({m for m, _ in first}) == 1  # one row ...
    assert [k for _, k in first] == list(range(first[0][1], first[0][1] + 8))  # ... of 8 consecutive k


def test_universal_fma_tiled_mma_with_layout_permutation():
    op = cute.nvgpu.MmaUniversalOp(cutlass.Float32)
    atoms = cute.make_layout((16, 16, 1), stride=(16, 1, 0))
    perm_m = cute.make_layout((16, 4), stride=(4, 1))
    tm = cute.make_tiled_mma(op, atoms, permutation_mnk=(perm_m, perm_m, None))
    assert tm.size == 256
    pa = tm.get_slice(17).partition_A(cute.make_identity_tensor((128, 8)))
    # thread 17 is atom (m 1, n 1): M rows 4..7 and 68..71 (runs of 4), every k
    ms = sorted({m for m, _ in coords(pa)})
    assert ms == [4, 5, 6, 7, 68, 69, 70, 71]


def test_gemm_rejects_mismatched_fragments():
    tm = mma_16816()
    with pytest.raises(Exception, match="K = 1|atom layout|three modes"):
        cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)),
                            cute.make_layout((1, 1, 1, 2)))
    assert tm.tile_size(0) == 16


def test_unknown_atom_parameters_name_the_offer():
    with pytest.raises(Exception, match="offered"):
        cute.make_tiled_mma(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 9)))
    with pytest.raises(Exception, match="no parameter"):
        warp.LdMatrix8x8x16bOp(transposed=True)


def test_ldmatrix_x4_retile_layouts_by_hand():
    # With 2x2 warps and N permuted to 32, one ldmatrix.x4 fills one whole A fragment (16x16: 8 values) or two
    # adjacent B fragments (two 8x16 atoms: 4 + 4 values), so the retiled views are ((8,1), rest M|N, K) with
    # the copy's 8 values consecutive in the fragment.
    tm = mma_16816((2, 2, 1), (32, 32, 16))
    atom = cute.make_copy_atom(warp.LdMatrix8x8x16bOp(False, 4), cutlass.Float16)
    shape_a, shape_b = tm.partition_shape_A((128, 32)), tm.partition_shape_B((128, 32))
    assert shape_a == ((2, 2, 2), 4, 2) and shape_b == ((2, 2), 8, 2)
    ra = cute.make_tiled_copy_A(atom, tm).get_slice(0).retile(Tensor(CoordIterator(0), cute.make_layout(shape_a)))
    rb = cute.make_tiled_copy_B(atom, tm).get_slice(0).retile(Tensor(CoordIterator(0), cute.make_layout(shape_b)))
    assert str(ra.layout) == "((8,1),4,2):((1,0),8,32)"
    assert str(rb.layout) == "((8,1),4,2):((1,0),8,32)"


# CuTe DSL 4.8.1's printed values (CUTE_DSL_ARCH=sm_80): shape_mnk and tv_layout_A/B/C of a tiled MMA are its
# atom's, whatever the atom layout or permutation; the tile's are get_tile_size and tv_layout_X_tiled.
_ATOM_TV = ("((4,8),(2,2,2)):((32,1),(16,8,128))", "((4,8),(2,2)):((16,1),(8,64))", "((4,8),(2,2)):((32,1),(16,8))")


@pytest.mark.parametrize("layout,perm,size,tile,tiled", [
    ((1, 1, 1), None, 32, (16, 8, 16),
     ("((4,8),((2,2,2),(1,1))):((32,1),((16,8,128),(0,0)))", "((4,8),((2,2),(1,1))):((16,1),((8,64),(0,0)))",
      "((4,8),((2,2),(1,1))):((32,1),((16,8),(0,0)))")),
    ((2, 2, 1), None, 128, (32, 16, 16),
     ("((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))",
      "((4,8,2,2),((2,2),(1,1))):((32,1,0,8),((16,128),(0,0)))",
      "((4,8,2,2),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))")),
    ((2, 2, 1), (32, 32, 16), 128, (32, 32, 16),
     ("((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))",
      "((4,8,2,2),((2,2),(2,1))):((64,1,0,8),((32,256),(16,0)))",
      "((4,8,2,2),((2,2),(1,2))):((64,1,16,256),((32,8),(0,512)))")),
])
def test_shape_and_tv_layouts_are_the_atoms_and_the_tiled_ones_the_tiles(layout, perm, size, tile, tiled):
    tm = mma_16816(layout, perm)
    assert tm.shape_mnk == (16, 8, 16) == tm.atom.shape_mnk
    assert cute.size(tm.shape_mnk, mode=[2]) == 16
    assert (str(tm.tv_layout_A), str(tm.tv_layout_B), str(tm.tv_layout_C)) == _ATOM_TV
    assert (str(tm.atom.tv_layout_A), str(tm.atom.tv_layout_B), str(tm.atom.tv_layout_C)) == _ATOM_TV
    assert (str(tm.tv_layout_A_tiled), str(tm.tv_layout_B_tiled), str(tm.tv_layout_C_tiled)) == tiled
    assert tuple(tm.get_tile_size(i) for i in range(3)) == tile
    assert tm.size == size and str(tm.thr_id) == "32:1"
