"""cute.arch.lane_idx() is the lane special register (as in CuTe DSL's PTX), not the thread's x index modulo 32:
the two differ in a block whose x extent is not a multiple of 32 (the GPU test), and only from the register does
the assembler know that `lane_idx() == 0` lets a single lane through, so that an atomic behind that test is issued
as it is written instead of wrapped in a warp-wide aggregation (a vote, the lowest active lane, a reduction)."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, sass_opcodes, target


@cute.kernel
def _lanes(gL: cute.Tensor):
    x, y, _ = cute.arch.thread_idx()
    dx, _, _ = cute.arch.block_dim()
    gL[y * dx + x] = cute.arch.lane_idx()


@cute.jit
def _lanes_host(out, bx: cutlass.Constexpr, by: cutlass.Constexpr):
    _lanes(out).launch(grid=[1, 1, 1], block=[bx, by, 1])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a", "sm_120a"])
def test_lane_idx_reads_the_lane_register(arch):
    with target(arch):
        ptx = cute.compile(_lanes_host, from_dlpack(np.zeros(64, np.int32)), 16, 4).info["ptx"]
    assert re.search(r"mov\.u32\s+%r\d+, %laneid;", ptx), ptx
    assert not re.search(r"and\.b32\s+%r\d+, %r\d+, 31;", ptx), ptx   # no lane made of the thread index


def _first_lane_atomic(lane_of):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        if lane_of(t) == 0:
            cute.arch.atomic_max(gB.iterator, cutlass.Int32(gA[t]))

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[128, 1, 1])

    return h


_AGGREGATION = re.compile(r"^(VOTEU?|U?FLO|U?POPC|CREDUX|REDUX)\b")


@pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_an_atomic_behind_the_first_lane_is_not_aggregated(arch):
    def sass(lane_of):
        with target(arch):
            return sass_opcodes(cute.compile(_first_lane_atomic(lane_of), from_dlpack(np.zeros(128, np.float32)),
                                             from_dlpack(np.zeros(1, np.int32))).cubin)

    ours = sass(lambda t: cute.arch.lane_idx())
    assert any(o.startswith(("RED", "ATOMG")) for o in ours), ours
    assert not [o for o in ours if _AGGREGATION.match(o)], ours
    # the same test written on the thread index: the assembler aggregates the atomic over the warp (what the
    # register spares)
    theirs = sass(lambda t: t % 32)
    assert [o for o in theirs if _AGGREGATION.match(o)], theirs


@requires_gpu
def test_lanes_of_a_block_whose_rows_are_half_a_warp():
    import torch

    out = torch.full((64,), -1, dtype=torch.int32, device="cuda")
    _lanes_host(from_dlpack(out), 16, 4)
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [i % 32 for i in range(64)]
