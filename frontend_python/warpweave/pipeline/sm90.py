"""`cutlass.pipeline.sm90`: the module of CuTe DSL's pipeline package that holds the pipelines of Hopper (asynchronous
copies, TMA loads and stores) and their helpers. Programs import them by this path too; each is the object of
warpweave.pipeline by the same name."""
from ._reexport import reexport

_NAMES = ['Agent', 'CooperativeGroup', 'MbarrierArray', 'PipelineAsync', 'PipelineConsumer', 'PipelineCpAsync',
          'PipelineOp', 'PipelineOrder', 'PipelineProducer', 'PipelineState', 'PipelineTmaAsync',
          'PipelineTmaStore', 'PipelineUserType', 'SyncObject', 'TmaStoreFence', 'agent_sync',
          'alloc_reserved_mbarrier', 'make_pipeline_state']

__all__ = reexport(globals(), _NAMES)
