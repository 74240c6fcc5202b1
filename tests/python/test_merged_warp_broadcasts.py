"""Equal full-warp broadcasts in one block are merged into the first (compiler/merged_warp_broadcasts.cpp): a program
that makes the warp's index warp-uniform for each of its partitions (CuTe DSL's fmha) broadcast it several times in a
row, the optimiser kept every copy (the broadcast is convergent), and addresses made from them stayed apart: fmha's
second softmax role kept two equal tensor-memory bases across its loop and spilled one."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


def _two_uniform_warp_indices():
    """Each thread writes (warp * 3) + (warp * 5) + lane, the two warp indices made uniform separately."""

    @cute.kernel
    def kern(out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        lane = tidx % 32
        a = cute.arch.make_warp_uniform(cute.arch.warp_idx() % 4)
        b = cute.arch.make_warp_uniform(cute.arch.warp_idx() % 4)
        out[tidx] = a * 3 + b * 5 + lane

    @cute.jit
    def host(out: cute.Tensor):
        kern(out).launch(grid=(1, 1, 1), block=(256, 1, 1))

    return host


@pytest.mark.parametrize("arch", ["sm_100a", "sm_90a"])
def test_one_broadcast_left(arch, fresh_compilations):
    with target(arch):
        c = cute.compile(_two_uniform_warp_indices(), from_dlpack(np.zeros(256, np.int32)))
    body = c.ptx[c.ptx.index(".entry"):]
    assert len(re.findall(r"\bshfl\.sync\.idx", body)) == 1, body


@requires_gpu
def test_two_uniform_warp_indices_on_the_gpu():
    import torch

    out = torch.full((256,), -1, dtype=torch.int32, device="cuda")
    _two_uniform_warp_indices()(from_dlpack(out))
    t = np.arange(256)
    np.testing.assert_array_equal(out.cpu().numpy(), ((t // 32) % 4) * 8 + t % 32)
