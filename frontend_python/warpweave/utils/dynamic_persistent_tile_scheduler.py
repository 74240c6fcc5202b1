"""`cutlass.utils.dynamic_persistent_tile_scheduler`: the module CuTe DSL keeps its dynamic (cluster launch control)
persistent tile scheduler in; programs import the scheduler from it by that path. The scheduler itself is
utils/clc_dynamic_persistent_tile_scheduler.py."""
from .clc_dynamic_persistent_tile_scheduler import (  # noqa: F401
    ClcDynamicPersistentTileScheduler, ClcDynamicPersistentTileSchedulerParams,
)
from .static_persistent_tile_scheduler import WorkTileInfo  # noqa: F401

__all__ = ["ClcDynamicPersistentTileScheduler", "ClcDynamicPersistentTileSchedulerParams", "WorkTileInfo"]
