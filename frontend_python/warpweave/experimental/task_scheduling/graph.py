"""The checks a task graph passes before it is lowered, none of them specific to a GPU: the resource dependency
graph is acyclic (and its order is the order resources are set up in), tasks' warp ranges are disjoint, warps of
one group of four share a register budget, and each schedule uses its resources as its task declares them, inside
the pipeline brackets, feeding each work only values produced before it by resources it depends on.
Each failure is a DSLValueError at the user's line that caused it (the schedule's call, the Task, the
TaskManager)."""
from __future__ import annotations

from ..._dsl.base.errors import DSLValueError
from .schedule_builder import (BracketCall, CapturedValue, DomainLoop, Region, Skippable, WorkCall, WorkTileLoop,
                               bracket_role)

WARP_GROUP = 4  # register budgets are set per group of four consecutive warps


def dependency_order(graph: dict, resources, where) -> list:
    """The resources in an order where each comes after those it depends on (graph: resource -> the resources it
    depends on); a cycle is an error naming it."""
    nodes = list(dict.fromkeys(list(resources) + list(graph) + [d for ds in graph.values() for d in ds]))
    order, state = [], {}  # state: 1 while on the path, 2 once placed

    def visit(r, path):
        if state.get(r) == 2:
            return
        if state.get(r) == 1:
            cycle = path[path.index(r):] + [r]
            raise DSLValueError("resource_dependency_graph has a cycle: " + " -> ".join(x.name for x in cycle) +
                                " (each resource depends on the next)", where)
        state[r] = 1
        for d in graph.get(r, ()):
            visit(d, path + [r])
        state[r] = 2
        order.append(r)

    for r in nodes:
        visit(r, [])
    return order


def depends_on(graph: dict, a, b) -> bool:
    """Whether resource a depends on b, directly or through others."""
    seen, todo = set(), list(graph.get(a, ()))
    while todo:
        r = todo.pop()
        if r is b:
            return True
        if id(r) not in seen:
            seen.add(id(r))
            todo.extend(graph.get(r, ()))
    return False


def check_warps(tasks) -> None:
    owner = {}
    for t in tasks:
        for w in t.warps:
            if w in owner:
                o = owner[w]
                raise DSLValueError(f"Task {t.name} (warps {t.warp_idx}..{t.warp_idx + t.num_warps - 1}) overlaps "
                                    f"Task {o.name} (warps {o.warp_idx}..{o.warp_idx + o.num_warps - 1}) at warp {w}",
                                    t.where)
            owner[w] = t
    budgets = {}
    for t in tasks:
        if t.num_registers is None:
            continue
        group = t.warp_idx // WARP_GROUP
        for g in range(group, (t.warp_idx + t.num_warps - 1) // WARP_GROUP + 1):
            for w in range(g * WARP_GROUP, (g + 1) * WARP_GROUP):
                o = owner.get(w)
                if o is None or o.num_registers != t.num_registers:
                    what = "no task" if o is None else f"Task {o.name} with num_registers={o.num_registers}"
                    raise DSLValueError(f"Task {t.name} sets num_registers={t.num_registers}, but warp {w} of its "
                                        f"group of {WARP_GROUP} warps has {what}: a register budget is set for a "
                                        "whole group (add a padding task)", t.where)
        budgets[t.name] = t.num_registers


class _Brackets:
    """Where a schedule stands with each pipelined resource: acquired and not yet committed, waited and not yet
    released."""

    def __init__(self):
        self.open = {}  # (resource, "producer" | "consumer") -> the BracketCall that opened it

    def copy(self):
        b = _Brackets()
        b.open = dict(self.open)
        return b


def _pipelined(r) -> bool:
    return r.pipeline_config is not None or r.pipeline_group is not None


def check_schedule(task, graph: dict) -> None:
    """The task's schedule against its resources, its pipelines and the dependency graph."""
    produced = set()  # ids of the CapturedValues produced so far (in schedule order)
    _check_ops(task, graph, task.schedule.ops, _Brackets(), produced, consumed=[])


def _check_ops(task, graph, ops, br, produced, consumed):
    for op in ops:
        if isinstance(op, WorkCall):
            _check_work(task, graph, op, br, produced, consumed)
        elif isinstance(op, BracketCall):
            _check_bracket(task, op, br)
        elif isinstance(op, Region):
            if isinstance(op, WorkTileLoop) and op.queue not in task.src_resources:
                raise DSLValueError(f"work_tile_loop over {op.queue.name}: Task {task.name} does not list it in "
                                    "src_resources", op.where)
            inner = br.copy()
            _check_ops(task, graph, op.body, inner, produced, consumed)
            if isinstance(op, (DomainLoop, WorkTileLoop)):
                left = [k for k in inner.open if k not in br.open]
                if left:
                    (r, role), call = left[0], inner.open[left[0]]
                    close = "commit()" if role == "producer" else "release()"
                    raise DSLValueError(f"{r.name}.{call.action}() in Task {task.name}'s loop has no {close} before "
                                        "the loop's end: each iteration must close the stage it opens", call.where)
            elif isinstance(op, Skippable):
                if any(isinstance(x, BracketCall) for x in _flat(op.body)):
                    raise DSLValueError("pipeline and WorkQueue operations stay outside skippable(): a skipped tile "
                                        "must still advance them", op.where)


def _flat(ops):
    for op in ops:
        yield op
        if isinstance(op, Region):
            yield from _flat(op.body)


def _check_work(task, graph, op, br, produced, consumed):
    r, w = op.resource, op.work
    declared = task.dst_resources if w.role == "producer" else task.src_resources
    if r not in declared:
        where = "dst_resources" if w.role == "producer" else "src_resources"
        raise DSLValueError(f"{r.name}.{w.name}() is {w.role} work of {r.name}, but Task {task.name} does not list "
                            f"{r.name} in {where}", op.where)
    for k, v in op.kwargs.items():
        if not isinstance(v, CapturedValue):
            continue
        if id(v) not in produced:
            raise DSLValueError(f"{r.name}.{w.name}({k}=...) takes a value no earlier work of this schedule produced",
                                op.where)
        src = v.producer.resource
        if src is not r and not depends_on(graph, r, src) and not depends_on(graph, src, r):
            raise DSLValueError(f"{r.name}.{w.name}({k}=...) takes a value from {src.name}, but neither resource "
                                f"depends on the other in resource_dependency_graph (add {r.name}: [{src.name}])",
                                op.where)
    if not w.auxiliary:
        if _pipelined(r):
            role_key = (r, w.role)
            if role_key not in br.open:
                need = "acquire()" if w.role == "producer" else "wait()"
                raise DSLValueError(f"{r.name}.{w.name}() is {w.role} work on a pipelined resource: it goes between "
                                    f"{r.name}.{need} and {'commit' if w.role == 'producer' else 'release'}()",
                                    op.where)
        if w.role == "producer":
            for upstream in graph.get(r, ()):
                if upstream in task.src_resources and upstream not in consumed and _consumes_later(task, upstream):
                    raise DSLValueError(f"{r.name}.{w.name}() produces {r.name} before this task consumes "
                                        f"{upstream.name}, which {r.name} depends on", op.where)
        else:
            consumed.append(r)
    produced.update(id(c) for c in op.results)


def _consumes_later(task, resource) -> bool:
    return any(isinstance(op, WorkCall) and op.resource is resource and op.work.role == "consumer"
               and not op.work.auxiliary for op in task.schedule.walk())


def _check_bracket(task, op, br):
    r, a = op.resource, op.action
    if getattr(r, "is_work_queue", False):
        if r not in task.src_resources:
            raise DSLValueError(f"{r.name}.{a}(): Task {task.name} does not list the WorkQueue in src_resources",
                                op.where)
        return
    if getattr(r, "is_pipeline_group", False):
        _check_group_bracket(task, op, br)
        return
    if not _pipelined(r):
        raise DSLValueError(f"{r.name}.{a}(): {r.name} has no pipeline_config, so it has no stages to {a}", op.where)
    role = bracket_role(a)
    group = r.pipeline_group
    if group is not None and a == group.collapsed_action:
        raise DSLValueError(f"{r.name}.{a}(): {r.name} is in PipelineGroup {group.name} ({group.mode.name}), whose "
                            f"members share that stage: call {group.name}.{a}() once instead", op.where)
    declared = task.dst_resources if role == "producer" else task.src_resources
    if r not in declared:
        which = "dst_resources" if role == "producer" else "src_resources"
        raise DSLValueError(f"{r.name}.{a}() is the {role}'s side of the pipeline, but Task {task.name} does not "
                            f"list {r.name} in {which}", op.where)
    key = (r, role)
    if a in ("acquire", "wait"):
        if key in br.open:
            raise DSLValueError(f"{r.name}.{a}() again before {'commit' if role == 'producer' else 'release'}() of "
                                "the stage it holds", op.where)
        br.open[key] = op
    elif a in ("commit", "release"):
        if key not in br.open:
            raise DSLValueError(f"{r.name}.{a}() without {'acquire' if role == 'producer' else 'wait'}() of a stage "
                                "before it", op.where)
        del br.open[key]


def _check_group_bracket(task, op, br):
    """The group's one operation closes the stage every member opened (Merge: release after each member's wait;
    Fork: commit after each member's acquire)."""
    g, a = op.resource, op.action
    if a != g.collapsed_action:
        raise DSLValueError(f"{g.name}.{a}(): a {g.mode.name} group only takes {g.collapsed_action}(); {a}() is per "
                            f"member ({g.name}.<member>.{a}())", op.where)
    role = g.collapsed_role
    declared = task.dst_resources if role == "producer" else task.src_resources
    opener = "acquire" if role == "producer" else "wait"
    for m in g.members:
        if m not in declared:
            raise DSLValueError(f"{g.name}.{a}() covers {m.name}, but Task {task.name} does not list it in "
                                f"{'dst_resources' if role == 'producer' else 'src_resources'}", op.where)
        if (m, role) not in br.open:
            raise DSLValueError(f"{g.name}.{a}() without {m.name}.{opener}() of the stage before it", op.where)
        del br.open[(m, role)]


def _sides(resource, tasks):
    """The tasks on each side of a resource's pipeline (those that call its producer or consumer brackets)."""
    sides = {"producer": [], "consumer": []}
    for t in tasks:
        for op in t.schedule.walk():
            if isinstance(op, BracketCall) and op.resource is resource and t not in sides[bracket_role(op.action)]:
                sides[bracket_role(op.action)].append(t)
    return sides


def check_pipeline_sides(resources, tasks, where) -> None:
    """Each pipelined resource has tasks on both sides, and a side whose threads arrive (an `async` side) counts
    its arrivals as its tasks' threads, or, where its pipeline arrives once per warp (the consumers of bulk tensor
    copies), as their warps. Records which of the two on the config (cfg.per_thread[role]). A WorkQueue's
    consumers are every task of every CTA of the cluster, which the tasks of one CTA do not tell."""
    for r in resources:
        cfg = r.pipeline_config
        if cfg is None:
            continue
        group = r.pipeline_group
        sides = _sides(r, tasks)
        cfg.per_thread = {}
        for k, role in enumerate(("producer", "consumer")):
            ts = sides[role]
            collapsed = group is not None and role == group.collapsed_role
            if collapsed and r is not group.members[0]:
                continue  # this side signals through the group's first member's barriers
            if not ts and not collapsed:
                verb = "acquires" if role == "producer" else "waits on"
                raise DSLValueError(f"{r.name} has a pipeline but no task {verb} its stages: the other side would "
                                    "wait forever", where)
            if cfg.kind.split("_")[-k] != "async" or not ts or getattr(r, "is_work_queue", False):
                continue  # a bulk copy, a matrix multiply or a fetch signals by itself, once per stage
            threads = sum(t.num_warps * 32 for t in ts)
            size = cfg.consumer_group.size if role == "consumer" else cfg.producer_group.size
            per_warp_ok = cfg.kind == "tma_async" and role == "consumer"
            # In a cluster, a side may count the arrivals of its peers in the CTAs it signals (a pair of CTAs
            # sharing one matrix multiply, or the whole cluster).
            ctas = [n for n in range(1, cfg.cluster_ctas + 1) if cfg.cluster_ctas % n == 0]
            if any(size == threads * n for n in ctas):
                cfg.per_thread[role] = True
            elif per_warp_ok and any(size == threads // 32 * n for n in ctas):
                cfg.per_thread[role] = False
            else:
                expect = f"{threads}" + (f" (or {threads // 32}, one a warp)" if per_warp_ok else "")
                expect += " per CTA of its cluster" if cfg.cluster_ctas > 1 else ""
                raise DSLValueError(f"{r.name}'s pipeline counts {size} {role} arrivals per stage, but its {role} "
                                    f"task(s) {', '.join(t.name for t in ts)} arrive {expect} times", cfg.where)
