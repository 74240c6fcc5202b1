"""A value that one warp role updates and another role, run by other warps, reads from before the roles: the reading
role starts from the value before the first role, not from the merge at the first role's end
(compiler/values_past_other_roles.cpp). CuTe DSL's Blackwell fmha shares a pipeline state so between its MMA role and
a softmax role: the merge lived across the MMA role at its 32-register ceiling and spilled."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

WARPS = 3


def _roles_sharing_a_phase():
    """Warp 0 flips a phase `steps` times; warp 1 starts from the same variable (its initial 1: warp 1 never runs
    warp 0's role) and sums it while flipping it; warp 2 reads it once (also 1)."""

    @cute.kernel
    def kern(out: cute.Tensor, steps: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        lane = tidx % 32
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        phase = cutlass.Int32(1)
        if warp == 0:
            acc = cutlass.Int32(0)
            for _ in cutlass.range(steps):
                phase = phase ^ 1
                acc += phase * 5 + lane
            out[0, lane] = acc
        if warp == 1:
            acc = cutlass.Int32(0)
            for _ in cutlass.range(steps):
                acc += phase * 7 + lane
                phase = phase ^ 1
            out[1, lane] = acc
        if warp == 2:
            out[2, lane] = phase * 11 + lane

    @cute.jit
    def host(out: cute.Tensor, steps: cutlass.Int32):
        kern(out, steps).launch(grid=(1, 1, 1), block=(32 * WARPS, 1, 1))

    return host


def _want(steps):
    lane = np.arange(32)
    out = np.zeros((WARPS, 32), np.int64)
    flipped = np.array([(i + 1) % 2 == 0 for i in range(steps)], np.int64)  # warp 0: 0, 1, 0, ... after each flip
    out[0] = (flipped * 5).sum() + steps * lane
    start = np.array([1 - i % 2 for i in range(steps)], np.int64)  # warp 1: 1, 0, 1, ... before each flip
    out[1] = (start * 7).sum() + steps * lane
    out[2] = 11 + lane
    return out.astype(np.int32)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_no_merge_before_the_roles(arch, fresh_compilations):
    with target(arch):
        c = cute.compile(_roles_sharing_a_phase(), from_dlpack(np.zeros((WARPS, 32), np.int32)), cutlass.Int32(3))
    body = c.ptx[c.ptx.index(".entry"):]
    # Up to the first branch on the warp's index, no register is set to the phase's initial value for a later role.
    before_roles = body[:body.index("bra")]
    assert not re.search(r"mov\.[bsu]32\s+%r\d+, 1;", before_roles), before_roles


@requires_gpu
@pytest.mark.parametrize("steps", [0, 1, 2, 5])
def test_roles_sharing_a_phase_on_the_gpu(steps):
    import torch

    out = torch.full((WARPS, 32), -1, dtype=torch.int32, device="cuda")
    _roles_sharing_a_phase()(from_dlpack(out), cutlass.Int32(steps))
    np.testing.assert_array_equal(out.cpu().numpy(), _want(steps))
