"""TaskManager: checks a task graph when it is made (graph.py), makes its resources' pipelines and shared memory
in setup_resources_and_tasks(), and in run() gives each task's warps its lowered schedule (lowering.py): one
branch per task on the warp index, which sets the task's register budget and runs its ops."""
from __future__ import annotations

from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ...cute import arch as _arch
from ..._dsl.tracing import branches as _branches
from .graph import check_pipeline_sides, check_schedule, check_warps, dependency_order
from .lowering import TaskLowering, share_group_barriers
from .memory import SmemAllocator, TmemAllocator
from .resources import MemoryResource
from .schedule_builder import BracketCall, Skippable, WorkTileLoop
from .task import Task, current_warp, in_range

REGISTER_FILE = 65536  # 32-bit registers of one SM, shared by the block's threads


class KernelContext:
    """What every work sees as stage_info.context: the shared-memory block (smem_base) and, where the kernel has
    it, the shared-memory word holding the tensor-memory address (tmem_ptr_i32)."""

    def __init__(self):
        self.smem_base = None
        self.tmem_ptr_i32 = None


class TaskManager:
    def __init__(self, *, tasks, resource_dependency_graph=None, smem_allocator=None, tmem_allocator=None):
        where = user_location()
        tasks = list(tasks)
        if not tasks or any(not isinstance(t, Task) for t in tasks):
            raise DSLTypeError("TaskManager(tasks=...) takes a non-empty list of Tasks", where)
        graph = dict(resource_dependency_graph or {})
        for r, deps in graph.items():
            if not isinstance(r, MemoryResource) or any(not isinstance(d, MemoryResource) for d in deps):
                raise DSLTypeError("resource_dependency_graph maps each resource to the list of resources it depends "
                                   "on", where)
        if smem_allocator is not None and not isinstance(smem_allocator, SmemAllocator):
            raise DSLTypeError(f"smem_allocator is a SmemAllocator, got {smem_allocator!r}", where)
        if tmem_allocator is not None and not isinstance(tmem_allocator, TmemAllocator):
            raise DSLTypeError(f"tmem_allocator is a TmemAllocator, got {tmem_allocator!r}", where)
        self.tasks, self.graph, self.where = tasks, graph, where
        self.smem_allocator, self.tmem_allocator = smem_allocator, tmem_allocator
        resources = [r for t in tasks for r in t.resources]
        self.resource_order = dependency_order(graph, resources, where)
        check_warps(tasks)
        for t in tasks:
            check_schedule(t, graph)
            _check_queue_loops(t)
        check_pipeline_sides(self.resource_order, tasks, where)
        self.pipelines = {}
        self.context = KernelContext()
        self._set_up = False

    def setup_resources_and_tasks(self):
        """In the kernel, every thread: carves the shared-memory block and makes the pipelines (their barriers are
        initialized by one thread; the kernel fences and syncs the block before run())."""
        if self._set_up:
            raise DSLValueError("setup_resources_and_tasks() is called once", user_location())
        if self.smem_allocator is not None:
            self.context.smem_base = self.smem_allocator.materialize()
            if self.smem_allocator.tmem_ptr is not None:
                self.context.tmem_ptr_i32 = self.smem_allocator.get(self.smem_allocator.tmem_ptr)
        for r in self.resource_order:
            if r.pipeline_config is not None:
                self.pipelines[r] = r.pipeline_config.make_pipeline()
        for g in dict.fromkeys(r.pipeline_group for r in self.resource_order if r.pipeline_group is not None):
            share_group_barriers(g, self.pipelines)
        self._set_up = True

    def run(self):
        """Each task's lowered schedule, in the branch of its warps."""
        where = user_location()
        if not self._set_up and any(r.pipeline_config is not None for r in self.resource_order):
            raise DSLValueError("run() before setup_resources_and_tasks(): the pipelines are not made", where)
        warp = current_warp()
        total_warps = max(t.warp_idx + t.num_warps for t in self.tasks)
        # A kernel whose warps set budgets starts every thread with the register file split evenly over the block
        # (in steps of 8, at most 255): a budget above that is an increase, one below a decrease.
        baseline = min(255, REGISTER_FILE // (total_warps * 32)) // 8 * 8
        for t in self.tasks:
            if t.debug_print:
                print(f"[task_scheduling] {t!r}, schedule {t.schedule.name}:\n  " +
                      "\n  ".join(t.schedule.describe() or ["(empty)"]))

            def body(t=t):
                _set_registers(t, baseline)
                TaskLowering(self, t).run()

            _branches.when(in_range(warp, t.warps), body)


def _set_registers(task, baseline):
    n = task.num_registers
    if n is None:
        return
    if n > baseline:
        _arch.setmaxregister_increase(n)
    elif n < baseline:
        _arch.setmaxregister_decrease(n)


def _check_queue_loops(task):
    for op in task.schedule.walk():
        if not isinstance(op, WorkTileLoop):
            continue
        advances = [x for x in op.body if isinstance(x, BracketCall) and x.resource is op.queue
                    and x.action == "get_and_advance_work_tile"]
        if len(advances) != 1:
            raise DSLValueError(f"the work_tile_loop over {op.queue.name} calls get_and_advance_work_tile() "
                                f"{len(advances)} times in its body (outside skippable()); it must once per tile",
                                op.where)
        if any(isinstance(x, Skippable) and x.loop is not op for x in op.body):
            raise DSLValueError("skippable() belongs to the work_tile_loop it is called on", op.where)
