"""pipeline.PipelineOrder (CUTLASS's ordered sequence barrier): `length` groups take turns in a fixed order,
group 0 first, each passing the turn to the next. A kernel of four warps (four groups of 32 threads) runs ROUNDS
rounds; in each, every group in turn appends its id to a log in shared memory (one slot per turn, the slot
counter a shared integer advanced by the group holding the turn). Taking turns in order gives the log
0, 1, 2, 3, 0, 1, ...; without the order the groups race. Compiled on the CPU for each target with mbarriers, run
on the GPU."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

GROUPS, ROUNDS, DEPTH = 4, 5, 2


def make_host(depth=DEPTH):
    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[cutlass.Int64, depth * GROUPS]
        log: cute.struct.MemRange[cutlass.Int32, GROUPS * ROUNDS + 1]

    @cute.kernel
    def turns(gLog: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        warp = tidx // 32
        lane = tidx % 32
        s = utils.SmemAllocator().allocate(Storage)
        log = s.log.get_tensor(cute.make_layout(GROUPS * ROUNDS + 1))
        if tidx == 0:
            log[GROUPS * ROUNDS] = 0                 # the next free slot
        order = pipeline.PipelineOrder.create(
            barrier_storage=s.bars.data_ptr(), depth=depth, length=GROUPS, group_id=warp,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))
        for _ in range(ROUNDS):
            order.wait()
            if lane == 0:
                slot = log[GROUPS * ROUNDS]
                log[slot] = warp
                log[GROUPS * ROUNDS] = slot + 1
            cute.arch.sync_warp()
            order.arrive()
        cute.arch.sync_threads()
        if tidx < GROUPS * ROUNDS:
            gLog[tidx] = log[tidx]

    @cute.jit
    def host(gLog: cute.Tensor):
        turns(gLog).launch(grid=[1, 1, 1], block=[32 * GROUPS, 1, 1])

    return host


def log_tensor(n=GROUPS * ROUNDS):
    return from_dlpack(np.full(n, -1, dtype=np.int32))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_order_barriers_compile_to_a_depth_by_length_array(arch):
    with target(arch):
        ptx = cute.compile(make_host(), log_tensor()).info["ptx"]
    inits = re.findall(r"^\s*mbarrier\.init\S*\s+\[[^\]]*\],\s*(\S+);", ptx, re.M)
    assert len(inits) == DEPTH * GROUPS                  # one barrier per group and depth
    assert re.search(r"mbarrier\.(try_wait|test_wait)\.parity", ptx)


def test_order_rejects_a_group_outside_the_order():
    @cute.kernel
    def k(gLog: cute.Tensor):
        s = utils.SmemAllocator().allocate_array(cutlass.Int64, 4)
        pipeline.PipelineOrder.create(barrier_storage=s, depth=1, length=4, group_id=4,
                                      producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))

    @cute.jit
    def h(gLog: cute.Tensor):
        k(gLog).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"), pytest.raises(ValueError, match="not one of the 4 groups"):
        cute.compile(h, log_tensor())


def test_a_whole_float_counts_the_members_of_a_group():
    """CuTe DSL's Hopper FMHA sizes a group with 128 / 32 (a float): a whole float is that many members."""
    assert pipeline.CooperativeGroup(pipeline.Agent.Thread, 128 / 32).size == 4
    with pytest.raises(ValueError, match="whole number"):
        pipeline.CooperativeGroup(pipeline.Agent.Thread, 2.5)


# At depth 1 one turn is in flight: the log is in turn order. At depth d, d turns are (group 0 starts a phase ahead at
# every depth, as CUTLASS's ordered sequence barrier does: a ping-pong kernel's mainloop and epilogue are each in
# order, not the two together), so groups of different depths may write the log at once: only depth 1 is logged.
@requires_gpu
@pytest.mark.parametrize("depth", [1])
def test_groups_take_turns_in_order(depth):
    import torch

    out = torch.full((GROUPS * ROUNDS,), -1, dtype=torch.int32, device="cuda")
    make_host(depth)(from_dlpack(out))
    torch.cuda.synchronize()
    assert out.cpu().tolist() == list(range(GROUPS)) * ROUNDS
