"""cute.experimental's whole GEMM phases for Blackwell: the MMA warp's main loop (mainloop_mma) and the epilogue
warps' accumulator-to-global-memory store through TMA (epilogue_tma_store), each the loop a kernel of this API
otherwise writes out with dot, partition_and_copy and tma_store (cute_ext.py's operations, which these use).
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.cute import experimental as cute_ext
from warpweave.utils import LayoutEnum

from . import cute_ext as ops
from . import helpers
from .tcgen05_mma import Field


def _stages(buffer, what):
    if cute.rank(buffer) != 4:
        raise ext.user_error(f"mainloop_mma: {what} is an operand's staged shared-memory buffer (MMA, MMA_MN, MMA_K, "
                             f"stage), got a tensor of shape {buffer.shape}", ext.DSLValueError)


def mainloop_mma(tiled_mma, a_buffer, b_buffer, accumulators, k_tile_start, k_tile_end, num_k_blocks, a_pipeline,
                 b_pipeline):
    """The MMA warp's main loop over k tiles [k_tile_start, k_tile_end): each waits for its stage of A and B
    (a_pipeline, b_pipeline: TMAToUMMAPipeline, the same one when one pipeline carries both), issues num_k_blocks
    MMAs of tiled_mma over it into accumulators (the first overwrites them, the others accumulate), and releases
    the stage once those MMAs have read it. Returns the pipelines, advanced past the loop."""
    _stages(a_buffer, "a_buffer")
    _stages(b_buffer, "b_buffer")
    per_stage = cute.size(a_buffer, mode=[2])
    if not isinstance(num_k_blocks, int) or num_k_blocks < 1 or num_k_blocks > per_stage:
        raise ext.user_error(f"mainloop_mma: num_k_blocks is a positive int up to the buffer's {per_stage} k-blocks "
                             f"a stage, got {num_k_blocks!r}", ext.DSLValueError)
    for name, p in (("a_pipeline", a_pipeline), ("b_pipeline", b_pipeline)):
        if not isinstance(p, ops.TMAToUMMAPipeline):
            raise ext.user_error(f"mainloop_mma: {name} is a TMAToUMMAPipeline, got {p!r}", ext.DSLTypeError)
    pipes = (a_pipeline,) if a_pipeline is b_pipeline else (a_pipeline, b_pipeline)
    atom = cute.make_mma_atom(tiled_mma.op)
    atom.set(Field.ACCUMULATE, False)
    for _ in cutlass.range(k_tile_start, k_tile_end, 1, unroll=1):
        idx = None
        for p in pipes:
            _, idx = p.consumer_wait_and_get_stage()
        for kb in cutlass.range(num_k_blocks, unroll_full=True):
            cute_ext.dot(atom, cute.append_ones(a_buffer[None, None, kb, idx], up_to_rank=3),
                         cute.append_ones(b_buffer[None, None, kb, idx], up_to_rank=3), accumulators)
            atom.set(Field.ACCUMULATE, True)
        for p in pipes:
            p.consumer_release_and_advance()
    return a_pipeline, b_pipeline


def _tile(tensor, cta_tile_mn, coord):
    """The CTA's (M, N) tile of D (M, N, L...) at coord (m, n, l...)."""
    rest = cute.rank(tensor) - 2
    if len(coord) != 2 + rest:
        raise ext.user_error(f"epilogue_tma_store: the tile coordinate has {len(coord)} modes, D ({tensor.shape}) "
                             f"takes {2 + rest}", ext.DSLValueError)
    return cute.zipped_divide(tensor, cta_tile_mn)[(None, None), tuple(coord)]


def epilogue_tma_store(cta_tile_shape_mnk, use_2cta_instrs: bool, accumulators, d_tensor, cta_tile_coord,
                       tma_store_pipeline, tma_store_warp_id: int, epilogue_op=lambda x: x):
    """The epilogue warps' store of one accumulator tile (tensor memory, (M, N)) to the CTA's tile of d_tensor at
    cta_tile_coord, by epilogue sub-tiles: each is loaded from tensor memory by the four warps, converted to D's
    type, given to epilogue_op, written into a stage of shared memory of tma_store_pipeline
    (TMAStorePipeline) and stored by warp tma_store_warp_id with TMA. Returns the pipeline; the stores' reads of
    shared memory are waited for at the kernel's end."""
    if not isinstance(tma_store_pipeline, ops.TMAStorePipeline):
        raise ext.user_error(f"epilogue_tma_store: tma_store_pipeline is a TMAStorePipeline, got "
                             f"{tma_store_pipeline!r}", ext.DSLTypeError)
    if getattr(accumulators, "memspace", None) != "tmem" or cute.rank(accumulators) != 2:
        raise ext.user_error(f"epilogue_tma_store: the accumulators are one (M, N) stage in tensor memory, got "
                             f"{accumulators!r}", ext.DSLTypeError)
    d_dtype = d_tensor.element_type
    acc_dtype = accumulators.element_type
    d_layout = LayoutEnum.from_tensor(d_tensor)
    epi_tile = helpers.compute_epilogue_tile_shape(cta_tile_shape_mnk, use_2cta_instrs, d_layout, d_dtype)
    smem = cute_ext.allocate(d_dtype, cute.AddressSpace.smem,
                             helpers.make_smem_layout_epi(d_dtype, d_layout, epi_tile, tma_store_pipeline.stages),
                             alignment=1024)
    load_op = helpers.get_tmem_load_op(cta_tile_shape_mnk, d_layout, d_dtype, acc_dtype, epi_tile, use_2cta_instrs)
    tiles = cute.flat_divide(accumulators, epi_tile)
    t2r = cute.nvgpu.tcgen05.make_tmem_copy(load_op, tiles[None, None, 0, 0])
    tid, _, _ = cute.arch.thread_idx()
    gD = _tile(d_tensor, tuple(cta_tile_shape_mnk[:2]), cta_tile_coord)
    gD_epi = cute.flat_divide(gD, epi_tile)
    r_acc = cute_ext.allocate(acc_dtype, cute.AddressSpace.rmem, ops.make_t2r_rmem_layout(t2r, gD_epi, tid))
    r_d = cute_ext.allocate(d_dtype, cute.AddressSpace.rmem, r_acc.layout)
    r2s = cute.make_tiled_copy_D(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), d_dtype), t2r)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    c_map = ops.get_cta_v_map_c(d_tensor, epi_tile)
    for mn in range(cute.size(tiles.shape, mode=[3])):
        cute_ext.partition_and_copy(t2r.get_slice(tid), tiles[None, None, 0, mn], r_acc)
        r_d.store(epilogue_op(r_acc.load().to(d_dtype)))
        tma_store_pipeline.acquire_sync()
        idx = tma_store_pipeline.get_index()
        cute_ext.partition_and_copy(r2s.get_slice(tid), r_d, smem[None, None, idx])
        tma_store_pipeline.commit_sync()
        ext.when(warp == tma_store_warp_id,
                 lambda: ops.tma_store(smem[None, None, idx], gD_epi[None, None, 0, mn], cta_v_map=c_map))
        tma_store_pipeline.release_advance()
    _tail_at_end(tma_store_pipeline)
    return tma_store_pipeline


def _tail_at_end(pipeline):
    """The pipeline's stores have read shared memory before the kernel ends (once, whatever the calls)."""
    ctx = cute_ext.current_kernel()
    if not any(getattr(a, "__self__", None) is pipeline for a in ctx.at_end):
        ctx.at_end.append(pipeline.tail)


NAMES = ("mainloop_mma", "epilogue_tma_store")
for _name in NAMES:
    ext.register_python_name(f"cute_ext.{_name}", globals()[_name])
