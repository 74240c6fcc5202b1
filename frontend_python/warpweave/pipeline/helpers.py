"""`cutlass.pipeline.helpers`: the module of CuTe DSL's pipeline package that holds its helpers: cooperative groups,
barriers as arrays, named barriers, pipeline states. Programs import them by this path too; each is the object of
warpweave.pipeline by the same name."""
from ._reexport import reexport

_NAMES = ['Agent', 'CooperativeGroup', 'MbarrierArray', 'MbarrierLayout', 'NamedBarrier', 'PerStagePipelineState',
          'PipelineOp', 'PipelineState', 'PipelineUserType', 'SyncObject', 'TmaStoreFence', 'agent_sync',
          'alloc_reserved_mbarrier', 'arrive', 'arrive_and_wait', 'arrive_unaligned', 'compute_k_tile',
          'make_pipeline_state', 'pipeline_init_arrive', 'pipeline_init_wait', 'sync', 'wait',
          'wait_unaligned']

__all__ = reexport(globals(), _NAMES)
