"""warpweave's producer/consumer pipelines (warpweave.pipeline).

A pipeline is a ring of `num_stages` buffers guarded by two arrays of mbarriers: `full[i]` tells consumers that
stage i holds data, `empty[i]` tells producers that consumers are done with it. Producers and consumers walk the
ring with a PipelineState (index, phase); the phase flips at each wrap, and waits are on the phase's parity.

Everything here is composed from primitives the loaded backends publish (arch.mbarrier_init, arch.mbarrier_arrive,
arch.mbarrier_wait, cpasync.mbarrier_arrive_noinc, named barriers): no instruction is spelled here, so a backend
that publishes those primitives gets the pipelines.
"""
from .barriers import MbarrierArray, NamedBarrier, agent_sync, alloc_reserved_mbarrier, arrive, arrive_and_wait, sync
from .init_sync import pipeline_init_arrive, pipeline_init_wait
from .participants import PipelineConsumer, PipelineProducer
from .agents import Agent, CooperativeGroup, PipelineOp
from .pipeline_async import PipelineAsync
from .pipeline_cp_async import PipelineCpAsync
from .pipeline_tma_async import PipelineTmaAsync
from .pipeline_tma_store import PipelineTmaStore
from .pipeline_tma_umma import PipelineTmaUmma
from .pipeline_tma_multi_consumers import PipelineTmaMultiConsumersAsync
from .pipeline_umma_async import PipelineUmmaAsync
from .pipeline_async_umma import PipelineAsyncUmma
from .pipeline_clc_fetch_async import PipelineClcFetchAsync
from .pipeline_order import PipelineOrder
from .state import PipelineState, PipelineUserType, make_pipeline_state

__all__ = ["Agent", "CooperativeGroup", "MbarrierArray", "NamedBarrier", "PipelineAsync", "PipelineCpAsync",
           "PipelineTmaAsync", "PipelineTmaStore", "PipelineProducer", "PipelineConsumer", "sync",
           "PipelineTmaUmma", "PipelineTmaMultiConsumersAsync", "PipelineUmmaAsync", "PipelineAsyncUmma", "PipelineClcFetchAsync",
           "PipelineState", "PipelineUserType", "make_pipeline_state", "pipeline_init_arrive", "pipeline_init_wait",
           "PipelineOp", "agent_sync", "alloc_reserved_mbarrier", "PipelineOrder", "arrive", "arrive_and_wait"]
