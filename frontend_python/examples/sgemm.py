"""SIMT fp32 GEMM C = A * B with cp.async multistage staging, in the structure of CuTe DSL's Ampere example of
that name.

  A: (M, K), K-major ("k") or M-major ("m");  B: (N, K), "k" or "n";  C: (M, N), "n" or "m".

Each thread block computes a (bM, bN) tile of C with 256 threads, each holding an 8x8 block of accumulators:
  1. cp.async copies (bM, bK) tiles of A and (bN, bK) of B into a ring of shared-memory stages, kept M- and
     N-major so that threads read their operands with 128-bit loads (K-major inputs are transposed on the way in,
     one element per copy, into a padded layout that spreads the writes over the banks). Tiles that stick out of
     the matrices are predicated (zero-filled); the partial K tile is taken first.
  2. Each k-block, a thread loads 8 values of A and 8 of B into registers (one k-block ahead) and issues 64 FMAs;
     the tiled MMA's permutation gives each thread runs of 4 contiguous M (N) values.
  3. The accumulators are stored to C, predicated per element at the matrix edges.

    python sgemm.py --mnk 100,200,30
    python sgemm.py --mnk 4096,4096,4096 --benchmark --skip_ref_check

Without a GPU it compiles for WARPWEAVE_ARCH, or for sm_80, sm_90a and sm_100a.
"""
import argparse
import os
import sys
from typing import Tuple

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack, make_fake_tensor


class SGemm:
    def __init__(self, cta_tiler: Tuple[int, int, int] = (128, 128, 8), num_stages: int = 3, num_threads: int = 256):
        self.cta_tiler = cta_tiler
        self.num_stages = num_stages
        self.num_threads = num_threads
        self.bM, self.bN, self.bK = cta_tiler
        if num_threads % 16 or self.bM % 64 or self.bN % 64 or self.bM * self.bN % (num_threads * 16):
            raise ValueError(f"tile {cta_tiler} with {num_threads} threads: each thread needs whole 4x4 blocks")
        if num_stages < 3:
            raise ValueError("num_stages must be at least 3")

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor,
                 epilogue_op: cutlass.Constexpr = lambda x: x):
        self.a_major = utils.LayoutEnum.from_tensor(mA)
        self.b_major = utils.LayoutEnum.from_tensor(mB)
        self.c_major = utils.LayoutEnum.from_tensor(mC)

        # Shared memory is M- (N-) major; a K-major input is written transposed, padded by 4 so that the
        # threads' single-element writes of one K column do not share banks.
        pad_a = 4 if self.a_major == utils.LayoutEnum.ROW_MAJOR else 0
        pad_b = 4 if self.b_major == utils.LayoutEnum.ROW_MAJOR else 0
        sA_layout = cute.make_layout((self.bM, self.bK, self.num_stages),
                                     stride=(1, self.bM + pad_a, self.bK * (self.bM + pad_a)))
        sB_layout = cute.make_layout((self.bN, self.bK, self.num_stages),
                                     stride=(1, self.bN + pad_b, self.bK * (self.bN + pad_b)))

        tiled_copy_A = self._gmem_tiled_copy(mA, self.a_major, self.bM)
        tiled_copy_B = self._gmem_tiled_copy(mB, self.b_major, self.bN)

        # 16x16 threads of one-FMA atoms; the permutation (16,4):(4,1) makes each thread own runs of 4
        # consecutive M (N) values, read with one 128-bit load.
        atoms = cute.make_layout((self.num_threads // 16, 16, 1), stride=(16, 1, 0))
        if cutlass.const_expr(self.c_major == utils.LayoutEnum.COL_MAJOR):
            atoms = cute.make_layout((16, self.num_threads // 16, 1), stride=(1, 16, 0))
        perm_m = cute.make_layout((atoms.shape[0], 4), stride=(4, 1))
        perm_n = cute.make_layout((atoms.shape[1], 4), stride=(4, 1))
        tiled_mma = cute.make_tiled_mma(cute.nvgpu.MmaUniversalOp(cutlass.Float32), atoms,
                                        permutation_mnk=(perm_m, perm_n, None))

        grid = cute.ceil_div(mC.shape, (self.bM, self.bN))
        self.kernel(mA, mB, mC, sA_layout, sB_layout, tiled_copy_A, tiled_copy_B, tiled_mma, epilogue_op).launch(
            grid=(grid[0], grid[1], 1), block=[self.num_threads, 1, 1])

    def _gmem_tiled_copy(self, mX, major, tile_mn):
        if major == utils.LayoutEnum.COL_MAJOR:
            # M- (N-) major: 4 consecutive elements per thread, one 16-byte cp.async.
            atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), mX.element_type, num_bits_per_copy=128)
            rows = tile_mn // 4
            threads = cute.make_layout((rows, self.num_threads // rows), stride=(1, rows))
            return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((4, 1)))
        atom = cute.make_copy_atom(cute.nvgpu.cpasync.CopyG2SOp(), mX.element_type, num_bits_per_copy=32)
        threads = cute.make_layout((self.num_threads // self.bK, self.bK), stride=(self.bK, 1))
        return cute.make_tiled_copy_tv(atom, threads, cute.make_layout((1, 1)))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, sA_layout: cute.Layout,
               sB_layout: cute.Layout, tiled_copy_A: cute.TiledCopy, tiled_copy_B: cute.TiledCopy,
               tiled_mma: cute.TiledMma, epilogue_op: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, bidy, _ = cute.arch.block_idx()
        coord = (bidx, bidy, None)
        gA = cute.local_tile(mA, tiler=self.cta_tiler, coord=coord, proj=(1, None, 1))   # (bM, bK, k)
        gB = cute.local_tile(mB, tiler=self.cta_tiler, coord=coord, proj=(None, 1, 1))   # (bN, bK, k)
        gC = cute.local_tile(mC, tiler=self.cta_tiler, coord=coord, proj=(1, 1, None))   # (bM, bN)

        # The partial K tile comes first: shift the tiles back by the residue.
        residue_k = mA.shape[1] - cutlass.Int32(self.bK) * cute.size(gA, mode=[2])
        gA = cute.domain_offset((0, residue_k, 0), gA)
        gB = cute.domain_offset((0, residue_k, 0), gB)
        cA = cute.domain_offset((0, residue_k, 0), cute.local_tile(cute.make_identity_tensor(mA.shape),
                                                                   tiler=self.cta_tiler, coord=coord,
                                                                   proj=(1, None, 1)))
        cB = cute.domain_offset((0, residue_k, 0), cute.local_tile(cute.make_identity_tensor(mB.shape),
                                                                   tiler=self.cta_tiler, coord=coord,
                                                                   proj=(None, 1, 1)))

        smem = utils.SmemAllocator()
        sA = smem.allocate_tensor(mA.element_type, sA_layout, 16)
        sB = smem.allocate_tensor(mB.element_type, sB_layout, 16)

        thr_copy_A = tiled_copy_A.get_slice(tidx)
        thr_copy_B = tiled_copy_B.get_slice(tidx)
        tAgA, tAsA, tAcA = thr_copy_A.partition_S(gA), thr_copy_A.partition_D(sA), thr_copy_A.partition_S(cA)
        tBgB, tBsB, tBcB = thr_copy_B.partition_S(gB), thr_copy_B.partition_D(sB), thr_copy_B.partition_S(cB)

        # Predicates per copy atom: M (N) only for the main loop; M (N) and K for the residue tile.
        tApA = cute.make_rmem_tensor(cute.make_layout(
            (tAsA.shape[0][1], cute.size(tAsA, mode=[1]), cute.size(tAsA, mode=[2])),
            stride=(cute.size(tAsA, mode=[1]), 1, 0)), cutlass.Boolean)
        tBpB = cute.make_rmem_tensor(cute.make_layout(
            (tBsB.shape[0][1], cute.size(tBsB, mode=[1]), cute.size(tBsB, mode=[2])),
            stride=(cute.size(tBsB, mode=[1]), 1, 0)), cutlass.Boolean)
        tApA_k = cute.make_rmem_tensor((tAsA.shape[0][1], cute.size(tAsA, mode=[1]), cute.size(tAsA, mode=[2])),
                                       cutlass.Boolean)
        tBpB_k = cute.make_rmem_tensor((tBsB.shape[0][1], cute.size(tBsB, mode=[1]), cute.size(tBsB, mode=[2])),
                                       cutlass.Boolean)
        for v in cutlass.range_constexpr(tApA.shape[0]):
            for m in cutlass.range_constexpr(tApA.shape[1]):
                tApA[v, m, 0] = cute.elem_less(tAcA[(0, v), m, 0, 0][0], mA.shape[0])
                for k in cutlass.range_constexpr(tApA.shape[2]):
                    c = tAcA[(0, v), m, k, 0]
                    tApA_k[v, m, k] = cute.elem_less((c[0], cutlass.Int32(-1)), (mA.shape[0], c[1]))
        for v in cutlass.range_constexpr(tBpB.shape[0]):
            for n in cutlass.range_constexpr(tBpB.shape[1]):
                tBpB[v, n, 0] = cute.elem_less(tBcB[(0, v), n, 0, 0][0], mB.shape[0])
                for k in cutlass.range_constexpr(tBpB.shape[2]):
                    c = tBcB[(0, v), n, k, 0]
                    tBpB_k[v, n, k] = cute.elem_less((c[0], cutlass.Int32(-1)), (mB.shape[0], c[1]))

        # Prologue: stages 0 .. num_stages-2 (stage 0 is the residue tile).
        num_stages = cute.size(tAsA, mode=[3])
        k_tile_count = cute.size(tAgA, mode=[3])
        k_tile_next = cutlass.Int32(0)
        cute.copy(tiled_copy_A, tAgA[None, None, None, 0], tAsA[None, None, None, 0], pred=tApA_k)
        cute.copy(tiled_copy_B, tBgB[None, None, None, 0], tBsB[None, None, None, 0], pred=tBpB_k)
        cute.arch.cp_async_commit_group()
        k_tile_next = k_tile_next + 1
        for stage in cutlass.range_constexpr(1, num_stages - 1):
            if stage < k_tile_count:
                cute.copy(tiled_copy_A, tAgA[None, None, None, k_tile_next], tAsA[None, None, None, stage],
                          pred=tApA)
                cute.copy(tiled_copy_B, tBgB[None, None, None, k_tile_next], tBsB[None, None, None, stage],
                          pred=tBpB)
            k_tile_next = k_tile_next + 1
            cute.arch.cp_async_commit_group()

        thr_mma = tiled_mma.get_slice(tidx)
        tCsA = thr_mma.partition_A(sA)    # (1, MMA_M, MMA_K, PIPE)
        tCsB = thr_mma.partition_B(sB)
        tCgC = thr_mma.partition_C(gC)
        tCrA = tiled_mma.make_fragment_A(tCsA[None, None, None, 0])
        tCrB = tiled_mma.make_fragment_B(tCsB[None, None, None, 0])
        tCrC = tiled_mma.make_fragment_C(tCgC)
        tCrC.fill(0.0)

        smem_read = cutlass.Int32(0)
        smem_write = cutlass.Int32(num_stages - 1)
        tCsA_p = tCsA[None, None, None, 0]
        tCsB_p = tCsB[None, None, None, 0]
        num_k_block = cute.size(tCrA, mode=[2])
        cute.arch.cp_async_wait_group(num_stages - 2)
        cute.arch.sync_threads()
        cute.autovec_copy(tCsA_p[None, None, 0], tCrA[None, None, 0])
        cute.autovec_copy(tCsB_p[None, None, 0], tCrB[None, None, 0])

        for k_tile in range(k_tile_count):
            for k_block in cutlass.range(num_k_block, unroll_full=True):
                if k_block == num_k_block - 1:
                    tCsA_p = tCsA[None, None, None, smem_read]
                    tCsB_p = tCsB[None, None, None, smem_read]
                    cute.arch.cp_async_wait_group(num_stages - 2)
                    cute.arch.sync_threads()
                k_next = (k_block + 1) % num_k_block
                cute.autovec_copy(tCsA_p[None, None, k_next], tCrA[None, None, k_next])
                cute.autovec_copy(tCsB_p[None, None, k_next], tCrB[None, None, k_next])
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
        tCrC.store(epilogue_op(tCrC.load()))
        # Per-element predicates for the edges of C.
        tCcC = thr_mma.partition_C(cute.make_identity_tensor(gC.shape))
        tCpC = cute.make_rmem_tensor(tCrC.layout, cutlass.Boolean)
        residue_m = mC.shape[0] - cutlass.Int32(self.bM) * bidx
        residue_n = mC.shape[1] - cutlass.Int32(self.bN) * bidy
        for i in cutlass.range_constexpr(cute.size(tCrC)):
            tCpC[i] = cute.elem_less(tCcC[i], (residue_m, residue_n))
        cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), mC.element_type), tCrC, tCgC, pred=tCpC)


# --- host side ----------------------------------------------------------------------------------------------------

def _has_gpu() -> bool:
    from warpweave import _core

    try:
        return _core.driver_available() and _core.device_count() > 0
    except RuntimeError:
        return False


def _runtime(t, mode0_major):
    return (from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
            .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, divisibility=4))


def compile_only(gemm, a_major, b_major, c_major, mnk=(128, 128, 64)) -> list:
    """Compiles for WARPWEAVE_ARCH, or for sm_80, sm_90a and sm_100a, with fake tensors standing in; nothing runs."""
    M, N, K = mnk

    def fake(mode0, mode1, mode0_major):
        t = make_fake_tensor(cutlass.Float32, (mode0, mode1), (1, mode0) if mode0_major else (mode1, 1))
        return (t.mark_layout_dynamic(leading_dim=0 if mode0_major else 1)
                .mark_compact_shape_dynamic(mode=0 if mode0_major else 1, divisibility=4))

    out = []
    chosen = os.environ.get("WARPWEAVE_ARCH")
    for arch in [chosen] if chosen else ["sm_80", "sm_90a", "sm_100a"]:
        os.environ["WARPWEAVE_ARCH"] = arch
        try:
            compiled = cute.compile(gemm, fake(M, K, a_major == "m"), fake(N, K, b_major == "n"),
                                    fake(M, N, c_major == "m"))
        finally:
            if chosen is None:
                del os.environ["WARPWEAVE_ARCH"]
        print(f"compiled sgemm for {arch}: {len(compiled.cubin)} bytes of cubin "
              f"(trace {compiled.timings['trace_s'] * 1e3:.0f} ms, compile {compiled.timings['compile_s'] * 1e3:.0f} ms)")
        out.append((arch, compiled))
    return out


def _matrix(rows, cols, rows_major, make):
    """A (rows, cols) matrix whose contiguous mode is mode 0 (rows_major) or mode 1."""
    return make((cols, rows)).t() if rows_major else make((rows, cols))


def run(mnk, a_major, b_major, c_major, warmup_iterations=2, iterations=100, skip_ref_check=False,
        benchmark=False, tolerance=1e-4, cta_tiler=(128, 128, 8), num_stages=3):
    import torch

    from warpweave.cute import testing

    M, N, K = mnk
    print(f"sgemm: mnk {mnk}, majors A {a_major} B {b_major} C {c_major}, tile {cta_tiler}, {num_stages} stages")

    def random(shape):
        return torch.empty(shape, dtype=torch.float32, device="cuda").uniform_(-1, 1)

    a = _matrix(M, K, a_major == "m", random)
    b = _matrix(N, K, b_major == "n", random)
    c = _matrix(M, N, c_major == "m", lambda s: torch.full(s, float("nan"), device="cuda"))
    mA, mB, mC = _runtime(a, a_major == "m"), _runtime(b, b_major == "n"), _runtime(c, c_major == "m")
    gemm = SGemm(cta_tiler, num_stages)
    compiled = cute.compile(gemm, mA, mB, mC)
    print(f"compiled in {compiled.timings['trace_s'] + compiled.timings['compile_s']:.3f} s "
          f"(cache {compiled.info.get('cache')})")
    if not skip_ref_check:
        compiled(mA, mB, mC)
        torch.cuda.synchronize()
        ref = a.double() @ b.double().t()
        torch.testing.assert_close(c.double(), ref, atol=tolerance * K ** 0.5, rtol=tolerance)
        print("results verified")
    if benchmark:
        def workspace():
            x, y = _matrix(M, K, a_major == "m", random), _matrix(N, K, b_major == "n", random)
            z = _matrix(M, N, c_major == "m", lambda s: torch.empty(s, device="cuda"))
            return testing.JitArguments(_runtime(x, a_major == "m"), _runtime(y, b_major == "n"),
                                        _runtime(z, c_major == "m"))

        us = testing.benchmark(compiled, workspace_generator=workspace, workspace_count=2,
                               warmup_iterations=warmup_iterations, iterations=iterations)
        print(f"kernel time {us:.1f} us, {2 * M * N * K / us / 1e6:.2f} TFLOP/s")
        return us
    return None


def _ints(s):
    return tuple(int(x) for x in s.split(","))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mnk", type=_ints, default=(256, 256, 64))
    p.add_argument("--a_major", choices=["k", "m"], default="m")
    p.add_argument("--b_major", choices=["k", "n"], default="n")
    p.add_argument("--c_major", choices=["n", "m"], default="n")
    p.add_argument("--cta_tiler", type=_ints, default=(128, 128, 8))
    p.add_argument("--num_stages", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("--warmup_iterations", type=int, default=2)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--skip_ref_check", action="store_true")
    p.add_argument("--benchmark", action="store_true")
    args = p.parse_args(argv)
    gemm = SGemm(args.cta_tiler, args.num_stages)
    if not _has_gpu():
        print("no GPU: compiling only")
        compile_only(gemm, args.a_major, args.b_major, args.c_major)
        return 0
    run(args.mnk, args.a_major, args.b_major, args.c_major, args.warmup_iterations, args.iterations,
        args.skip_ref_check, args.benchmark, args.tolerance, args.cta_tiler, args.num_stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
