"""cute.gemm over several k-blocks with warpgroup MMAs: the first k-block takes Field.ACCUMULATE as set, the
others add to the accumulators (scale-d 1), as CuTe DSL's cute.gemm does; the field itself is left as it was."""
import re

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
import warpweave.utils.hopper_helpers as sm90
from warpweave.cute.nvgpu import warpgroup
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

M, N, K = 64, 64, 32


def _host(accumulate_first):
    @cute.kernel
    def kern(tiled_mma: cute.TiledMma, sA_layout: cute.ComposedLayout, sB_layout: cute.ComposedLayout,
             out: cute.Tensor):
        smem = utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float16, sA_layout.outer, 1024, swizzle=sA_layout.inner)
        sB = smem.allocate_tensor(cutlass.Float16, sB_layout.outer, 1024, swizzle=sB_layout.inner)
        tidx, _, _ = cute.arch.thread_idx()
        thr = tiled_mma.get_slice(tidx)
        tCrA = tiled_mma.make_fragment_A(thr.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr.partition_B(sB))
        acc = thr.make_fragment_C(thr.partition_shape_C((M, N)))
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, accumulate_first)
        warpgroup.fence()
        cute.gemm(tiled_mma, acc, tCrA[None, None, None, 0], tCrB[None, None, None, 0], acc)  # two k-blocks
        # a second gemm: the field still says what the program set
        cute.gemm(tiled_mma, acc, tCrA[None, None, 0, 0], tCrB[None, None, 0, 0], acc)
        warpgroup.commit_group()
        warpgroup.wait_group(0)
        out[tidx] = acc[0]

    @cute.jit
    def host(out: cute.Tensor):
        tiled_mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, warpgroup.OperandMajorMode.K,
                                                warpgroup.OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (M, N))
        sA = sm90.make_smem_layout_a(utils.LayoutEnum.ROW_MAJOR, (M, N, K), cutlass.Float16, 1)
        sB = sm90.make_smem_layout_b(utils.LayoutEnum.ROW_MAJOR, (M, N, K), cutlass.Float16, 1)
        kern(tiled_mma, sA, sB, out).launch(grid=[1, 1, 1], block=[128, 1, 1])

    return host


def _scale_d(ptx):
    """Each wgmma's scale-d predicate as a constant (True/False) where the PTX sets it from one."""
    consts = dict(re.findall(r"mov\.pred\s+(%p\d+),\s*(-?\d+);", ptx))
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+),\s*(-?\d+);", ptx))
    out = []
    for m in re.finditer(r"wgmma\.mma_async[^;]*\}, %rd\d+, %rd\d+, (%?p\d*|\d+),", ptx):
        p = m.group(1)
        if p in consts:
            out.append(int(consts[p]) != 0)
            continue
        setp = re.findall(rf"setp\.ne\.\w+\s+{re.escape(p)},\s*(%r\d+|-?\d+),\s*0;", ptx[:m.start()])
        v = setp[-1] if setp else None
        out.append(int(regs.get(v, v)) != 0 if v is not None and (v in regs or v.lstrip("-").isdigit()) else None)
    return out


def test_k_blocks_after_the_first_accumulate():
    with target("sm_90a"):
        off = cute.compile(_host(False), from_dlpack(np.zeros(128, np.float32))).ptx
        on = cute.compile(_host(True), from_dlpack(np.zeros(128, np.float32))).ptx
    assert _scale_d(off) == [False, True, False], _scale_d(off)
    assert _scale_d(on) == [True, True, True], _scale_d(on)
