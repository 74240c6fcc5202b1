"""The pipelines' object model, as CuTe DSL libraries (QuACK's quack/pipeline.py) build on it: a pipeline is a
frozen dataclass whose fields are (sync_object_full, sync_object_empty, num_stages, producer_mask, consumer_mask);
sync objects (PipelineAsync._make_sync_object) make and initialize one agent's barriers and arrive on this CTA's
barrier or on peers' (a rank for thread arrivals, a multicast mask for MMA commits; a TMA load's producer arms this
CTA's barrier, as CuTe DSL 4.8.1's do); create() takes consumer_mask /
producer_mask across the CTAs of a cluster. Compiled on the CPU."""
import dataclasses
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack
from warpweave.ext import when

from dsl_helpers import fresh_compilations, target  # noqa: F401 - a fixture


def _ptx(body, arch="sm_90a", cluster=(4, 1, 1)):
    @cute.kernel
    def k(g: cute.Tensor):
        body(g)

    @cute.jit
    def h(a):
        k(a).launch(grid=[cluster[0], cluster[1], 1], block=[128, 1, 1], cluster=list(cluster))

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(64, np.int32))).info["ptx"]


def _bars(n):
    return cutlass.utils.SmemAllocator().allocate_array(cutlass.Int64, n, byte_alignment=8)


def _agent(op, n=1):
    return (op, pipeline.CooperativeGroup(pipeline.Agent.Thread, n))


def test_pipelines_are_frozen_dataclasses_with_cute_dsl_fields():
    names = [f.name for f in dataclasses.fields(pipeline.PipelineAsync)]
    assert names == ["sync_object_full", "sync_object_empty", "num_stages", "producer_mask", "consumer_mask"]
    for cls in (pipeline.PipelineCpAsync, pipeline.PipelineTmaAsync, pipeline.PipelineTmaUmma,
                pipeline.PipelineUmmaAsync, pipeline.PipelineAsyncUmma, pipeline.PipelineClcFetchAsync):
        assert [f.name for f in dataclasses.fields(cls)][:5] == names and cls.__dataclass_params__.frozen
    assert dataclasses.fields(pipeline.PipelineTmaStore)[0].name == "num_stages"
    with pytest.raises(dataclasses.FrozenInstanceError):
        pipeline.NamedBarrier(1, 64).barrier_id = 2


def test_a_frozen_subclass_constructed_positionally_works_in_a_kernel():
    # QuACK's PipelineStasAsync: an extra field after the base's, built from two sync objects, positionally.
    @dataclasses.dataclass(frozen=True)
    class Exchange(pipeline.PipelineAsync):
        cluster_n: int = 1

        def consumer_release(self, state):
            lane = cute.arch.lane_idx()
            cute.arch.sync_warp()
            when(lane < self.cluster_n, lambda: self.sync_object_empty.arrive(state.index, lane))

    seen = {}

    def body(g):
        bars = _bars(4)
        full = pipeline.PipelineAsync._make_sync_object(bars, 2, _agent(pipeline.PipelineOp.AsyncThread, 1))
        empty = pipeline.PipelineAsync._make_sync_object(bars + 2, 2, _agent(pipeline.PipelineOp.AsyncThread, 12))
        cute.arch.mbarrier_init_fence()
        pipeline.agent_sync(pipeline.Agent.ThreadBlockCluster)
        p = Exchange(full, empty, 2, None, None, 4)
        seen.update(n=p.cluster_n, stages=p.num_stages, full=p.full is full, group=p.consumer_group.size)
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        p.consumer_wait(st)
        p.consumer_release(st)

    ptx = _ptx(body)
    assert seen == dict(n=4, stages=2, full=True, group=12)
    # each sync object initialized its barriers with its own group's count
    assert "mbarrier.init.shared::cta.b64" in ptx and re.search(r"mov\.(?:b|u)32\s+%r\d+, 12;", ptx)
    assert "mapa.shared::cluster.u32" in ptx and "mbarrier.arrive.shared::cluster.b64" in ptx


def test_a_recassed_create_result_keeps_its_barriers_and_takes_extra_fields():
    # QuACK's subclasses build through the base's create() and re-class the result.
    @dataclasses.dataclass(frozen=True)
    class Elected(pipeline.PipelineAsync):
        _elect_one_release: bool = False

        def consumer_release(self, state):
            if self._elect_one_release:
                when(cute.arch.elect_one(), lambda: pipeline.PipelineAsync.consumer_release(self, state))
            else:
                pipeline.PipelineAsync.consumer_release(self, state)

    def body(g):
        p = pipeline.PipelineAsync.create(num_stages=2, producer_group=pipeline.CooperativeGroup(
            pipeline.Agent.Thread), consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
            barrier_storage=_bars(4))
        object.__setattr__(p, "__class__", Elected)
        object.__setattr__(p, "_elect_one_release", True)
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        p.consumer_wait(st)
        p.consumer_release(st)

    ptx = _ptx(body, cluster=(1, 1, 1))
    assert "elect.sync" in ptx and "mbarrier.arrive.shared::cta.b64" in ptx
    assert "mapa" not in ptx      # no masks: this CTA's barriers only


def test_consumer_mask_sends_the_releases_of_every_cta_to_that_rank():
    # QuACK's tile-scheduler pipeline: consumer_mask=0, every CTA's consumers arrive on CTA 0's empty barriers.
    def body(g):
        p = pipeline.PipelineAsync.create(num_stages=2, producer_group=pipeline.CooperativeGroup(
            pipeline.Agent.Thread), consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 16),
            barrier_storage=_bars(4), consumer_mask=0, defer_sync=True)
        pipeline.pipeline_init_arrive(cute.make_layout((1, 4, 1, 1)))
        pipeline.pipeline_init_wait(cute.make_layout((1, 4, 1, 1)))
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 2)
        p.consumer_wait(st)
        p.consumer_release(st)
        p.producer_commit(pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 2))

    ptx = _ptx(body)
    remote = re.findall(r"mapa\.shared::cluster\.u32 \w+, %r\d+, (%r\d+|\d+);", ptx)
    assert len(remote) == 1                                     # the release; the commit stays in this CTA
    assert re.search(rf"mov\.(?:b|u)32\s+{re.escape(remote[0])}, 0;", ptx) or remote[0] == "0"
    assert "mbarrier.arrive.shared::cta.b64" in ptx
    assert "fence.mbarrier_init.release.cluster;" in ptx        # peers arrive on these barriers


def _rank_operands(ptx):
    """The rank register of each remote arrival, resolved to the constant moved into it."""
    consts = dict(re.findall(r"mov\.(?:b|u)32\s+(%r\d+), (\d+);", ptx))
    return [int(consts.get(r, r)) for r in re.findall(r"mapa\.shared::cluster\.u32 \w+, %r\d+, (%r\d+|\d+);", ptx)]


def test_a_thread_arrival_targets_its_rank_and_a_load_arrival_arms_this_ctas_barrier():
    # CuTe DSL 4.8.1: a thread arrival's dst is a CTA rank; a TMA load producer's arrival arms this CTA's barrier
    # whatever dst says (each CTA arms its own; the multicast copies complete bytes on every destination's), so a
    # library passing its multicast mask there (TensorRT-LLM's PipelineTmaUmma.producer_acquire) arms one barrier.
    def body(g):
        bars = _bars(4)
        threads = pipeline.PipelineAsync._make_sync_object(bars, 2, _agent(pipeline.PipelineOp.AsyncThread, 4))
        loads = pipeline.PipelineAsync._make_sync_object(bars + 2, 2, _agent(pipeline.PipelineOp.TmaLoad), 4096)
        assert loads.tx_count == 4096
        cute.arch.sync_threads()
        threads.arrive(1, 3)                  # a thread arrival: dst is a CTA rank
        loads.arrive(0, 0b1010)               # a load's arrival: this CTA's barrier
        rank = cute.arch.block_idx_in_cluster()
        loads.arrive(1, (cutlass.Int32(1) << rank) | 1)    # a mask computed in the kernel: the same

    ptx = _ptx(body, arch="sm_100a")
    assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 1
    assert "mbarrier.arrive.expect_tx.shared::cluster" not in ptx
    assert len(re.findall(r"mbarrier\.arrive\.expect_tx\.shared(?:::cta)?\.b64", ptx)) == 2 and "4096" in ptx
    assert _rank_operands(ptx) == [3]
    assert "elect.sync" in ptx                # one lane arrives for the loads


def test_mma_commits_and_thread_arrivals_take_run_time_destinations_and_the_callers_cta_group():
    # TensorRT-LLM's custom pipelines: sync objects made without a cta_group, which each arrival then names
    # (arrive(index, mask, cta_group)); masks and ranks computed from the CTA's rank in the cluster.
    def body(g):
        bars = _bars(6)
        mma = pipeline.PipelineAsync._make_sync_object(bars, 2, _agent(pipeline.PipelineOp.TCGen05Mma))
        threads = pipeline.PipelineAsync._make_sync_object(bars + 2, 2, _agent(pipeline.PipelineOp.AsyncThread))
        cute.arch.sync_threads()
        rank = cute.arch.block_idx_in_cluster()
        mask = (cutlass.Int32(1) << rank) | (cutlass.Int32(1) << (rank ^ 1))
        mma.arrive(0, mask, cute.nvgpu.tcgen05.CtaGroup.TWO)
        mma.arrive_tcgen05mma(1, None, cute.nvgpu.tcgen05.CtaGroup.TWO)   # (one kernel commits for one group)
        threads.arrive(0, rank // 2 * 2, None)
        threads.arrive_mbarrier(1, rank ^ 1)

    ptx = _ptx(body, arch="sm_100a")
    commits = re.findall(r"tcgen05\.commit\.cta_group::(\d)(\S*)", ptx)
    assert [c[0] for c in commits] == ["2", "2"], commits   # the sync object's own cta_group is ONE
    assert sorted("multicast::cluster" in c[1] for c in commits) == [False, True], commits
    assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 2


@pytest.mark.parametrize("kw,err", [
    (dict(consumer_mask=16), r"consumer_mask is the rank of a CTA of the cluster \(0..15\), got 16"),
    (dict(producer_mask=4, cta_layout_vmnk=(1, 4, 1, 1)), r"producer_mask .* \(0..3\), got 4"),
    (dict(consumer_mask=1.5), r"consumer_mask is None \(this CTA\) or a CTA rank"),
])
def test_a_bad_mask_is_an_error_at_the_users_line(kw, err):
    if "cta_layout_vmnk" in kw:
        kw = dict(kw, cta_layout_vmnk=cute.make_layout(kw["cta_layout_vmnk"]))

    def body(g):
        pipeline.PipelineAsync.create(num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
                                      consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
                                      barrier_storage=_bars(4), **kw)  # the user's line

    line = body.__code__.co_firstlineno + 1
    with pytest.raises(Exception, match=err) as info:
        _ptx(body)
    assert f"test_pipeline_object_model.py:{line}" in str(info.value)


def test_a_bad_multicast_mask_is_an_error_at_the_users_line():
    def body(g):
        commits = pipeline.PipelineAsync._make_sync_object(_bars(2), 2, _agent(pipeline.PipelineOp.TCGen05Mma))
        commits.arrive(0, 1 << 16)

    line = body.__code__.co_firstlineno + 2
    with pytest.raises(Exception, match=r"mask of 1 to 16 CTAs .* got 0x10000") as info:
        _ptx(body, arch="sm_100a")
    assert f"test_pipeline_object_model.py:{line}" in str(info.value)


def test_module_level_named_barriers_take_a_dynamic_id():
    # CuTe DSL's attention kernels give each warpgroup its own barrier: pipeline.arrive_and_wait(barrier_id=wg, ...)
    # with wg computed from the thread index.
    def body(g):
        wg = cute.arch.thread_idx()[0] // 64 + 1
        pipeline.arrive_and_wait(barrier_id=wg, num_threads=64)
        pipeline.arrive(barrier_id=3, num_threads=96)
        pipeline.arrive_and_wait(5, 128)

    ptx = _ptx(body, cluster=(1, 1, 1))
    assert re.search(r"\bbar(?:rier)?\.sync(?:\.aligned)?\s+%r\d+, 64;", ptx), ptx
    consts = dict(re.findall(r"mov\.(?:b|u)32\s+(%r\d+), (\d+);", ptx))
    arrives = re.findall(r"\bbar(?:rier)?\.arrive(?:\.aligned)?\s+(%r\d+|\d+), (%r\d+|\d+);", ptx)
    assert [tuple(int(consts.get(x, x)) for x in a) for a in arrives] == [(3, 96)]
    assert re.search(r"\bbar(?:rier)?\.sync(?:\.aligned)?\s+5, 128;", ptx)


def test_a_static_named_barrier_id_out_of_range_is_an_error_at_the_users_line():
    def body(g):
        pipeline.arrive_and_wait(barrier_id=16, num_threads=64)

    line = body.__code__.co_firstlineno + 1
    with pytest.raises(Exception, match=r"named barrier ids are 0..15, got 16") as info:
        _ptx(body, cluster=(1, 1, 1))
    assert f"test_pipeline_object_model.py:{line}" in str(info.value)


def test_named_barrier_wait_is_the_barrier_of_its_threads(fresh_compilations):
    # CuTe DSL's NamedBarrier.wait (a sync object's wait): the waiting threads are counted among num_threads, as the
    # hardware barrier counts every thread that waits at it; the same barrier as arrive_and_wait, none other.
    def of(method):
        return lambda g: getattr(pipeline.NamedBarrier(3, 64), method)()

    waits = re.findall(r"bar(?:rier)?\.sync(?:\.aligned)? [^;]*;", _ptx(of("wait"), cluster=(1, 1, 1)))
    both = re.findall(r"bar(?:rier)?\.sync(?:\.aligned)? [^;]*;", _ptx(of("arrive_and_wait"), cluster=(1, 1, 1)))
    assert waits == both and len(waits) == 1 and re.search(r"\b3, 64;", waits[0]), waits


def test_a_named_barrier_of_an_id_computed_in_the_kernel(fresh_compilations):
    # A barrier id made of a base and a phase known only in the kernel (a phase-alternating pair of barriers): the
    # barrier waits on the id the kernel computes; a static id out of range is still refused where it is made.
    def body(g):
        phase = cute.arch.block_idx()[0] % 2
        base = pipeline.NamedBarrier(4, 64)
        pipeline.NamedBarrier(base.barrier_id + phase, base.num_threads).arrive_and_wait()

    ptx = _ptx(body, cluster=(1, 1, 1))
    syncs = re.findall(r"\bbar(?:rier)?\.sync(?:\.aligned)?\s+(%r\d+|\d+), 64;", ptx)
    assert len(syncs) == 1 and syncs[0].startswith("%r"), ptx
    with pytest.raises(ValueError, match="named barrier ids are 0..15, got 16"):
        pipeline.NamedBarrier(16, 64)
