"""Hopper dense GEMM C = A * B (fp16, bf16 or fp8 in, fp32 accumulate) with TMA, a multistage TMA pipeline and warpgroup
MMA, in the structure of CuTe DSL's Hopper example of that name.

  A: (M, K, L), K-major ("k") or M-major ("m");  B: (N, K, L), "k" or "n";  C: (M, N, L), "n" or "m".
  fp8 inputs (Float8E4M3FN, Float8E5M2, mixed too) are K-major.

Each thread block (one or two warpgroups: 64 rows of the tile each) computes a (bM, bN) tile of C:
  1. TMA copies (bM, bK) tiles of A and (bN, bK) tiles of B into a ring of 128-byte-swizzled shared-memory stages;
     a PipelineTmaAsync's mbarriers count their bytes. Warp 0 produces; tiles hanging off the matrices read
     zeros, so K, M and N need no predicates in the main loop. In a cluster of several CTAs each load of A is
     multicast to the CTAs of its cluster row and each load of B to those of its column.
  2. Every warpgroup issues wgmma instructions that read A and B from shared memory through descriptors, one
     k-tile of them in flight while the next stage is waited for; a stage is released once the wgmma that read it
     have completed.
  3. Epilogue: the fp32 accumulators are converted and written to a swizzled shared-memory tile of C (stmatrix
     for 16-bit C), which a TMA store copies to C (the parts past C's bounds are not written).
     epilogue="registers" stores them from registers to C instead, predicated element by element.

    python dense_gemm.py --mnkl 200,136,264,2
    python dense_gemm.py --mnkl 4096,4096,4096,1 --cluster_shape_mn 2,1 --skip_ref_check --iterations 100

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


class HopperDenseGemm:
    def __init__(self, acc_dtype: Type[cutlass.Numeric] = cutlass.Float32, tile_shape_mn: Tuple[int, int] = (128, 128),
                 cluster_shape_mn: Tuple[int, int] = (1, 1), max_stages: int = 8, epilogue: str = "tma"):
        self.acc_dtype = acc_dtype
        self.tile_shape_mn = tuple(tile_shape_mn)
        self.cluster_shape_mn = tuple(cluster_shape_mn)
        bm, bn = self.tile_shape_mn
        if bm not in (64, 128):
            raise ValueError(f"tile M must be 64 or 128 (one or two warpgroups of 64 rows), got {bm}")
        if bn % 16 or not 16 <= bn <= 256:
            raise ValueError(f"tile N must be a multiple of 16 from 16 to 256, got {bn}")
        cm, cn = self.cluster_shape_mn
        if cm < 1 or cn < 1 or cm * cn > 8:
            raise ValueError(f"the cluster has 1 to 8 CTAs, got {cluster_shape_mn}")
        self.max_stages = max_stages
        if epilogue not in ("tma", "registers"):
            raise ValueError(f"epilogue must be 'tma' or 'registers', got {epilogue!r}")
        self.epilogue = epilogue
        self.num_warpgroups = bm // 64
        self.num_threads = WARPGROUP * self.num_warpgroups

    # --- host side: configuration from the tensors ----------------------------------------------------------------
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        import warpweave.utils.hopper_helpers as sm90_utils
        from warpweave.cute.nvgpu import cpasync, warpgroup

        a_dtype, b_dtype, c_dtype = mA.element_type, mB.element_type, mC.element_type
        a_layout = utils.LayoutEnum.from_tensor(mA)
        b_layout = utils.LayoutEnum.from_tensor(mB)
        if cutlass.const_expr(not _supported_inputs(a_dtype, b_dtype)):
            raise TypeError(f"A and B must both be Float16, both BFloat16, or 8-bit floats (Float8E4M3FN, "
                            f"Float8E5M2), got {a_dtype.__name__} and {b_dtype.__name__}")
        if cutlass.const_expr(a_dtype.width == 8 and (a_layout != utils.LayoutEnum.ROW_MAJOR or
                                                      b_layout != utils.LayoutEnum.ROW_MAJOR)):
            raise TypeError("8-bit inputs are K-major (the warpgroup MMA reads them only so): use --a_major k "
                            "--b_major k")
        bm, bn = self.tile_shape_mn
        cm, cn = self.cluster_shape_mn

        def major(layout):
            return warpgroup.OperandMajorMode.K if layout == utils.LayoutEnum.ROW_MAJOR else \
                warpgroup.OperandMajorMode.MN

        tiled_mma = sm90_utils.make_trivial_tiled_mma(a_dtype, b_dtype, major(a_layout), major(b_layout),
                                                      self.acc_dtype, (self.num_warpgroups, 1, 1), tiler_mn=(64, bn))
        bk = cute.size(tiled_mma.shape_mnk, mode=[2]) * 4          # four wgmma k-blocks per k-tile: 128 bytes
        tile_mnk = (bm, bn, bk)
        stage_bytes = (bm + bn) * bk * a_dtype.width // 8
        # The epilogue's C tile reuses the stages' memory (they are all consumed by then) when it fits in them;
        # otherwise it has its own buffer, and fewer stages fit.
        capacity = utils.get_smem_capacity_in_bytes("sm_90") - 1024          # the mbarriers and alignment
        c_bytes = bm * bn * c_dtype.width // 8 if cutlass.const_expr(self.epilogue == "tma") else 0
        stages = min(self.max_stages, capacity // stage_bytes)
        c_own = c_bytes > stages * stage_bytes
        if cutlass.const_expr(c_own):
            stages = min(self.max_stages, (capacity - c_bytes) // stage_bytes)
        sA_layout = sm90_utils.make_smem_layout_a(a_layout, tile_mnk, a_dtype, stages)
        sB_layout = sm90_utils.make_smem_layout_b(b_layout, tile_mnk, b_dtype, stages)
        # The epilogue's tile of C in shared memory, written to C by a TMA store.
        sC_layout = sm90_utils.make_smem_layout_epi(c_dtype, utils.LayoutEnum.from_tensor(mC), (bm, bn), 1)
        tma_c, tC = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), mC, self.one_stage(sC_layout),
                                                (bm, bn))

        # A is shared by the CTAs of a cluster row (same M), B by those of a column (same N).
        op_a = cpasync.CopyBulkTensorTileG2SMulticastOp() if cn > 1 else cpasync.CopyBulkTensorTileG2SOp()
        op_b = cpasync.CopyBulkTensorTileG2SMulticastOp() if cm > 1 else cpasync.CopyBulkTensorTileG2SOp()
        tma_a, tA = cpasync.make_tiled_tma_atom(op_a, mA, self.one_stage(sA_layout), (bm, bk), num_multicast=cn)
        tma_b, tB = cpasync.make_tiled_tma_atom(op_b, mB, self.one_stage(sB_layout), (bn, bk), num_multicast=cm)
        tiles = cute.ceil_div(mC.shape, (bm, bn, 1))
        grid = ((tiles[0] + cm - 1) // cm * cm, (tiles[1] + cn - 1) // cn * cn, tiles[2])
        self.kernel(tma_a, tA, tma_b, tB, tma_c, tC, mC, tiled_mma, sA_layout, sB_layout, sC_layout, stages,
                    stage_bytes, c_own).launch(
            grid=grid, block=[self.num_threads, 1, 1], cluster=[cm, cn, 1])

    @staticmethod
    def one_stage(staged):
        """The (MN, K) layout of one stage of a swizzled (MN, K, stages) layout."""
        return cute.make_composed_layout(staged.inner, 0, cute.slice_(staged.outer, (None, None, 0)))

    # --- device side ---------------------------------------------------------------------------------------------
    @cute.kernel
    def kernel(self, tma_a, mA: cute.Tensor, tma_b, mB: cute.Tensor, tma_c, mC_tma: cute.Tensor, mC: cute.Tensor,
               tiled_mma: cute.TiledMma, sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
               sC_layout: cute.ComposedLayout, stages: cutlass.Constexpr, stage_bytes: cutlass.Constexpr,
               c_own: cutlass.Constexpr):
        from warpweave.cute.nvgpu import cpasync, warpgroup

        bm, bn = self.tile_shape_mn
        cm, cn = self.cluster_shape_mn
        bk = cute.size(sA_layout, mode=[1])
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, bidz = cute.arch.block_idx()
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp_idx == 0:
            cpasync.prefetch_descriptor(tma_a)
            cpasync.prefetch_descriptor(tma_b)

        # Shared memory: the pipeline's mbarriers, then the A and B stages (1024-byte aligned for the swizzle), back
        # to back, and C's tile over them (or after them).
        smem = utils.SmemAllocator()
        barriers = smem.allocate_array(cutlass.Int64, 2 * stages, byte_alignment=8)
        sA = smem.allocate_tensor(tma_a.element_type, sA_layout.outer, 1024,
                                  swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(tma_b.element_type, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        if cutlass.const_expr(self.epilogue == "tma"):
            sC_stage = cute.slice_(sC_layout.outer, (None, None, 0))
            if cutlass.const_expr(c_own):
                sC = smem.allocate_tensor(mC.element_type, sC_stage, 1024, swizzle=sC_layout.inner)
            else:
                sC = cute.make_tensor(cute.recast_ptr(sA.iterator, dtype=mC.element_type),
                                      cute.make_composed_layout(sC_layout.inner, 0, sC_stage))

        # Every warp of the block consumes; each releases a stage once for each CTA that writes it (its cluster row
        # and column).
        peers = cm + cn - 1
        mainloop = pipeline.PipelineTmaAsync.create(
            barrier_storage=barriers, num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, peers * self.num_threads // 32),
            tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, cm, cn, 1)), defer_sync=True)
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster_shape_mn, is_relaxed=True)

        # This CTA's place in its cluster (the cluster tiles the grid x first) and its multicast masks: A goes to
        # the CTAs of its row (ranks m + cm * j), B to those of its column (ranks i + cm * n).
        cta_m = bidx % cm
        cta_n = bidy % cn
        a_mask = cpasync.create_tma_multicast_mask(cute.make_layout((cm, cn)), (cta_m, cta_n), 1)
        b_mask = cpasync.create_tma_multicast_mask(cute.make_layout((cm, cn)), (cta_m, cta_n), 0)

        # Tiles of this block: (bM, bK, k-tiles) of A, (bN, bK, k-tiles) of B (as TMA coordinates), (bM, bN) of C.
        gA = cute.local_tile(mA, (bm, bk), (bidx, None, bidz))
        gB = cute.local_tile(mB, (bn, bk), (bidy, None, bidz))
        gC = cute.local_tile(mC, (bm, bn), (bidx, bidy, bidz))
        cC = cute.local_tile(cute.make_identity_tensor(mC.shape), (bm, bn), (bidx, bidy, bidz))
        tAsA, tAgA = cpasync.tma_partition(tma_a, cta_n, cute.make_layout(cn), cute.group_modes(sA, 0, 2),
                                           cute.group_modes(gA, 0, 2))
        tBsB, tBgB = cpasync.tma_partition(tma_b, cta_m, cute.make_layout(cm), cute.group_modes(sB, 0, 2),
                                           cute.group_modes(gB, 0, 2))

        thr_mma = tiled_mma.get_slice(tidx)
        # A warpgroup's threads share its A and B tiles: slicing them by the (warp-uniform) warpgroup keeps their
        # shared-memory descriptors in uniform registers, next to the wgmma that read them.
        warpgroup_idx = cute.arch.make_warp_uniform(tidx // WARPGROUP)
        thr_mma_ab = tiled_mma.get_slice(warpgroup_idx * WARPGROUP)
        tCrA = tiled_mma.make_fragment_A(thr_mma_ab.partition_A(sA))  # (MMA, MMA_M, MMA_K, stages): descriptors
        tCrB = tiled_mma.make_fragment_B(thr_mma_ab.partition_B(sB))
        tCgC = thr_mma.partition_C(gC)
        tCcC = thr_mma.partition_C(cC)
        acc = cute.make_rmem_tensor(tCgC.shape, self.acc_dtype)
        num_k_blocks = cute.size(tCrA, mode=[2])

        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster_shape_mn)

        k_tiles = cute.size(gA, mode=[2])
        produce = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, stages)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, stages)

        # Prologue: fill the ring.
        if warp_idx == 0:
            for _ in cutlass.range(cutlass.min(stages, k_tiles), unroll=1):
                self.load(mainloop, produce, tma_a, tma_b, tAgA, tAsA, tBgB, tBsB, a_mask, b_mask)
                produce.advance()

        # The first k-tile overwrites the accumulators (D = A * B), the others accumulate.
        tiled_mma.set(warpgroup.Field.ACCUMULATE, False)
        mainloop.consumer_wait(read)
        warpgroup.fence()
        for kb in cutlass.range_constexpr(num_k_blocks):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
            tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        warpgroup.commit_group()
        read.advance()

        # Main loop: one k-tile of wgmma in flight; the stage the previous one read is released once it completed,
        # and warp 0 refills it.
        for _ in cutlass.range(1, k_tiles, unroll=1):
            mainloop.consumer_wait(read)
            warpgroup.fence()
            for kb in cutlass.range_constexpr(num_k_blocks):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
            warpgroup.commit_group()
            warpgroup.wait_group(1)
            mainloop.consumer_release(release)
            read.advance()
            release.advance()
            if warp_idx == 0:
                if produce.count < k_tiles:
                    self.load(mainloop, produce, tma_a, tma_b, tAgA, tAsA, tBgB, tBsB, a_mask, b_mask)
                    produce.advance()
        warpgroup.wait_group(0)

        if cutlass.const_expr(self.epilogue == "tma"):
            if cutlass.const_expr(not c_own):
                # Every warpgroup's wgmma have read the stages C's tile overwrites (no load is in flight: each
                # was consumed).
                cute.arch.sync_threads()
            # Epilogue: registers to the shared-memory tile, made visible to the async proxy, then one TMA store of
            # the tile by warp 0; the block leaves once the store has read shared memory. 16-bit C goes through
            # stmatrix (four 8x8 matrices per instruction, transposed into an M-major tile); other types are
            # stored element pair by element pair in C's MMA partition.
            tCrD = cute.make_fragment_like(acc, mC.element_type)
            tCrD.store(acc.load().to(mC.element_type))
            if cutlass.const_expr(mC.element_type.width == 16):
                m_major = utils.LayoutEnum.from_tensor(mC) == utils.LayoutEnum.COL_MAJOR
                stsm = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(m_major, 4), mC.element_type)
                r2s = cute.make_tiled_copy_C(stsm, tiled_mma)
                thr_r2s = r2s.get_slice(tidx)
                cute.copy(r2s, thr_r2s.retile(tCrD), thr_r2s.partition_D(sC))
            else:
                cute.autovec_copy(tCrD, thr_mma.partition_C(sC))
            cute.arch.fence_proxy("async.shared", space="cta")
            pipeline.sync(barrier_id=1, num_threads=self.num_threads)
            if warp_idx == 0:
                store = pipeline.PipelineTmaStore.create(num_stages=1)
                gC_tma = cute.local_tile(mC_tma, (bm, bn), (bidx, bidy, bidz))
                tSsC, tSgC = cpasync.tma_partition(tma_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2),
                                                   cute.group_modes(gC_tma, 0, 2))
                cute.copy(tma_c, tSsC, tSgC)
                store.producer_commit()
                store.producer_tail()
        else:
            # Epilogue: registers to C, element by element within C's bounds.
            for i in cutlass.range_constexpr(cute.size(acc)):
                if cute.elem_less(tCcC[i], mC.shape):
                    tCgC[i] = acc[i].to(mC.element_type)

        # No CTA leaves while a peer may still multicast into its shared memory or arrive on its barriers.
        if cutlass.const_expr(cm * cn > 1):
            cute.arch.cluster_arrive()
            cute.arch.cluster_wait()

    @cute.jit
    def load(self, mainloop, state, tma_a, tma_b, tAgA, tAsA, tBgB, tBsB, a_mask, b_mask):
        """Warp 0: wait for a free stage, then load k-tile state.count of A and B into it."""
        cm, cn = self.cluster_shape_mn
        mainloop.producer_acquire(state)
        bar = mainloop.producer_get_barrier(state)
        if cutlass.const_expr(cn > 1):
            cute.copy(tma_a, tAgA[None, state.count], tAsA[None, state.index], tma_bar_ptr=bar, mcast_mask=a_mask)
        else:
            cute.copy(tma_a, tAgA[None, state.count], tAsA[None, state.index], tma_bar_ptr=bar)
        if cutlass.const_expr(cm > 1):
            cute.copy(tma_b, tBgB[None, state.count], tBsB[None, state.index], tma_bar_ptr=bar, mcast_mask=b_mask)
        else:
            cute.copy(tma_b, tBgB[None, state.count], tBsB[None, state.index], tma_bar_ptr=bar)
        mainloop.producer_commit(state)


def _supported_inputs(a_dtype, b_dtype) -> bool:
    fp8 = (cutlass.Float8E4M3FN, cutlass.Float8E5M2)
    return (a_dtype is b_dtype and a_dtype in (cutlass.Float16, cutlass.BFloat16)) or (a_dtype in fp8 and
                                                                                          b_dtype in fp8)


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
    print(f"compiled dense_gemm for {chosen or 'sm_90a'}: {len(compiled.cubin)} bytes of cubin "
          f"(trace {compiled.timings['trace_s'] * 1e3:.0f} ms, compile {compiled.timings['compile_s'] * 1e3:.0f} ms)")
    return compiled


def run(mnkl, a_dtype, b_dtype, c_dtype, acc_dtype, a_major, b_major, c_major, tile_shape_mn=(128, 128),
        cluster_shape_mn=(1, 1), tolerance=None, warmup_iterations=2, iterations=10, skip_ref_check=False,
        epilogue="tma"):
    import torch

    import warpweave.torch as wwt
    from warpweave.cute import testing

    M, N, K, L = mnkl
    print(f"dense_gemm: mnkl {mnkl}, {a_dtype.__name__} x {b_dtype.__name__} -> {c_dtype.__name__} "
          f"(acc {acc_dtype.__name__}), majors A {a_major} B {b_major} C {c_major}, tile {tile_shape_mn}, "
          f"cluster {cluster_shape_mn}, epilogue {epilogue}")

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
    gemm = HopperDenseGemm(acc_dtype, tile_shape_mn, cluster_shape_mn, epilogue=epilogue)
    compiled = cute.compile(gemm, mA, mB, mC)
    if not skip_ref_check:
        compiled(mA, mB, mC)
        torch.cuda.synchronize()
        ref = torch.einsum("mkl,nkl->mnl", a.float(), b.float())
        bound = torch.einsum("mkl,nkl->mnl", a.float().abs(), b.float().abs())
        got = c.float()
        assert not torch.isnan(got).any(), "some of C was not written (still NaN)"
        # C rounds once to its type (relative 2**-11 fp16, 2**-8 bf16); the accumulation order differs from the
        # reference's, by about sqrt(K) fp32 roundings of sum |a b| (fp8 wgmma adds with fewer bits, about 2**-10
        # of it per instruction). A misplaced or missing tile of products is an error of order sqrt(K) or more,
        # far above both.
        out_tol = {cutlass.Float16: 2.0 ** -10, cutlass.BFloat16: 2.0 ** -7}.get(c_dtype, 2.0 ** -20)
        acc_tol = 2.0 ** -9 if a_dtype.width == 8 else 2.0 ** -16
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
    p.add_argument("--mnkl", type=_ints, default=(200, 136, 264, 2))
    p.add_argument("--tile_shape_mn", type=_ints, default=(128, 128))
    p.add_argument("--cluster_shape_mn", type=_ints, default=(1, 1))
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
    p.add_argument("--epilogue", choices=["tma", "registers"], default="tma")
    args = p.parse_args(argv)
    if not _supported_inputs(args.a_dtype, args.b_dtype):
        p.error("--a_dtype and --b_dtype must both be Float16, both BFloat16, or both 8-bit floats")
    if args.acc_dtype is not cutlass.Float32:
        p.error("--acc_dtype must be Float32")
    gemm = HopperDenseGemm(args.acc_dtype, args.tile_shape_mn, args.cluster_shape_mn, epilogue=args.epilogue)
    if not _has_gpu():
        print("no GPU: compiling only")
        compile_only(gemm, args.a_major, args.b_major, args.c_major, args.a_dtype, args.c_dtype,
                     b_dtype=args.b_dtype)
        return 0
    run(args.mnkl, args.a_dtype, args.b_dtype, args.c_dtype, args.acc_dtype, args.a_major, args.b_major,
        args.c_major, args.tile_shape_mn, args.cluster_shape_mn, args.tolerance, args.warmup_iterations,
        args.iterations, args.skip_ref_check, args.epilogue)
    return 0


if __name__ == "__main__":
    sys.exit(main())
