"""Lowering one checked task into its warps: the schedule's ops, in order, as kernel code. Works are the user's
@cute.jit methods called inline; pipeline brackets are the producer/consumer calls of the resource's pipeline
(warpweave.pipeline) on the task's PipelineState, which advances at commit and release; domain loops are run-time
loops; a work_tile_loop is a run-time loop over the WorkQueue's persistent tile scheduler (cutlass.utils).
Pipeline states and the scheduler are carried through every loop and branch; a task-local variable is carried
through a region only where a value it produces is read after it or in its next iteration."""
from __future__ import annotations

from ... import pipeline as _pipeline
from ..._dsl.base.errors import DSLValueError
from ..._dsl.device.array import Array
from ...cute import arch as _arch
from ..._dsl.tracing import control_flow as _cf
from ..._dsl.values.numeric import Numeric
from ...utils.clc_dynamic_persistent_tile_scheduler import ClcDynamicPersistentTileScheduler
from ...utils.static_persistent_tile_scheduler import StaticPersistentTileScheduler
from .resources import StageInfo
from .schedule_builder import (QUEUE_OPS, BracketCall, CapturedValue, DomainLoop, Skippable, WorkCall,
                               WorkTileLoop, bracket_role)


def state_key(resource, role):
    """Whose PipelineState an operation advances: a group's collapsed side has one cursor for all its members
    (the Merge consumer, the Fork producer); every other side has its own."""
    group = resource if getattr(resource, "is_pipeline_group", False) else resource.pipeline_group
    if group is not None and role == group.collapsed_role:
        return (group, role)
    return (resource, role)


def share_group_barriers(group, pipes):
    """Makes the members' pipelines (pipes: member -> pipeline) share the collapsed side's barriers: the first
    member's empty barriers (Merge) or full barriers (Fork)."""
    first = pipes[group.members[0]]
    # pipelines are frozen dataclasses (CuTe DSL's model): their barriers are set as CuTe DSL libraries set a
    # frozen pipeline's fields, before any code uses them
    field = "sync_object_empty" if group.collapsed_role == "consumer" else "sync_object_full"
    for m in group.members[1:]:
        object.__setattr__(pipes[m], field, getattr(first, field))


def _lead(resource):
    return resource.members[0] if getattr(resource, "is_pipeline_group", False) else resource


class TaskLowering:
    def __init__(self, manager, task):
        self.manager, self.task = manager, task
        self.variables = []  # the TaskLocalVariables this task's works fill, in first-use order
        for op in task.schedule.walk():
            for c in op.results if isinstance(op, WorkCall) else ():
                if not any(c.variable is x for x in self.variables):
                    self.variables.append(c.variable)
        self.values = {}
        self.states = {}  # (pipeline key, role) -> PipelineState
        self.tokens = {}  # (pipeline key, role) -> the try_acquire / try_wait result of the current stage
        self.schedulers = {}  # WorkQueue -> its tile scheduler
        self.loop = (None, None, None)
        self.work_tile = None

    # --- carried state --------------------------------------------------------------------------------------------
    def _mutables(self):
        return list(self.states.values()) + list(self.schedulers.values())

    def _carried(self, region):
        """The variables a region must carry: those it produces that are read after it, or read in it before it
        produces them (in the next iteration of a loop). Others are produced and read inside one pass of the
        region and stay there (vectors among them, which regions do not carry)."""
        inside = {id(op) for op in self.task.schedule.walk(region.body)}
        produced, early = set(), set()
        for op in self.task.schedule.walk(region.body):
            if isinstance(op, WorkCall):
                early.update(id(v.variable) for v in op.kwargs.values()
                             if isinstance(v, CapturedValue) and id(v.variable) not in produced)
                produced.update(id(c.variable) for c in op.results)
        later = {id(v.variable) for op in self.task.schedule.walk() if isinstance(op, WorkCall) and id(op) not in inside
                 for v in op.kwargs.values() if isinstance(v, CapturedValue)}
        return [v for v in self.variables if id(v) in produced and (id(v) in later or id(v) in early)]

    def _region(self, run, region):
        """run(body_fn, names, values, mutables) around the region's ops, carrying the task's state."""
        carried = self._carried(region)
        before = dict(self.values)

        def body_fn(*vals):
            for v, x in zip(carried, vals):
                self.values[id(v)] = x
            saved = dict(self.tokens)
            self.emit(region.body)
            self.tokens = saved
            return tuple(self.values[id(v)] for v in carried)

        names = tuple(f"{v.dtype.__name__}_var{i}" for i, v in enumerate(carried))
        outs = run(body_fn, names, tuple(self.values[id(v)] for v in carried), self._mutables())
        # What the region made and does not carry out is not visible after it.
        self.values = before
        for v, x in zip(carried, outs):
            self.values[id(v)] = x

    # --- the task ---------------------------------------------------------------------------------------------
    def run(self):
        for v in self.variables:
            self.values[id(v)] = v.initial()
        kinds = {"producer": _pipeline.PipelineUserType.Producer, "consumer": _pipeline.PipelineUserType.Consumer}
        for r in self.task.resources:
            pipe = self.manager.pipelines.get(r)
            if pipe is None:
                continue
            for role, listed in (("producer", self.task.dst_resources), ("consumer", self.task.src_resources)):
                key = state_key(r, role)
                if r in listed and key not in self.states:
                    self.states[key] = _pipeline.make_pipeline_state(kinds[role], pipe.num_stages)
        self.emit(self.task.schedule.ops)
        for (owner, role), state in self.states.items():
            if role != "producer" or not self._produces(owner):
                continue
            # The block must not exit while its stages' transfers may still land (every member's, for a group).
            members = owner.members if getattr(owner, "is_pipeline_group", False) else [owner]
            for k, m in enumerate(members):
                self.manager.pipelines[m].producer_tail(state if k == len(members) - 1 else state.clone())

    def _produces(self, owner):
        return any(isinstance(op, BracketCall) and op.action == "commit" and op.resource is owner
                   for op in self.task.schedule.walk())

    def emit(self, ops):
        for op in ops:
            if isinstance(op, WorkCall):
                self._work(op)
            elif isinstance(op, BracketCall):
                self._bracket(op)
            elif isinstance(op, DomainLoop):
                self._domain_loop(op)
            elif isinstance(op, WorkTileLoop):
                self._work_tile_loop(op)
            elif isinstance(op, Skippable):
                self._skippable(op)

    # --- ops ------------------------------------------------------------------------------------------------------
    def _stage_info(self, resource, role):
        state = self.states.get(state_key(resource, role))
        pipe = self.manager.pipelines.get(resource)
        barrier = None
        if state is not None and role == "producer" and hasattr(pipe, "producer_get_barrier"):
            # the stage's barrier as a one-element shared-memory Array, as CuTe DSL's works read it (passed to a
            # primitive as it is, or its data_ptr())
            barrier = Array(pipe.producer_get_barrier(state), shape=(1,))
        offset, start, end = self.loop
        return StageInfo(loop_offset=offset, loop_start=start, loop_end=end,
                         stage_idx=None if state is None else state.index,
                         phase=None if state is None else state.phase, barrier=barrier,
                         work_tile=self.work_tile, context=self.manager.context)

    def _work(self, op):
        kwargs = {k: self.values[id(v.variable)] if isinstance(v, CapturedValue) else v for k, v in op.kwargs.items()}
        out = op.work.call(op.resource, self._stage_info(op.resource, op.work.role), **kwargs)
        if not op.results:
            return
        outs = tuple(out) if isinstance(op.work.returns, tuple) else (out,)
        if len(outs) != len(op.results):
            raise DSLValueError(f"{op.resource.name}.{op.work.name}() returned {len(outs)} value(s) for the "
                                f"{len(op.results)} variable(s) of its returns=", op.where)
        for c, x in zip(op.results, outs):
            var = c.variable
            self.values[id(var)] = var.dtype(x) if isinstance(x, (int, float, bool, Numeric)) else x

    def _bracket(self, op):
        r, a = op.resource, op.action
        if getattr(r, "is_work_queue", False) and (a in QUEUE_OPS or r.pipeline_config is None):
            self._queue_op(r, a)
            return
        pipe = self.manager.pipelines[_lead(r)]
        role = bracket_role(a)
        state = self.states[state_key(r, role)]
        token_key = (r, role)
        group = r.pipeline_group if not getattr(r, "is_pipeline_group", False) else None
        if a == "try_acquire":
            self.tokens[token_key] = pipe.producer_try_acquire(state)
        elif a == "acquire":
            token = self.tokens.pop(token_key, None)
            if group is not None and group.collapsed_role == "producer" and r is not group.members[0]:
                # A Fork's shared full barrier is armed once, by its first member: the others only wait for
                # their stage to be empty.
                _pipeline.PipelineAsync.producer_acquire(pipe, state, token)
            else:
                pipe.producer_acquire(state, token)
        elif a == "commit":
            pipe.producer_commit(state)
            state.advance()
        elif a == "try_wait":
            self.tokens[token_key] = pipe.consumer_try_wait(state)
        elif a == "wait":
            pipe.consumer_wait(state, self.tokens.pop(token_key, None))
        elif a == "release":
            cfg = _lead(r).pipeline_config
            if cfg.kind == "tma_async" and getattr(cfg, "per_thread", {}).get("consumer"):
                # Its consumers were counted by thread: each thread arrives (the pipeline's own release arrives
                # once a warp).
                _pipeline.PipelineAsync.consumer_release(pipe, state)
            else:
                pipe.consumer_release(state)
            state.advance()

    def _queue_op(self, queue, action):
        """A static queue hands out tiles by arithmetic: only the advance does something (its wait and release
        order nothing). A fetching queue's scheduler task asks for the next tile into the stage it acquired
        (fetch_work_tile); every task reads the tile of the stage it waited on (get_and_advance_work_tile)."""
        sched = self._scheduler(queue)
        if queue.tile_scheduler_config.kind == "static":
            if action == "get_and_advance_work_tile":
                sched.advance_to_next_work()
                self.work_tile = sched.get_current_work()
            return
        pipe = self.manager.pipelines[queue]
        response = queue.tile_scheduler_config.response_ptr
        if action == "fetch_work_tile":
            state = self.states[(queue, "producer")]
            sched.advance_to_next_work(pipe.producer_get_barrier(state), response=response + state.index)
        elif action == "get_and_advance_work_tile":
            state = self.states[(queue, "consumer")]
            self.work_tile = sched.get_current_work(response=response + state.index)

    def _domain_loop(self, op):
        start, end, step = op.start, op.end, op.step
        if op.dynamic_end:
            end = end(self.task, self.work_tile.tile_idx)
        unroll = op.unroll if isinstance(op.unroll, int) and op.unroll > 1 else None
        outer = self.loop

        def run(body_fn, names, vals, mutables):
            def body(i, *v):
                self.loop = (i, start, end)
                return body_fn(*v)

            return _cf.for_range(body, (start, end, step), names, vals, op.where[1] if op.where else 0,
                                 unroll=unroll, mutables=mutables)

        self._region(run, op)
        self.loop = outer

    def _scheduler(self, queue):
        if queue not in self.schedulers:
            cfg = queue.tile_scheduler_config
            if cfg.kind == "static":
                sched = StaticPersistentTileScheduler.create(cfg.params, _arch.block_idx(), _arch.grid_dim())
            else:
                if cfg.response_ptr is None or queue.pipeline_config is None:
                    raise DSLValueError(f"WorkQueue {queue.name}: a dynamic (CLC) queue needs the responses' shared "
                                        "memory (response_ptr) and a clc_fetch_async pipeline_config",
                                        queue_where(queue))
                sched = ClcDynamicPersistentTileScheduler.create(cfg.params, _arch.block_idx(), _arch.grid_dim())
            self.schedulers[queue] = sched
        return self.schedulers[queue]

    def _work_tile_loop(self, op):
        sched = self._scheduler(op.queue)
        outer = self.work_tile
        # The schedulers update their work tile in place (and carry it), so this one object is the current tile
        # in every iteration; reading the next one is the schedule's get_and_advance_work_tile.
        work = sched.initial_work_tile_info()
        self.work_tile = work

        def run(body_fn, names, vals, mutables):
            def cond(*v):
                return work.is_valid_tile

            def body(*v):
                self.work_tile = work
                return body_fn(*v)

            return _cf.while_(cond, body, names, vals, op.where[1] if op.where else 0, mutables=mutables)

        self._region(run, op)
        self.work_tile = outer

    def _skippable(self, op):
        loop = op.loop
        skip = loop.skip_if(loop.queue, self.work_tile)

        def run(body_fn, names, vals, mutables):
            return _cf.if_(skip, lambda *v: tuple(v), body_fn, names, vals, op.where[1] if op.where else 0,
                           mutables=mutables)

        self._region(run, op)


def queue_where(queue):
    return getattr(queue, "_ts_where", None)

