"""Blackwell dense GEMM C = A * B (fp16, bf16, tf32 or fp8 in, fp32 accumulate in tensor memory) with TMA and
tcgen05 MMAs, in the structure of CuTe DSL's Blackwell example of that name.

  A: (M, K, L), K-major ("k") or M-major ("m");  B: (N, K, L), "k" or "n";  C: (M, N, L), "n" or "m".

Each CTA (four warps) computes its share of an MMA tile of (M_mma, N) elements of C:
  1. Warp 0 loads (M_mma / CTAs, bK) tiles of A and (N / CTAs, bK) tiles of B with TMA into a ring of 128-byte
     swizzled shared-memory stages (a PipelineTmaUmma). In a cluster, loads of A are multicast to the CTAs of the
     cluster row and loads of B to those of the column. Tiles hanging off the matrices read zeros.
  2. Warp 1 of the MMA's leader CTA issues the tcgen05.mma instructions that read A and B from shared memory
     through descriptors and accumulate into tensor memory; a stage is released by the MMAs' commit once they have
     read it. With --use_2cta_instrs a pair of CTAs shares each MMA (M_mma 256 or 128 for the pair): each CTA loads
     its half of A and of B, the even CTA issues MMAs over both halves, and each CTA's share of D lands in its own
     tensor memory (for M_mma = 128, its 64 rows with the two halves of the columns in the two halves of the lanes,
     so that an epilogue sub-tile there is a block of columns of each half, stored as two boxes).
  3. Epilogue (all four warps, a PipelineUmmaAsync tells them D is complete): tensor memory -> registers
     (tcgen05.ld), converted to C's type -> a swizzled shared-memory sub-tile of C -> TMA store, sub-tile by
     sub-tile with two buffers in flight.

    python dense_gemm.py --mnkl 256,256,512,1
    python dense_gemm.py --mnkl 4096,4096,4096,1 --mma_tiler_mn 256,256 --use_2cta_instrs --cluster_shape_mn 2,1

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

THREADS = 128
SMEM_RESERVED = 1024      # the mbarriers, the tensor-memory address and alignment


class BlackwellDenseGemm:
    def __init__(self, acc_dtype: Type[cutlass.Numeric] = cutlass.Float32, use_2cta_instrs: bool = False,
                 mma_tiler_mn: Tuple[int, int] = (128, 256), cluster_shape_mn: Tuple[int, int] = (1, 1),
                 max_stages: int = 8, epi_stages: int = 2):
        self.acc_dtype = acc_dtype
        self.use_2cta_instrs = bool(use_2cta_instrs)
        self.cta = 2 if self.use_2cta_instrs else 1
        self.mma_tiler_mn = tuple(mma_tiler_mn)
        self.cluster_shape_mn = tuple(cluster_shape_mn)
        m, n = self.mma_tiler_mn
        legal_m = (128, 256) if self.use_2cta_instrs else (64, 128)
        if m not in legal_m:
            raise ValueError(f"the MMA tile's M must be {' or '.join(map(str, legal_m))} with "
                             f"{'2-CTA' if self.use_2cta_instrs else '1-CTA'} instructions, got {m}")
        # D of M = 128 over a pair (data-path layout B): each CTA's 64 rows hold the first N/2 columns in lanes
        # 0-63 and the others in lanes 64-127, so an epilogue sub-tile is a column block of each half.
        self.halves = 2 if self.use_2cta_instrs and m == 128 else 1
        if n % 16 or not 16 <= n <= 256:
            raise ValueError(f"the MMA tile's N must be a multiple of 16 from 16 to 256, got {n}")
        cm, cn = self.cluster_shape_mn
        if cm < 1 or cn < 1 or cm * cn > 16:
            raise ValueError(f"the cluster has 1 to 16 CTAs, got {cluster_shape_mn}")
        if cm % self.cta:
            raise ValueError(f"with 2-CTA instructions the cluster's M extent is even, got {cluster_shape_mn}")
        if acc_dtype is not cutlass.Float32:
            raise ValueError(f"the accumulator is Float32, got {acc_dtype.__name__}")
        self.max_stages = max_stages
        self.epi_stages = epi_stages

    # --- host side: configuration from the tensors ----------------------------------------------------------------
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        import warpweave.utils.blackwell_helpers as sm100_utils
        from warpweave.cute.nvgpu import cpasync, tcgen05

        a_dtype, b_dtype, c_dtype = mA.element_type, mB.element_type, mC.element_type
        if cutlass.const_expr(a_dtype is not b_dtype):
            raise TypeError(f"A and B must be of one type, got {a_dtype.__name__} and {b_dtype.__name__}")
        a_major = utils.LayoutEnum.from_tensor(mA).mma_major_mode()
        b_major = utils.LayoutEnum.from_tensor(mB).mma_major_mode()
        c_layout = utils.LayoutEnum.from_tensor(mC)
        cta_group = tcgen05.CtaGroup.TWO if cutlass.const_expr(self.use_2cta_instrs) else tcgen05.CtaGroup.ONE
        tiled_mma = sm100_utils.make_trivial_tiled_mma(a_dtype, a_major, b_major, self.acc_dtype, cta_group,
                                                       self.mma_tiler_mn)
        # four instructions of K per k-tile: 128 bytes of A's and B's rows, one 128-byte swizzle row
        bk = cute.size(tiled_mma.shape_mnk, mode=[2]) * 4
        mma_tiler = (*self.mma_tiler_mn, bk)
        cta_tile = (self.mma_tiler_mn[0] // self.cta, self.mma_tiler_mn[1])
        cm, cn = self.cluster_shape_mn
        cluster_vmnk = cute.make_layout((self.cta, cm // self.cta, cn, 1))

        # Stages: as many as shared memory holds besides the epilogue's buffers.
        epi_tile = sm100_utils.compute_epilogue_tile_shape(cta_tile, self.use_2cta_instrs, c_layout, c_dtype)
        stage_bytes = (cta_tile[0] + self.mma_tiler_mn[1] // self.cta) * bk * a_dtype.width // 8
        epi_bytes = epi_tile[0] * epi_tile[1] * c_dtype.width // 8 * self.epi_stages
        capacity = sm100_utils.get_smem_capacity_in_bytes("sm_100") - SMEM_RESERVED - epi_bytes
        stages = min(self.max_stages, capacity // stage_bytes)
        sA_layout = sm100_utils.make_smem_layout_a(tiled_mma, mma_tiler, a_dtype, stages)
        sB_layout = sm100_utils.make_smem_layout_b(tiled_mma, mma_tiler, b_dtype, stages)
        # C's shared-memory buffers hold one TMA box each: a sub-tile, or one of its halves
        store_tile = (epi_tile[0], epi_tile[1] // self.halves)
        sC_layout = sm100_utils.make_smem_layout_epi(c_dtype, c_layout, store_tile, self.epi_stages * self.halves)

        # TMA: A multicast along the cluster's N, B along its M; the loads of a CTA pair complete on the leader's
        # barrier. C is stored sub-tile by sub-tile.
        internal = cutlass.TFloat32 if cutlass.const_expr(a_dtype is cutlass.Float32) else None
        op_a = sm100_utils.cluster_shape_to_tma_atom_A(self.cluster_shape_mn, tiled_mma.thr_id)
        op_b = sm100_utils.cluster_shape_to_tma_atom_B(self.cluster_shape_mn, tiled_mma.thr_id)
        tma_a, tA = cute.nvgpu.make_tiled_tma_atom_A(op_a, mA, self.one_stage(sA_layout, 3), mma_tiler, tiled_mma,
                                                     cluster_vmnk.shape, internal_type=internal)
        tma_b, tB = cute.nvgpu.make_tiled_tma_atom_B(op_b, mB, self.one_stage(sB_layout, 3), mma_tiler, tiled_mma,
                                                     cluster_vmnk.shape, internal_type=internal)
        tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC,
                                                self.one_stage(sC_layout, 2), store_tile)
        tx_bytes = stage_bytes * self.cta

        tiles = cute.ceil_div(mC.shape, (cta_tile[0], cta_tile[1], 1))
        grid = ((tiles[0] + cm - 1) // cm * cm, (tiles[1] + cn - 1) // cn * cn, tiles[2])
        self.kernel(tiled_mma, tma_a, tA, tma_b, tB, tma_c, tC, cluster_vmnk, sA_layout, sB_layout, sC_layout,
                    epi_tile, stages, tx_bytes).launch(grid=grid, block=[THREADS, 1, 1], cluster=[cm, cn, 1])

    @staticmethod
    def one_stage(staged, rank):
        """One stage of a swizzled layout whose last mode is the stage."""
        coord = (None,) * rank + (0,)
        return cute.make_composed_layout(staged.inner, 0, cute.slice_(staged.outer, coord))

    # --- device side ---------------------------------------------------------------------------------------------
    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, tma_a, mA: cute.Tensor, tma_b, mB: cute.Tensor, tma_c,
               mC: cute.Tensor, cluster_vmnk: cute.Layout, sA_layout: cute.ComposedLayout,
               sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout, epi_tile: cutlass.Constexpr,
               stages: cutlass.Constexpr, tx_bytes: cutlass.Constexpr):
        import warpweave.utils.blackwell_helpers as sm100_utils
        from warpweave.cute.nvgpu import cpasync, tcgen05

        cta = self.cta
        cm, cn = self.cluster_shape_mn
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, bidz = cute.arch.block_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)
            cpasync.prefetch_descriptor(tma_c)

        # This CTA in its cluster: v (its half of a 2-CTA MMA), and its MMA tile's (m, n) in the cluster.
        rank = cute.arch.block_idx_in_cluster() if cutlass.const_expr(cm * cn > 1) else cutlass.Int32(0)
        v = rank % cta
        cta_m = (rank // cta) % (cm // cta)
        cta_n = rank // cm
        is_leader = v == 0

        # Shared memory: barriers, the tensor-memory address, then A, B and C's sub-tiles (1024-byte aligned).
        smem = utils.SmemAllocator()
        ab_bars = smem.allocate_array(cutlass.Int64, 2 * stages, byte_alignment=8)
        acc_bars = smem.allocate_array(cutlass.Int64, 2, byte_alignment=8)
        dealloc_bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        tmem_holder = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        c_dtype = tma_c.element_type
        sA = smem.allocate_tensor(tma_a.element_type, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(tma_b.element_type, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        sC = smem.allocate_tensor(c_dtype, sC_layout.outer, 1024, swizzle=sC_layout.inner)

        # The mainloop's pipeline: each stage's empty barrier counts one MMA commit per MMA that reads what this
        # CTA's loads write (its cluster row's and column's).
        mcast_a, mcast_b = cn, cm // cta
        ab_producer, ab_consumer = pipeline.PipelineTmaUmma.create(
            barrier_storage=ab_bars, num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, mcast_a + mcast_b - 1),
            tx_count=tx_bytes, cta_layout_vmnk=cluster_vmnk, defer_sync=True).make_participants()
        acc_pipeline = pipeline.PipelineUmmaAsync.create(
            barrier_storage=acc_bars, num_stages=1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, THREADS),
            cta_layout_vmnk=cluster_vmnk, defer_sync=True)
        tmem = utils.TmemAllocator(tmem_holder, barrier_for_retrieve=pipeline.NamedBarrier(1, THREADS),
                                   is_two_cta=self.use_2cta_instrs, two_cta_tmem_dealloc_mbar_ptr=dealloc_bar)
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_shape_mn, is_relaxed=True)

        # Tiles: this MMA tile's A (M_mma, bK, k-tiles) and B (N, bK, k-tiles), partitioned for this CTA's half.
        bm_mma, bn = self.mma_tiler_mn
        bk = cute.size(sA_layout.outer, mode=[0, 1]) * cute.size(sA_layout.outer, mode=[2])
        mma_m = bidx // cta
        gA = cute.local_tile(mA, (bm_mma, bk), (mma_m, None, bidz))
        gB = cute.local_tile(mB, (bn, bk), (bidy, None, bidz))
        thr_mma = tiled_mma.get_slice(v)
        tCgA = thr_mma.partition_A(gA)                     # ((M, K) of this CTA's share, 1, 4, k-tiles)
        tCgB = thr_mma.partition_B(gB)
        tAsA, tAgA = cpasync.tma_partition(tma_a, cta_n, cute.make_layout(mcast_a), cute.group_modes(sA, 0, 3),
                                           cute.group_modes(tCgA, 0, 3))
        tBsB, tBgB = cpasync.tma_partition(tma_b, cta_m, cute.make_layout(mcast_b), cute.group_modes(sB, 0, 3),
                                           cute.group_modes(tCgB, 0, 3))
        a_mask = b_mask = None
        if cutlass.const_expr(mcast_a > 1):
            a_mask = cpasync.create_tma_multicast_mask(cluster_vmnk, (v, cta_m, cta_n, 0), 2)
        if cutlass.const_expr(mcast_b > 1):
            b_mask = cpasync.create_tma_multicast_mask(cluster_vmnk, (v, cta_m, cta_n, 0), 1)
        tCrA = tiled_mma.make_fragment_A(sA)               # the stages of A, read through descriptors
        tCrB = tiled_mma.make_fragment_B(sB)
        acc_layout = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(self.mma_tiler_mn)).layout

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_shape_mn)
        tmem.allocate(utils.get_num_tmem_alloc_cols(acc_layout))
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(self.acc_dtype), acc_layout)
        tmem.relinquish_alloc_permit()

        k_tiles = cute.size(gA, mode=[2])
        if warp == 0:
            # TMA producer (every CTA): fill the ring.
            for _ in cutlass.range(k_tiles, unroll=1):
                stage = ab_producer.acquire_and_advance()
                self.copy(tma_a, tAgA[(None, stage.count)], tAsA[(None, stage.index)], stage.barrier, a_mask)
                self.copy(tma_b, tBgB[(None, stage.count)], tBsB[(None, stage.index)], stage.barrier, b_mask)
            ab_producer.tail()
        if warp == 1:
            if is_leader:
                # MMA issuer: the first k-block of the first k-tile overwrites D, the others accumulate.
                num_kblocks = cute.size(tCrA, mode=[2])
                acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
                acc_pipeline.producer_acquire(acc_state)
                tiled_mma.set(tcgen05.Field.ACCUMULATE, False)
                for _ in cutlass.range(k_tiles, unroll=1):
                    stage = ab_consumer.wait_and_advance()
                    for kb in cutlass.range_constexpr(num_kblocks):
                        cute.gemm(tiled_mma, acc, tCrA[(None, None, kb, stage.index)],
                                  tCrB[(None, None, kb, stage.index)], acc)
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                    stage.release()
                acc_pipeline.producer_commit(acc_state)

        # Epilogue: tensor memory -> registers -> C's type -> a shared-memory sub-tile -> TMA store.
        acc_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        acc_pipeline.consumer_wait(acc_state)
        tcgen05.fence_after_thread_sync()              # the tensor-memory loads below after the MMAs' commit
        cta_tile = (bm_mma // cta, bn)
        t2r_atom = sm100_utils.get_tmem_load_op(cta_tile, utils.LayoutEnum.ROW_MAJOR, c_dtype, self.acc_dtype,
                                                epi_tile, self.use_2cta_instrs)
        halves = self.halves
        box_n = epi_tile[1] // halves
        if cutlass.const_expr(halves == 1):
            epi_tiler = epi_tile
            sC_view = sC
        else:
            # a sub-tile: box_n columns of each half of D, (rows, (box_n, half)); the shared-memory buffers viewed
            # the same way, two boxes per sub-tile
            epi_tiler = (epi_tile[0], cute.make_layout((box_n, 2), stride=(1, bn // 2)))
            rows = epi_tile[0]
            view = cute.make_layout((rows, (box_n, 2), self.epi_stages),
                                    stride=(1, (rows, rows * box_n), 2 * rows * box_n))
            sC_view = cute.make_tensor(sC.iterator, cute.make_composed_layout(
                sC_layout.inner, 0, cute.composition(sC_layout.outer, view)))
        tAcc = cute.flat_divide(acc[((None, None), 0, 0)], epi_tiler)       # (EPI_M, EPI_N, 1, subtiles)
        t2r = tcgen05.make_tmem_copy(t2r_atom, tAcc[(None, None, 0, 0)])
        thr_t2r = t2r.get_slice(tidx)
        tTR_tAcc = thr_t2r.partition_S(tAcc)
        tTR_sC = thr_t2r.partition_D(sC_view)
        tTR_rAcc = cute.make_rmem_tensor(tTR_tAcc[(None, None, None, 0, 0)].shape, self.acc_dtype)
        tTR_rC = cute.make_rmem_tensor(tTR_tAcc[(None, None, None, 0, 0)].shape, c_dtype)
        # C's boxes: (rows, box_n) tiles of this CTA's tile
        gC = cute.flat_divide(cute.local_tile(mC, cta_tile, (bidx, bidy, bidz)), (epi_tile[0], box_n))
        store = pipeline.PipelineTmaStore.create(num_stages=self.epi_stages)
        subtiles = cute.size(tAcc, mode=[3])
        for j in cutlass.range(subtiles, unroll=1):   # a loop: unrolled, the sub-tiles only add code (805 -> 515 SASS)
            buf = j % self.epi_stages
            cute.copy(t2r, tTR_tAcc[(None, None, None, 0, j)], tTR_rAcc)
            tTR_rC.store(tTR_rAcc.load().to(c_dtype))
            if j >= self.epi_stages:
                # the store that read this buffer before has finished reading it
                if warp == 0:
                    store.producer_acquire()
                pipeline.sync(barrier_id=2, num_threads=THREADS)
            cute.autovec_copy(tTR_rC, tTR_sC[(None, None, None, buf)])
            cute.arch.fence_proxy("async.shared", space="cta")
            pipeline.sync(barrier_id=2, num_threads=THREADS)
            if warp == 0:
                for h in cutlass.range_constexpr(halves):
                    # box h of sub-tile j: columns (h N / 2 + j box_n) of the CTA's tile
                    tSsC, tSgC = cpasync.tma_partition(
                        tma_c, 0, cute.make_layout(1), cute.group_modes(sC[(None, None, halves * buf + h)], 0, 2),
                        cute.group_modes(gC[(None, None, 0, h * (bn // 2 // box_n) + j)], 0, 2))
                    cute.copy(tma_c, tSsC, tSgC)
                store.producer_commit()
        if warp == 0:
            store.producer_tail()

        # Tensor memory is freed once every warp has read it (and, for a pair, the peer too); no CTA leaves while a
        # peer may still multicast into its shared memory or arrive on its barriers.
        tcgen05.fence_before_thread_sync()             # this warp's tensor-memory loads before the barrier
        pipeline.sync(barrier_id=1, num_threads=THREADS)
        tmem.free(acc.iterator)
        if cutlass.const_expr(cm * cn > 1):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()

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


def _tensor_like(mode0, mode1, l, mode0_major, make):
    """An (mode0, mode1, l) tensor whose contiguous mode is mode 0 (mode0_major) or mode 1."""
    if mode0_major:
        return make((l, mode1, mode0)).permute(2, 1, 0)
    return make((l, mode0, mode1)).permute(1, 2, 0)


def _mark(t, mode0_major, dtype):
    return (t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
            .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, stride_order=(2, 1, 0) if mode0_major
                                        else (2, 0, 1), divisibility=128 // dtype.width))


def fake_arguments(a_major, b_major, c_major, ab_dtype, c_dtype, mnkl=(512, 512, 512, 1)):
    """Stand-ins of A, B and C for compiling without a GPU."""
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
    print(f"compiled dense_gemm for {chosen or 'sm_100a'}: {len(compiled.cubin)} bytes of cubin "
          f"(trace {compiled.timings['trace_s'] * 1e3:.0f} ms, compile {compiled.timings['compile_s'] * 1e3:.0f} ms)")
    return compiled


def run(mnkl, ab_dtype, c_dtype, acc_dtype, a_major, b_major, c_major, mma_tiler_mn=(128, 256),
        cluster_shape_mn=(1, 1), use_2cta_instrs=False, tolerance=None, warmup_iterations=2, iterations=10,
        skip_ref_check=False):
    import torch

    import warpweave.torch as wwt
    from warpweave.cute import testing

    M, N, K, L = mnkl
    print(f"dense_gemm: mnkl {mnkl}, {ab_dtype.__name__} -> {c_dtype.__name__} (acc {acc_dtype.__name__}), majors "
          f"A {a_major} B {b_major} C {c_major}, MMA tile {mma_tiler_mn}, cluster {cluster_shape_mn}, "
          f"2-CTA {use_2cta_instrs}")

    def random(shape, dtype):
        return torch.empty(shape, dtype=torch.float32, device="cuda").uniform_(-2, 2).to(wwt.dtype(dtype))

    a = _tensor_like(M, K, L, a_major == "m", lambda s: random(s, ab_dtype))
    b = _tensor_like(N, K, L, b_major == "n", lambda s: random(s, ab_dtype))
    c = _tensor_like(M, N, L, c_major == "m",
                     lambda s: torch.full(s, float("nan"), dtype=wwt.dtype(c_dtype), device="cuda"))

    def runtime(t, mode0_major, dtype):
        return _mark(from_dlpack(t, assumed_align=16), mode0_major, dtype)

    mA, mB, mC = runtime(a, a_major == "m", ab_dtype), runtime(b, b_major == "n", ab_dtype), \
        runtime(c, c_major == "m", c_dtype)
    gemm = BlackwellDenseGemm(acc_dtype, use_2cta_instrs, mma_tiler_mn, cluster_shape_mn)
    compiled = cute.compile(gemm, mA, mB, mC)
    if not skip_ref_check:
        compiled(mA, mB, mC)
        torch.cuda.synchronize()
        ref = torch.einsum("mkl,nkl->mnl", a.float(), b.float())
        bound = torch.einsum("mkl,nkl->mnl", a.float().abs(), b.float().abs())
        got = c.float()
        assert not torch.isnan(got).any(), "some of C was not written (still NaN)"
        # C rounds once to its type; the accumulation order differs from the reference's by about sqrt(K) fp32
        # roundings of sum |a b|; Float32 inputs are read as tf32 (10 mantissa bits: 2**-11 relative each, so
        # about 2**-10 of sum |a b|).
        out_tol = {cutlass.Float16: 2.0 ** -10, cutlass.BFloat16: 2.0 ** -7}.get(c_dtype, 2.0 ** -20)
        acc_tol = 2.0 ** -10 if ab_dtype is cutlass.Float32 else 2.0 ** -16
        if tolerance is not None:
            out_tol = acc_tol = tolerance
        err = (got - ref).abs()
        limit = out_tol * ref.abs() + acc_tol * bound + 1e-6
        bad = err > limit
        if bad.any():
            i = tuple(int(x) for x in bad.nonzero()[0])
            raise AssertionError(f"{int(bad.sum())} of {bad.numel()} elements of C differ; first at (m, n, l) = {i}: "
                                 f"got {got[i].item()}, expected {ref[i].item()} (limit {limit[i].item():.3g})")
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
    p.add_argument("--mnkl", type=_ints, default=(256, 256, 512, 1))
    p.add_argument("--mma_tiler_mn", type=_ints, default=(128, 256))
    p.add_argument("--cluster_shape_mn", type=_ints, default=(1, 1))
    p.add_argument("--use_2cta_instrs", action="store_true")
    p.add_argument("--ab_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--c_dtype", type=cutlass.dtype, default=cutlass.Float16)
    p.add_argument("--acc_dtype", type=cutlass.dtype, default=cutlass.Float32)
    p.add_argument("--a_major", choices=["k", "m"], default="k")
    p.add_argument("--b_major", choices=["k", "n"], default="k")
    p.add_argument("--c_major", choices=["n", "m"], default="n")
    p.add_argument("--tolerance", type=float, default=None)
    p.add_argument("--warmup_iterations", type=int, default=2)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--skip_ref_check", action="store_true")
    args = p.parse_args(argv)
    if args.ab_dtype not in (cutlass.Float16, cutlass.BFloat16, cutlass.Float32, cutlass.Float8E4M3FN,
                             cutlass.Float8E5M2):
        p.error("--ab_dtype is Float16, BFloat16, Float32 (as tf32), Float8E4M3FN or Float8E5M2")
    try:
        gemm = BlackwellDenseGemm(args.acc_dtype, args.use_2cta_instrs, args.mma_tiler_mn, args.cluster_shape_mn)
    except ValueError as e:
        p.error(str(e))
    if not _has_gpu():
        print("no GPU: compiling only")
        compiled = compile_only(gemm, args.a_major, args.b_major, args.c_major, args.ab_dtype, args.c_dtype,
                                options="-v")
        print(compiled.info["jit_log"])
        return 0
    run(args.mnkl, args.ab_dtype, args.c_dtype, args.acc_dtype, args.a_major, args.b_major, args.c_major,
        args.mma_tiler_mn, args.cluster_shape_mn, args.use_2cta_instrs, args.tolerance, args.warmup_iterations,
        args.iterations, args.skip_ref_check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
