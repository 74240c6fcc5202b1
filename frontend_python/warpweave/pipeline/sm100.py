"""`cutlass.pipeline.sm100`: the module of CuTe DSL's pipeline package that holds the pipelines of Blackwell (UMMA,
cluster launch control, TMA with several consumers) and their helpers. Programs import them by this path too; each
is the object of warpweave.pipeline by the same name."""
from ._reexport import reexport

_NAMES = ['Agent', 'CooperativeGroup', 'MbarrierArray', 'MbarrierLayout', 'PipelineAsync', 'PipelineAsyncUmma',
          'PipelineClcFetchAsync', 'PipelineOp', 'PipelineState', 'PipelineTmaMultiConsumersAsync',
          'PipelineTmaUmma', 'PipelineUmmaAsync', 'SyncObject', 'TmaStoreFence', 'agent_sync',
          'alloc_reserved_mbarrier']

__all__ = reexport(globals(), _NAMES)
