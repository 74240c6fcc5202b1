"""PipelineProducer / PipelineConsumer (pipe.make_participants()): the handle API over the pipelines.

Compiled for sm_90a on the CPU: a warp-specialized kernel (warp 0 produces through a ring of S stages, warp 1
consumes) whose handles name the stage they were taken at while the participants advance; the barriers they wait
and arrive on; try_acquire / try_wait tokens; reset() of the count; a commit without a stage refused. On the GPU
(skipped here): the kernel streams N values through the ring and every one arrives, in order, for several S.
"""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def test_public_names():
    from warpweave.pipeline import PipelineConsumer, PipelineProducer

    assert PipelineProducer.ImmutableResourceHandle is not PipelineConsumer.ImmutableResourceHandle
    assert "PipelineProducer" in pipeline.__all__ and "PipelineConsumer" in pipeline.__all__


def make_stream(stages, seen=None, carried_handle=False):
    """res[i] = i + 1, passed value by value from warp 0 to warp 1 through `stages` shared-memory slots (with
    carried_handle, the producer takes its first stage before the loop and each next one at the end of a trip: the
    handle is carried through the dynamic loop, as CuTe DSL's attention programs do)."""

    @cute.struct
    class Storage:
        bars: cute.struct.MemRange[cutlass.Int64, 2 * stages]
        buf: cute.struct.Align[cute.struct.MemRange[cutlass.Float32, stages], 128]

    @cute.kernel
    def stream(res: cute.Tensor):
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        s = utils.SmemAllocator().allocate(Storage)
        pipe = pipeline.PipelineAsync.create(
            barrier_storage=s.bars.data_ptr(), num_stages=stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))
        slots = s.buf.get_tensor(cute.make_layout(stages))
        producer, consumer = pipe.make_participants()
        if cutlass.const_expr(seen is not None):
            first = producer.acquire_and_advance()
            seen["first"] = (first.index, first.count, producer.index, producer.count)
            first.commit()
            producer.reset()
            seen["reset"] = producer.count
            producer.tail()
        else:
            if warp == 0 and cutlass.const_expr(carried_handle):
                handle = producer.acquire_and_advance()
                for i in cutlass.range(1, cute.size(res), unroll=1):
                    slots[handle.index] = cutlass.Float32(handle.count + 1)
                    handle.commit()
                    handle = producer.acquire_and_advance()
                slots[handle.index] = cutlass.Float32(handle.count + 1)
                handle.commit()
                producer.tail()
            elif warp == 0:
                for i in cutlass.range(cute.size(res), unroll=1):
                    handle = producer.acquire_and_advance()
                    slots[handle.index] = cutlass.Float32(handle.count + 1)
                    handle.commit()
                producer.tail()
            if warp == 1:
                for i in cutlass.range(cute.size(res), unroll=1):
                    token = consumer.try_wait()
                    handle = consumer.wait_and_advance(token)
                    res[i] = slots[handle.index]
                    handle.release()

    @cute.jit
    def launch(res: cute.Tensor):
        stream(res).launch(grid=[1, 1, 1], block=[64, 1, 1])

    return launch


def test_handles_snapshot_the_state():
    seen = {}
    with target("sm_90a"):
        ptx = cute.compile(make_stream(4, seen), from_dlpack(np.zeros(8, np.float32))).info["ptx"]
    idx, cnt, now_idx, now_cnt = seen["first"]
    # the handle keeps the stage it was taken at; the producer has moved on
    assert (int(idx), int(cnt)) == (0, 0) and (int(now_idx), int(now_cnt)) == (1, 1)
    assert int(seen["reset"]) == 0
    assert "mbarrier.arrive" in ptx


def test_a_handle_is_carried_through_a_dynamic_loop():
    # the handle's stage (count, index, phase) is carried with the producer's own: the loops stay loops
    with target("sm_90a"):
        c = cute.compile(make_stream(3, carried_handle=True), from_dlpack(np.zeros(8, np.float32)))
        plain = cute.compile(make_stream(3), from_dlpack(np.zeros(8, np.float32)))
    assert c.ir.count('"scf.for"') == plain.ir.count('"scf.for"') >= 2 and "mbarrier.arrive" in c.info["ptx"]


def test_the_state_by_cute_dsls_private_name_is_the_participants():
    # CuTe DSL programs read a participant's state by its mangled private name (producer._PipelineProducer__state)
    @cute.kernel
    def k(g: cute.Tensor):
        bars = utils.SmemAllocator().allocate_array(cutlass.Int64, 4, byte_alignment=8)
        pipe = pipeline.PipelineAsync.create(barrier_storage=bars, num_stages=2,
                                             producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                                             consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread))
        producer, consumer = pipe.make_participants()
        assert producer._PipelineProducer__state is producer.state
        assert consumer._PipelineConsumer__state is consumer.state
        producer._PipelineProducer__state.advance()  # what the program does to it, the participant does
        assert int(producer.index) == 1 and int(consumer.index) == 0

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)))


def test_stream_kernel_barriers():
    with target("sm_90a"):
        ptx = cute.compile(make_stream(3), from_dlpack(np.zeros(8, np.float32))).info["ptx"]
    inits = re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64", ptx)
    assert len(inits) == 6                                  # full and empty barrier of each stage
    assert ptx.count("mbarrier.try_wait") >= 3              # producer wait, consumer try_wait and wait
    assert "mbarrier.arrive" in ptx


def test_tma_pipeline_handle_barrier_is_the_full_barrier():
    got = {}

    @cute.kernel
    def k(g: cute.Tensor):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4), tx_count=4096)
        producer, consumer = pipe.make_participants()
        h = producer.acquire_and_advance()
        got["barrier"], got["full0"] = h.barrier, pipe.producer_get_barrier(h._state)
        h2 = producer.acquire(producer.try_acquire())
        got["second"] = pipe.producer_get_barrier(h2._state)
        c = consumer.wait_and_advance()
        c.release()

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(h, from_dlpack(np.zeros(4, np.int32))).info["ptx"]
    assert str(got["barrier"]) == str(got["full0"]) and str(got["second"]) != str(got["full0"])
    assert ptx.count("mbarrier.arrive.expect_tx") == 2 and "4096" in ptx


def _tma_pipeline_kernel(body):
    @cute.kernel
    def k(g: cute.Tensor):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        body(bars)

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_90a"):
        return cute.compile(h, from_dlpack(np.zeros(4, np.int32))).info["ptx"]


def test_a_tma_pipeline_with_a_fixed_tidx_releases_from_every_consumer_thread():
    # tidx stands for the thread's index in choosing which lane releases: one value for all (0) makes every
    # consumer thread release, the consumer group counting threads; by default lane 0 of each warp does.
    got = {}

    def body(bars):
        for key, tidx in (("fixed", 0), ("own", None)):
            pipe = pipeline.PipelineTmaAsync.create(
                barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128), tx_count=4096, tidx=tidx)
            got[key] = pipe.is_signalling_thread

    _tma_pipeline_kernel(body)
    assert got["fixed"].is_static and bool(got["fixed"].value) is True
    assert not got["own"].is_static


def test_a_clone_that_waited_for_nothing_releases_the_stages_it_steps_through():
    # (a releaser cloned from a consumer, stepping with advance() behind the consumer that waits)
    got = {}

    def body(bars):
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4), tx_count=4096)
        _, consumer = pipe.make_participants()
        releaser = consumer.clone()
        consumer.wait_and_advance()
        consumer.wait_and_advance()
        got["indices"] = []
        for _ in range(2):
            got["indices"].append(releaser.index)
            releaser.release()
            releaser.advance()

    ptx = _tma_pipeline_kernel(body)
    assert [i.value if hasattr(i, "value") else i for i in got["indices"]] == [0, 1]
    assert ptx.count("mbarrier.arrive") >= 2


def test_commit_without_an_acquired_stage_commits_the_stage_it_is_at(monkeypatch):
    committed = []
    commit = pipeline.PipelineAsync.producer_commit
    monkeypatch.setattr(pipeline.PipelineAsync, "producer_commit",
                        lambda pipe, state: (committed.append(int(state.index)), commit(pipe, state))[1])

    @cute.kernel
    def k(g: cute.Tensor):
        smem = utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
        pipe = pipeline.PipelineAsync.create(barrier_storage=bars, num_stages=2,
                                             producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                                             consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread))
        producer, _ = pipe.make_participants()
        producer.commit()    # acquired nothing: the stage it is at
        producer.advance()
        producer.commit()
        h = producer.acquire()
        producer.advance()
        producer.commit()    # the stage acquired last, not the one it is at now
        h.commit()

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)))
    assert committed == [0, 1, 1, 1]  # it is at stage 0 again when it commits the acquired stage 1


@requires_gpu
@pytest.mark.parametrize("carried", [False, True])
@pytest.mark.parametrize("stages,n", [(1, 8), (3, 100), (5, 1000)])
def test_stream_on_the_gpu(stages, n, carried):
    import torch

    res = torch.zeros(n, device="cuda")
    cute.compile(make_stream(stages, carried_handle=carried), from_dlpack(res))(from_dlpack(res))
    torch.cuda.synchronize()
    assert torch.equal(res.cpu(), torch.arange(1, n + 1, dtype=torch.float32))
