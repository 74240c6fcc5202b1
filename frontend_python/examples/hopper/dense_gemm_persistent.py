"""Hopper persistent, warp-specialized dense GEMM C = A * B (fp16, bf16 or fp8 in, fp32 accumulate), in the
structure of CuTe DSL's Hopper example of that name.

  A: (M, K, L), K-major ("k") or M-major ("m");  B: (N, K, L), "k" or "n";  C: (M, N, L), "n" or "m".
  fp8 inputs (Float8E4M3FN, Float8E5M2, mixed too) are K-major.

The grid holds as many clusters as the GPU runs at once (or fewer, when there is less work); each cluster walks the
output tiles with a StaticPersistentTileScheduler. A thread block has three warpgroups with separate roles:
  - warpgroup 0, the producer, gives most of its registers away (setmaxnreg down to 40); its first warp walks the
    tiles and, for each, streams the (bM, bK) k-tiles of A and (bN, bK) ones of B into a ring of 128-byte-swizzled
    shared-memory stages with TMA, through a PipelineTmaAsync (its PipelineProducer handles). In a cluster, each
    load of A is multicast to the CTAs of its cluster row and each load of B to those of its column. It runs ahead
    of the consumers by as many stages as fit, across tile boundaries.
  - warpgroups 1 and 2, the consumers, take the registers (setmaxnreg up to 232): each computes 64 rows of the
    (bM, bN) tile with warpgroup MMA from shared memory, one k-tile of wgmma in flight while the next stage is
    waited for, and releases each stage once the wgmma that read it completed. (A tile of 64 rows has one
    consumer warpgroup, and 256 threads keep 255 registers each without reallocation.)
  - The epilogue (consumers) converts the fp32 accumulators and writes them in (bM, 32) sub-tiles to a ring of
    shared-memory buffers of C (stmatrix for 16-bit C), each copied to C by a TMA store that one warp issues, one
    barrier of the consumers per sub-tile. The stores are asynchronous bulk groups: a buffer is reused only once
    the store that read it has read it, and the consumers go on to the next tile's mainloop while the last stores
    drain; meanwhile the producer has already filled the stages for it.

    python dense_gemm_persistent.py --mnkl 200,136,264,2
    python dense_gemm_persistent.py --mnkl 4096,4096,4096,1 --skip_ref_check --iterations 100
    python dense_gemm_persistent.py --mnkl 8192,8192,8192,1 --cluster_shape_mn 2,1 --swizzle_size 8 \
        --skip_ref_check --iterations 100

Without a GPU it compiles for sm_90a.
"""
import argparse
import os
import sys
from typing import Tuple, Type

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack, make_fake_tensor

WARPGROUP = 128
EPI_N = 32                 # columns of C per epilogue sub-tile
H100_H200_SMS = 132        # the clusters a compile without a GPU sizes the grid for


class HopperPersistentDenseGemm:
    def __init__(self, acc_dtype: Type[cutlass.Numeric] = cutlass.Float32, tile_shape_mn: Tuple[int, int] = (128, 256),
                 cluster_shape_mn: Tuple[int, int] = (1, 1), swizzle_size: int = 1, raster_along_m: bool = True,
                 max_active_clusters: int = None, max_stages: int = 8):
        self.acc_dtype = acc_dtype
        self.tile_shape_mn = tuple(tile_shape_mn)
        self.cluster_shape_mn = tuple(cluster_shape_mn)
        bm, bn = self.tile_shape_mn
        if bm not in (64, 128):
            raise ValueError(f"tile M must be 64 or 128 (one or two consumer warpgroups of 64 rows), got {bm}")
        if bn % EPI_N or not EPI_N <= bn <= 256:
            raise ValueError(f"tile N must be a multiple of {EPI_N} from {EPI_N} to 256, got {bn}")
        cm, cn = self.cluster_shape_mn
        if cm < 1 or cn < 1 or cm * cn > 8:
            raise ValueError(f"the cluster has 1 to 8 CTAs, got {cluster_shape_mn}")
        if swizzle_size < 1:
            raise ValueError(f"swizzle_size is at least 1, got {swizzle_size}")
        self.swizzle_size = swizzle_size
        self.raster_along_m = raster_along_m
        if max_active_clusters is None:
            max_active_clusters = (utils.HardwareInfo().get_max_active_clusters(cm * cn) if _has_gpu()
                                   else H100_H200_SMS // (cm * cn))
        self.max_active_clusters = max_active_clusters
        self.max_stages = max_stages
        self.num_consumer_warpgroups = bm // 64
        self.num_consumer_threads = WARPGROUP * self.num_consumer_warpgroups
        self.num_threads = WARPGROUP * (1 + self.num_consumer_warpgroups)
        # With two consumer warpgroups (384 threads, at most 168 registers each at launch) the producer warpgroup
        # keeps 40 registers a thread and the consumers take the rest of the 64K register file (232). With one
        # (256 threads) every thread has up to 255 already: no reallocation.
        self.reallocate_registers = self.num_consumer_warpgroups == 2
        self.producer_registers = 40
        self.consumer_registers = 232
        self.store_warp = 4          # the first consumer warp issues the TMA stores of C

    # --- host side: configuration from the tensors ----------------------------------------------------------------
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        import warpweave.utils.hopper_helpers as sm90_utils
        from warpweave.cute.nvgpu import cpasync

        a_dtype, b_dtype, c_dtype = mA.element_type, mB.element_type, mC.element_type
        a_layout = utils.LayoutEnum.from_tensor(mA)
        b_layout = utils.LayoutEnum.from_tensor(mB)
        c_layout = utils.LayoutEnum.from_tensor(mC)
        if cutlass.const_expr(not _supported_inputs(a_dtype, b_dtype)):
            raise TypeError(f"A and B must both be Float16, both BFloat16, or 8-bit floats (Float8E4M3FN, "
                            f"Float8E5M2), got {a_dtype.__name__} and {b_dtype.__name__}")
        if cutlass.const_expr(a_dtype.width == 8 and (a_layout != utils.LayoutEnum.ROW_MAJOR or
                                                      b_layout != utils.LayoutEnum.ROW_MAJOR)):
            raise TypeError("8-bit inputs are K-major (the warpgroup MMA reads them only so): use --a_major k "
                            "--b_major k")
        if cutlass.const_expr(c_dtype.width not in (16, 32)):
            raise TypeError(f"C is a 16- or 32-bit type here, got {c_dtype.__name__}")
        bm, bn = self.tile_shape_mn
        cm, cn = self.cluster_shape_mn
        self.c_m_major = c_layout == utils.LayoutEnum.COL_MAJOR

        tiled_mma = sm90_utils.make_trivial_tiled_mma(a_dtype, b_dtype, a_layout.sm90_mma_major_mode(),
                                                      b_layout.sm90_mma_major_mode(), self.acc_dtype,
                                                      (self.num_consumer_warpgroups, 1, 1), tiler_mn=(64, bn))
        # The same MMA over an epilogue sub-tile of EPI_N columns: its C partition is the part of each thread's
        # accumulators that falls into one sub-tile (the wgmma D fragment repeats every 8 columns).
        epi_mma = sm90_utils.make_trivial_tiled_mma(a_dtype, b_dtype, a_layout.sm90_mma_major_mode(),
                                                    b_layout.sm90_mma_major_mode(), self.acc_dtype,
                                                    (self.num_consumer_warpgroups, 1, 1), tiler_mn=(64, EPI_N))
        bk = cute.size(tiled_mma.shape_mnk, mode=[2]) * 4          # four wgmma k-blocks per k-tile: 128 bytes
        tile_mnk = (bm, bn, bk)
        stage_bytes = (bm + bn) * bk * a_dtype.width // 8
        subtiles = bn // EPI_N
        # Epilogue buffers: four when the sub-tiles of a tile are a multiple of four, so that sub-tile j of every
        # tile uses buffer j % 4 (a static index).
        epi_stages = 4 if subtiles % 4 == 0 else (2 if subtiles % 2 == 0 else 1)
        epi_bytes = bm * EPI_N * c_dtype.width // 8 * epi_stages
        capacity = utils.get_smem_capacity_in_bytes("sm_90") - 1024          # the mbarriers and alignment
        stages = min(self.max_stages, (capacity - epi_bytes) // stage_bytes)
        sA_layout = sm90_utils.make_smem_layout_a(a_layout, tile_mnk, a_dtype, stages)
        sB_layout = sm90_utils.make_smem_layout_b(b_layout, tile_mnk, b_dtype, stages)
        sC_layout = sm90_utils.make_smem_layout_epi(c_dtype, c_layout, (bm, EPI_N), epi_stages)

        op_a = cpasync.CopyBulkTensorTileG2SMulticastOp() if cn > 1 else cpasync.CopyBulkTensorTileG2SOp()
        op_b = cpasync.CopyBulkTensorTileG2SMulticastOp() if cm > 1 else cpasync.CopyBulkTensorTileG2SOp()
        tma_a, tA = cpasync.make_tiled_tma_atom(op_a, mA, self.one_stage(sA_layout), (bm, bk), num_multicast=cn)
        tma_b, tB = cpasync.make_tiled_tma_atom(op_b, mB, self.one_stage(sB_layout), (bn, bk), num_multicast=cm)
        tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC, self.one_stage(sC_layout),
                                                (bm, EPI_N))

        tiles = cute.ceil_div(mC.shape, (bm, bn, 1))
        sched_params = utils.PersistentTileSchedulerParams(tiles, (cm, cn, 1), swizzle_size=self.swizzle_size,
                                                           raster_along_m=self.raster_along_m)
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, self.max_active_clusters)
        self.kernel(tma_a, tA, tma_b, tB, tma_c, tC, tiled_mma, epi_mma, sA_layout, sB_layout, sC_layout,
                    sched_params, stages, epi_stages, stage_bytes).launch(
            grid=grid, block=[self.num_threads, 1, 1], cluster=[cm, cn, 1], min_blocks_per_mp=1)

    @staticmethod
    def one_stage(staged):
        """The (MN, K) layout of one stage of a swizzled (MN, K, stages) layout."""
        return cute.make_composed_layout(staged.inner, 0, cute.slice_(staged.outer, (None, None, 0)))

    # --- device side ---------------------------------------------------------------------------------------------
    @cute.kernel
    def kernel(self, tma_a, mA: cute.Tensor, tma_b, mB: cute.Tensor, tma_c, mC: cute.Tensor,
               tiled_mma: cute.TiledMma, epi_mma: cute.TiledMma, sA_layout: cute.ComposedLayout,
               sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout,
               sched_params: utils.PersistentTileSchedulerParams, stages: cutlass.Constexpr,
               epi_stages: cutlass.Constexpr, stage_bytes: cutlass.Constexpr):
        from warpweave.cute.nvgpu import cpasync

        bm, bn = self.tile_shape_mn
        cm, cn = self.cluster_shape_mn
        bk = cute.size(sA_layout, mode=[1])
        tidx, _, _ = cute.arch.thread_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)

        # Shared memory: the mainloop's mbarriers, the A and B stages and C's epilogue buffers (1024-byte aligned
        # for the swizzles), each its own, so that the stores of one tile overlap the loads of the next.
        smem = utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, 2 * stages, byte_alignment=8)
        sA = smem.allocate_tensor(tma_a.element_type, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(tma_b.element_type, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        sC = smem.allocate_tensor(tma_c.element_type, sC_layout.outer, 1024, swizzle=sC_layout.inner)

        # Every consumer warp releases a stage once for each CTA that writes it (its cluster row and column).
        peers = cm + cn - 1
        mainloop = pipeline.PipelineTmaAsync.create(
            barrier_storage=barriers, num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, peers * self.num_consumer_threads // 32),
            tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, cm, cn, 1)), defer_sync=True)
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_shape_mn, is_relaxed=True)

        # The grid is (cm, cn, clusters): x and y are this CTA's place in its cluster. A goes to the CTAs of its
        # cluster row, B to those of its column.
        bidx, bidy, _ = cute.arch.block_idx()
        cta_m = bidx % cm
        cta_n = bidy % cn
        a_mask = cpasync.create_tma_multicast_mask(cute.make_layout((cm, cn)), (cta_m, cta_n), 1)
        b_mask = cpasync.create_tma_multicast_mask(cute.make_layout((cm, cn)), (cta_m, cta_n), 0)
        k_tiles = cute.ceil_div(cute.size(mA, mode=[1]), bk)

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_shape_mn)

        if warp_idx < 4:
            # --- producer warpgroup -------------------------------------------------------------------------------
            if cutlass.const_expr(self.reallocate_registers):
                cute.arch.setmaxregister_decrease(self.producer_registers)
            if warp_idx == 0:
                sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(),
                                                                   cute.arch.grid_dim())
                work = sched.initial_work_tile_info()
                producer = mainloop.make_participants()[0]
                while work.is_valid_tile:
                    tile_m, tile_n, tile_l = work.tile_idx
                    gA = cute.local_tile(mA, (bm, bk), (tile_m, None, tile_l))
                    gB = cute.local_tile(mB, (bn, bk), (tile_n, None, tile_l))
                    tAsA, tAgA = cpasync.tma_partition(tma_a, cta_n, cute.make_layout(cn), cute.group_modes(sA, 0, 2),
                                                       cute.group_modes(gA, 0, 2))
                    tBsB, tBgB = cpasync.tma_partition(tma_b, cta_m, cute.make_layout(cm), cute.group_modes(sB, 0, 2),
                                                       cute.group_modes(gB, 0, 2))
                    producer.reset()
                    cute.profile.begin("load")  # timed regions: only when compiled with warpweave.profile.Profile
                    for _ in cutlass.range(k_tiles, unroll=1):
                        stage = producer.acquire_and_advance()
                        if cutlass.const_expr(cn > 1):
                            cute.copy(tma_a, tAgA[None, stage.count], tAsA[None, stage.index],
                                      tma_bar_ptr=stage.barrier, mcast_mask=a_mask)
                        else:
                            cute.copy(tma_a, tAgA[None, stage.count], tAsA[None, stage.index],
                                      tma_bar_ptr=stage.barrier)
                        if cutlass.const_expr(cm > 1):
                            cute.copy(tma_b, tBgB[None, stage.count], tBsB[None, stage.index],
                                      tma_bar_ptr=stage.barrier, mcast_mask=b_mask)
                        else:
                            cute.copy(tma_b, tBgB[None, stage.count], tBsB[None, stage.index],
                                      tma_bar_ptr=stage.barrier)
                        stage.commit()
                    cute.profile.end("load")
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
                # No CTA leaves while a peer may still arrive on its barriers: every stage it filled is released.
                producer.tail()
        else:
            # --- consumer warpgroups ------------------------------------------------------------------------------
            if cutlass.const_expr(self.reallocate_registers):
                cute.arch.setmaxregister_increase(self.consumer_registers)
            self.consume(mainloop, sched_params, tma_c, mC, tiled_mma, epi_mma, sA, sB, sC, k_tiles, stages,
                         epi_stages, warp_idx, tidx - WARPGROUP)

    @cute.jit
    def consume(self, mainloop, sched_params, tma_c, mC, tiled_mma, epi_mma, sA, sB, sC, k_tiles, stages,
                epi_stages, warp_idx, cidx):
        """The consumer warpgroups (threads cidx = 0 .. 64 * bM / 64 - 1): mainloop and epilogue of every tile."""
        from warpweave.cute.nvgpu import cpasync, warpgroup

        bm, bn = self.tile_shape_mn
        subtiles = bn // EPI_N
        c_dtype = tma_c.element_type
        # The A and B partitions from shared memory are the same for every thread of a warpgroup: slicing by the
        # warpgroup's first thread (a warp-uniform value) keeps the descriptor arithmetic in uniform registers.
        warpgroup_first = cute.arch.make_warp_uniform(warp_idx // 4 - 1) * WARPGROUP
        thr_mma = tiled_mma.get_slice(warpgroup_first)
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))    # (MMA, MMA_M, MMA_K, stages): descriptors
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(tiled_mma.partition_shape_C((bm, bn)), self.acc_dtype)
        num_k_blocks = cute.size(tCrA, mode=[2])

        # Epilogue: this thread's values of one (bM, EPI_N) sub-tile (values [j * per_sub, (j + 1) * per_sub) of
        # its accumulators), their shared-memory places in each buffer, and the TMA store's view of a buffer.
        epi_thr = epi_mma.get_slice(cidx)
        sub_layout = cute.make_layout(epi_mma.partition_shape_C((bm, EPI_N)))
        per_sub = cute.size(sub_layout)
        rD = cute.make_rmem_tensor(sub_layout, c_dtype)
        c_16bit = c_dtype.width == 16
        r2s = thr_r2s = rD_view = None          # the stmatrix path's, defined on both paths
        if cutlass.const_expr(c_16bit):
            stsm = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(self.c_m_major, 4), c_dtype)
            r2s = cute.make_tiled_copy_C(stsm, epi_mma)
            thr_r2s = r2s.get_slice(cidx)
            rD_view = thr_r2s.retile(rD)
        # With two buffers or more, a buffer is known free one barrier early (see the epilogue): the store pipeline
        # tracks epi_stages - 1 stores in flight, the last buffer being the one written meanwhile.
        one_barrier = epi_stages >= 2
        store = pipeline.PipelineTmaStore.create(num_stages=epi_stages - 1 if one_barrier else 1)
        epi_sync = pipeline.NamedBarrier(barrier_id=1, num_threads=self.num_consumer_threads)

        sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
        work = sched.initial_work_tile_info()
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)     # a field the tile loop carries (set again per tile)
        while work.is_valid_tile:
            tile_m, tile_n, tile_l = work.tile_idx

            # Mainloop. The first k-tile overwrites the accumulators (D = A * B), the others accumulate; one
            # k-tile of wgmma stays in flight, and the stage the previous one read is released once it completed.
            cute.profile.begin("mainloop")
            mainloop.consumer_wait(read)
            warpgroup.fence()
            tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
            for kb in cutlass.range_constexpr(num_k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
                tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
            read.advance()
            for _ in cutlass.range(1, k_tiles, unroll=1):
                mainloop.consumer_wait(read)
                warpgroup.fence()
                for kb in cutlass.range_constexpr(num_k_blocks):
                    cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index],
                              acc)
                warpgroup.commit_group()
                warpgroup.wait_group(1)
                mainloop.consumer_release(release)
                release.advance()
                read.advance()
            warpgroup.wait_group(0)
            mainloop.consumer_release(release)
            release.advance()
            cute.profile.end("mainloop")

            # Epilogue, sub-tile by sub-tile through buffer j % E (E = epi_stages): registers -> shared memory
            # (made visible to the async proxy), a barrier of the consumers, then one TMA store of the buffer by the
            # store warp. Before it arrives at sub-tile j's barrier, the store warp waits until at most E - 2 of its
            # stores (those of sub-tiles up to j - 1) still read shared memory, so that after the barrier the store
            # of sub-tile j + 1 - E has read buffer (j + 1) % E, which everyone then writes: one barrier a sub-tile.
            # With a single buffer, the store warp waits for its store after issuing it, and a second barrier lets
            # the others on.
            cute.profile.begin("epilogue")
            for j in cutlass.range_constexpr(subtiles):
                buf = j % epi_stages
                sub = cute.make_tensor(acc.iterator + j * per_sub, sub_layout)
                rD.store(sub.load().to(c_dtype))
                # Buffer buf of the ring: the tensor slice keeps the buffer's offset (a slice of the layout alone
                # would drop it and put every sub-tile into buffer 0, under stores still reading it).
                sC_buf = sC[None, None, buf]
                if cutlass.const_expr(c_16bit):
                    cute.copy(r2s, rD_view, thr_r2s.partition_D(sC_buf))
                else:
                    cute.autovec_copy(rD, epi_thr.partition_C(sC_buf))
                cute.arch.fence_proxy("async.shared", space="cta")
                if cutlass.const_expr(one_barrier):
                    if warp_idx == self.store_warp:
                        store.producer_acquire()
                epi_sync.arrive_and_wait()
                if warp_idx == self.store_warp:
                    gC = cute.local_tile(mC, (bm, EPI_N), (tile_m, tile_n * subtiles + j, tile_l))
                    tSsC, tSgC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sC_buf, 0, 2),
                                                       cute.group_modes(gC, 0, 2))
                    cute.copy(tma_c, tSsC, tSgC)
                    store.producer_commit()
                    if cutlass.const_expr(not one_barrier):
                        store.producer_acquire()
                if cutlass.const_expr(not one_barrier):
                    epi_sync.arrive_and_wait()
            cute.profile.end("epilogue")

            sched.advance_to_next_work()
            work = sched.get_current_work()

        if warp_idx == self.store_warp:
            store.producer_tail()       # the block leaves once every store has read its buffer


# --- host side ----------------------------------------------------------------------------------------------------

def _supported_inputs(a_dtype, b_dtype) -> bool:
    fp8 = (cutlass.Float8E4M3FN, cutlass.Float8E5M2)
    return (a_dtype is b_dtype and a_dtype in (cutlass.Float16, cutlass.BFloat16)) or (a_dtype in fp8 and
                                                                                          b_dtype in fp8)


def _has_gpu() -> bool:
    from warpweave import _core

    try:
        return _core.driver_available() and _core.device_count() > 0
    except RuntimeError:
        return False


def _tensor_like(mode0, mode1, l, mode0_major, make):
    """An (mode0, mode1, l) tensor whose contiguous mode is mode 0 (mode0_major) or mode 1."""
    if mode0_major:
        return make((l, mode1, mode0)).permute(2, 1, 0)
    return make((l, mode0, mode1)).permute(1, 2, 0)


def _mark(t, mode0_major, dtype):
    """The tensor with dynamic extents and strides, its contiguous mode a multiple of 16 bytes (as TMA needs)."""
    return (t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
            .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, stride_order=(2, 1, 0) if mode0_major
                                        else (2, 0, 1), divisibility=128 // dtype.width))


def fake_arguments(a_major, b_major, c_major, ab_dtype, c_dtype, mnkl=(256, 256, 256, 1), b_dtype=None):
    """Stand-ins of A, B and C for compiling without a GPU."""
    M, N, K, L = mnkl
    b_dtype = b_dtype or ab_dtype

    def fake(mode0, mode1, mode0_major, dtype):
        stride = (1, mode0, mode0 * mode1) if mode0_major else (mode1, 1, mode0 * mode1)
        return _mark(make_fake_tensor(dtype, (mode0, mode1, L), stride, assumed_align=16), mode0_major, dtype)

    return (fake(M, K, a_major == "m", ab_dtype), fake(N, K, b_major == "n", b_dtype),
            fake(M, N, c_major == "m", c_dtype))


def compile_only(gemm, a_major, b_major, c_major, ab_dtype, c_dtype, options=None, b_dtype=None):
    """Compiles for sm_90a (or WARPWEAVE_ARCH) with fake tensors standing in; nothing runs."""
    chosen = os.environ.get("WARPWEAVE_ARCH")
    os.environ["WARPWEAVE_ARCH"] = chosen or "sm_90a"
    try:
        kw = {"options": options} if options else {}
        compiled = cute.compile(gemm, *fake_arguments(a_major, b_major, c_major, ab_dtype, c_dtype,
                                                      b_dtype=b_dtype), **kw)
    finally:
        if chosen is None:
            del os.environ["WARPWEAVE_ARCH"]
    print(f"compiled dense_gemm_persistent for {chosen or 'sm_90a'}: {len(compiled.cubin)} bytes of cubin "
          f"(trace {compiled.timings['trace_s'] * 1e3:.0f} ms, compile {compiled.timings['compile_s'] * 1e3:.0f} ms)")
    return compiled


def check(c, a, b, c_dtype, a_dtype, tolerance=None):
    """C against a float32 torch reference: C rounds once to its type (relative 2**-11 fp16, 2**-8 bf16); the
    accumulation order differs from the reference's, by about sqrt(K) fp32 roundings of sum |a b| (fp8 wgmma adds
    with fewer bits, about 2**-10 of it per instruction). A misplaced or missing tile of products is an error of
    order sqrt(K) or more, far above both."""
    import torch

    ref = torch.einsum("mkl,nkl->mnl", a.float(), b.float())
    bound = torch.einsum("mkl,nkl->mnl", a.float().abs(), b.float().abs())
    got = c.float()
    if torch.isnan(got).any():
        i = tuple(int(x) for x in torch.isnan(got).nonzero()[0])
        raise AssertionError(f"{int(torch.isnan(got).sum())} elements of C were not written (still NaN), the first "
                             f"at (m, n, l) = {i}")
    out_tol = {cutlass.Float16: 2.0 ** -10, cutlass.BFloat16: 2.0 ** -7}.get(c_dtype, 2.0 ** -20)
    acc_tol = 2.0 ** -9 if a_dtype.width == 8 else 2.0 ** -16
    if tolerance is not None:
        out_tol = acc_tol = tolerance
    limit = out_tol * ref.abs() + acc_tol * bound + 1e-6
    bad = (got - ref).abs() > limit
    if bad.any():
        i = tuple(int(x) for x in bad.nonzero()[0])
        raise AssertionError(f"{int(bad.sum())} of {bad.numel()} elements of C differ; first at (m, n, l) = {i}: "
                             f"got {got[i].item()}, expected {ref[i].item()} (limit {limit[i].item():.3g})")


def run(mnkl, a_dtype, b_dtype, c_dtype, acc_dtype, a_major, b_major, c_major, tile_shape_mn=(128, 256),
        cluster_shape_mn=(1, 1), tolerance=None, warmup_iterations=2, iterations=10, skip_ref_check=False,
        swizzle_size=1, raster_along_m=True, max_active_clusters=None, profile=None):
    import torch

    import warpweave.torch as wwt
    from warpweave.cute import testing

    M, N, K, L = mnkl
    if K < 1:
        raise ValueError(f"K must be at least 1, got {K}")
    print(f"dense_gemm_persistent: mnkl {mnkl}, {a_dtype.__name__} x {b_dtype.__name__} -> {c_dtype.__name__} "
          f"(acc {acc_dtype.__name__}), majors A {a_major} B {b_major} C {c_major}, tile {tile_shape_mn}, "
          f"cluster {cluster_shape_mn}, swizzle {swizzle_size}, raster along {'m' if raster_along_m else 'n'}")

    def random(shape, dtype):
        return torch.empty(shape, dtype=torch.float32, device="cuda").uniform_(-2, 2).to(wwt.dtype(dtype))

    a = _tensor_like(M, K, L, a_major == "m", lambda s: random(s, a_dtype))
    b = _tensor_like(N, K, L, b_major == "n", lambda s: random(s, b_dtype))
    c = _tensor_like(M, N, L, c_major == "m",
                     lambda s: torch.full(s, float("nan"), dtype=wwt.dtype(c_dtype), device="cuda"))

    def runtime(t, mode0_major, dtype):
        return _mark(from_dlpack(t, assumed_align=16), mode0_major, dtype)

    mA, mB, mC = runtime(a, a_major == "m", a_dtype), runtime(b, b_major == "n", b_dtype), \
        runtime(c, c_major == "m", c_dtype)
    gemm = HopperPersistentDenseGemm(acc_dtype, tile_shape_mn, cluster_shape_mn, swizzle_size, raster_along_m,
                                     max_active_clusters)
    prof = None
    if profile:  # producer and consumer warps as tracks of a Perfetto trace (warpweave.profile)
        import warpweave.profile

        sms = torch.cuda.get_device_properties(0).multi_processor_count
        tiles = -(-M // tile_shape_mn[0]) * -(-N // tile_shape_mn[1]) * L
        prof = warpweave.profile.Profiler(max_warps=sms * gemm.num_threads // 32,
                                          events_per_warp=4 * -(-tiles // sms) + 4)
        compiled = prof.compile(gemm, mA, mB, mC)
    else:
        compiled = cute.compile(gemm, mA, mB, mC)
    if prof is not None:
        compiled(mA, mB, mC)
        trace = prof.write_trace(profile)
        spans = sum(e["ph"] == "X" for e in trace["traceEvents"])
        print(f"profile: {spans} regions written to {profile}; problems: {trace['otherData']['problems'] or 'none'}")
        c.fill_(float("nan"))
    if not skip_ref_check:
        compiled(mA, mB, mC)
        torch.cuda.synchronize()
        check(c, a, b, c_dtype, a_dtype, tolerance)
        print("results verified")
    if iterations > 0 and skip_ref_check:
        us = testing.benchmark(compiled, kernel_arguments=testing.JitArguments(mA, mB, mC),
                               warmup_iterations=warmup_iterations, iterations=iterations)
        print(f"kernel time {us:.1f} us, {2 * M * N * K * L / us / 1e6:.1f} TFLOP/s")
        return us
    return None


def _ints(s):
    return tuple(int(x) for x in s.split(","))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mnkl", type=_ints, default=(200, 136, 264, 2))
    p.add_argument("--tile_shape_mn", type=_ints, default=(128, 256))
    p.add_argument("--cluster_shape_mn", type=_ints, default=(1, 1))
    p.add_argument("--swizzle_size", type=int, default=1)
    p.add_argument("--raster_order", choices=["along_m", "along_n"], default="along_m")
    p.add_argument("--a_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--b_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--c_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--acc_dtype", type=cutlass.dtype, default=cutlass.Float32)
    p.add_argument("--a_major", choices=["k", "m"], default="k")
    p.add_argument("--b_major", choices=["k", "n"], default="k")
    p.add_argument("--c_major", choices=["n", "m"], default="n")
    p.add_argument("--tolerance", type=float, default=None)
    p.add_argument("--warmup_iterations", type=int, default=2)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--skip_ref_check", action="store_true")
    p.add_argument("--profile", metavar="TRACE_JSON", help="write a Perfetto trace of the producer and consumer warps")
    args = p.parse_args(argv)
    if len(args.mnkl) != 4 or len(args.tile_shape_mn) != 2 or len(args.cluster_shape_mn) != 2:
        p.error("--mnkl takes 4 values, --tile_shape_mn and --cluster_shape_mn 2")
    if not _supported_inputs(args.a_dtype, args.b_dtype):
        p.error("--a_dtype and --b_dtype must both be Float16, both BFloat16, or both 8-bit floats")
    if args.acc_dtype is not cutlass.Float32:
        p.error("--acc_dtype must be Float32")
    along_m = args.raster_order == "along_m"
    if not _has_gpu():
        print("no GPU: compiling only")
        gemm = HopperPersistentDenseGemm(args.acc_dtype, args.tile_shape_mn, args.cluster_shape_mn,
                                         args.swizzle_size, along_m)
        compile_only(gemm, args.a_major, args.b_major, args.c_major, args.a_dtype, args.c_dtype,
                     b_dtype=args.b_dtype)
        return 0
    run(args.mnkl, args.a_dtype, args.b_dtype, args.c_dtype, args.acc_dtype, args.a_major, args.b_major,
        args.c_major, args.tile_shape_mn, args.cluster_shape_mn, args.tolerance, args.warmup_iterations,
        args.iterations, args.skip_ref_check, args.swizzle_size, along_m, profile=args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
