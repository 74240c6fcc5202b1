"""Loads and stores at a constant shared-memory address (the dynamic shared array's start plus a fixed offset) that only
some lanes of a warp run (behind a branch on the lane's index) address it from a register holding the array's start,
with the offset in the instruction, as the other shared-memory accesses do; the array's symbol is not written into
their address. Elsewhere the code generator's form is kept.

The code generator would fold the symbol into such an access (`[symbol+offset]`). CuTe DSL's
dense_blockscaled_gemm_persistent_amax reads the four epilogue warps' partial maxima from fixed words of shared
memory in its first lane only: in that form, ptxas (CUDA 13.0) kept the warp's index in a per-thread register
across the kernel instead of a uniform one, and what the tile scheduler and the epilogue derive from it with it
(61 registers, against 42 with the register form; CuTe DSL's PTX, which takes the array's start through a warp
shuffle, never has the symbol in an address). Rewriting the constant accesses of blocks every lane runs as well (each
warp role's read of the tensor-memory address word) moved other kernels' registers both ways, once into spills."""
import re

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.runtime import make_fake_tensor

from dsl_helpers import target

WARPS = 4


@cute.kernel
def _partial_maxima(g: cute.Tensor, out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    warp = tidx // 32
    s = utils.SmemAllocator().allocate_tensor(cutlass.Float32, cute.make_layout((WARPS,)), byte_alignment=16)
    v = cute.arch.warp_reduction_max(g[tidx])
    if tidx % 32 == 0:
        s[warp] = v
    cute.arch.barrier()
    if tidx == 0:
        best = s[0]
        for i in cutlass.range_constexpr(1, WARPS):
            best = cute.arch.fmax(best, s[i])
        out[0] = best
    # every lane: the code generator's own form
    out[1 + tidx] = s[1]


@cute.jit
def _host(g: cute.Tensor, out: cute.Tensor):
    _partial_maxima(g, out).launch(grid=[1, 1, 1], block=[32 * WARPS, 1, 1])


def test_constant_shared_addresses_behind_a_lane_branch_come_from_a_register():
    with target("sm_90a"):
        compiled = cute.compile(_host, make_fake_tensor(cutlass.Float32, (32 * WARPS,)),
                                make_fake_tensor(cutlass.Float32, (1 + 32 * WARPS,)))
    loads = re.findall(r"\bld\.shared\.[\w.]+\s+(\{[^}]*\}|%\w+),\s*\[([^\]]+)\]", compiled.ptx)
    # the first lane's reads of the four fixed words (one vector) and every lane's read of word 1
    by_width = {("v4" if "{" in regs else "b32"): address for regs, address in loads}
    assert set(by_width) == {"v4", "b32"}, loads
    assert by_width["v4"].startswith("%"), loads
    assert not by_width["b32"].startswith("%"), loads
