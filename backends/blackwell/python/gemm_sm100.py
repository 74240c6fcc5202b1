"""warpweave.utils.gemm.sm100: the epilogue of a tcgen05 GEMM's epilogue warps, with CuTe DSL's names.

A persistent GEMM's epilogue warps call one of these per output tile, inside their tile loop:

    acc_state = utils.gemm.sm100.epilogue_tma_store(gemm, tidx, warp_idx, tma_atom_c, tCtAcc_base, sC, tCgC,
                                                    epi_tile, num_tiles_executed, epilogue_op, tile_coord_mnl,
                                                    acc_state, acc_pipeline, c_pipeline)
    acc_state = utils.gemm.sm100.epilogue(gemm, tidx, tCtAcc_base, tCgC, epi_tile, epilogue_op, tile_coord_mnl,
                                          acc_state, acc_pipeline)

`gemm` is the kernel object; what it must carry is what these read: acc_dtype, c_dtype, c_layout (LayoutEnum),
use_2cta_instrs, cta_tile_shape_mnk, epilogue_warp_id (the epilogue warps, the first of which issues the TMA
stores), and for the TMA-store form epilog_sync_bar_id (a named barrier of the epilogue warps) and num_c_stage.
tCtAcc_base is the accumulator in tensor memory, (MMA, MMA_M, MMA_N, STAGE); tCgC the MMA partition of C (its TMA
tensor for the TMA-store form, C itself otherwise), (MMA, MMA_M, MMA_N, RestM, RestN, RestL); sC the staged
shared-memory sub-tiles (EPI_TILE_M, EPI_TILE_N, STAGE).

Per sub-tile of epi_tile (in order along M, then N): tcgen05.ld of the accumulators (the load op of
blackwell_helpers.get_tmem_load_op, each epilogue thread a row of its warp's 32 lanes), conversion to C's type,
epilogue_op, then either into the sub-tile's shared-memory buffer and out by TMA (the first epilogue warp issuing
the store once every epilogue thread's writes are fenced, buffers reused once PipelineTmaStore says their store has
read them) or straight to global memory. The accumulator stage is released to the MMA warp (one arrival per
epilogue warp) once its last sub-tile is in registers; the returned state is the next stage's.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline

from warpweave import ext

from . import helpers


# The sub-tile loops below are runtime loops kept rolled (unroll=1), as CuTe DSL's are: one copy of the body, each
# trip's accumulators loaded from tensor memory, converted and stored before the next trip's load, so that a thread
# holds one sub-tile of them at a time. Unrolled while tracing, the assembler overlapped the trips and the epilogue
# warps held several sub-tiles at once: CuTe DSL's sm103_dense_blockscaled_gemm_persistent (8 sub-tiles of 32
# columns, stored to global memory) took 146 registers under ptxas 13.0 where CuTe DSL's rolled loop takes 56; 50
# rolled. The loop variable is a runtime value: what depends on the trip (the sub-tile, the buffer, the release
# after the last or the early-release sub-tile) is computed or branched on at run time.
_SUBTILE_LOOP_UNROLL = 1


def _tcgen05():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


def _epilogue_threads(gemm) -> int:
    return 32 * len(gemm.epilogue_warp_id)


def _tmem_copy(gemm, epi_tidx, tAcc_epi, epi_tile):
    """The tiled tcgen05.ld of one sub-tile and this thread's slice of it."""
    t = _tcgen05()
    atom = helpers.get_tmem_load_op(gemm.cta_tile_shape_mnk, gemm.c_layout, gemm.c_dtype, gemm.acc_dtype, epi_tile,
                                    gemm.use_2cta_instrs)
    t2r = t.make_tmem_copy(atom, tAcc_epi[(None, None) + (0,) * (cute.rank(tAcc_epi) - 2)])
    return t2r, t2r.get_slice(epi_tidx)


def transform_partitioned_tensor_layout(tensor):
    """An MMA partition (MMA, MMA_M, MMA_N, rest...) whose MMA mode is the atom's (M, N) as the plain
    ((atom M, MMA_M), (atom N, MMA_N), rest...) tensor over the same memory: the accumulators or C of the whole tile
    as rows and columns, which flat_divide by an epilogue tile splits into sub-tiles."""
    layout = tensor.layout
    if cute.rank(layout) < 3 or cute.rank(cute.get(layout, mode=[0])) != 2:
        raise ext.user_error(f"transform_partitioned_tensor_layout: expected an MMA partition ((atom M, atom N), "
                             f"MMA_M, MMA_N, ...), got {layout}", ext.DSLValueError)
    rest = [cute.get(layout, mode=[i]) for i in range(3, cute.rank(layout))]
    rows = cute.make_layout(cute.get(layout, mode=[0, 0]), cute.get(layout, mode=[1]))
    cols = cute.make_layout(cute.get(layout, mode=[0, 1]), cute.get(layout, mode=[2]))
    return cute.make_tensor(tensor.iterator, cute.make_layout(rows, cols, *rest))


def _rows_cols(tensor, extra: int):
    """(M, N, extra modes...) of an MMA partition, or the tensor itself when it is already in that form."""
    if cute.rank(tensor.layout) == 3 + extra and cute.rank(cute.get(tensor.layout, mode=[0])) == 2:
        return transform_partitioned_tensor_layout(tensor)
    return tensor


def epilogue_tmem_copy_and_partition(gemm, tidx, tAcc, gC_mnl, epi_tile, use_2cta_instrs):
    """(tiled tcgen05.ld, this thread's (T2R, T2R_M, T2R_N, EPI_M, EPI_N, STAGE) accumulators, a register
    fragment (T2R, T2R_M, T2R_N) of one sub-tile): tAcc is (MMA, MMA_M, MMA_N, STAGE) or its rows-and-columns
    form (M, N, STAGE) (transform_partitioned_tensor_layout), gC_mnl C's partition in either form, epi_tile the
    sub-tile."""
    if bool(use_2cta_instrs) != bool(gemm.use_2cta_instrs):
        raise ext.user_error("epilogue_tmem_copy_and_partition: use_2cta_instrs differs from the kernel's",
                             ext.DSLValueError)
    epi_tidx = tidx % _epilogue_threads(gemm)
    tAcc_epi = cute.flat_divide(_rows_cols(tAcc, 1), epi_tile)         # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, STAGE)
    t2r, thr = _tmem_copy(gemm, epi_tidx, tAcc_epi, epi_tile)
    tTR_tAcc = thr.partition_S(tAcc_epi)
    gC_epi = cute.flat_divide(_rows_cols(gC_mnl, 3), epi_tile)           # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N, ...)
    tTR_gC = thr.partition_D(gC_epi)
    first = (None, None, None) + (0,) * (cute.rank(tTR_gC) - 3)
    tTR_rAcc = cute.make_rmem_tensor(tTR_gC[first].shape, gemm.acc_dtype)
    return t2r, tTR_tAcc, tTR_rAcc


def epilogue_smem_copy_and_partition(gemm, tiled_copy_t2r, tTR_rC, tidx, sC):
    """(tiled register-to-shared-memory copy, this thread's registers of C retiled for it (R2S, R2S_M, R2S_N), its
    part of the staged shared-memory sub-tiles (R2S, R2S_M, R2S_N, STAGE)): the copy atom is
    blackwell_helpers.get_smem_store_op's for C's layout and types (gemm.c_layout, c_dtype, acc_dtype; nothing else
    of gemm is read) matched to tiled_copy_t2r, and tidx is the thread's index among the epilogue threads."""
    atom = helpers.get_smem_store_op(gemm.c_layout, gemm.c_dtype, gemm.acc_dtype, tiled_copy_t2r)
    r2s = cute.make_tiled_copy_D(atom, tiled_copy_t2r)
    return r2s, r2s.retile(tTR_rC), r2s.get_slice(tidx).partition_D(sC)


@cute.jit
def _subtile_to_registers(gemm, t, t2r, tTR_tAcc, j, subtiles, tTR_rAcc, tTR_rC, epilogue_op, acc_pipeline,
                          acc_state):
    """Sub-tile j (the sub-tile loop's runtime index) of the accumulator stage into registers, converted to C's type
    by epilogue_op into tTR_rC. After the last sub-tile the whole stage is in registers, so the MMA warp may
    accumulate into it again."""
    cute.copy(t2r, tTR_tAcc[(None, None, None, j)], tTR_rAcc)
    if j == subtiles - 1:
        # the registers are read after the release: the loads must have completed before it
        cute.arch.fence_view_async_tmem_load()
        t.fence_before_thread_sync()
        with cute.arch.elect_one():
            acc_pipeline.consumer_release(acc_state)
    tTR_rC.store(epilogue_op(tTR_rAcc.load().to(gemm.c_dtype)))


@cute.jit
def epilogue_tma_store(gemm, tidx, warp_idx, tma_atom_c, tCtAcc_base, sC, tCgC, epi_tile, num_tiles_executed,
                       epilogue_op, mma_tile_coord_mnl, acc_consumer_state, acc_pipeline, c_pipeline):
    """One tile's accumulators through shared memory and TMA stores to C; returns the next accumulator state."""
    t = _tcgen05()
    from warpweave.cute.nvgpu import cpasync

    epi_threads = _epilogue_threads(gemm)
    epi_tidx = tidx % epi_threads
    first_warp = gemm.epilogue_warp_id[0]
    barrier = pipeline.NamedBarrier(barrier_id=gemm.epilog_sync_bar_id, num_threads=epi_threads)

    # (EPI_TILE_M, EPI_TILE_N, EPI_M, EPI_N) of this stage's accumulators and of this tile of C
    tAcc_epi = cute.flat_divide(tCtAcc_base[((None, None), 0, 0, acc_consumer_state.index)], epi_tile)
    gC_epi = cute.flat_divide(tCgC[((None, None), 0, 0, *mma_tile_coord_mnl)], epi_tile)
    t2r, thr = _tmem_copy(gemm, epi_tidx, tAcc_epi, epi_tile)
    tTR_tAcc = thr.partition_S(tAcc_epi)          # (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    tTR_sC = thr.partition_D(sC)                  # (T2R, T2R_M, T2R_N, STAGE)
    regs = tTR_tAcc[(None, None, None, 0, 0)].shape
    tTR_rAcc = cute.make_rmem_tensor(regs, gemm.acc_dtype)
    tTR_rC = cute.make_rmem_tensor(regs, gemm.c_dtype)
    tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
    bSG_sC, bSG_gC = cpasync.tma_partition(tma_atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                           cute.group_modes(gC_epi, 0, 2))
    bSG_gC = cute.group_modes(bSG_gC, 1, cute.rank(bSG_gC))
    subtiles = cute.size(tTR_tAcc.shape, mode=[3])
    first_buffer = num_tiles_executed * subtiles

    acc_pipeline.consumer_wait(acc_consumer_state)
    t.fence_after_thread_sync()
    # a runtime loop over the sub-tiles, kept rolled (see _SUBTILE_LOOP_UNROLL)
    for j in cutlass.range(subtiles, unroll=_SUBTILE_LOOP_UNROLL):
        _subtile_to_registers(gemm, t, t2r, tTR_tAcc, j, subtiles, tTR_rAcc, tTR_rC, epilogue_op, acc_pipeline,
                              acc_consumer_state)
        buf = (first_buffer + j) % gemm.num_c_stage
        # the store that last read this buffer has read it
        if warp_idx == first_warp:
            c_pipeline.producer_acquire()
        barrier.arrive_and_wait()
        cute.autovec_copy(tTR_rC, tTR_sC[(None, None, None, buf)])
        cute.arch.fence_proxy("async.shared", space="cta")
        barrier.arrive_and_wait()
        if warp_idx == first_warp:
            cute.copy(tma_atom_c, bSG_sC[(None, buf)], bSG_gC[(None, j)])
            c_pipeline.producer_commit()
    acc_consumer_state.advance()
    return acc_consumer_state


@cute.jit
def epilogue(gemm, tidx, tCtAcc_base, tCgC, epi_tile, epilogue_op, mma_tile_coord_mnl, acc_consumer_state,
             acc_pipeline, tCcC_base=None, mC_mnl=None, overlapping_accum=False):
    """One tile's accumulators stored from registers to C in global memory; returns the next accumulator state.
    tCcC_base (C's coordinates, partitioned as tCgC) and mC_mnl (C): only the elements inside C are stored, for the
    tiles at its edges. overlapping_accum: the two accumulator stages overlap in tensor memory (the scale factors of
    a block-scaled kernel take the columns a second stage would): the stage is the consumer's phase, stage 0 is
    read from its last sub-tile back (so the overlapped columns go first), and the stage is released as soon as
    gemm.iter_acc_early_release_in_epilogue sub-tiles are in registers, for the next tile's MMAs."""
    t = _tcgen05()
    epi_tidx = tidx % _epilogue_threads(gemm)
    stage = acc_consumer_state.phase if cutlass.const_expr(overlapping_accum) else acc_consumer_state.index

    tAcc_epi = cute.flat_divide(tCtAcc_base[((None, None), 0, 0, stage)], epi_tile)
    gC_epi = cute.flat_divide(tCgC[((None, None), 0, 0, *mma_tile_coord_mnl)], epi_tile)
    t2r, thr = _tmem_copy(gemm, epi_tidx, tAcc_epi, epi_tile)
    tTR_tAcc = thr.partition_S(tAcc_epi)          # (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    tTR_gC = thr.partition_D(gC_epi)              # (T2R, T2R_M, T2R_N, EPI_M, EPI_N)
    regs = tTR_tAcc[(None, None, None, 0, 0)].shape
    tTR_rAcc = cute.make_rmem_tensor(regs, gemm.acc_dtype)
    tTR_rC = cute.make_rmem_tensor(regs, gemm.c_dtype)
    tTR_tAcc = cute.group_modes(tTR_tAcc, 3, cute.rank(tTR_tAcc))
    tTR_gC = cute.group_modes(tTR_gC, 3, cute.rank(tTR_gC))
    subtiles = cute.size(tTR_tAcc.shape, mode=[3])
    tTR_cC = None
    if cutlass.const_expr(tCcC_base is not None):
        cC_epi = cute.flat_divide(tCcC_base[((None, None), 0, 0, *mma_tile_coord_mnl)], epi_tile)
        tTR_cC = thr.partition_D(cC_epi)
        tTR_cC = cute.group_modes(tTR_cC, 3, cute.rank(tTR_cC))

    acc_pipeline.consumer_wait(acc_consumer_state)
    t.fence_after_thread_sync()
    # a runtime loop over the sub-tiles, kept rolled (see _SUBTILE_LOOP_UNROLL)
    for j in cutlass.range(subtiles, unroll=_SUBTILE_LOOP_UNROLL):
        if cutlass.const_expr(overlapping_accum):
            # stage 0 (phase 0) from its last sub-tile back: j + (1 - stage) (subtiles - 1 - 2 j)
            sub = j + (1 - stage) * (subtiles - 1 - 2 * j)
            cute.copy(t2r, tTR_tAcc[(None, None, None, sub)], tTR_rAcc)
            if j == gemm.iter_acc_early_release_in_epilogue:
                # the loads of the columns handed back have completed before the MMA warp may write them
                cute.arch.fence_view_async_tmem_load()
                t.fence_before_thread_sync()
                with cute.arch.elect_one():
                    acc_pipeline.consumer_release(acc_consumer_state)
            tTR_rC.store(epilogue_op(tTR_rAcc.load().to(gemm.c_dtype)))
        else:
            sub = j
            _subtile_to_registers(gemm, t, t2r, tTR_tAcc, j, subtiles, tTR_rAcc, tTR_rC, epilogue_op, acc_pipeline,
                                  acc_consumer_state)
        if cutlass.const_expr(tTR_cC is None):
            cute.autovec_copy(tTR_rC, tTR_gC[(None, None, None, sub)])
        else:
            _store_inside(tTR_rC, tTR_gC[(None, None, None, sub)], tTR_cC[(None, None, None, sub)], mC_mnl)
    acc_consumer_state.advance()
    return acc_consumer_state


def _store_inside(src, dst, coords, mC):
    """src to dst where coords (C's coordinates of dst's elements) fall inside C."""
    pred = cute.make_rmem_tensor(src.shape, cutlass.Boolean)
    for i in cutlass.range_constexpr(cute.size(pred)):
        pred[i] = cute.elem_less(coords[i], mC.shape)
    cute.basic_copy_if(pred, src, dst)
