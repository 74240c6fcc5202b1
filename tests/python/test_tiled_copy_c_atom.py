"""cute.make_tiled_copy_C_atom (CuTe's smallest tiled copy over a tiled MMA's C), checked on the CPU with identity
tensors: (1) its thread-value layout read through its tiler is the MMA's C layout truncated to one atom's values;
(2) the subtiled epilogue CuTe DSL's Hopper GEMM builds from it (make_tiled_copy_S of the store atom, retile of
the accumulators, partition_S of an epilogue tile, the tiles walked by get_hier_coord) sends every accumulator to
the C coordinate it holds, each exactly once."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.tensor import CoordIterator, Tensor
from warpweave.cute.nvgpu import warp


def coords(t):
    return [t[i] for i in range(cute.size(t))]


def check_truncated_c_layout(atom, tiled_mma):
    tc = cute.make_tiled_copy_C_atom(atom, tiled_mma)
    layout_c = tiled_mma.get_layoutC_TV()
    mma_tile = (tiled_mma.tile_size(0), tiled_mma.tile_size(1))
    n_thr, n_val = cute.size(layout_c, mode=[0]), atom.num_values_src
    # The tiler selects, per mode, coordinates of the MMA tile; tile coordinate -> MMA tile offset.
    tile2mma = cute.composition(cute.make_layout(mma_tile), tc.tiler_mn)
    reached = set()
    for t in range(n_thr):
        for v in range(n_val):
            assert tile2mma(tc.layout_tv((t, v))) == layout_c((t, v)), (t, v)
            reached.add(layout_c((t, v)))
    # The subtile holds exactly the elements the truncated values reach.
    assert cute.size(tile2mma) == len(reached)
    return tc


def test_truncated_c_layout_mma_sync():
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    for atoms in [(1, 1, 1), (2, 2, 1)]:
        tm = cute.make_tiled_mma(op, cute.make_layout(atoms))
        for bits in (32, 64):
            atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=bits)
            check_truncated_c_layout(atom, tm)


def test_atom_wider_than_the_threads_values_is_refused():
    op = warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
    tm = cute.make_tiled_mma(op, cute.make_layout((1, 1, 1)))  # 4 C values per thread
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    with pytest.raises(ValueError, match="values per thread"):
        cute.make_tiled_copy_C_atom(atom, tm)


def _hopper():
    try:
        import warpweave.utils.hopper_helpers as sm90
        from warpweave.cute.nvgpu import warpgroup
    except ImportError as e:  # the Hopper backend is built with the tree; without it there is no wgmma
        pytest.skip(f"no Hopper backend: {e}")
    return sm90, warpgroup


@pytest.mark.parametrize("tile_mn,atom_mnk,c_major,c_dtype", [
    ((128, 128), (1, 1, 1), "n", "Float16"), ((128, 256), (2, 1, 1), "n", "Float16"),
    ((64, 64), (1, 1, 1), "m", "Float16"), ((128, 256), (2, 1, 1), "m", "Float16"),
    ((128, 128), (1, 1, 1), "n", "Float32"), ((128, 64), (1, 1, 1), "m", "Float32"),
    ((128, 128), (1, 1, 1), "n", "Float8E4M3FN"), ((128, 256), (2, 1, 1), "m", "Float8E4M3FN")])
def test_subtiled_stmatrix_epilogue_writes_each_accumulator_to_its_coordinate(tile_mn, atom_mnk, c_major, c_dtype):
    # A 32-bit or 8-bit C is stored by a universal atom in the partition of stmatrix's layouts read in its width.
    sm90, warpgroup = _hopper()
    LayoutEnum = cutlass.utils.LayoutEnum
    c_layout = LayoutEnum.ROW_MAJOR if c_major == "n" else LayoutEnum.COL_MAJOR
    K = warpgroup.OperandMajorMode.K
    tiled_mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32, atom_mnk,
                                            tiler_mn=(64, tile_mn[1]))
    tile = (tile_mn[0], tile_mn[1], 64)
    c_dtype = getattr(cutlass, c_dtype)
    epi_tile = sm90.compute_tile_shape_or_override(tile, c_dtype, is_cooperative=atom_mnk == (2, 1, 1))
    store = sm90.sm90_get_smem_store_op(c_layout, elem_ty_d=c_dtype, elem_ty_acc=cutlass.Float32)
    stsm = cute.make_copy_atom(warp.StMatrix8x8x16bOp(c_layout.is_m_major_c(), 4), c_dtype)
    check_truncated_c_layout(stsm, tiled_mma)
    r2s = cute.make_tiled_copy_S(store, cute.make_tiled_copy_C_atom(stsm, tiled_mma))
    threads = 128 * atom_mnk[0]
    gC = cute.make_identity_tensor(tile_mn)
    epi_grid = cute.zipped_divide(gC, epi_tile).shape[1]
    epi_order = cute.make_layout(epi_grid, stride=(epi_grid[1], 1))
    written = {}
    for t in range(threads):
        acc_coords = coords(tiled_mma.get_slice(t).partition_C(gC))
        acc = Tensor(CoordIterator(0), cute.make_layout(tiled_mma.get_slice(t).partition_C(gC).shape))
        r_acc = r2s.retile(acc)                       # retiled index -> the accumulator's linear offset
        # Where this thread's source values land in the epilogue tile (stmatrix moves values across threads: the
        # thread's own partition_D is the row it addresses, not where its registers go).
        part = r2s.get_slice(t).partition_S(cute.make_identity_tensor(epi_tile))
        assert cute.size(part) == cute.size(r2s.get_slice(t).partition_D(cute.make_identity_tensor(epi_tile)))
        per_tile = cute.size(part)
        assert cute.size(r_acc) == per_tile * cute.size(epi_order)
        for e in range(cute.size(epi_order)):
            i, j = epi_order.get_hier_coord(e)
            for v in range(per_tile):
                m, n = part[v]
                dst = (m + i * epi_tile[0], n + j * epi_tile[1])
                src = acc_coords[r_acc[e * per_tile + v]]
                assert src == dst, f"thread {t}, epilogue tile {e}, value {v}: accumulator of {src} sent to {dst}"
                assert dst not in written, f"{dst} written by threads {written[dst]} and {t}"
                written[dst] = t
    assert len(written) == tile_mn[0] * tile_mn[1]


def test_atom_of_another_width_gives_layouts_but_does_not_copy():
    # CuTe DSL tiles a 32-bit C with stmatrix's (16-bit) layouts: the atom's layouts are in bits, so a Float32
    # stmatrix atom holds 4 values per thread (8 halves), and make_tiled_copy_C_atom works; copying through it
    # would move 32-bit values with a 16-bit instruction, which is refused at the copy.
    sm90, warpgroup = _hopper()
    K = warpgroup.OperandMajorMode.K
    tiled_mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32, (1, 1, 1),
                                            tiler_mn=(64, 64))
    a16 = cute.make_copy_atom(warp.StMatrix8x8x16bOp(False, 4), cutlass.Float16)
    a32 = cute.make_copy_atom(warp.StMatrix8x8x16bOp(False, 4), cutlass.Float32)
    assert (a16.num_values_src, a32.num_values_src) == (8, 4)
    check_truncated_c_layout(a32, tiled_mma)
    # The transposing stmatrix pairs 16-bit elements across threads: its 32-bit reading counts each thread's 128
    # register bits as 4 values, as CuTe does, still 32 threads.
    t32 = cute.make_copy_atom(warp.StMatrix8x8x16bOp(True, 4), cutlass.Float32)
    assert t32.num_values_src == 4 and cute.size(t32.layout_src_tv, mode=[0]) == 32
    check_truncated_c_layout(t32, tiled_mma)

    from dsl_helpers import target
    import numpy as np
    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def k(g: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float32, cute.make_layout((64, 64)), 1024)
        r = cute.make_rmem_tensor((4,), cutlass.Float32)
        cute.copy(a32, r, s[(None, 0)][None])  # refused: 32-bit values through a 16-bit stmatrix

    @cute.jit
    def j(g):
        k(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_90a"), pytest.raises(TypeError, match="moves 16-bit values"):
        cute.compile(j, from_dlpack(np.zeros(4, dtype=np.float32)))
