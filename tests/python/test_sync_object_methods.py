"""A sync object's (MbarrierArray's) other methods, as CuTe DSL 4.8.1 has them: test_wait looks at a phase once
(no waiting), max() is the largest arrival count, arrive_and_expect_tx_with_dst arms this CTA's barrier or a peer's
(dst a rank) from every calling thread whatever the agent, recast_to_new_op_type gives a sync object over the same
barriers that arrives as another agent, arrive_and_wait is an arrival then a wait. Compiled on the CPU; the
properties are read off the PTX."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, target  # noqa: F401 - a fixture


def _ptx(body, cluster=4):
    @cute.kernel
    def k(g: cute.Tensor):
        body(g)

    @cute.jit
    def h(a):
        k(a).launch(grid=[cluster, 1, 1], block=[64, 1, 1], cluster=[cluster, 1, 1])

    with target("sm_100a"):
        return cute.compile(h, from_dlpack(np.zeros(64, np.int32))).info["ptx"]


def _sync_object(op, n=4, tx_count=None):
    bars = cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, n, byte_alignment=8)
    agent = (op, pipeline.CooperativeGroup(pipeline.Agent.Thread, 1))
    return pipeline.PipelineAsync._make_sync_object(bars, n, agent, tx_count)


def test_test_wait_looks_once_and_try_wait_may_wait():
    def body(g):
        so = _sync_object(pipeline.PipelineOp.AsyncThread)
        cute.arch.sync_threads()
        done = so.test_wait(1, g[0])
        assert isinstance(done, cutlass.Boolean)
        g[1] = cutlass.Int32(done)
        g[2] = cutlass.Int32(so.try_wait(2, g[0]))

    ptx = _ptx(body)
    assert len(re.findall(r"mbarrier\.test_wait\.parity", ptx)) == 1
    assert len(re.findall(r"mbarrier\.try_wait\.parity", ptx)) == 1


def test_max_is_the_largest_arrival_count():
    seen = []

    def body(g):
        so = _sync_object(pipeline.PipelineOp.AsyncThread)
        seen.append(so.max())
        cute.arch.mbarrier_init(so.get_barrier(0), so.max())

    ptx = _ptx(body)
    assert seen == [(1 << 20) - 1] and type(seen[0]) is int
    assert str((1 << 20) - 1) in ptx


@pytest.mark.parametrize("op", [pipeline.PipelineOp.AsyncThread, pipeline.PipelineOp.TmaLoad])
def test_arrive_and_expect_tx_with_dst_arms_this_cta_or_the_rank_from_every_thread(op):
    def body(g):
        so = _sync_object(op, tx_count=4096 if op is pipeline.PipelineOp.TmaLoad else None)
        cute.arch.sync_threads()
        so.arrive_and_expect_tx_with_dst(0, 1024)                 # this CTA
        so.arrive_and_expect_tx_with_dst(1, 512, 3)               # the CTA of rank 3
        rank = cute.arch.block_idx_in_cluster()
        so.arrive_and_expect_tx_with_dst(2, g[0], rank ^ 1)       # run-time bytes and rank

    ptx = _ptx(body)
    assert "elect.sync" not in ptx            # no lane elected: each calling thread arrives
    assert len(re.findall(r"mbarrier\.arrive\.expect_tx\.shared(?:::cta)?\.b64", ptx)) == 1
    assert len(re.findall(r"mbarrier\.arrive\.expect_tx\.shared::cluster\.b64", ptx)) == 2
    assert "1024" in ptx and "512" in ptx


def test_arrive_and_expect_tx_with_dst_refuses_a_rank_outside_the_cluster():
    def body(g):
        _sync_object(pipeline.PipelineOp.AsyncThread).arrive_and_expect_tx_with_dst(0, 64, 16)

    with pytest.raises(Exception, match=r"rank of a CTA of the cluster \(0..15\), got 16"):
        _ptx(body)


def test_a_recast_sync_object_arrives_as_its_new_agent_on_the_same_barriers():
    def body(g):
        threads = _sync_object(pipeline.PipelineOp.AsyncThread)
        loads = threads.recast_to_new_op_type(pipeline.PipelineOp.TmaLoad)
        assert loads is not threads and loads.op_type is pipeline.PipelineOp.TmaLoad
        assert threads.op_type is pipeline.PipelineOp.AsyncThread     # the original is unchanged
        assert loads.get_barrier(2) is not None and loads.num == threads.num
        cute.arch.sync_threads()
        loads.arrive(2, None)          # one elected lane, no bytes: the original had no tx_count
        threads.arrive(2, None)        # each thread's plain arrival

    ptx = _ptx(body)
    assert "elect.sync" in ptx
    assert len(re.findall(r"mbarrier\.arrive\.expect_tx\.shared(?:::cta)?\.b64", ptx)) == 1
    assert len(re.findall(r"mbarrier\.arrive\.shared(?:::cta)?\.b64", ptx)) == 1


def test_a_recast_to_a_store_is_refused():
    def body(g):
        _sync_object(pipeline.PipelineOp.AsyncThread).recast_to_new_op_type(pipeline.PipelineOp.TmaStore)

    with pytest.raises(Exception, match="other than TmaStore"):
        _ptx(body)


def test_arrive_and_wait_arrives_then_waits():
    def body(g):
        so = _sync_object(pipeline.PipelineOp.AsyncThread)
        cute.arch.sync_threads()
        so.arrive_and_wait(1, g[0], 2)

    ptx = _ptx(body)
    arrive = ptx.find("mbarrier.arrive.shared::cluster.b64")
    wait = ptx.find("mbarrier.try_wait.parity")
    assert 0 <= arrive < wait, (arrive, wait)
