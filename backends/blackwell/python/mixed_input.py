"""warpweave.utils.mixed_input_helpers: the pieces of a Blackwell mixed-input GEMM, with CuTe DSL's names.

    import warpweave.utils.mixed_input_helpers as mixed_input_utils
    source = mixed_input_utils.get_transform_a_source(a_major_mode)          # where the converted A lives
    sA, sA_mma, sB = mixed_input_utils.compute_smem_layout(tiled_mma, mma_tiler, a_dtype, b_dtype, s_in, s_mma)

A is narrow (int4, int8, 8-bit floats) and B is the MMA's type. TMA brings A (and its scales) to shared memory;
transform warps convert each tile to the MMA's type (times its scale) and store it where the MMA reads it: into
tensor memory when A is K-major (tcgen05.mma takes A from tensor memory, one row per lane), else into a second
shared-memory buffer laid out for the MMA's descriptor. The epilogue is the usual tcgen05 one.

Scales are indexed by A's element coordinates: a scale covers scale_granularity_m x scale_granularity_k elements, so
its layouts give those modes stride 0 and the TMA of the scale tensor and the transform warps' partitions tile it
exactly as they tile A. The generation-neutral pieces (TransformMode, the conversion, the problem checks, the
contiguous grouped GEMM's search) are warpweave.utils.mixed_input_common's.
"""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext
from warpweave.utils.mixed_input_common import (  # noqa: F401 - the public names of this module
    ContiguousGGSearchState, ContiguousGroupWorkTileInfo, TransformMode, contiguous_group_search,
    create_initial_contiguous_group_search_state, cvt_tensor_a, get_divisibility, is_shuffle_a,
    is_valid_mma_tiler_and_cluster_shape, is_valid_scale_granularity, is_valid_tensor_alignment,
    make_contiguous_group_work_tile_info, store_transformed_a,
)

from . import helpers
from .tcgen05_mma import CtaGroup, OperandMajorMode, OperandSource


def _nvgpu():
    from warpweave.cute.nvgpu import cpasync, tcgen05

    return cpasync, tcgen05


# --- where A goes and how it gets there -------------------------------------------------------------------------

def get_transform_a_source(a_major_mode: OperandMajorMode) -> OperandSource:
    """Tensor memory for a K-major A (each lane a row of K, as tcgen05.mma reads A from tensor memory), shared memory
    for an M-major one."""
    return OperandSource.TMEM if a_major_mode == OperandMajorMode.K else OperandSource.SMEM


def get_tma_atom_kind(mcast, use_2cta_instrs: bool, is_b: bool):
    """The TMA load op of an operand: multicast when the cluster shares it. Only B is loaded for the CTA pair of a
    2-CTA MMA: A is read by each CTA's own transform warps."""
    cpasync, _ = _nvgpu()
    group = CtaGroup.TWO if use_2cta_instrs and is_b else CtaGroup.ONE
    if mcast:
        return cpasync.CopyBulkTensorTileG2SMulticastOp(group)
    return cpasync.CopyBulkTensorTileG2SOp(group)


def get_copy_atom_a_transform(mma_dtype, use_2cta_instrs: bool, transform_a_source: OperandSource, a_smem_shape,
                              a_dtype):
    """The copy that stores converted A. Into tensor memory: a tcgen05.st of 16 lanes x 256 bits for a 64-row tile
    of a 1-CTA MMA (its A occupies lanes 0-15 of each warp's quarter), else 32 lanes x 32 bits, 8 times. Into shared
    memory: 32-bit element stores."""
    _, tcgen05 = _nvgpu()
    if transform_a_source == OperandSource.TMEM:
        if cute.size(a_smem_shape[0][0]) == 64 and not use_2cta_instrs:
            op = tcgen05.St16x256bOp(tcgen05.Repetition(1), tcgen05.Unpack.NONE)
        else:
            op = tcgen05.St32x32bOp(tcgen05.Repetition(8), tcgen05.Unpack.NONE)
        return cute.make_copy_atom(op, mma_dtype)
    return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), a_dtype, num_bits_per_copy=32)


def compute_smem_layout(tiled_mma, mma_tiler_mnk, a_dtype, b_dtype, load2trans_stage_count: int,
                        trans2mma_stage_count: int):
    """(A as loaded, A converted for the MMA, B): A's and B's MMA-shaped shared-memory layouts, A in its own type
    for the load stages and in the MMA's for the stages handed to the MMA."""
    return (helpers.make_smem_layout_a(tiled_mma, mma_tiler_mnk, a_dtype, load2trans_stage_count),
            helpers.make_smem_layout_a(tiled_mma, mma_tiler_mnk, tiled_mma.op.a_dtype, trans2mma_stage_count),
            helpers.make_smem_layout_b(tiled_mma, mma_tiler_mnk, b_dtype, load2trans_stage_count))


# --- scale layouts ----------------------------------------------------------------------------------------------

def _scale_blocks(extent_blocks, block_m, block_k, m_major: bool):
    """A scale layout over ((block_m, blocks_m), (block_k, blocks_k)) element coordinates: the block modes stride 0
    (one scale per block), the blocks dense, M's first when the scales are M-major."""
    blocks_m, blocks_k = extent_blocks
    stride = ((0, 1), (0, blocks_m)) if m_major else ((0, blocks_k), (0, 1))
    return cute.make_layout(((block_m, blocks_m), (block_k, blocks_k)), stride=stride)


def get_gmem_layout_scale(scale_shape_mkl, scale_granularity_m: int, scale_granularity_k: int,
                          scale_major_mode: OperandMajorMode):
    """The scale tensor in global memory, indexed like A (M, K, L): one scale per scale_granularity_m x
    scale_granularity_k block of A, the batches after each other."""
    m, k, l = scale_shape_mkl
    blocks_m = cute.ceil_div(m, scale_granularity_m)
    blocks_k = cute.ceil_div(k, scale_granularity_k)
    mk = _scale_blocks((blocks_m, blocks_k), scale_granularity_m, scale_granularity_k,
                       scale_major_mode == OperandMajorMode.MN)
    return cute.make_layout((*mk.shape, l), stride=(*mk.stride, blocks_m * blocks_k))


def get_smem_layout_scale(mma_tiler, use_2cta_instrs: bool, scale_granularity_m: int, scale_granularity_k: int,
                          scale_major_mode: OperandMajorMode, a_scale_dtype, num_scale_load2trans_stage: int):
    """(the CTA's scale tile (M, K) in A's elements, one stage's layout, the staged layout). A stage holds the scales
    of one CTA tile of A; blocks larger than the tile are clipped to it. The layouts are composed with the identity
    swizzle, the form TMA atoms take for shared memory."""
    tile_m = cute.size(mma_tiler[0]) // (2 if use_2cta_instrs else 1)
    tile_k = cute.size(mma_tiler[2])
    block_m, block_k = min(scale_granularity_m, tile_m), min(scale_granularity_k, tile_k)
    outer = _scale_blocks((cute.ceil_div(tile_m, block_m), cute.ceil_div(tile_k, block_k)), block_m, block_k,
                          scale_major_mode == OperandMajorMode.MN)
    per_stage = cute.make_composed_layout(cute.make_swizzle(0, 4, 3), 0, outer)
    if cute.size(mma_tiler[0]) % cute.size(outer[0]) or tile_k % cute.size(outer[1]):
        raise ext.user_error(f"get_smem_layout_scale: the scale tile {outer.shape} does not divide the MMA tile "
                             f"{tuple(mma_tiler)}", ext.DSLValueError)
    if cute.size_in_bytes(a_scale_dtype, per_stage) < 128:
        raise ext.user_error(f"get_smem_layout_scale: a stage of scales is {cute.size_in_bytes(a_scale_dtype, per_stage)}"
                             f" bytes; TMA loads at least 128 (larger tiles or finer scale blocks)", ext.DSLValueError)
    staged = cute.append(per_stage, cute.make_layout(num_scale_load2trans_stage, stride=cute.cosize(outer)))
    return (tile_m, tile_k), per_stage, staged


def scale_tma_partition(tCsS, tCgS, tma_atom_s, block_in_cluster_coord_vmnk, scale_cta_layout):
    """The TMA partitions (shared, global) of the scale tensor, multicast along N as A's are, each given a unit
    rest mode inside its first mode ((atom_v, 1), ...) so that they index like A's partitions."""
    cpasync, _ = _nvgpu()
    tSsS, tSgS = cpasync.tma_partition(tma_atom_s, block_in_cluster_coord_vmnk[2], scale_cta_layout,
                                       cute.group_modes(tCsS, 0, 3), cute.group_modes(tCgS, 0, 3))
    return _with_unit_rest(tSsS), _with_unit_rest(tSgS)


def _with_unit_rest(t):
    """`t` with its first mode v made (v, 1), the 1 of stride 0 (a swizzle, if its layout has one, kept)."""
    layout = t.layout
    outer = getattr(layout, "outer", layout)
    unit = cute.make_layout(((outer.shape[0], 1), *outer.shape[1:]), stride=((outer.stride[0], 0), *outer.stride[1:]))
    if hasattr(layout, "outer"):
        unit = cute.make_composed_layout(layout.inner, layout.offset, unit)
    return cute.make_tensor(t.iterator, unit)


# --- the transform warps' partitions ----------------------------------------------------------------------------

def transform_partition(transform_a_source: OperandSource, scale_mode: TransformMode, copy_atom_a_input,
                        copy_atom_a_transform, sA_input, A_transform, transform_local_tidx):
    """(the tiled load of A's and the scales' inputs, or None without scales; the tiled store of converted A, or
    None for shared memory where element stores do; this thread's A input; its converted A destination).

    Into tensor memory, the store's tiled copy fixes each thread's elements; a 64-row A feeding a 128-lane MMA tile
    is read twice (a stride-0 factor of M), each half of the lanes converting the same rows. Into shared memory, 128
    threads each take runs of 8 contiguous elements of the MMA's layout."""
    _, tcgen05 = _nvgpu()
    if transform_a_source == OperandSource.TMEM:
        src = sA_input
        if cute.size(A_transform, mode=[0, 0]) == 128 and cute.size(sA_input, mode=[0, 0]) == 64:
            twice = ((cute.make_layout(2, stride=0), None), None, None, None)
            src = cute.make_tensor(sA_input.iterator, cute.logical_product(sA_input.layout, twice))
        store = tcgen05.make_tmem_copy(copy_atom_a_transform, A_transform[(None, None, None, 0)])
        dst_copy = store
    elif transform_a_source == OperandSource.SMEM:
        src = sA_input
        store = cute.make_cotiled_copy(copy_atom_a_transform, cute.make_layout((128, 8), stride=(8, 1)),
                                       ext.full_layout(A_transform[(None, None, None, 0)]))
        dst_copy = None
    else:
        raise ext.user_error(f"transform_partition: transform_a_source is tcgen05.OperandSource.TMEM or SMEM, got "
                             f"{transform_a_source!r}", ext.DSLValueError)
    thr = store.get_slice(transform_local_tidx)
    src_copy = cute.make_tiled_copy_S(copy_atom_a_input, store) if scale_mode is TransformMode.ConvertScale else None
    return src_copy, dst_copy, thr.partition_S(src), thr.partition_D(A_transform)


def scale_partition(src_copy_a, tCsS, transform_local_tidx, mma_dtype):
    """(this thread's slice of the scale load, its scale source, a register fragment holding its distinct scales in
    the MMA's type, and that fragment viewed with the source's shape, the repeats of a scale at stride 0)."""
    thr = src_copy_a.get_slice(transform_local_tidx)
    tSsS = thr.partition_S(tCsS)
    one_stage = tSsS[(None, None, None, None, 0)].layout
    one_stage = getattr(one_stage, "outer", one_stage)   # a swizzled stage: the offsets before the swizzle
    held = cute.make_rmem_tensor(cute.filter_zeros(one_stage).shape, mma_dtype)
    view = cute.make_tensor(held.iterator, cute.make_layout(one_stage.shape, stride=held.layout.stride))
    return thr, tSsS, held, view


# --- the epilogue -----------------------------------------------------------------------------------------------

def epilog_tmem_copy_and_partition(cta_tile_shape_mnk, c_layout, c_dtype, acc_dtype, tidx, tAcc, gC_mnl, epi_tile,
                                   use_2cta_instrs):
    """(the tiled tensor-memory load of the accumulators per epilogue sub-tile, this thread's accumulators
    (T2R, T2R_M, T2R_N, EPI_M, EPI_N, STAGE), a register fragment of one sub-tile)."""
    _, tcgen05 = _nvgpu()
    op = helpers.get_tmem_load_op(cta_tile_shape_mnk, c_layout, c_dtype, acc_dtype, epi_tile, use_2cta_instrs)
    acc_epi = cute.flat_divide(tAcc[((None, None), 0, 0, None)], epi_tile)
    load = tcgen05.make_tmem_copy(op, acc_epi[(None, None, 0, 0, 0)])
    thr = load.get_slice(tidx)
    tTR_gC = thr.partition_D(cute.flat_divide(gC_mnl[((None, None), 0, 0, None, None, None)], epi_tile))
    fragment = cute.make_rmem_tensor(tTR_gC[(None, None, None, 0, 0, 0, 0, 0)].shape, acc_dtype)
    return load, thr.partition_S(acc_epi), fragment


def epilog_smem_copy_and_partition(c_layout, c_dtype, acc_dtype, tiled_copy_t2r, tTR_rC, tidx, sC):
    """(the tiled register -> shared store matching the accumulator load, its register view of tTR_rC, this
    thread's shared-memory destinations (R2S, R2S_M, R2S_N, PIPE))."""
    atom = helpers.get_smem_store_op(c_layout, c_dtype, acc_dtype, tiled_copy_t2r)
    store = cute.make_tiled_copy_D(atom, tiled_copy_t2r)
    return store, store.retile(tTR_rC), store.get_slice(tidx).partition_D(sC)


def epilog_gmem_copy_and_partition(c_dtype, tidx, tma_atom_c, tiled_copy_t2r, gC_mnl_tma, gC_mnl_simt, epi_tile,
                                   sC):
    """(tma_atom_c, the TMA store's shared and global partitions, the element-store atom, this thread's global
    destinations): the TMA parts when tma_atom_c is given, the per-thread store's when tiled_copy_t2r is, None for
    the other."""
    cpasync, _ = _nvgpu()
    bSG_sC = bSG_gC = simt_atom = tTR_gC = None
    if tma_atom_c is not None:
        gC_epi = cute.flat_divide(gC_mnl_tma[((None, None), 0, 0, None, None, None)], epi_tile)
        bSG_sC, bSG_gC = cpasync.tma_partition(tma_atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                               cute.group_modes(gC_epi, 0, 2))
    if tiled_copy_t2r is not None:
        gC_epi = cute.flat_divide(gC_mnl_simt[((None, None), 0, 0, None, None, None)], epi_tile)
        tTR_gC = tiled_copy_t2r.get_slice(tidx).partition_D(gC_epi)
        simt_atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), c_dtype)
    return tma_atom_c, bSG_sC, bSG_gC, simt_atom, tTR_gC

