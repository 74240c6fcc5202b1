"""Capturing a task's schedule: `@schedule` functions record, instead of running, the calls they make on
resources (work methods, pipeline brackets, WorkQueue bookkeeping) and the loops around them (`domain_loop`,
`work_tile_loop`, `skippable()`). The record (a Schedule: a tree of ops, each with the user's line) is what the
TaskManager checks and then lowers into the task's warps.

    @schedule
    def load(gmem, smem):
        with domain_loop(0, n, step):
            idx = gmem.compute_coords()      # consumer work of gmem: its result is a CapturedValue
            smem.acquire()
            smem.tma_load(gmem_idx=idx)      # producer work of smem, fed by the captured value
            smem.commit()
    task = Task(..., schedule=load(gmem_res, smem_res))

Inside a schedule the resources are stand-ins (ResourceView): only their work methods and the reserved bracket
operations can be called; any other call is an error at its line, as is a captured value used where it was not
produced.
"""
from __future__ import annotations

import functools

from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location

_CAPTURES: list = []  # the op lists being filled, innermost last; empty outside a schedule's capture

PRODUCER_OPS = ("try_acquire", "acquire", "commit")
CONSUMER_OPS = ("try_wait", "wait", "release")
QUEUE_OPS = ("get_and_advance_work_tile", "fetch_work_tile")
RESERVED = PRODUCER_OPS + CONSUMER_OPS + QUEUE_OPS


def bracket_role(action: str) -> str:
    """Which side of a pipeline a reserved operation is: acquire and commit the producer's, wait and release the
    consumer's."""
    return "producer" if action in PRODUCER_OPS else "consumer"


def capturing() -> bool:
    return bool(_CAPTURES)


def record(op):
    _CAPTURES[-1].append(op)
    return op


class CapturedValue:
    """What a work returned during capture: the task-local variable it fills, and the work that fills it."""

    def __init__(self, variable, producer):
        self.variable = variable
        self.producer = producer

    def __repr__(self):
        return f"<captured {self.producer.resource.name}.{self.producer.work.name}()>"


class WorkCall:
    def __init__(self, resource, work, kwargs, where):
        self.resource, self.work, self.kwargs, self.where = resource, work, kwargs, where
        self.results = []  # the CapturedValues it fills, one per declared variable


class BracketCall:
    """A reserved operation: a pipeline bracket (acquire ... release) or the WorkQueue's advance."""

    def __init__(self, resource, action, where):
        self.resource, self.action, self.where = resource, action, where


class Region:
    def __init__(self, where):
        self.where = where
        self.body = []

    def __enter__(self):
        if not _CAPTURES:
            raise DSLValueError(f"{type(self).__name__.lower()}(...) is used inside a @schedule function, which the "
                                "TaskManager lowers", self.where)
        _CAPTURES.append(self.body)
        return self

    def __exit__(self, exc_type, exc, tb):
        _CAPTURES.pop()
        if exc_type is None:
            record(self)
        return False


class DomainLoop(Region):
    """`for loop_offset in range(start, end, step)`; end may be a function of the task and the current work
    tile's coordinate (a dynamic domain, Task.get_domain)."""

    def __init__(self, start, end, step, unroll, where):
        super().__init__(where)
        self.start, self.end, self.step, self.unroll = start, end, step, unroll

    @property
    def dynamic_end(self) -> bool:
        return callable(self.end) and not hasattr(self.end, "ir")


class Skippable(Region):
    """The part of a work tile's body that a skipped tile does not run."""

    def __init__(self, loop, where):
        super().__init__(where)
        self.loop = loop


class WorkTileLoop(Region):
    """The persistent loop: while the WorkQueue has a valid tile, run the body for it."""

    def __init__(self, queue, skip_if, where):
        super().__init__(where)
        self.queue, self.skip_if = queue, skip_if

    def skippable(self):
        if self.skip_if is None:
            raise DSLValueError("skippable() needs work_tile_loop(..., skip_if=predicate): nothing says which tiles "
                                "are skipped", user_location())
        return Skippable(self, user_location())


def domain_loop(start, end=None, step=1, *, unroll=1):
    """The loop over one task's domain, `range(start, end, step)` (or `range(end)`): its index reaches work
    methods as stage_info.loop_offset."""
    if end is None:
        start, end = 0, start
    return DomainLoop(start, end, step, unroll, user_location())


def work_tile_loop(queue, *, skip_if=None):
    """The persistent loop over the tiles `queue` (a WorkQueue) hands out; skip_if(queue, work_tile) -> Boolean
    marks tiles whose skippable() part does not run."""
    q = unwrap(queue)
    if not getattr(q, "is_work_queue", False):
        raise DSLTypeError(f"work_tile_loop takes the WorkQueue resource, got {type(q).__name__}", user_location())
    return WorkTileLoop(q, skip_if, user_location())


class ResourceView:
    """A resource as a schedule sees it: its work methods and reserved operations record ops; its plain
    attributes read through; any other method is refused (a schedule orders work, it does not run code)."""

    def __init__(self, resource):
        object.__setattr__(self, "_resource", resource)

    def __getattr__(self, name):
        res = object.__getattribute__(self, "_resource")
        if name in RESERVED:
            return functools.partial(_bracket, res, name)
        work = type(res).work_methods().get(name)
        if work is not None:
            return functools.partial(_work, res, work)
        value = getattr(res, name)
        if callable(value) and not isinstance(value, type):
            raise DSLValueError(f"{res.name}.{name}() is neither producer nor consumer work of "
                                f"{type(res).__name__} (decorate it with @producer_work or @consumer_work) nor a "
                                f"pipeline operation ({', '.join(RESERVED)})", user_location())
        return value

    def __setattr__(self, name, value):
        raise DSLValueError(f"a schedule cannot assign {name!r} on resource "
                            f"{object.__getattribute__(self, '_resource').name}", user_location())


def unwrap(x):
    return object.__getattribute__(x, "_resource") if isinstance(x, ResourceView) else x


def _bracket(resource, action):
    if action in QUEUE_OPS and not getattr(resource, "is_work_queue", False):
        raise DSLValueError(f"{action}() is a WorkQueue operation; {resource.name} is a {type(resource).__name__}",
                            user_location())
    record(BracketCall(resource, action, user_location()))


def _work(resource, work, *args, **kwargs):
    where = user_location()
    params = work.extra_params
    if len(args) > len(params):
        raise DSLTypeError(f"{resource.name}.{work.name}() takes {len(params)} argument(s) besides stage_info, got "
                           f"{len(args)}", where)
    for p, a in zip(params, args):
        if p in kwargs:
            raise DSLTypeError(f"{resource.name}.{work.name}() got two values for {p!r}", where)
        kwargs[p] = a
    unknown = [k for k in kwargs if params and k not in params and not work.takes_kwargs]
    if unknown:
        raise DSLTypeError(f"{resource.name}.{work.name}() has no parameter {unknown[0]!r} (its parameters: "
                           f"{', '.join(params) or 'none'})", where)
    call = record(WorkCall(resource, work, kwargs, where))
    if work.returns is None:
        return None
    variables = work.returns_of(resource)
    call.results = [CapturedValue(v, call) for v in variables]
    return tuple(call.results) if isinstance(work.returns, tuple) else call.results[0]


class Schedule:
    """A captured schedule: its ops and the resources it was called with."""

    def __init__(self, name, ops, resources, where):
        self.name, self.ops, self.resources, self.where = name, ops, resources, where

    def describe(self, ops=None, depth=0) -> list:
        """The schedule as indented lines, one an op (what debug_print shows)."""
        out = []
        for op in self.ops if ops is None else ops:
            pad = "  " * depth
            if isinstance(op, WorkCall):
                args = ", ".join(f"{k}=" + (f"<{v.producer.resource.name}.{v.producer.work.name}>"
                                            if isinstance(v, CapturedValue) else repr(v)) for k, v in op.kwargs.items())
                out.append(f"{pad}{op.resource.name}.{op.work.name}({args})")
            elif isinstance(op, BracketCall):
                out.append(f"{pad}{op.resource.name}.{op.action}()")
            elif isinstance(op, Region):
                out.append(f"{pad}{type(op).__name__}:")
                out.extend(self.describe(op.body, depth + 1))
        return out

    def walk(self, ops=None):
        """Every op, depth first, in schedule order."""
        for op in self.ops if ops is None else ops:
            yield op
            if isinstance(op, Region):
                yield from self.walk(op.body)


def schedule(fn):
    """Makes fn a schedule: calling it with resources records its calls into a Schedule, run by a Task."""
    @functools.wraps(fn)
    def capture(*resources):
        where = user_location()
        ops = []
        _CAPTURES.append(ops)
        try:
            fn(*[ResourceView(r) for r in resources])
        finally:
            _CAPTURES.pop()
        return Schedule(fn.__name__, ops, list(resources), where)

    return capture
