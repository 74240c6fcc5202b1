"""Blackwell persistent, warp-specialized dense GEMM C = A * B (fp16, bf16, tf32 or fp8 in, fp32 accumulate): a grid
of as many clusters as the GPU runs at once walks the output tiles (utils.StaticPersistentTileScheduler), and each
CTA's warps have one job each, in the structure of CuTe DSL's Blackwell persistent example:

  warp 0      TMA: the k-tiles of A and B of every tile into a ring of stages (PipelineTmaUmma; multicast in a
              cluster, the pair's loads completing on the leader's barrier with 2-CTA MMAs);
  warp 1      MMA (in the MMA's leader CTA): tcgen05.mma into one of two accumulator buffers in tensor memory, so
              that the next tile's MMAs run while the epilogue drains the previous one (PipelineUmmaAsync);
  warps 2-5   epilogue: tensor memory -> registers -> C's type -> swizzled shared-memory sub-tiles -> TMA store,
              then the accumulator buffer is released to the MMA warp.

    python dense_gemm_persistent.py --mnkl 2048,2048,1024,1 --mma_tiler_mn 256,256 --use_2cta_instrs \
        --cluster_shape_mn 2,1

Without a GPU it compiles for sm_100a and prints ptxas's report.
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

TMA_WARP, MMA_WARP, EPI_WARP0 = 0, 1, 2
EPI_THREADS = 128
THREADS = 32 * 2 + EPI_THREADS
ACC_STAGES = 2
SMEM_RESERVED = 1024


class BlackwellPersistentDenseGemm:
    def __init__(self, acc_dtype: Type[cutlass.Numeric] = cutlass.Float32, use_2cta_instrs: bool = False,
                 mma_tiler_mn: Tuple[int, int] = (128, 256), cluster_shape_mn: Tuple[int, int] = (1, 1),
                 max_active_clusters: int = None, max_stages: int = 8):
        self.acc_dtype = acc_dtype
        self.use_2cta_instrs = bool(use_2cta_instrs)
        self.cta = 2 if self.use_2cta_instrs else 1
        self.mma_tiler_mn = tuple(mma_tiler_mn)
        self.cluster_shape_mn = tuple(cluster_shape_mn)
        m, n = self.mma_tiler_mn
        legal_m = (256,) if self.use_2cta_instrs else (64, 128)
        if m not in legal_m:
            raise ValueError(f"the MMA tile's M must be {' or '.join(map(str, legal_m))} with "
                             f"{'2-CTA' if self.use_2cta_instrs else '1-CTA'} instructions here, got {m}")
        if n % 32 or not 32 <= n <= 256:
            raise ValueError(f"the MMA tile's N must be a multiple of 32 from 32 to 256, got {n}")
        cm, cn = self.cluster_shape_mn
        if cm < 1 or cn < 1 or cm * cn > 16 or cm % self.cta:
            raise ValueError(f"the cluster has 1 to 16 CTAs (an even M extent with 2-CTA instructions), got "
                             f"{cluster_shape_mn}")
        if acc_dtype is not cutlass.Float32:
            raise ValueError(f"the accumulator is Float32, got {acc_dtype.__name__}")
        if max_active_clusters is None:
            max_active_clusters = (utils.HardwareInfo().get_max_active_clusters(cm * cn) if _has_gpu()
                                   else 148 // (cm * cn))
        self.max_active_clusters = max_active_clusters
        self.max_stages = max_stages

    # --- host side ------------------------------------------------------------------------------------------------
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        import warpweave.utils.blackwell_helpers as sm100_utils
        from warpweave.cute.nvgpu import cpasync, tcgen05

        a_dtype, c_dtype = mA.element_type, mC.element_type
        if cutlass.const_expr(a_dtype is not mB.element_type):
            raise TypeError(f"A and B must be of one type, got {a_dtype.__name__} and {mB.element_type.__name__}")
        c_layout = utils.LayoutEnum.from_tensor(mC)
        cta_group = tcgen05.CtaGroup.TWO if cutlass.const_expr(self.use_2cta_instrs) else tcgen05.CtaGroup.ONE
        tiled_mma = sm100_utils.make_trivial_tiled_mma(a_dtype, utils.LayoutEnum.from_tensor(mA).mma_major_mode(),
                                                       utils.LayoutEnum.from_tensor(mB).mma_major_mode(),
                                                       self.acc_dtype, cta_group, self.mma_tiler_mn)
        bk = cute.size(tiled_mma.shape_mnk, mode=[2]) * 4
        mma_tiler = (*self.mma_tiler_mn, bk)
        cta_tile = (self.mma_tiler_mn[0] // self.cta, self.mma_tiler_mn[1])
        cm, cn = self.cluster_shape_mn
        cluster_vmnk = cute.make_layout((self.cta, cm // self.cta, cn, 1))

        epi_tile = sm100_utils.compute_epilogue_tile_shape(cta_tile, self.use_2cta_instrs, c_layout, c_dtype)
        epi_stages = min(2, cta_tile[1] // epi_tile[1])
        stage_bytes = (cta_tile[0] + self.mma_tiler_mn[1] // self.cta) * bk * a_dtype.width // 8
        epi_bytes = epi_tile[0] * epi_tile[1] * c_dtype.width // 8 * epi_stages
        stages = min(self.max_stages, (sm100_utils.get_smem_capacity_in_bytes("sm_100") - SMEM_RESERVED - epi_bytes)
                     // stage_bytes)
        sA_layout = sm100_utils.make_smem_layout_a(tiled_mma, mma_tiler, a_dtype, stages)
        sB_layout = sm100_utils.make_smem_layout_b(tiled_mma, mma_tiler, a_dtype, stages)
        sC_layout = sm100_utils.make_smem_layout_epi(c_dtype, c_layout, epi_tile, epi_stages)

        internal = cutlass.TFloat32 if cutlass.const_expr(a_dtype is cutlass.Float32) else None
        op_a = sm100_utils.cluster_shape_to_tma_atom_A(self.cluster_shape_mn, tiled_mma.thr_id)
        op_b = sm100_utils.cluster_shape_to_tma_atom_B(self.cluster_shape_mn, tiled_mma.thr_id)
        tma_a, tA = cute.nvgpu.make_tiled_tma_atom_A(op_a, mA, cute.select(sA_layout, mode=[0, 1, 2]), mma_tiler,
                                                     tiled_mma, cluster_vmnk.shape, internal_type=internal)
        tma_b, tB = cute.nvgpu.make_tiled_tma_atom_B(op_b, mB, cute.select(sB_layout, mode=[0, 1, 2]), mma_tiler,
                                                     tiled_mma, cluster_vmnk.shape, internal_type=internal)
        tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC,
                                                cute.select(sC_layout, mode=[0, 1]), epi_tile)

        tiles = cute.ceil_div(mC.shape, (cta_tile[0], cta_tile[1], 1))
        sched_params = utils.PersistentTileSchedulerParams(tiles, (cm, cn, 1))
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(sched_params, self.max_active_clusters)
        self.kernel(tiled_mma, tma_a, tA, tma_b, tB, tma_c, tC, cluster_vmnk, sA_layout, sB_layout, sC_layout,
                    sched_params, epi_tile, stages, epi_stages, stage_bytes * self.cta).launch(
            grid=grid, block=[THREADS, 1, 1], cluster=[cm, cn, 1])

    # --- device side ---------------------------------------------------------------------------------------------
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a, mA: cute.Tensor, tma_b, mB: cute.Tensor, tma_c,
               mC: cute.Tensor, cluster_vmnk: cute.Layout, sA_layout: cute.ComposedLayout,
               sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout,
               sched_params: utils.PersistentTileSchedulerParams, epi_tile: cutlass.Constexpr,
               stages: cutlass.Constexpr, epi_stages: cutlass.Constexpr, tx_bytes: cutlass.Constexpr):
        import warpweave.utils.blackwell_helpers as sm100_utils
        from warpweave.cute.nvgpu import cpasync, tcgen05

        cta = self.cta
        cm, cn = self.cluster_shape_mn
        bm_mma, bn = self.mma_tiler_mn
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == TMA_WARP:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)

        # The grid is (cm, cn, clusters): x and y are this CTA's place in its cluster (v: its half of a pair).
        bidx, bidy, _ = cute.arch.block_idx()
        cta_m = bidx % cm
        cta_n = bidy % cn
        v = cta_m % cta
        is_leader = v == 0

        smem = utils.SmemAllocator()
        ab_bars = smem.allocate_array(cutlass.Int64, 2 * stages, byte_alignment=8)
        acc_bars = smem.allocate_array(cutlass.Int64, 2 * ACC_STAGES, byte_alignment=8)
        dealloc_bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        tmem_holder = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        c_dtype = tma_c.element_type
        sA = smem.allocate_tensor(tma_a.element_type, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(tma_b.element_type, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        sC = smem.allocate_tensor(c_dtype, sC_layout.outer, 1024, swizzle=sC_layout.inner)

        mcast_a, mcast_b = cn, cm // cta
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=ab_bars, num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mcast_a + mcast_b - 1),
            tx_count=tx_bytes, cta_layout_vmnk=cluster_vmnk, defer_sync=True).make_participants()
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=acc_bars, num_stages=ACC_STAGES,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, EPI_THREADS),
            cta_layout_vmnk=cluster_vmnk, defer_sync=True)
        tmem = utils.TmemAllocator(tmem_holder, barrier_for_retrieve=pipeline.NamedBarrier(1, THREADS),
                                   allocator_warp_id=EPI_WARP0, is_two_cta=self.use_2cta_instrs,
                                   two_cta_tmem_dealloc_mbar_ptr=dealloc_bar)
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_shape_mn, is_relaxed=True)

        a_mask = b_mask = None
        if cutlass.const_expr(mcast_a > 1):
            a_mask = cpasync.create_tma_multicast_mask(cluster_vmnk, (v, cta_m // cta, cta_n, 0), 2)
        if cutlass.const_expr(mcast_b > 1):
            b_mask = cpasync.create_tma_multicast_mask(cluster_vmnk, (v, cta_m // cta, cta_n, 0), 1)
        thr_mma = tiled_mma.get_slice(v)
        tCrA = tiled_mma.make_fragment_A(sA)
        tCrB = tiled_mma.make_fragment_B(sB)
        # two accumulator buffers side by side in tensor memory
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(self.mma_tiler_mn) + (ACC_STAGES,)).layout
        bk = cute.size(sA_layout.outer, mode=[0, 1]) * cute.size(sA_layout.outer, mode=[2])
        k_tiles = cute.ceil_div(cute.size(mA, mode=[1]), bk)

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_shape_mn)
        tmem.allocate(utils.get_num_tmem_alloc_cols(acc_layout))
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        tmem.relinquish_alloc_permit()

        sched = utils.StaticPersistentTileScheduler.create(sched_params, cute.arch.block_idx(), cute.arch.grid_dim())
        work = sched.initial_work_tile_info()
        if warp == TMA_WARP:
            while work.is_valid_tile:
                tile_m, tile_n, tile_l = work.tile_idx
                gA = cute.local_tile(mA, (bm_mma, bk), (tile_m // cta, None, tile_l))
                gB = cute.local_tile(mB, (bn, bk), (tile_n, None, tile_l))
                tAsA, tAgA = cpasync.tma_partition(tma_a, cta_n, cute.make_layout(mcast_a), cute.group_modes(sA, 0, 3),
                                                   cute.group_modes(thr_mma.partition_A(gA), 0, 3))
                tBsB, tBgB = cpasync.tma_partition(tma_b, cta_m // cta, cute.make_layout(mcast_b),
                                                   cute.group_modes(sB, 0, 3),
                                                   cute.group_modes(thr_mma.partition_B(gB), 0, 3))
                ab_producer.reset()
                for _ in cutlass.range(k_tiles, unroll=1):
                    stage = ab_producer.acquire_and_advance()
                    self.copy(tma_a, tAgA[(None, stage.count)], tAsA[(None, stage.index)], stage.barrier, a_mask)
                    self.copy(tma_b, tBgB[(None, stage.count)], tBsB[(None, stage.index)], stage.barrier, b_mask)
                sched.advance_to_next_work()
                work = sched.get_current_work()
            ab_producer.tail()
        if warp == MMA_WARP:
            if is_leader:
                acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, ACC_STAGES)
                num_kblocks = cute.size(tCrA, mode=[2])
                while work.is_valid_tile:
                    # wait until the epilogue has drained this buffer (its loads ordered before the MMAs' writes)
                    acc_pipeline.producer_acquire(acc_state)
                    tcgen05.fence_after_thread_sync()
                    tAcc = acc[(None, None, None, acc_state.index)]
                    tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                    for _ in cutlass.range(k_tiles, unroll=1):
                        stage = ab_consumer.wait_and_advance()
                        for kb in cutlass.range_constexpr(num_kblocks):
                            cute.gemm(tiled_mma, tAcc, tCrA[(None, None, kb, stage.index)],
                                      tCrB[(None, None, kb, stage.index)], tAcc)
                            tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                        stage.release()
                    acc_pipeline.producer_commit(acc_state)
                    acc_state.advance()
                    sched.advance_to_next_work()
                    work = sched.get_current_work()
        if warp >= EPI_WARP0:
            self.epilogue(tidx, warp, acc, acc_pipeline, sched, work, tma_c, mC, sC, epi_tile, epi_stages, c_dtype)
            # every epilogue warp has read the accumulators before the allocator warp frees them
            tcgen05.fence_before_thread_sync()
            pipeline.sync(barrier_id=2, num_threads=EPI_THREADS)
            tmem.free(acc.iterator)
        if cutlass.const_expr(cm * cn > 1):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()

    @cute.jit
    def epilogue(self, tidx, warp, acc, acc_pipeline, sched, work, tma_c, mC, sC, epi_tile, epi_stages, c_dtype):
        """Warps 2-5: each tile's accumulators, sub-tile by sub-tile, to C."""
        import warpweave.utils.blackwell_helpers as sm100_utils
        from warpweave.cute.nvgpu import cpasync, tcgen05

        cta = self.cta
        bm_mma, bn = self.mma_tiler_mn
        cta_tile = (bm_mma // cta, bn)
        # Warp w reaches lanes 32 (w % 4) of tensor memory: the copy's thread t is warp t / 32, so warps 2, 3, 4, 5
        # are threads 64.., 96.., 0.., 32.. of it.
        epi_tidx = tidx % EPI_THREADS
        t2r_atom = sm100_utils.get_tmem_load_op(cta_tile, utils.LayoutEnum.ROW_MAJOR, c_dtype, self.acc_dtype,
                                                epi_tile, self.use_2cta_instrs)
        tAcc0 = cute.flat_divide(acc[((None, None), 0, 0, 0)], epi_tile)
        t2r = tcgen05.make_tmem_copy(t2r_atom, tAcc0[(None, None, 0, 0)])
        thr = t2r.get_slice(epi_tidx)
        tTR_sC = thr.partition_D(sC)
        shape = thr.partition_S(tAcc0)[(None, None, None, 0, 0)].shape
        tTR_rAcc = cute.make_rmem_tensor(shape, self.acc_dtype)
        tTR_rC = cute.make_rmem_tensor(shape, c_dtype)
        store = pipeline.PipelineTmaStore.create(num_stages=epi_stages)
        subtiles = bn // epi_tile[1]
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, ACC_STAGES)
        while work.is_valid_tile:
            tile_m, tile_n, tile_l = work.tile_idx
            gC = cute.flat_divide(cute.local_tile(mC, cta_tile, (tile_m, tile_n, tile_l)), epi_tile)
            acc_pipeline.consumer_wait(acc_state)
            tcgen05.fence_after_thread_sync()
            tTR_tAcc = thr.partition_S(cute.flat_divide(acc[((None, None), 0, 0, acc_state.index)], epi_tile))
            for j in cutlass.range_constexpr(subtiles):
                buf = j % epi_stages
                cute.copy(t2r, tTR_tAcc[(None, None, None, 0, j)], tTR_rAcc)
                if cutlass.const_expr(j == subtiles - 1):
                    # the whole buffer is in registers (its loads completed): the MMA warp may refill it
                    cute.arch.fence_view_async_tmem_load()
                    tcgen05.fence_before_thread_sync()
                    acc_pipeline.consumer_release(acc_state)
                tTR_rC.store(tTR_rAcc.load().to(c_dtype))
                # the store that read this shared-memory buffer before has finished reading it
                if warp == EPI_WARP0:
                    store.producer_acquire()
                pipeline.sync(barrier_id=3, num_threads=EPI_THREADS)
                cute.autovec_copy(tTR_rC, tTR_sC[(None, None, None, buf)])
                cute.arch.fence_proxy("async.shared", space="cta")
                pipeline.sync(barrier_id=3, num_threads=EPI_THREADS)
                if warp == EPI_WARP0:
                    tSsC, tSgC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1),
                                                       cute.group_modes(sC[(None, None, buf)], 0, 2),
                                                       cute.group_modes(gC[(None, None, 0, j)], 0, 2))
                    cute.copy(tma_c, tSsC, tSgC)
                    store.producer_commit()
            acc_state.advance()
            sched.advance_to_next_work()
            work = sched.get_current_work()
        if warp == EPI_WARP0:
            store.producer_tail()

    @cute.jit
    def copy(self, atom, src, dst, barrier, mask):
        if cutlass.const_expr(mask is None):
            cute.copy(atom, src, dst, tma_bar_ptr=barrier)
        else:
            cute.copy(atom, src, dst, tma_bar_ptr=barrier, mcast_mask=mask)


# --- host side ----------------------------------------------------------------------------------------------------

def _has_gpu() -> bool:
    from warpweave import _core

    try:
        return _core.driver_available() and _core.device_count() > 0
    except RuntimeError:
        return False


def _mark(t, mode0_major, dtype):
    return (t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
            .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, stride_order=(2, 1, 0) if mode0_major
                                        else (2, 0, 1), divisibility=128 // dtype.width))


def fake_arguments(a_major, b_major, c_major, ab_dtype, c_dtype, mnkl=(1024, 1024, 512, 1)):
    M, N, K, L = mnkl

    def fake(mode0, mode1, mode0_major, dtype):
        stride = (1, mode0, mode0 * mode1) if mode0_major else (mode1, 1, mode0 * mode1)
        return _mark(make_fake_tensor(dtype, (mode0, mode1, L), stride, assumed_align=16), mode0_major, dtype)

    return (fake(M, K, a_major == "m", ab_dtype), fake(N, K, b_major == "n", ab_dtype),
            fake(M, N, c_major == "m", c_dtype))


def compile_only(gemm, a_major, b_major, c_major, ab_dtype, c_dtype, options=None):
    """Compiles for sm_100a (or WARPWEAVE_ARCH) with fake tensors standing in; nothing runs."""
    chosen = os.environ.get("WARPWEAVE_ARCH")
    os.environ["WARPWEAVE_ARCH"] = chosen or "sm_100a"
    try:
        kw = {"options": options} if options else {}
        compiled = cute.compile(gemm, *fake_arguments(a_major, b_major, c_major, ab_dtype, c_dtype), **kw)
    finally:
        if chosen is None:
            del os.environ["WARPWEAVE_ARCH"]
    print(f"compiled dense_gemm_persistent for {chosen or 'sm_100a'}: {len(compiled.cubin)} bytes of cubin")
    return compiled


def run(mnkl, ab_dtype, c_dtype, a_major, b_major, c_major, mma_tiler_mn=(128, 256), cluster_shape_mn=(1, 1),
        use_2cta_instrs=False, max_active_clusters=None, iterations=0):
    import torch

    import warpweave.torch as wwt
    from warpweave.cute import testing

    M, N, K, L = mnkl

    def random(shape, dtype):
        return torch.empty(shape, dtype=torch.float32, device="cuda").uniform_(-2, 2).to(wwt.dtype(dtype))

    def like(mode0, mode1, mode0_major, make):
        return make((L, mode1, mode0)).permute(2, 1, 0) if mode0_major else make((L, mode0, mode1)).permute(1, 2, 0)

    a = like(M, K, a_major == "m", lambda s: random(s, ab_dtype))
    b = like(N, K, b_major == "n", lambda s: random(s, ab_dtype))
    c = like(M, N, c_major == "m", lambda s: torch.full(s, float("nan"), dtype=wwt.dtype(c_dtype), device="cuda"))
    mA, mB, mC = (_mark(from_dlpack(t, assumed_align=16), mj, dt) for t, mj, dt in
                  ((a, a_major == "m", ab_dtype), (b, b_major == "n", ab_dtype), (c, c_major == "m", c_dtype)))
    gemm = BlackwellPersistentDenseGemm(cutlass.Float32, use_2cta_instrs, mma_tiler_mn, cluster_shape_mn,
                                        max_active_clusters)
    compiled = cute.compile(gemm, mA, mB, mC)
    compiled(mA, mB, mC)
    torch.cuda.synchronize()
    ref = torch.einsum("mkl,nkl->mnl", a.float(), b.float())
    bound = torch.einsum("mkl,nkl->mnl", a.float().abs(), b.float().abs())
    got = c.float()
    assert not torch.isnan(got).any(), "some of C was not written (still NaN)"
    out_tol = {cutlass.Float16: 2.0 ** -10, cutlass.BFloat16: 2.0 ** -7}.get(c_dtype, 2.0 ** -20)
    acc_tol = 2.0 ** -10 if ab_dtype is cutlass.Float32 else 2.0 ** -16
    bad = (got - ref).abs() > out_tol * ref.abs() + acc_tol * bound + 1e-6
    if bad.any():
        i = tuple(int(x) for x in bad.nonzero()[0])
        raise AssertionError(f"{int(bad.sum())} of {bad.numel()} elements of C differ; first at {i}: got "
                             f"{got[i].item()}, expected {ref[i].item()}")
    print("results verified")
    if iterations:
        us = testing.benchmark(compiled, kernel_arguments=testing.JitArguments(mA, mB, mC), iterations=iterations)
        print(f"kernel time {us:.1f} us, {2 * M * N * K * L / us / 1e6:.1f} TFLOP/s")


def _ints(s):
    return tuple(int(x) for x in s.split(","))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mnkl", type=_ints, default=(1024, 1024, 512, 1))
    p.add_argument("--mma_tiler_mn", type=_ints, default=(128, 256))
    p.add_argument("--cluster_shape_mn", type=_ints, default=(1, 1))
    p.add_argument("--use_2cta_instrs", action="store_true")
    p.add_argument("--ab_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--c_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--a_major", choices=["k", "m"], default="k")
    p.add_argument("--b_major", choices=["k", "n"], default="k")
    p.add_argument("--c_major", choices=["n", "m"], default="n")
    p.add_argument("--max_active_clusters", type=int, default=None)
    p.add_argument("--iterations", type=int, default=0)
    args = p.parse_args(argv)
    try:
        gemm = BlackwellPersistentDenseGemm(cutlass.Float32, args.use_2cta_instrs, args.mma_tiler_mn,
                                            args.cluster_shape_mn, args.max_active_clusters)
    except ValueError as e:
        p.error(str(e))
    if not _has_gpu():
        print("no GPU: compiling only")
        compiled = compile_only(gemm, args.a_major, args.b_major, args.c_major, args.ab_dtype, args.c_dtype,
                                options="-v")
        print(compiled.info["jit_log"])
        return 0
    run(args.mnkl, args.ab_dtype, args.c_dtype, args.a_major, args.b_major, args.c_major, args.mma_tiler_mn,
        args.cluster_shape_mn, args.use_2cta_instrs, args.max_active_clusters, args.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
