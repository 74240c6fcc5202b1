"""cutlass.experimental.task_scheduling: task graphs checked before they are lowered, and lowered onto the pipelines.

Checked on the CPU: the dependency order puts every resource after those it depends on (random graphs); a cycle,
overlapping warps, a work on a resource its task does not list, a method that is no work, a work outside its
pipeline bracket, a value taken before it is produced are errors at the user's line that caused them. Compiled for
sm_90a: a two-task stream (warp 0 produces into a ring of shared-memory stages, warp 1 consumes) has one barrier
pair per stage, initialized once, the producer waiting on `empty` and the consumer on `full`; a persistent copy's
skipped tiles run no copy. On the GPU (skipped here): the stream delivers every value in order.
"""
import dataclasses
import random
import re
from typing import Any

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave._dsl.base.errors import DSLValueError
from warpweave.cute.runtime import from_dlpack
from warpweave.experimental.task_scheduling import (MemoryResource, PipelineConfig, SmemAllocation, SmemAllocator,
                                                    StageInfo, Task, TaskLocalVariable, TaskManager, WorkAttr,
                                                    consumer_work, domain_loop, producer_work, schedule)
from warpweave.experimental.task_scheduling.graph import dependency_order

from dsl_helpers import requires_gpu, target


# --- a resource family for the checks (no kernel: schedules capture and check in Python) ------------------------

@dataclasses.dataclass(kw_only=True)
class Src(MemoryResource):
    value: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self):
        self.value = TaskLocalVariable(dtype=cutlass.Int32, default=cutlass.Int32(0))

    @consumer_work(returns=value)
    def get(self, stage_info: StageInfo):
        return stage_info.loop_offset

    def helper(self):
        return 1


@dataclasses.dataclass(kw_only=True)
class Dst(MemoryResource):
    @producer_work
    def put(self, stage_info: StageInfo, value):
        pass


def _line_of(marker):
    """The line of this file holding `marker` (a comment at the end of the line an error must name)."""
    for n, line in enumerate(open(__file__), 1):
        if line.rstrip().endswith("# " + marker):
            return n
    raise AssertionError(marker)


def _raises_at(marker, fn):
    with pytest.raises(DSLValueError) as e:
        fn()
    assert e.value.location is not None and e.value.location[1] == _line_of(marker), (e.value.location, str(e.value))
    return str(e.value)


@schedule
def copy(src, dst):
    with domain_loop(0, 8, 1):
        v = src.get()
        dst.put(value=v)  # put-call


def test_dependency_order_respects_every_edge():
    rng = random.Random(7)
    for trial in range(200):
        n = rng.randint(1, 9)
        rs = [Src(name=f"r{i}") for i in range(n)]
        # edges only from higher to lower index: acyclic; the order must still be found from a shuffled listing
        graph = {rs[i]: [rs[j] for j in range(i) if rng.random() < 0.4] for i in range(n)}
        listed = rs[:]
        rng.shuffle(listed)
        order = dependency_order(graph, listed, None)
        assert sorted(map(id, order)) == sorted(map(id, rs))
        pos = {id(r): k for k, r in enumerate(order)}
        for r, deps in graph.items():
            for d in deps:
                assert pos[id(d)] < pos[id(r)]


def test_a_cycle_is_an_error_at_the_task_manager():
    a, b, c = Src(name="a"), Dst(name="b"), Src(name="c")
    t = Task(name="T", src_resources=[a], dst_resources=[b], warp_idx=0, num_warps=1, schedule=copy(a, b))
    graph = {b: [a], a: [c], c: [b]}
    msg = _raises_at("cycle-here", lambda: TaskManager(tasks=[t], resource_dependency_graph=graph))  # cycle-here
    assert "cycle" in msg and "->" in msg


def test_overlapping_warps_are_an_error_at_the_later_task():
    a, b = Src(name="a"), Dst(name="b")
    t1 = Task(name="T1", src_resources=[a], dst_resources=[b], warp_idx=0, num_warps=4, schedule=copy(a, b))
    t2 = Task(name="T2", src_resources=[a], dst_resources=[b], warp_idx=3, num_warps=2, schedule=copy(a, b))  # overlap
    msg = _raises_at("overlap", lambda: TaskManager(tasks=[t1, t2], resource_dependency_graph={b: [a]}))
    assert "warp 3" in msg


def test_a_register_budget_covers_its_whole_group_of_four_warps():
    a, b = Src(name="a"), Dst(name="b")
    kw = dict(name="T", src_resources=[a], dst_resources=[b], schedule=copy(a, b), num_registers=40)
    t = Task(warp_idx=4, num_warps=1, **kw)  # budget
    _raises_at("budget", lambda: TaskManager(tasks=[t], resource_dependency_graph={b: [a]}))


def test_work_on_a_resource_the_task_does_not_list_is_an_error_at_the_call():
    @schedule
    def sched(src, dst):
        with domain_loop(0, 4):
            v = src.get()
            dst.put(value=v)  # undeclared

    a, b = Src(name="a"), Dst(name="b")
    t = Task(name="T", src_resources=[a, b], dst_resources=[], warp_idx=0, num_warps=1, schedule=sched(a, b))
    msg = _raises_at("undeclared", lambda: TaskManager(tasks=[t], resource_dependency_graph={b: [a]}))
    assert "dst_resources" in msg


def test_a_method_that_is_no_work_is_an_error_while_capturing():
    @schedule
    def sched(src, dst):
        src.helper()  # not-work

    msg = _raises_at("not-work", lambda: sched(Src(name="a"), Dst(name="b")))
    assert "neither producer nor consumer" in msg


def test_a_value_needs_a_dependency_edge_between_its_resources():
    a, b = Src(name="a"), Dst(name="b")
    t = Task(name="T", src_resources=[a], dst_resources=[b], warp_idx=0, num_warps=1, schedule=copy(a, b))
    # the error names the schedule's call that passes the value
    msg = _raises_at("put-call", lambda: TaskManager(tasks=[t], resource_dependency_graph={}))
    assert "b: [a]" in msg


@dataclasses.dataclass(kw_only=True)
class Ring(MemoryResource):
    """A ring of shared-memory stages holding one Float32 each: written by put, read by get."""

    stages: int = 2
    got: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()
    slots: Any = None

    def __post_init__(self):
        self.got = TaskLocalVariable(dtype=cutlass.Float32, default=cutlass.Float32(0))
        self.alloc = SmemAllocation("ring", dtype=cutlass.Float32, count=self.stages, alignment=128)

    def get_smem_requirements(self):
        return [self.alloc]

    @cute.jit
    def _view(self, stage_info: StageInfo):
        ptr = cute.recast_ptr(stage_info.context.smem_base.data_ptr() + self.alloc.offset, dtype=cutlass.Float32)
        self.slots = cute.make_tensor(ptr, cute.make_layout(self.stages))

    @producer_work(work_attrs=WorkAttr.AUXILIARY)
    def init_put(self, stage_info: StageInfo):
        self._view(stage_info)

    @consumer_work(work_attrs=WorkAttr.AUXILIARY)
    def init_get(self, stage_info: StageInfo):
        self._view(stage_info)

    @producer_work
    @cute.jit
    def put(self, stage_info: StageInfo):
        self.slots[stage_info.stage_idx] = cutlass.Float32(stage_info.loop_offset + 1)

    @consumer_work(returns=got)
    @cute.jit
    def get(self, stage_info: StageInfo):
        return self.slots[stage_info.stage_idx]


@dataclasses.dataclass(kw_only=True)
class Out(MemoryResource):
    res: Any = None

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, got):
        self.res[stage_info.loop_offset] = got


def make_stream(stages, bad=None):
    @cute.kernel
    def stream(res: cute.Tensor):
        n = cute.size(res)
        cfg = PipelineConfig.create_async_async_pipeline_cfg(
            num_stages=stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32))
        ring = Ring(name="ring", stages=stages, pipeline_config=cfg)
        out = Out(name="out", res=res)
        alloc = SmemAllocator()
        alloc.add_resource(ring)
        alloc.compute_layout()

        @schedule
        def produce(ring):
            ring.init_put()
            with domain_loop(0, n, 1):
                ring.acquire()
                ring.put()
                ring.commit()

        @schedule
        def consume(ring, out):
            ring.init_get()
            with domain_loop(0, n, 1):
                ring.wait()
                v = ring.get()
                if cutlass.const_expr(bad == "release-early"):
                    ring.release()
                    out.store(got=v)
                else:
                    out.store(got=v)
                    ring.release()

        @schedule
        def produce_unbracketed(ring):
            ring.init_put()
            with domain_loop(0, n, 1):
                ring.put()  # unbracketed

        p = produce_unbracketed(ring) if cutlass.const_expr(bad == "unbracketed") else produce(ring)
        tasks = [Task(name="Producer", src_resources=[], dst_resources=[ring], warp_idx=0, num_warps=1, schedule=p),
                 Task(name="Consumer", src_resources=[ring], dst_resources=[out], warp_idx=1, num_warps=1,
                      schedule=consume(ring, out))]
        tm = TaskManager(tasks=tasks, resource_dependency_graph={out: [ring]}, smem_allocator=alloc)
        tm.setup_resources_and_tasks()
        cute.arch.sync_threads()
        tm.run()

    @cute.jit
    def launch(res: cute.Tensor):
        stream(res).launch(grid=[1, 1, 1], block=[64, 1, 1])

    return launch


@pytest.mark.parametrize("stages", [1, 3])
def test_a_stream_has_one_barrier_pair_per_stage(stages):
    with target("sm_90a"):
        ptx = cute.compile(make_stream(stages), from_dlpack(np.zeros(16, np.float32))).info["ptx"]
    body = "\n".join(line for line in ptx.splitlines() if not line.strip().startswith("//"))
    consts = dict(re.findall(r"mov\.b32\s+(%r\d+),\s*(\d+);", body))
    inits = [consts.get(c, c) for c in re.findall(r"mbarrier\.init\.shared(?:::cta)?\.b64\s*\[[^\]]*\],\s*(%r\d+|\d+)",
                                                   body)]
    # full and empty barriers of each stage, each initialized once, for 32 arriving threads
    assert len(inits) == 2 * stages and set(inits) == {"32"}, inits
    waits = re.findall(r"mbarrier\.try_wait\.parity", body)
    # the producer waits on empty (in its loop and at its tail), the consumer on full: waits in both warps' code
    assert len(waits) >= 2
    assert len(re.findall(r"mbarrier\.arrive", body)) >= 2


def test_release_before_the_consumer_uses_the_value_compiles_as_a_register_copy():
    # releasing the stage before the store is allowed (the value is in registers by then)
    with target("sm_90a"):
        cute.compile(make_stream(2, bad="release-early"), from_dlpack(np.zeros(16, np.float32)))


def test_a_pipelined_work_outside_its_bracket_is_an_error_at_the_call():
    with target("sm_90a"), pytest.raises(DSLValueError) as e:
        cute.compile(make_stream(2, bad="unbracketed"), from_dlpack(np.zeros(16, np.float32)))
    assert e.value.location[1] == _line_of("unbracketed") and "acquire()" in str(e.value)


@requires_gpu
@pytest.mark.parametrize("stages", [1, 2, 4])
def test_stream_on_the_gpu_delivers_every_value_in_order(stages):
    import torch

    res = torch.zeros(100, dtype=torch.float32, device="cuda")
    make_stream(stages)(from_dlpack(res))
    torch.cuda.synchronize()
    assert res.cpu().tolist() == [float(i + 1) for i in range(100)]


# --- pipeline groups and arrival counts (checked in Python: no kernel needed) ---------------------------------

def _ring(name, threads):
    cfg = PipelineConfig.create_async_async_pipeline_cfg(
        num_stages=2, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 32),
        consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, threads))
    return Ring(name=name, stages=2, pipeline_config=cfg)


def _merge_graph(store_schedule):
    from warpweave.experimental.task_scheduling import PipelineGroup, PipelineGroupMode

    a, b, out = _ring("a", 32), _ring("b", 32), Out(name="out")
    group = PipelineGroup(name="ab", members=[a, b], mode=PipelineGroupMode.Merge)

    @schedule
    def load(ring):
        with domain_loop(0, 4):
            ring.acquire()
            ring.put()
            ring.commit()

    tasks = [Task(name="LoadA", dst_resources=[a], warp_idx=1, num_warps=1, schedule=load(group.a)),
             Task(name="LoadB", dst_resources=[b], warp_idx=2, num_warps=1, schedule=load(group.b)),
             Task(name="Store", src_resources=[a, b], dst_resources=[out], warp_idx=0, num_warps=1,
                  schedule=store_schedule(group.a, group.b, out, group))]
    return lambda: TaskManager(tasks=tasks, resource_dependency_graph={out: [a, b]})


def test_a_merge_group_releases_once_for_all_its_members():
    @schedule
    def store(a, b, out, group):
        with domain_loop(0, 4):
            a.wait()
            b.wait()
            out.store(got=a.get())
            group.release()

    _merge_graph(store)()  # accepted

    @schedule
    def store_member_release(a, b, out, group):
        with domain_loop(0, 4):
            a.wait()
            b.wait()
            a.release()  # member-release

    msg = _raises_at("member-release", _merge_graph(store_member_release))
    assert "ab.release()" in msg

    @schedule
    def store_without_wait(a, b, out, group):
        with domain_loop(0, 4):
            a.wait()
            group.release()  # group-release

    msg = _raises_at("group-release", _merge_graph(store_without_wait))
    assert "b.wait()" in msg


def test_an_async_side_counts_its_tasks_threads():
    ring, out = _ring("ring", 64), Out(name="out")  # 64 consumer arrivals, but the consumer task has 32 threads

    @schedule
    def produce(r):
        with domain_loop(0, 4):
            r.acquire()
            r.put()
            r.commit()

    @schedule
    def consume(r, o):
        with domain_loop(0, 4):
            r.wait()
            o.store(got=r.get())
            r.release()

    tasks = [Task(name="P", dst_resources=[ring], warp_idx=0, num_warps=1, schedule=produce(ring)),
             Task(name="C", src_resources=[ring], dst_resources=[out], warp_idx=1, num_warps=1,
                  schedule=consume(ring, out))]
    with pytest.raises(DSLValueError, match="counts 64 consumer arrivals"):
        TaskManager(tasks=tasks, resource_dependency_graph={out: [ring]})


def test_a_work_tile_loop_advances_its_queue_once_per_tile():
    from warpweave.experimental.task_scheduling import TileSchedulerConfig, WorkQueue, work_tile_loop

    wq = WorkQueue(name="wq", tile_scheduler_config=TileSchedulerConfig.create_static_persistent_tile_scheduler_params(
        tile_scheduler_params=None))
    out = Out(name="out")

    @schedule
    def never_advances(q, o):
        with work_tile_loop(q):  # no-advance
            q.wait()
            q.release()

    t = Task(name="T", src_resources=[wq], dst_resources=[out], warp_idx=0, num_warps=1,
             schedule=never_advances(wq, out))
    _raises_at("no-advance", lambda: TaskManager(tasks=[t], resource_dependency_graph={out: [wq]}))


# --- a vector task-local variable carried through the loop ----------------------------------------------------

@dataclasses.dataclass(kw_only=True)
class Rows(MemoryResource):
    row: cutlass.Constexpr[TaskLocalVariable] = TaskLocalVariable.uninitialized()

    def __post_init__(self):
        self.row = TaskLocalVariable(dtype=cutlass.Float32, default=cute.full((4,), 0.0, cutlass.Float32))

    @consumer_work(returns=row)
    @cute.jit
    def get(self, stage_info: StageInfo):
        return cute.full((4,), 2.0, cutlass.Float32) * cutlass.Float32(stage_info.loop_offset)


@dataclasses.dataclass(kw_only=True)
class FirstOut(MemoryResource):
    res: Any = None

    @producer_work
    @cute.jit
    def store(self, stage_info: StageInfo, got):
        self.res[stage_info.loop_offset] = got[1]


def test_a_vector_variable_flows_from_its_work_to_the_next():
    @cute.kernel
    def k(res: cute.Tensor):
        rows, out = Rows(name="rows"), FirstOut(name="out", res=res)

        @schedule
        def s(r, o):
            with domain_loop(0, cute.size(res), 1):
                v = r.get()
                o.store(got=v)

        t = Task(name="T", src_resources=[rows], dst_resources=[out], warp_idx=0, num_warps=1, schedule=s(rows, out))
        TaskManager(tasks=[t], resource_dependency_graph={out: [rows]}).run()

    @cute.jit
    def launch(res: cute.Tensor):
        k(res).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(launch, from_dlpack(np.zeros(8, np.float32))).info["ptx"]
    # the loop is static, so the stores fold to constants: res[i] = 2 * i, the element of each iteration's vector
    # (never the zero default)
    import struct

    words = re.findall(r"0f([0-9A-F]{8})", ptx)
    assert [struct.unpack(">f", bytes.fromhex(w))[0] for w in words] == [2.0 * i for i in range(8)], words


# --- a dynamic (CLC) WorkQueue: a scheduler task fetches, every task reads the stage it waited on ---------------

@dataclasses.dataclass(kw_only=True)
class TileOut(MemoryResource):
    res: Any = None

    @producer_work
    @cute.jit
    def put_one(self, stage_info: StageInfo):
        self.res[0] = cutlass.Float32(1.0)

    @producer_work
    @cute.jit
    def mark(self, stage_info: StageInfo):
        x, _, _ = stage_info.work_tile.tile_idx
        self.res[x] = cutlass.Float32(1.0)


def make_clc_copy(stages):
    import warpweave.utils as utils
    from warpweave.experimental.task_scheduling import TileSchedulerConfig, WorkQueue, work_tile_loop

    @cute.kernel
    def k(res: cute.Tensor, params: cutlass.Constexpr):
        response = utils.SmemAllocator().allocate_array(cutlass.Int128, stages, 16)
        cfg = PipelineConfig.create_clc_fetch_async_pipeline_cfg(
            num_stages=stages, num_bytes=16, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 64))
        wq = WorkQueue(name="wq", pipeline_config=cfg, tile_scheduler_config=TileSchedulerConfig.
                       create_clc_dynamic_persistent_tile_scheduler_params(tile_scheduler_params=params,
                                                                          response_ptr=response))
        out = TileOut(name="out", res=res)

        @schedule
        def work(q, o):
            with work_tile_loop(q):
                o.mark()
                q.wait()
                q.get_and_advance_work_tile()
                q.release()

        @schedule
        def fetch(q):
            with work_tile_loop(q):
                q.acquire()
                q.fetch_work_tile()
                q.commit()
                q.wait()
                q.get_and_advance_work_tile()
                q.release()

        tasks = [Task(name="Work", src_resources=[wq], dst_resources=[out], warp_idx=0, num_warps=1,
                      schedule=work(wq, out)),
                 Task(name="Scheduler", src_resources=[wq], dst_resources=[wq], warp_idx=1, num_warps=1,
                      schedule=fetch(wq))]
        tm = TaskManager(tasks=tasks, resource_dependency_graph={out: [wq]})
        tm.setup_resources_and_tasks()
        cute.arch.sync_threads()
        tm.run()

    @cute.jit
    def launch(res: cute.Tensor):
        params = utils.ClcDynamicPersistentTileSchedulerParams((8, 1, 1), (1, 1, 1))
        k(res, params).launch(grid=utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params), block=[64, 1, 1])

    return launch


def test_a_dynamic_queue_fetches_into_the_stage_it_acquired():
    with target("sm_100a"):
        ptx = cute.compile(make_clc_copy(2), from_dlpack(np.zeros(8, np.float32))).info["ptx"]
    body = "\n".join(line for line in ptx.splitlines() if not line.strip().startswith("//"))
    # the scheduler warp requests; both warps decode the response of the stage they waited on
    assert len(re.findall(r"clusterlaunchcontrol\.try_cancel", body)) >= 1
    assert len(re.findall(r"clusterlaunchcontrol\.query_cancel", body)) >= 2


def test_pdl_barriers_wait_before_and_launch_after_the_work_between_them():
    from warpweave.experimental.task_scheduling import PdlLaunchBarrier, PdlWaitBarrier

    @cute.kernel
    def k(res: cute.Tensor):
        wait, launch_ = PdlWaitBarrier(name="wait"), PdlLaunchBarrier(name="launch")
        out = TileOut(name="out", res=res)

        @schedule
        def s(w, o, l):
            w.wait_griddep()
            o.put_one()
            l.launch_griddep()

        t = Task(name="T", src_resources=[wait], dst_resources=[out, launch_], warp_idx=0, num_warps=1,
                 schedule=s(wait, out, launch_))
        TaskManager(tasks=[t], resource_dependency_graph={out: [wait], launch_: [out]}).run()

    @cute.jit
    def launch(res: cute.Tensor):
        k(res).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_90a"):
        ptx = cute.compile(launch, from_dlpack(np.zeros(8, np.float32))).info["ptx"]
    order = re.findall(r"griddepcontrol\.wait|st\.global|griddepcontrol\.launch_dependents", ptx)
    assert order == ["griddepcontrol.wait", "st.global", "griddepcontrol.launch_dependents"], order


@pytest.mark.parametrize("mode, shared, own", [("Merge", "sync_object_empty", "sync_object_full"),
                                               ("Fork", "sync_object_full", "sync_object_empty")])
def test_a_group_shares_its_collapsed_sides_barriers_between_frozen_pipelines(mode, shared, own):
    """A Merge group's members release through the first member's empty barriers, a Fork's producers fill through
    its full barriers; the pipelines are frozen dataclasses, as CuTe DSL's are."""
    from warpweave.experimental.task_scheduling import PipelineGroup, PipelineGroupMode
    from warpweave.experimental.task_scheduling.lowering import share_group_barriers

    a, b = _ring("a", 32), _ring("b", 32)
    group = PipelineGroup(name="ab", members=[a, b], mode=getattr(PipelineGroupMode, mode))
    pipes = {m: pipeline.PipelineAsync(object(), object(), 2, None, None) for m in (a, b)}
    before = getattr(pipes[b], own)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pipes[b].sync_object_empty = None
    share_group_barriers(group, pipes)
    assert getattr(pipes[b], shared) is getattr(pipes[a], shared) and getattr(pipes[b], own) is before
