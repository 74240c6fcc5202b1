"""Values that each warp role computes for itself from the kernel's arguments and the launch's special registers (a
persistent tile scheduler's first tile: the block's index divided by extents passed as arguments) stay inside the
roles (compiler/warp_role_values.cpp). The optimiser hoists the roles' common instructions above the branches on the
warp's index, so that one copy lives across every role; the assembler rematerialises neither the block's index nor a
quotient, and CuTe DSL's mixed_input_gemm with 8-bit A spilled the block's index where a role ran at its register
ceiling. Each role now computes them at its top, as in the program."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

WARPS = 3


def _roles_dividing_the_block_index():
    """Warp 0 and warp 1 each split the block's index into (quotient, remainder) by `m` and by `n`, then walk
    `steps` tiles strided by the grid, as a persistent scheduler does; warp 2 only writes the block's index."""

    @cute.kernel
    def kern(out: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32, steps: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        gx, _, _ = cute.arch.grid_dim()
        lane = tidx % 32
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            tile = bidx
            acc = cutlass.Int32(0)
            for _ in cutlass.range(steps):
                acc += (tile // m) * 1000 + (tile % m) * 10 + lane
                tile += gx
            out[bidx, 0, lane] = acc
        if warp == 1:
            tile = bidx
            acc = cutlass.Int32(0)
            for _ in cutlass.range(steps):
                acc += (tile // m) * 7 + (tile % m) * 3 + (tile // n) * 11 - lane
                tile += gx
            out[bidx, 1, lane] = acc
        if warp == 2:
            out[bidx, 2, lane] = bidx * 5 + lane

    @cute.jit
    def host(out: cute.Tensor, m: cutlass.Int32, n: cutlass.Int32, steps: cutlass.Int32, blocks: cutlass.Constexpr):
        kern(out, m, n, steps).launch(grid=(blocks, 1, 1), block=(32 * WARPS, 1, 1))

    return host


def _want(blocks, m, n, steps):
    out = np.zeros((blocks, WARPS, 32), np.int64)
    lane = np.arange(32)
    for b in range(blocks):
        tiles = b + blocks * np.arange(steps)
        out[b, 0] = ((tiles // m) * 1000 + (tiles % m) * 10).sum() + steps * lane
        out[b, 1] = ((tiles // m) * 7 + (tiles % m) * 3 + (tiles // n) * 11).sum() - steps * lane
        out[b, 2] = b * 5 + lane
    return out.astype(np.int32)


def _compiled(arch):
    out = np.zeros((4, WARPS, 32), np.int32)
    with target(arch):
        return cute.compile(_roles_dividing_the_block_index(), from_dlpack(out), cutlass.Int32(3), cutlass.Int32(5),
                            cutlass.Int32(2), 4)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_each_role_divides_the_block_index_itself(arch, fresh_compilations):
    body = _compiled(arch).ptx
    body = body[body.index(".entry"):]
    # Up to the first branch on the warp's index (the first conditional branch), nothing is computed for the roles.
    before_roles = body[:body.index("bra")]
    assert not re.search(r"\bdiv\.|\brem\.|%ctaid", before_roles), before_roles
    # The two roles that divide each read the block's index and divide it themselves.
    assert len(re.findall(r"%ctaid\.x", body)) >= WARPS, body
    assert len(re.findall(r"\bdiv\.[su]32", body)) >= 2, body


def test_a_kernel_without_roles_keeps_one_read(fresh_compilations):
    """Branches on a thread's own index (not the warp's) are not roles: their common values stay where they were."""

    @cute.kernel
    def kern(out: cute.Tensor, m: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        if tidx % 2 == 0:
            out[bidx, tidx] = bidx // m + tidx
        else:
            out[bidx, tidx] = bidx // m - tidx

    @cute.jit
    def host(out: cute.Tensor, m: cutlass.Int32):
        kern(out, m).launch(grid=(2, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        c = cute.compile(host, from_dlpack(np.zeros((2, 32), np.int32)), cutlass.Int32(3))
    assert len(re.findall(r"%ctaid\.x", c.ptx)) == 1, c.ptx


@requires_gpu
@pytest.mark.parametrize("seed", range(4))
def test_roles_values_on_the_gpu(seed):
    """Random grids, divisors and step counts (the divisors down to 1 and above the block count): every role's
    values equal numpy's."""
    import torch

    rng = np.random.default_rng(seed)
    blocks = int(rng.integers(1, 40))
    m, n, steps = (int(x) for x in (rng.integers(1, 50), rng.integers(1, 9), rng.integers(0, 6)))
    out = torch.full((blocks, WARPS, 32), -1, dtype=torch.int32, device="cuda")
    _roles_dividing_the_block_index()(from_dlpack(out), cutlass.Int32(m), cutlass.Int32(n), cutlass.Int32(steps),
                                      blocks)
    np.testing.assert_array_equal(out.cpu().numpy(), _want(blocks, m, n, steps))
