"""Tensor-core GEMM C = A * B (fp16/bf16 in, fp32 accumulate) with warp-level MMA atoms, in the structure of CuTe
DSL's Ampere example of that name.

  A: (M, K, L), K-major ("k") or M-major ("m");  B: (N, K, L), "k" or "n";  C: (M, N, L), "n" or "m".

Each thread block computes a (bM, bN) tile of C:
  1. cp.async copies (bM, bK) tiles of A and (bN, bK) of B into a multistage ring of swizzled shared-memory buffers;
     tiles that stick out of the matrices are predicated (zero-filled). The K residue is taken first: the tile
     grid is shifted so that the first k-tile is the partial one and the main loop needs no K predicates.
  2. ldmatrix moves each k-block from shared memory into the MMA's register fragments (bank-conflict free through
     the swizzle), one k-block ahead of the MMA instructions that consume it.
  3. The accumulators go through shared memory to be written to C with 128-bit stores.

    python tensorop_gemm.py --mnkl 112,136,40,1
    python tensorop_gemm.py --mnkl 8192,8192,8192,1 --atom_layout_mnk 2,2,1 --benchmark --skip_ref_check

Without a GPU it compiles for WARPWEAVE_ARCH, or for sm_80, sm_90a and sm_100a.
"""
import argparse
import math
import os
import sys
from typing import Tuple, Type

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack, make_fake_tensor


class TensorOpGemm:
    def __init__(self, ab_dtype: Type[cutlass.Numeric], c_dtype: Type[cutlass.Numeric],
                 acc_dtype: Type[cutlass.Numeric], atom_layout_mnk: Tuple[int, int, int],
                 cta_tiler: Tuple[int, int, int] = (128, 128, 32), num_stages: int = 4,
                 raster_factor: int | None = 8):
        self.ab_dtype, self.c_dtype, self.acc_dtype = ab_dtype, c_dtype, acc_dtype
        self.atom_layout_mnk = atom_layout_mnk
        self.cta_tiler = cta_tiler
        self.num_stages = num_stages
        self.raster_factor = raster_factor
        self.bM, self.bN, self.bK = cta_tiler
        self.mma_inst_shape = (16, 8, 16)
        am, an, ak = atom_layout_mnk
        self.num_threads = am * an * ak * 32
        mm, mn, mk = self.mma_inst_shape
        if self.bM % (am * mm) or self.bN % (an * mn * 2) or self.bK % mk:
            raise ValueError(f"the tile {cta_tiler} is not a multiple of the MMA tile "
                             f"({am * mm}, {an * mn * 2}, {mk}) of atom layout {atom_layout_mnk}")
        if ak != 1:
            raise ValueError("atom_layout_mnk must have K = 1")
        if num_stages < 3:
            raise ValueError("num_stages must be at least 3")

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
                 epilogue_op: cutlass.Constexpr = lambda x: x):
        self.a_major = utils.LayoutEnum.from_tensor(mA)
        self.b_major = utils.LayoutEnum.from_tensor(mB)
        self.c_major = utils.LayoutEnum.from_tensor(mC)

        copy_bits = 128
        sA_layout = self._smem_layout_AB(mA.element_type, self.a_major, copy_bits,
                                         (self.bM, self.bK, self.num_stages))
        sB_layout = self._smem_layout_AB(mB.element_type, self.b_major, copy_bits,
                                         (self.bN, self.bK, self.num_stages))
        sC_layout = self._smem_layout_C(mC.element_type, self.c_major, copy_bits, (self.bM, self.bN))
        # C's staging reuses A's and B's buffers: the main loop is over when the epilogue starts.
        smem_bytes = max(cute.size_in_bytes(mA.element_type, sA_layout) +
                         cute.size_in_bytes(mB.element_type, sB_layout),
                         cute.size_in_bytes(mC.element_type, sC_layout))

        g2s = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(cache_mode=cute.nvgpu.cpasync.LoadCacheMode.GLOBAL),
                                  mA.element_type, num_bits_per_copy=copy_bits)
        tiled_copy_A = self._gmem_tiled_copy(g2s, mA.element_type, self.a_major, copy_bits, self.bM, self.bK)
        tiled_copy_B = self._gmem_tiled_copy(g2s, mB.element_type, self.b_major, copy_bits, self.bN, self.bK)
        store = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mC.element_type, num_bits_per_copy=copy_bits)
        tiled_copy_C = self._gmem_tiled_copy(store, mC.element_type, self.c_major, copy_bits, self.bM, self.bN)

        op = cute.nvgpu.warp.MmaF16BF16Op(self.ab_dtype, self.acc_dtype, self.mma_inst_shape)
        am, an, ak = self.atom_layout_mnk
        # N is doubled so that each warp's B fragment is one 4-matrix ldmatrix (two 8-wide atoms side by side).
        permutation_mnk = (am * self.mma_inst_shape[0], an * self.mma_inst_shape[1] * 2, ak * self.mma_inst_shape[2])
        tiled_mma = cute.make_tiled_mma(op, cute.make_layout(self.atom_layout_mnk), permutation_mnk=permutation_mnk)

        tiles = cute.ceil_div(mC.shape, (self.bM, self.bN, 1))
        f = self.raster_factor
        if cutlass.const_expr(f is None):
            # Chosen at each call from the problem's width: a band of f tile columns only pays off when there are
            # that many (host code on runtime extents: a branch of the compiled function).
            f = 1
            if tiles[1] > 5:
                f = 8
            elif tiles[1] > 2:
                f = 4
            elif tiles[1] > 1:
                f = 2
        grid = (tiles[0] * f, (tiles[1] + f - 1) // f, tiles[2])
        self.kernel(mA, mB, mC, sA_layout, sB_layout, sC_layout, tiled_copy_A, tiled_copy_B, tiled_copy_C,
                    tiled_mma, epilogue_op, f).launch(grid=grid, block=[self.num_threads, 1, 1], smem=smem_bytes)

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, sA_layout: cute.ComposedLayout,
               sB_layout: cute.ComposedLayout, sC_layout: cute.ComposedLayout, tiled_copy_A: cute.TiledCopy,
               tiled_copy_B: cute.TiledCopy, tiled_copy_C: cute.TiledCopy, tiled_mma: cute.TiledMma,
               epilogue_op: cutlass.Constexpr, raster):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, bidz = cute.arch.block_idx()
        tiles = cute.ceil_div(mC.shape, (self.bM, self.bN, 1))
        # Rasterization: consecutive blocks walk down a band of `f` tile columns, so they share B tiles in L2 (a
        # Python int when fixed, a runtime Int32 when the host chooses it per call).
        f = raster
        tile_m = bidx // f
        tile_n = bidx % f + bidy * f
        if tile_m < tiles[0] and tile_n < tiles[1]:
            coord = (tile_m, tile_n, None)
            gA = cute.local_tile(mA[None, None, bidz], tiler=self.cta_tiler, coord=coord, proj=(1, None, 1))
            gB = cute.local_tile(mB[None, None, bidz], tiler=self.cta_tiler, coord=coord, proj=(None, 1, 1))
            gC = cute.local_tile(mC[None, None, bidz], tiler=self.cta_tiler, coord=coord, proj=(1, 1, None))

            # Shift the k-tiles back by the residue so that the first one is partial (K = 40, bK = 32: the
            # first tile covers k = -24..7, of which -24..-1 are predicated off).
            residue_k = cute.size(mA, mode=[1]) - cutlass.Int32(self.bK) * cute.size(gA, mode=[2])
            gA = cute.domain_offset((0, residue_k, 0), gA)
            gB = cute.domain_offset((0, residue_k, 0), gB)
            gA = cute.make_tensor(gA.iterator.align(16), gA.layout)
            gB = cute.make_tensor(gB.iterator.align(16), gB.layout)

            cA = cute.local_tile(cute.make_identity_tensor(mA.shape)[None, None, bidz], tiler=self.cta_tiler,
                                 coord=coord, proj=(1, None, 1))
            cB = cute.local_tile(cute.make_identity_tensor(mB.shape)[None, None, bidz], tiler=self.cta_tiler,
                                 coord=coord, proj=(None, 1, 1))
            cA = cute.domain_offset((0, residue_k, 0), cA)
            cB = cute.domain_offset((0, residue_k, 0), cB)

            smem = utils.SmemAllocator()
            sA = smem.allocate_tensor(mA.element_type, sA_layout, 16)
            sB = smem.allocate_tensor(mB.element_type, sB_layout, 16)
            sC = cute.make_tensor(cute.recast_ptr(sA.iterator, dtype=self.c_dtype), sC_layout)

            thr_copy_A = tiled_copy_A.get_slice(tidx)
            thr_copy_B = tiled_copy_B.get_slice(tidx)
            thr_copy_C = tiled_copy_C.get_slice(tidx)
            tAgA = thr_copy_A.partition_S(gA)   # (CPY, CPY_M, CPY_K, k)
            tAsA = thr_copy_A.partition_D(sA)   # (CPY, CPY_M, CPY_K, PIPE)
            tBgB = thr_copy_B.partition_S(gB)
            tBsB = thr_copy_B.partition_D(sB)
            tAcA = thr_copy_A.partition_S(cA)
            tBcB = thr_copy_B.partition_S(cB)

            # M/N predicates, one per copy atom (not per element); K is handled by the residue tile below.
            tApA = cute.make_rmem_tensor(
                cute.make_layout((tAgA.shape[0][1], cute.size(tAgA, mode=[1]), cute.size(tAgA, mode=[2])),
                                 stride=(cute.size(tAgA, mode=[1]), 1, 0)), cutlass.Boolean)
            tBpB = cute.make_rmem_tensor(
                cute.make_layout((tBgB.shape[0][1], cute.size(tBgB, mode=[1]), cute.size(tBgB, mode=[2])),
                                 stride=(cute.size(tBgB, mode=[1]), 1, 0)), cutlass.Boolean)
            for v in cutlass.range_constexpr(tApA.shape[0]):
                for m in cutlass.range_constexpr(tApA.shape[1]):
                    tApA[v, m, 0] = cute.elem_less(tAcA[(0, v), m, 0, 0][0], mA.shape[0])
            for v in cutlass.range_constexpr(tBpB.shape[0]):
                for n in cutlass.range_constexpr(tBpB.shape[1]):
                    tBpB[v, n, 0] = cute.elem_less(tBcB[(0, v), n, 0, 0][0], mB.shape[0])

            # Prologue: the residue tile, predicated in M/N and K (k < 0 is off), then the next stages.
            num_stages = cute.size(tAsA, mode=[3])
            k_tile_count = cute.size(tAgA, mode=[3])
            k_tile_next = cutlass.Int32(0)
            tApA_k = cute.make_rmem_tensor(tApA.shape, cutlass.Boolean)
            tBpB_k = cute.make_rmem_tensor(tBpB.shape, cutlass.Boolean)
            for v in cutlass.range_constexpr(tApA.shape[0]):
                for m in cutlass.range_constexpr(tApA.shape[1]):
                    for k in cutlass.range_constexpr(tApA.shape[2]):
                        c = tAcA[(0, v), m, k, 0]
                        tApA_k[v, m, k] = cute.elem_less((c[0], cutlass.Int32(-1)), (mA.shape[0], c[1]))
            for v in cutlass.range_constexpr(tBpB.shape[0]):
                for n in cutlass.range_constexpr(tBpB.shape[1]):
                    for k in cutlass.range_constexpr(tBpB.shape[2]):
                        c = tBcB[(0, v), n, k, 0]
                        tBpB_k[v, n, k] = cute.elem_less((c[0], cutlass.Int32(-1)), (mB.shape[0], c[1]))
            cute.copy(tiled_copy_A, tAgA[None, None, None, k_tile_next], tAsA[None, None, None, 0], pred=tApA_k)
            cute.copy(tiled_copy_B, tBgB[None, None, None, k_tile_next], tBsB[None, None, None, 0], pred=tBpB_k)
            k_tile_next = k_tile_next + 1
            cute.arch.cp_async_commit_group()
            for stage in cutlass.range_constexpr(1, num_stages - 1):
                if stage == k_tile_count:
                    tApA.fill(False)
                    tBpB.fill(False)
                cute.copy(tiled_copy_A, tAgA[None, None, None, k_tile_next], tAsA[None, None, None, stage], pred=tApA)
                cute.copy(tiled_copy_B, tBgB[None, None, None, k_tile_next], tBsB[None, None, None, stage], pred=tBpB)
                k_tile_next = k_tile_next + 1
                cute.arch.cp_async_commit_group()

            thr_mma = tiled_mma.get_slice(tidx)
            tCsA = thr_mma.partition_A(sA)
            tCsB = thr_mma.partition_B(sB)
            tCsC = thr_mma.partition_C(sC)
            tCgC = thr_mma.partition_C(gC)
            tCrA = tiled_mma.make_fragment_A(tCsA[None, None, None, 0])
            tCrB = tiled_mma.make_fragment_B(tCsB[None, None, None, 0])
            tCrC = tiled_mma.make_fragment_C(tCgC)
            tCrC.fill(0.0)

            # Shared memory to registers with ldmatrix, laid out as the MMA wants its fragments.
            s2r_A = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(self.a_major != utils.LayoutEnum.ROW_MAJOR,
                                                                          4), mA.element_type)
            s2r_B = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(self.b_major != utils.LayoutEnum.ROW_MAJOR,
                                                                          4), mB.element_type)
            tiled_s2r_A = cute.make_tiled_copy_A(s2r_A, tiled_mma)
            tiled_s2r_B = cute.make_tiled_copy_B(s2r_B, tiled_mma)
            thr_s2r_A = tiled_s2r_A.get_slice(tidx)
            thr_s2r_B = tiled_s2r_B.get_slice(tidx)
            tCsA_view = thr_s2r_A.partition_S(sA)
            tCrA_view = thr_s2r_A.retile(tCrA)
            tCsB_view = thr_s2r_B.partition_S(sB)
            tCrB_view = thr_s2r_B.retile(tCrB)

            smem_read = cutlass.Int32(0)
            smem_write = cutlass.Int32(num_stages - 1)
            tCsA_p = tCsA_view[None, None, None, 0]
            tCsB_p = tCsB_view[None, None, None, 0]

            num_k_block = cute.size(tCrA, mode=[2])
            if cutlass.const_expr(num_k_block > 1):
                cute.arch.cp_async_wait_group(num_stages - 2)
                cute.arch.sync_threads()
                cute.copy(tiled_s2r_A, tCsA_p[None, None, 0], tCrA_view[None, None, 0])
                cute.copy(tiled_s2r_B, tCsB_p[None, None, 0], tCrB_view[None, None, 0])

            # Main loop. Per k-tile: k-block by k-block, load the next k-block's fragments, issue the next
            # k-tile's cp.async (A before the MMAs, B after, to interleave memory and math), and run the MMAs.
            # At the last k-block, move to the next stage once its copies have landed.
            cute.profile.begin("mainloop")  # timed regions: only when compiled with warpweave.profile.Profile
            for k_tile in range(k_tile_count):
                for k_block in cutlass.range(num_k_block, unroll_full=True):
                    if k_block == num_k_block - 1:
                        tCsA_p = tCsA_view[None, None, None, smem_read]
                        tCsB_p = tCsB_view[None, None, None, smem_read]
                        cute.arch.cp_async_wait_group(num_stages - 2)
                        cute.arch.sync_threads()
                    k_next = (k_block + 1) % num_k_block
                    cute.copy(tiled_s2r_A, tCsA_p[None, None, k_next], tCrA_view[None, None, k_next])
                    cute.copy(tiled_s2r_B, tCsB_p[None, None, k_next], tCrB_view[None, None, k_next])
                    if k_block == 0:
                        if k_tile + num_stages - 1 < k_tile_count:
                            cute.copy(tiled_copy_A, tAgA[None, None, None, k_tile_next],
                                      tAsA[None, None, None, smem_write], pred=tApA)
                    cute.gemm(tiled_mma, tCrC, tCrA[None, None, k_block], tCrB[None, None, k_block], tCrC)
                    if k_block == 0:
                        if k_tile + num_stages - 1 < k_tile_count:
                            cute.copy(tiled_copy_B, tBgB[None, None, None, k_tile_next],
                                      tBsB[None, None, None, smem_write], pred=tBpB)
                        k_tile_next = k_tile_next + 1
                        cute.arch.cp_async_commit_group()
                        smem_write = smem_read
                        smem_read = smem_read + 1
                        if smem_read == num_stages:
                            smem_read = cutlass.Int32(0)

            cute.arch.cp_async_wait_group(0)
            cute.arch.sync_threads()
            cute.profile.end("mainloop")

            # Epilogue: registers -> shared memory (C's layout) -> 128-bit stores to global memory.
            cute.profile.begin("epilogue")
            tCrD = cute.make_fragment_like(tCrC, self.c_dtype)
            tCrD[None] = epilogue_op(tCrC.load()).to(self.c_dtype)
            cute.autovec_copy(tCrD, tCsC)

            tCsC_out = thr_copy_C.partition_S(sC)
            tCgC_out = thr_copy_C.partition_D(gC)
            cC = cute.local_tile(cute.make_identity_tensor(mC.shape)[None, None, bidz], tiler=self.cta_tiler,
                                 coord=coord, proj=(1, 1, None))
            tCcC = thr_copy_C.partition_S(cC)
            tCrC_out = cute.make_fragment_like(tCsC_out)
            cute.arch.sync_threads()
            cute.autovec_copy(tCsC_out, tCrC_out)
            tCpC = cute.make_rmem_tensor(
                cute.make_layout((tCgC_out.shape[0][1], cute.size(tCgC_out, mode=[1]), cute.size(tCgC_out, mode=[2])),
                                 stride=(cute.size(tCgC_out, mode=[1]), 1, 0)), cutlass.Boolean)
            for v in cutlass.range_constexpr(tCpC.shape[0]):
                for m in cutlass.range_constexpr(tCpC.shape[1]):
                    tCpC[v, m, 0] = cute.elem_less(tCcC[(0, v), m, 0][0], mC.shape[0])
            for v in cutlass.range_constexpr(tCpC.shape[0]):
                for n in cutlass.range_constexpr(tCpC.shape[2]):
                    if cute.elem_less(tCcC[(0, v), 0, n][1], mC.shape[1]):
                        cute.copy(tiled_copy_C, tCrC_out[None, None, n], tCgC_out[None, None, n],
                                  pred=tCpC[None, None, n])
            cute.profile.end("epilogue")

    def _smem_layout_AB(self, dtype, major, copy_bits, tiler):
        # An 8-row atom of up to 64 contiguous elements, swizzled so that ldmatrix's eight 16-byte rows fall in
        # different banks, tiled to the (MN, K, stages) buffer.
        contiguous = tiler[1] if major == utils.LayoutEnum.ROW_MAJOR else tiler[0]
        contiguous = min(contiguous, 64)
        bits = min(int(math.log2(contiguous * dtype.width // copy_bits)), 3)
        outer = (cute.make_layout((8, contiguous), stride=(contiguous, 1)) if major == utils.LayoutEnum.ROW_MAJOR
                 else cute.make_layout((contiguous, 8), stride=(1, contiguous)))
        atom = cute.make_composed_layout(cute.make_swizzle(bits, 3, 3), 0, outer)
        return cute.tile_to_shape(atom, tiler, (0, 1, 2))

    def _smem_layout_C(self, dtype, major, copy_bits, tiler):
        contiguous = tiler[1] if major == utils.LayoutEnum.ROW_MAJOR else tiler[0]
        bits = min(int(math.log2(contiguous * dtype.width // copy_bits)), 3)
        outer = (cute.make_layout((8, contiguous), stride=(contiguous, 1)) if major == utils.LayoutEnum.ROW_MAJOR
                 else cute.make_layout((contiguous, 8), stride=(1, contiguous)))
        # An M-major C keeps each thread's accumulator pairs unswizzled (the MMA's C layout runs along N).
        swizzle = cute.make_swizzle(bits, 3, 4) if major == utils.LayoutEnum.ROW_MAJOR else cute.make_swizzle(0, 3, 4)
        return cute.tile_to_shape(cute.make_composed_layout(swizzle, 0, outer), tiler, (0, 1))

    def _gmem_tiled_copy(self, atom, dtype, major, copy_bits, tile_mn, tile_k):
        elems = copy_bits // dtype.width
        if major == utils.LayoutEnum.ROW_MAJOR:
            cols = tile_k // elems
            threads = cute.make_layout((self.num_threads // cols, cols), stride=(cols, 1))
            values = cute.make_layout((1, elems))
        else:
            rows = tile_mn // elems
            threads = cute.make_layout((rows, self.num_threads // rows), stride=(1, rows))
            values = cute.make_layout((elems, 1))
        return cute.make_tiled_copy_tv(atom, threads, values)


# --- host side ----------------------------------------------------------------------------------------------------

def _has_gpu() -> bool:
    from warpweave import _core

    try:
        return _core.driver_available() and _core.device_count() > 0
    except RuntimeError:
        return False


def _tensor_like(mode0, mode1, l, mode0_major, dtype, make):
    """An (mode0, mode1, l) tensor whose contiguous mode is mode 0 (mode0_major) or mode 1, made by `make(shape)`
    in storage order and permuted to (mode0, mode1, l)."""
    if mode0_major:
        return make((l, mode1, mode0)).permute(2, 1, 0)
    return make((l, mode0, mode1)).permute(1, 2, 0)


def _as_runtime(t, mode0_major, dtype):
    return (from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
            .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, stride_order=(2, 1, 0) if mode0_major
                                        else (2, 0, 1), divisibility=128 // dtype.width))


def compile_only(gemm, a_major, b_major, c_major, ab_dtype, c_dtype, mnkl=(128, 128, 64, 1)) -> list:
    """Compiles for WARPWEAVE_ARCH, or for sm_80, sm_90a and sm_100a, with fake tensors standing in; nothing runs."""
    M, N, K, L = mnkl

    def fake(mode0, mode1, mode0_major, dtype):
        stride = (1, mode0, mode0 * mode1) if mode0_major else (mode1, 1, mode0 * mode1)
        t = make_fake_tensor(dtype, (mode0, mode1, L), stride, assumed_align=16)
        return (t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
                .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, stride_order=(2, 1, 0) if mode0_major
                                            else (2, 0, 1), divisibility=128 // dtype.width))

    out = []
    chosen = os.environ.get("WARPWEAVE_ARCH")
    for arch in [chosen] if chosen else ["sm_80", "sm_90a", "sm_100a"]:
        os.environ["WARPWEAVE_ARCH"] = arch
        try:
            compiled = cute.compile(gemm, fake(M, K, a_major == "m", ab_dtype), fake(N, K, b_major == "n", ab_dtype),
                                    fake(M, N, c_major == "m", c_dtype))
        finally:
            if chosen is None:
                del os.environ["WARPWEAVE_ARCH"]
        print(f"compiled tensorop_gemm for {arch}: {len(compiled.cubin)} bytes of cubin "
              f"(trace {compiled.timings['trace_s'] * 1e3:.0f} ms, compile {compiled.timings['compile_s'] * 1e3:.0f} ms)")
        out.append((arch, compiled))
    return out


def run(a_major, b_major, c_major, ab_dtype, c_dtype, acc_dtype, mnkl, atom_layout_mnk, warmup_iterations=2,
        iterations=100, skip_ref_check=False, benchmark=False, tolerance=1e-2, cta_tiler=(128, 128, 32),
        num_stages=4):
    import torch

    import warpweave.torch as wwt
    from warpweave.cute import testing

    M, N, K, L = mnkl
    print(f"tensorop_gemm: mnkl {mnkl}, {ab_dtype.__name__} -> {c_dtype.__name__} (acc {acc_dtype.__name__}), "
          f"majors A {a_major} B {b_major} C {c_major}, atoms {atom_layout_mnk}, tile {cta_tiler}, "
          f"{num_stages} stages")

    def random(shape, dtype):
        return torch.empty(shape, dtype=torch.float32, device="cuda").uniform_(-2, 2).to(wwt.dtype(dtype))

    a = _tensor_like(M, K, L, a_major == "m", ab_dtype, lambda s: random(s, ab_dtype))
    b = _tensor_like(N, K, L, b_major == "n", ab_dtype, lambda s: random(s, ab_dtype))
    c = _tensor_like(M, N, L, c_major == "m", c_dtype,
                     lambda s: torch.full(s, float("nan"), dtype=wwt.dtype(c_dtype), device="cuda"))
    mA, mB, mC = _as_runtime(a, a_major == "m", ab_dtype), _as_runtime(b, b_major == "n", ab_dtype), \
        _as_runtime(c, c_major == "m", c_dtype)

    gemm = TensorOpGemm(ab_dtype, c_dtype, acc_dtype, atom_layout_mnk, cta_tiler, num_stages)
    compiled = cute.compile(gemm, mA, mB, mC)
    print(f"compiled in {compiled.timings['trace_s'] + compiled.timings['compile_s']:.3f} s "
          f"(cache {compiled.info.get('cache')})")
    if not skip_ref_check:
        compiled(mA, mB, mC)
        torch.cuda.synchronize()
        ref = torch.einsum("mkl,nkl->mnl", a.double(), b.double())
        torch.testing.assert_close(c.double(), ref.to(wwt.dtype(c_dtype)).double(), atol=tolerance, rtol=tolerance)
        print("results verified")
    if benchmark:
        def workspace():
            x = _tensor_like(M, K, L, a_major == "m", ab_dtype, lambda s: random(s, ab_dtype))
            y = _tensor_like(N, K, L, b_major == "n", ab_dtype, lambda s: random(s, ab_dtype))
            z = _tensor_like(M, N, L, c_major == "m", c_dtype,
                             lambda s: torch.empty(s, dtype=wwt.dtype(c_dtype), device="cuda"))
            return testing.JitArguments(_as_runtime(x, a_major == "m", ab_dtype),
                                        _as_runtime(y, b_major == "n", ab_dtype),
                                        _as_runtime(z, c_major == "m", c_dtype))

        us = testing.benchmark(compiled, workspace_generator=workspace, workspace_count=2,
                               warmup_iterations=warmup_iterations, iterations=iterations)
        print(f"kernel time {us:.1f} us, {2 * M * N * K * L / us / 1e6:.1f} TFLOP/s")
        return us
    return None


def _ints(s):
    return tuple(int(x) for x in s.split(","))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mnkl", type=_ints, default=(112, 136, 40, 1))
    p.add_argument("--atom_layout_mnk", type=_ints, default=(2, 2, 1))
    p.add_argument("--ab_dtype", type=cutlass.dtype, choices=[cutlass.Float16, cutlass.BFloat16],
                   default=cutlass.Float16)
    p.add_argument("--acc_dtype", type=cutlass.dtype, choices=[cutlass.Float32], default=cutlass.Float32)
    p.add_argument("--c_dtype", type=cutlass.dtype, choices=[cutlass.Float16, cutlass.BFloat16, cutlass.Float32],
                   default=cutlass.Float16)
    p.add_argument("--a_major", choices=["k", "m"], default="m")
    p.add_argument("--b_major", choices=["k", "n"], default="n")
    p.add_argument("--c_major", choices=["n", "m"], default="n")
    p.add_argument("--cta_tiler", type=_ints, default=(128, 128, 32))
    p.add_argument("--num_stages", type=int, default=4)
    p.add_argument("--tolerance", type=float, default=1e-2)
    p.add_argument("--warmup_iterations", type=int, default=2)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--skip_ref_check", action="store_true")
    p.add_argument("--benchmark", action="store_true")
    args = p.parse_args(argv)
    if not _has_gpu():
        print("no GPU: compiling only")
        gemm = TensorOpGemm(args.ab_dtype, args.c_dtype, args.acc_dtype, args.atom_layout_mnk, args.cta_tiler,
                            args.num_stages)
        compile_only(gemm, args.a_major, args.b_major, args.c_major, args.ab_dtype, args.c_dtype)
        return 0
    run(args.a_major, args.b_major, args.c_major, args.ab_dtype, args.c_dtype, args.acc_dtype, args.mnkl,
        args.atom_layout_mnk, args.warmup_iterations, args.iterations, args.skip_ref_check, args.benchmark,
        args.tolerance, args.cta_tiler, args.num_stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
