"""A warpgroup MMA's ACCUMULATE field first set inside a run-time loop (CuTe DSL's persistent GEMM sets it at the
top of each tile's loop): every atom has its fields from the start (the op's defaults), so the loop carries the
field instead of finding a value it did not enter with."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def test_accumulate_first_set_inside_a_while_loop():
    try:
        import warpweave.utils.hopper_helpers as sm90
        from warpweave.cute.nvgpu import warpgroup
    except ImportError as e:
        pytest.skip(f"no Hopper backend: {e}")
    K = warpgroup.OperandMajorMode.K

    @cute.kernel
    def k(g: cute.Tensor, tiles: cutlass.Int32):
        mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32, (1, 1, 1),
                                          tiler_mn=(64, 64))
        layout = sm90.make_smem_layout_a(cutlass.utils.LayoutEnum.ROW_MAJOR, (64, 64, 64), cutlass.Float16, 1)
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, swizzle=layout.inner)
        sB = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, swizzle=layout.inner)
        tidx, _, _ = cute.arch.thread_idx()
        thr = mma.get_slice(tidx)
        tCrA = mma.make_fragment_A(thr.partition_A(sA))
        tCrB = mma.make_fragment_B(thr.partition_B(sB))
        acc = cute.make_rmem_tensor(mma.partition_shape_C((64, 64)), cutlass.Float32)
        tile = cutlass.Int32(0)
        while tile < tiles:
            mma.set(warpgroup.Field.ACCUMULATE, False)   # first set here, inside the loop
            warpgroup.fence()
            for kb in cutlass.range_constexpr(4):
                cute.gemm(mma, acc, tCrA[None, None, kb, 0], tCrB[None, None, kb, 0], acc)
                mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
            warpgroup.wait_group(0)
            tile += 1
        g[tidx] = acc[0]

    @cute.jit
    def j(g, tiles: cutlass.Int32):
        k(g, tiles).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_90a"):
        c = cute.compile(j, from_dlpack(np.zeros(128, dtype=np.float32)), 3)
    assert c.ir.count('"scf.while"') == 1
    assert "wgmma.mma_async" in c.ptx and c.ptx.count("wgmma.mma_async") >= 4
