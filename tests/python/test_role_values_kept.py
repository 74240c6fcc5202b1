"""The values that the compiler computes again in each warp role (compiler/warp_role_values.cpp) and reads again where
they are used (the launch's extents, compiler/launch_constants.cpp) stay there down to the PTX
(compiler/role_values_kept.cpp), in the innermost role around their uses.

The code generator's common-subexpression elimination had merged equal copies of sibling roles into one above the
roles (its partial-redundancy step, where the copies sit in the roles' loops), and a role that branches into roles
of its own shared one copy among them: the value lived across every role again. CuTe DSL's mamba2_ssd, whose roles
run at register ceilings from 48 to 208, spilled the grid's extents and its tile count (a product of two arguments)
so: 16 bytes stored, 136 reloaded under ptxas 13.0; 8 and 8 now, none of it across roles."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

WARPS = 4


def _persistent_roles():
    """A persistent scheduler set up before the roles, as CuTe DSL's kernels do (the tile count m * n, the grid's
    size as the stride), and walked in each role: tiles from the block's index, an inner loop of `steps` per tile.
    Warps 0 and 1 walk it; warps 2 and 3 form a role that branches again (warp 2, warp 3), each walking it too."""

    @cute.jit
    def walk(bidx, count, stride, steps, scale: cutlass.Constexpr):
        tile = bidx
        acc = cutlass.Int32(0)
        while tile < count:
            for k in cutlass.range(steps):
                acc += tile * scale + k
            tile += stride
        return acc

    @cute.kernel
    def kern(out: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32, steps: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        gx, gy, gz = cute.arch.grid_dim()
        count = m * n
        stride = gx * gy * gz
        lane = tidx % 32
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            out[bidx, 0, lane] = walk(bidx, count, stride, steps, 3) + lane
        if warp == 1:
            out[bidx, 1, lane] = walk(bidx, count, stride, steps, 5) - lane
        if warp >= 2:
            if warp == 2:
                out[bidx, 2, lane] = walk(bidx, count, stride, steps, 7) + 2 * lane
            else:
                out[bidx, 3, lane] = walk(bidx, count, stride, steps, 11) - 2 * lane

    @cute.jit
    def host(out: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32, steps: cutlass.Int32,
             blocks: cutlass.Constexpr):
        kern(out, m, n, steps).launch(grid=(blocks, 1, 1), block=(32 * WARPS, 1, 1))

    return host


def _want(blocks, m, n, steps):
    out = np.zeros((blocks, WARPS, 32), np.int64)
    lane = np.arange(32)
    for b in range(blocks):
        tiles = np.arange(b, m * n, blocks)
        for w, (scale, sign) in enumerate(((3, 1), (5, -1), (7, 2), (11, -2))):
            out[b, w] = (tiles * scale).sum() * steps + len(tiles) * (steps * (steps - 1) // 2) + sign * lane
    return out.astype(np.int32)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_roles_compute_the_walk_themselves(arch, fresh_compilations):
    with target(arch):
        ptx = cute.compile(_persistent_roles(), from_dlpack(np.zeros((4, WARPS, 32), np.int32)), cutlass.Int32(3),
                           cutlass.Int32(5), cutlass.Int32(2), 4).ptx
    body = ptx[ptx.index(".entry"):]
    # Up to the first branch on the warp's index, nothing of the walks: neither the block's index nor the grid's
    # extents, nor the tile count (the only multiplication there is of the kernel's arguments)
    before_roles = body[:body.index("bra")]
    assert not re.search(r"%n?ctaid|\bmul\.|\bmad\.", before_roles), before_roles
    # each of the four walks reads the block's index and the grid's extent and multiplies the tile count itself:
    # warps 2 and 3 too, not once for both in the role around them
    assert len(re.findall(r"%ctaid\.x", body)) == 4, body
    assert len(re.findall(r"%nctaid\.x", body)) >= 4, body


@requires_gpu
@pytest.mark.parametrize("blocks,m,n,steps", [(1, 1, 1, 1), (4, 3, 5, 2), (7, 2, 9, 0), (40, 3, 2, 3)])
def test_roles_walks_on_the_gpu(blocks, m, n, steps):
    import torch

    out = torch.full((blocks, WARPS, 32), -1, dtype=torch.int32, device="cuda")
    _persistent_roles()(from_dlpack(out), cutlass.Int32(m), cutlass.Int32(n), cutlass.Int32(steps), blocks)
    np.testing.assert_array_equal(out.cpu().numpy(), _want(blocks, m, n, steps))
