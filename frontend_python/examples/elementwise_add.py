"""Elementwise addition C = A + B with warpweave, in the structure of CuTe DSL's example of that name.

Each thread block takes one tile of the (M, N) tensors; a thread-value layout spreads the tile over 128 threads,
each moving 128 bits of contiguous elements per access. Global memory is copied into registers (predicated by
an identity tensor for tiles that stick out of the tensors), added, and copied back.

    python elementwise_add.py --M 3 --N 12
    python elementwise_add.py --M 1024 --N 1024 --benchmark

Without a GPU it compiles the kernel for WARPWEAVE_ARCH, or for sm_80, sm_90a and sm_100a, and says so.
"""
import argparse
import os
import sys

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


@cute.kernel
def elementwise_add_kernel(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, cC: cute.Tensor, shape: cute.Shape,
                           thr_layout: cute.Layout, val_layout: cute.Layout):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()

    # This block's tile: ((TileM, TileN), (RestM, RestN)) sliced at the block.
    blk_coord = ((None, None), bidx)
    blkA = gA[blk_coord]
    blkB = gB[blk_coord]
    blkC = gC[blk_coord]
    blkCrd = cC[blk_coord]

    copy_atom_load = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gA.element_type)
    copy_atom_store = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), gC.element_type)
    tiled_copy_A = cute.make_tiled_copy_tv(copy_atom_load, thr_layout, val_layout)
    tiled_copy_B = cute.make_tiled_copy_tv(copy_atom_load, thr_layout, val_layout)
    tiled_copy_C = cute.make_tiled_copy_tv(copy_atom_store, thr_layout, val_layout)

    thr_copy_A = tiled_copy_A.get_slice(tidx)
    thr_copy_B = tiled_copy_B.get_slice(tidx)
    thr_copy_C = tiled_copy_C.get_slice(tidx)

    thrA = thr_copy_A.partition_S(blkA)
    thrB = thr_copy_B.partition_S(blkB)
    thrC = thr_copy_C.partition_S(blkC)

    frgA = cute.make_fragment_like(thrA)
    frgB = cute.make_fragment_like(thrB)
    frgC = cute.make_fragment_like(thrC)

    # Predicates: which of this thread's elements lie inside the tensors.
    thrCrd = thr_copy_C.partition_S(blkCrd)
    frgPred = cute.make_rmem_tensor(thrCrd.shape, cutlass.Boolean)
    for i in cutlass.range_constexpr(cute.size(frgPred)):
        frgPred[i] = cute.elem_less(thrCrd[i], shape)

    cute.copy(copy_atom_load, thrA, frgA, pred=frgPred)
    cute.copy(copy_atom_load, thrB, frgB, pred=frgPred)
    result = frgA.load() + frgB.load()
    frgC.store(result)
    cute.copy(copy_atom_store, frgC, thrC, pred=frgPred)


@cute.jit
def elementwise_add(mA, mB, mC, copy_bits: cutlass.Constexpr = 128):
    dtype = mA.element_type
    vector_size = copy_bits // dtype.width

    thr_layout = cute.make_ordered_layout((4, 32), order=(1, 0))
    val_layout = cute.make_ordered_layout((4, vector_size), order=(1, 0))
    tiler_mn, tv_layout = cute.make_layout_tv(thr_layout, val_layout)

    gA = cute.zipped_divide(mA, tiler_mn)  # ((TileM,TileN),(RestM,RestN))
    gB = cute.zipped_divide(mB, tiler_mn)
    gC = cute.zipped_divide(mC, tiler_mn)
    idC = cute.make_identity_tensor(mC.shape)
    cC = cute.zipped_divide(idC, tiler=tiler_mn)

    elementwise_add_kernel(gA, gB, gC, cC, mC.shape, thr_layout, val_layout).launch(
        grid=[cute.size(gC, mode=[1]), 1, 1],
        block=[cute.size(tv_layout, mode=[0]), 1, 1],
    )


def _has_gpu() -> bool:
    from warpweave import _core

    try:
        return _core.driver_available() and _core.device_count() > 0
    except RuntimeError:
        return False


def compile_only(M, N, dtype) -> None:
    """Compiles for WARPWEAVE_ARCH, or for every target the core ships with; nothing runs."""
    import numpy as np

    np_dtype = {cutlass.Float32: np.float32, cutlass.Float16: np.float16}[dtype]
    a = np.zeros((M, N), dtype=np_dtype)
    chosen = os.environ.get("WARPWEAVE_ARCH")
    for arch in [chosen] if chosen else ["sm_80", "sm_90a", "sm_100a"]:
        os.environ["WARPWEAVE_ARCH"] = arch
        try:
            t = from_dlpack(a).mark_layout_dynamic()
            compiled = cute.compile(elementwise_add, t, t, t)
        finally:
            if chosen is None:
                del os.environ["WARPWEAVE_ARCH"]
        print(f"compiled elementwise_add for {arch}: {len(compiled.cubin)} bytes of cubin "
              f"(trace {compiled.timings['trace_s'] * 1e3:.1f} ms, compile {compiled.timings['compile_s'] * 1e3:.1f} ms)")


def run_elementwise_add(M, N, dtype, skip_ref_check=False, benchmark=False, warmup_iterations=2, iterations=100):
    import torch

    torch_dtype = {cutlass.Float32: torch.float32, cutlass.Float16: torch.float16}[dtype]
    print(f"elementwise_add: ({M}, {N}) {dtype.__name__}")
    a = torch.randn(M, N, device="cuda", dtype=torch_dtype)
    b = torch.randn(M, N, device="cuda", dtype=torch_dtype)
    c = torch.full_like(a, float("nan"))  # poisoned: every element must be written

    a_, b_, c_ = (from_dlpack(t).mark_layout_dynamic() for t in (a, b, c))
    compiled = cute.compile(elementwise_add, a_, b_, c_)
    print(f"compiled in {compiled.timings['trace_s'] + compiled.timings['compile_s']:.3f} s "
          f"(cache {compiled.info.get('cache')})")
    if not skip_ref_check:
        compiled(a_, b_, c_)
        torch.cuda.synchronize()
        ref = (a.double() + b.double()).to(torch_dtype)
        torch.testing.assert_close(c, ref)
        print("results verified")
    if benchmark:
        from warpweave.cute import testing

        def workspace():
            x = torch.randn(M, N, device="cuda", dtype=torch_dtype)
            y = torch.randn(M, N, device="cuda", dtype=torch_dtype)
            z = torch.empty_like(x)
            return testing.JitArguments(*(from_dlpack(t).mark_layout_dynamic() for t in (x, y, z)))

        us = testing.benchmark(compiled, workspace_generator=workspace, workspace_count=4,
                               warmup_iterations=warmup_iterations, iterations=iterations)
        nbytes = 3 * M * N * a.element_size()
        print(f"kernel time {us:.2f} us, {nbytes / us / 1e3:.1f} GB/s")
        return us
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--M", default=1024, type=int)
    p.add_argument("--N", default=1024, type=int)
    p.add_argument("--dtype", default="Float32", choices=["Float32", "Float16"])
    p.add_argument("--warmup_iterations", default=2, type=int)
    p.add_argument("--iterations", default=100, type=int)
    p.add_argument("--skip_ref_check", action="store_true")
    p.add_argument("--benchmark", action="store_true")
    args = p.parse_args(argv)
    dtype = cutlass.dtype(args.dtype)
    if not _has_gpu():
        print("no GPU: compiling only")
        compile_only(args.M, args.N, dtype)
        return 0
    run_elementwise_add(args.M, args.N, dtype, args.skip_ref_check, args.benchmark, args.warmup_iterations,
                        args.iterations)
    return 0


if __name__ == "__main__":
    sys.exit(main())
