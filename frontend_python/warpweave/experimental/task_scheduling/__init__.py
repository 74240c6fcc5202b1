"""`cutlass.experimental.task_scheduling`: a warp-specialized kernel written as tasks over resources.

Resources (resources.py) say how data is produced into and consumed from each buffer; schedules
(schedule_builder.py) say in which order each task calls those works and the pipeline brackets around them;
Tasks (task.py) give each schedule a range of warps; the TaskManager (task_manager.py) checks the whole graph
(graph.py) and lowers it onto warpweave's pipelines and tile schedulers (lowering.py), with the shared and tensor
memory the resources ask for (memory.py). Nothing here is specific to one GPU: the pipelines, the schedulers and
the user's work methods carry whatever the target needs.
"""
from . import enums, memory, resources, schedule_builder, task, task_manager
from .enums import PipelineGroupMode, SignalingThreads, WorkAttr
from .memory import SmemAllocation, SmemAllocator, TmemAllocation, TmemAllocator
from .resources import (MemoryResource, PdlLaunchBarrier, PdlWaitBarrier, PipelineConfig, PipelineGroup, StageInfo,
                        TaskLocalVariable, TileSchedulerConfig, WorkQueue, consumer_work, producer_work)
from .schedule_builder import domain_loop, schedule, work_tile_loop
from .task import Task
from .task_manager import TaskManager

__all__ = ["enums", "memory", "resources", "schedule_builder", "task", "task_manager", "PipelineGroupMode",
           "SignalingThreads", "WorkAttr", "SmemAllocation", "SmemAllocator", "TmemAllocation", "TmemAllocator",
           "MemoryResource", "PdlLaunchBarrier", "PdlWaitBarrier", "PipelineConfig", "PipelineGroup", "StageInfo",
           "TaskLocalVariable", "TileSchedulerConfig", "WorkQueue", "consumer_work", "producer_work", "domain_loop",
           "schedule", "work_tile_loop", "Task", "TaskManager"]
