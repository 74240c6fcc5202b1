"""Resources: what tasks produce into and consume from (a buffer in shared or tensor memory, a global tensor, a
queue of work tiles). A resource is a dataclass subclass of MemoryResource whose methods decorated with
@producer_work write into it and @consumer_work read out of it; a resource shared by two tasks carries a
PipelineConfig, the producer/consumer pipeline (warpweave.pipeline) that guards its stages.

Work methods have the shape `def work(self, stage_info: StageInfo, *inputs) -> value`, decorated
`@producer_work` / `@consumer_work(returns=var)` outside `@cute.jit`. The value a work returns lives in a
TaskLocalVariable (a declared, typed slot of the task that runs it) and reaches the works that take it by name.
"""
from __future__ import annotations

import dataclasses
import inspect
import math

from ... import pipeline as _pipeline
from ...cute import arch as _cute_arch
from ...cute import make_layout as _cute_make_layout
from ...cute import size as _cute_size
from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ..._dsl.values.numeric import Numeric
from .enums import PipelineGroupMode, SignalingThreads, WorkAttr
from .schedule_builder import RESERVED, capturing

__all__ = ["MemoryResource", "StageInfo", "TaskLocalVariable", "producer_work", "consumer_work", "WorkAttr",
           "PipelineConfig", "PipelineGroup", "PipelineGroupMode", "SignalingThreads", "TileSchedulerConfig",
           "PdlWaitBarrier", "PdlLaunchBarrier",
           "WorkQueue"]


class TaskLocalVariable:
    """A typed value a work returns and later works of the same task take (by the name the schedule binds).
    `TaskLocalVariable.uninitialized()` is the class-level placeholder a dataclass field starts with; the
    resource's __post_init__ (or __init__) replaces it by the declared variable."""

    def __init__(self, dtype=None, default=None, docs: str = "", *, _placeholder: bool = False):
        if not _placeholder and not (isinstance(dtype, type) and issubclass(dtype, Numeric)):
            raise DSLTypeError(f"TaskLocalVariable(dtype=...) takes a DSL numeric type (cutlass.Int32, ...), got "
                               f"{dtype!r}", user_location())
        self.dtype, self.default, self.docs = dtype, default, docs
        self.placeholder = _placeholder

    @classmethod
    def uninitialized(cls) -> "TaskLocalVariable":
        return cls(_placeholder=True)

    def initial(self):
        """The value the task starts with: the default as a number of dtype, or the default itself where it is a
        vector (cutlass.full(...)) of dtype's elements."""
        d = self.default
        if d is None or isinstance(d, (int, float, bool, Numeric)):
            return self.dtype(0 if d is None else d)
        return d

    def __repr__(self):
        return "TaskLocalVariable(<uninitialized>)" if self.placeholder else f"TaskLocalVariable({self.dtype.__name__})"


class StageInfo:
    """What a work sees of where the schedule is: the domain loop's index and bounds (loop_offset, loop_start,
    loop_end), the pipeline stage of its resource (stage_idx) and that stage's barrier for transfers that signal it
    (barrier), the current persistent tile (work_tile), and the kernel-wide context (context.smem_base,
    context.tmem_ptr_i)."""

    def __init__(self, *, loop_offset=None, loop_start=None, loop_end=None, stage_idx=None, barrier=None,
                 work_tile=None, context=None, phase=None):
        self.loop_offset, self.loop_start, self.loop_end = loop_offset, loop_start, loop_end
        self.stage_idx, self.barrier, self.phase = stage_idx, barrier, phase
        self.work_tile, self.context = work_tile, context


class WorkMethod:
    """A resource's producer or consumer work: the user's @cute.jit function and what the schedule checks of it."""

    def __init__(self, fn, role: str, returns, attrs: WorkAttr):
        if not callable(fn):
            raise DSLTypeError(f"@{role}_work decorates a method, got {fn!r}", user_location())
        if not isinstance(attrs, WorkAttr):
            raise DSLTypeError(f"work_attrs is a WorkAttr, got {attrs!r}", user_location())
        self.fn, self.role, self.returns, self.attrs = fn, role, returns, attrs
        self.name = getattr(fn, "__name__", "work")
        params = list(inspect.signature(fn).parameters.values())
        if len(params) < 2:
            raise DSLTypeError(f"work {self.name}(self, stage_info, ...) takes self and stage_info first",
                               user_location())
        rest = params[2:]
        self.extra_params = [p.name for p in rest if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        self.takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in rest)

    def __set_name__(self, owner, name):
        if name in RESERVED:
            raise DSLValueError(f"{owner.__name__}.{name}: {name} is a reserved pipeline operation and cannot be a "
                                "work method", user_location())
        self.name = name

    @property
    def auxiliary(self) -> bool:
        return bool(self.attrs & WorkAttr.AUXILIARY)

    def returns_of(self, resource) -> list:
        """The declared variables `returns=` names (one, or a tuple of them): placeholders of fields, read on the
        resource."""
        declared = self.returns if isinstance(self.returns, tuple) else (self.returns,)
        return [self._variable(resource, r) for r in declared]

    def _variable(self, resource, r):
        if isinstance(r, TaskLocalVariable) and r.placeholder:
            for klass in type(resource).__mro__:
                name = next((k for k, v in vars(klass).items() if v is r), None)
                if name is None and dataclasses.is_dataclass(klass):
                    name = next((f.name for f in dataclasses.fields(klass) if f.default is r), None)
                if name is not None:
                    r = getattr(resource, name)
                    break
        if not isinstance(r, TaskLocalVariable) or r.placeholder:
            raise DSLValueError(f"{resource.name}.{self.name}(): returns= names a TaskLocalVariable the resource has "
                                "not declared (assign it in __post_init__ or __init__)", user_location())
        return r

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return lambda *a, **k: self.call(obj, *a, **k)

    def call(self, resource, stage_info, *args, **kwargs):
        """The work itself (what the lowering runs in the task's warps)."""
        if capturing():
            raise DSLValueError(f"{resource.name}.{self.name}() is called on the resource itself inside a schedule; "
                                "call it on the schedule's parameter", user_location())
        return self.fn(resource, stage_info, *args, **kwargs)


def _work_decorator(role, fn, returns, work_attrs):
    if fn is not None:
        return WorkMethod(fn, role, returns, work_attrs)
    return lambda f: WorkMethod(f, role, returns, work_attrs)


def producer_work(fn=None, *, returns=None, work_attrs: WorkAttr = WorkAttr.NONE):
    """Marks a method as work that writes into its resource (the task holds the resource in dst_resources)."""
    return _work_decorator("producer", fn, returns, work_attrs)


def consumer_work(fn=None, *, returns=None, work_attrs: WorkAttr = WorkAttr.NONE):
    """Marks a method as work that reads out of its resource (the task holds the resource in src_resources)."""
    return _work_decorator("consumer", fn, returns, work_attrs)


# --- pipelines ----------------------------------------------------------------------------------------------------

class PipelineConfig:
    """Which pipeline guards a resource's stages, named after who produces and who consumes: tma (bulk tensor
    copies counting bytes), umma (the tensor cores' matrix multiply, signalling by commit), async (threads), clc
    (the hardware's work-stealing fetch). The pipeline itself is made in TaskManager.setup_resources_and_tasks."""

    _KINDS = {"tma_async": "PipelineTmaAsync", "async_async": "PipelineAsync", "tma_umma": "PipelineTmaUmma",
              "umma_async": "PipelineUmmaAsync", "async_umma": "PipelineAsyncUmma",
              "clc_fetch_async": "PipelineClcFetchAsync"}

    def __init__(self, kind: str, *, num_stages, producer_group, consumer_group, num_bytes=None,
                 cta_layout_vmnk=None, producer_signaling_threads=None, consumer_signaling_threads=None, **extra):
        where = user_location(3)
        if not isinstance(num_stages, int) or num_stages < 1:
            raise DSLValueError(f"PipelineConfig: num_stages is a static integer >= 1, got {num_stages!r}", where)
        for what, g in (("producer_group", producer_group), ("consumer_group", consumer_group)):
            if not isinstance(g, _pipeline.CooperativeGroup):
                raise DSLTypeError(f"PipelineConfig: {what} is a pipeline.CooperativeGroup, got {g!r}", where)
        for what, s in (("producer_signaling_threads", producer_signaling_threads),
                        ("consumer_signaling_threads", consumer_signaling_threads)):
            if s is not None and not isinstance(s, SignalingThreads):
                raise DSLTypeError(f"PipelineConfig: {what} is a SignalingThreads, got {s!r}", where)
        self.kind, self.num_stages = kind, num_stages
        self.producer_group, self.consumer_group = producer_group, consumer_group
        self.num_bytes, self.cta_layout_vmnk = num_bytes, cta_layout_vmnk
        self.producer_signaling_threads = producer_signaling_threads
        self.consumer_signaling_threads = consumer_signaling_threads
        self.extra = extra
        self.where = where

    @property
    def cluster_ctas(self) -> int:
        """How many CTAs the pipeline's cluster layout spans (1 without one)."""
        c = self.cta_layout_vmnk
        if c is None:
            return 1
        if isinstance(c, tuple):
            return math.prod(c)
        n = _cute_size(c)
        return n if isinstance(n, int) else int(getattr(n, "value", 1))

    def make_pipeline(self):
        """The pipeline over barriers carved from the kernel's shared memory (every thread makes it; the kernel
        syncs after all pipelines are made)."""
        cls = getattr(_pipeline, self._KINDS[self.kind])
        kwargs = dict(num_stages=self.num_stages, producer_group=self.producer_group,
                      consumer_group=self.consumer_group, defer_sync=True)
        if self.kind in ("tma_async", "tma_umma", "clc_fetch_async"):
            kwargs["tx_count"] = int(self.num_bytes)
        c = self.cta_layout_vmnk
        if c is not None and not _single_cta(c):
            # Extents (v, m, n, k) stand for the cluster's layout of CTAs, as the pipelines take it.
            kwargs["cta_layout_vmnk"] = _cute_make_layout(c) if isinstance(c, tuple) else c
        return cls.create(**kwargs)

    @classmethod
    def _factory(cls, kind):
        def create(**kwargs):
            return cls(kind, **kwargs)

        create.__name__ = f"create_{kind}_pipeline_cfg"
        create.__doc__ = f"A PipelineConfig for a {cls._KINDS[kind]} (warpweave.pipeline)."
        return staticmethod(create)


for _kind in PipelineConfig._KINDS:
    setattr(PipelineConfig, f"create_{_kind}_pipeline_cfg", PipelineConfig._factory(_kind))


class PipelineGroup:
    """Several pipelined resources that always synchronize together, sharing one barrier on their collapsed side:
    Merge (N producers, 1 consumer: one shared empty barrier per stage; the consumer calls group.release() once)
    or Fork (1 producer, N consumers: one shared full barrier per stage; the producer calls group.commit() once).
    Each member keeps its own PipelineConfig and its own barrier on the other side. In a schedule, members are
    reached as group.<member name>; the group itself only takes the collapsed operation."""

    is_pipeline_group = True

    def __init__(self, *, name: str, members, mode: PipelineGroupMode):
        where = user_location()
        if not isinstance(mode, PipelineGroupMode):
            raise DSLTypeError(f"PipelineGroup: mode is a PipelineGroupMode, got {mode!r}", where)
        members = list(members)
        if len(members) < 2 or any(not isinstance(m, MemoryResource) or m.pipeline_config is None for m in members):
            raise DSLValueError("PipelineGroup: members are two or more resources with a pipeline_config", where)
        stages = {m.pipeline_config.num_stages for m in members}
        if len(stages) != 1:
            raise DSLValueError(f"PipelineGroup {name}: its members share stages, so they have one num_stages "
                                f"(got {sorted(stages)})", where)
        # The collapsed side signals one barrier for all members: its pipelines must be of one kind.
        side = -1 if mode is PipelineGroupMode.Merge else 0
        kinds = {m.pipeline_config.kind.split("_")[side] for m in members}
        if len(kinds) != 1:
            what = "consumer" if mode is PipelineGroupMode.Merge else "producer"
            raise DSLValueError(f"PipelineGroup {name} ({mode.name}): its members' {what} sides share one barrier, "
                                f"so they are of one kind (got {sorted(kinds)})", where)
        names = [m.name for m in members]
        if len(set(names)) != len(names):
            raise DSLValueError(f"PipelineGroup {name}: members are reached by name, and two are named alike", where)
        self.name, self.members, self.mode, self.where = name, members, mode, where
        for m in members:
            if m.pipeline_group is not None:
                raise DSLValueError(f"{m.name} is already in PipelineGroup {m.pipeline_group.name}", where)
            m.pipeline_group = self

    @property
    def collapsed_action(self) -> str:
        """The operation the group takes instead of its members: release (Merge) or commit (Fork)."""
        return "release" if self.mode is PipelineGroupMode.Merge else "commit"

    @property
    def collapsed_role(self) -> str:
        return "consumer" if self.mode is PipelineGroupMode.Merge else "producer"

    @staticmethod
    def work_methods() -> dict:
        return {}

    def __getattr__(self, name):
        for m in self.__dict__.get("members", ()):
            if m.name == name:
                return m
        raise AttributeError(f"PipelineGroup {self.__dict__.get('name')!r} has no member named {name!r} (members: "
                             f"{', '.join(m.name for m in self.__dict__.get('members', ()))})")

    def __repr__(self):
        return f"PipelineGroup({self.name!r}, {self.mode.name})"


def _single_cta(cta_layout) -> bool:
    """A cluster layout given as a tuple of extents (1, 1, 1, 1) names one CTA: the pipeline needs no cluster."""
    return isinstance(cta_layout, tuple) and all(isinstance(x, int) and x == 1 for x in cta_layout)


# --- resources ----------------------------------------------------------------------------------------------------

@dataclasses.dataclass(kw_only=True)
class MemoryResource:
    """A resource of a task graph (see the module's docstring). Resources are compared and hashed by identity:
    they are the keys of the dependency graph."""

    name: str = "resource"
    pipeline_config: PipelineConfig | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # dataclass() would make a subclass unhashable (eq=True) or compare its DSL fields: keep identity.
        cls.__eq__ = MemoryResource.__eq__
        cls.__hash__ = MemoryResource.__hash__

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)

    @property
    def pipeline_group(self):
        return self.__dict__.get("_ts_pipeline_group")

    @pipeline_group.setter
    def pipeline_group(self, group):
        self.__dict__["_ts_pipeline_group"] = group

    @classmethod
    def work_methods(cls) -> dict:
        out = {}
        for klass in reversed(cls.__mro__):
            for k, v in vars(klass).items():
                if isinstance(v, WorkMethod):
                    out[k] = v
        return out

    def get_smem_requirements(self) -> list:
        """The SmemAllocations this resource needs (an override lists them; SmemAllocator places them)."""
        return []

    def get_tmem_requirements(self) -> list:
        """The TmemAllocations this resource needs (TmemAllocator places them)."""
        return []

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class TileSchedulerConfig:
    """Which persistent tile scheduler a WorkQueue walks (cutlass.utils' schedulers)."""

    def __init__(self, kind: str, params, response_ptr=None):
        self.kind, self.params, self.response_ptr = kind, params, response_ptr

    @classmethod
    def create_static_persistent_tile_scheduler_params(cls, *, tile_scheduler_params):
        return cls("static", tile_scheduler_params)

    @classmethod
    def create_clc_dynamic_persistent_tile_scheduler_params(cls, *, tile_scheduler_params, response_ptr=None):
        return cls("clc_dynamic", tile_scheduler_params, response_ptr)


@dataclasses.dataclass(kw_only=True)
class WorkQueue(MemoryResource):
    """The persistent schedule's source of work tiles. Tasks that read the current tile hold it in src_resources
    and advance it in their work_tile_loop (try_wait, wait, get_and_advance_work_tile, release). A static queue
    walks a StaticPersistentTileScheduler: nothing is fetched, the brackets only order the walk."""

    tile_scheduler_config: TileSchedulerConfig | None = None
    is_work_queue = True

    def __post_init__(self):
        self.__dict__["_ts_where"] = user_location()
        if not isinstance(self.tile_scheduler_config, TileSchedulerConfig):
            raise DSLTypeError(f"WorkQueue {self.name}: tile_scheduler_config is a TileSchedulerConfig, got "
                               f"{self.tile_scheduler_config!r}", user_location())


@dataclasses.dataclass(kw_only=True)
class PdlWaitBarrier(MemoryResource):
    """Programmatic dependent launch, waiting side: the task that consumes it waits (wait_griddep) until the
    grids this one depends on have finished writing what it reads."""

    @consumer_work
    def wait_griddep(self, stage_info: StageInfo) -> None:
        _cute_arch.griddepcontrol_wait()


@dataclasses.dataclass(kw_only=True)
class PdlLaunchBarrier(MemoryResource):
    """Programmatic dependent launch, launching side: the task that produces it lets dependent grids start
    (launch_griddep) once it no longer needs the SM to itself."""

    @producer_work
    def launch_griddep(self, stage_info: StageInfo) -> None:
        _cute_arch.griddepcontrol_launch_dependents()
