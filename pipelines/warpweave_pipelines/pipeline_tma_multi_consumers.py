"""PipelineTmaMultiConsumersAsync: TMA loads produce the stages; two groups consume each stage, asynchronous MMAs
(issued by one thread) and threads that read it themselves (an epilogue's warps, say).

As PipelineTmaUmma, but a stage is empty once both groups are done with it: its empty barrier counts the MMA
commits of consumer_group_umma and the arrivals of every thread of consumer_group_async. consumer_release(state,
op_type) releases for one group: PipelineOp.TCGen05Mma (the default) with the MMAs' commit, PipelineOp.AsyncThread
with the calling thread's arrival. Both groups wait on the full barrier with consumer_wait.

Asynchronous consumers arrive on their own CTA's barrier: the pipeline is made for one CTA (a cluster whose loads
multicast into several CTAs would need their arrivals on the producers' CTAs too, which this pipeline does not
send), as CuTe DSL's Blackwell programs use it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .agents import CooperativeGroup, PipelineOp
from .barriers import MbarrierArray
from .pipeline_tma_umma import PipelineTmaUmma
from . import cta_masks
from .pipeline_umma_async import _modes


@dataclass(frozen=True, eq=False)
class PipelineTmaMultiConsumersAsync(PipelineTmaUmma):
    """Fields beyond PipelineTmaUmma's: sync_object_empty_async, the empty barriers as the asynchronous consumers
    arrive on them (sync_object_empty is the MMA commits' view of the same barriers)."""

    sync_object_empty_async: object = None

    @classmethod
    def create(cls, *, num_stages: int, producer_group, consumer_group_umma, consumer_group_async, tx_count: int,
               barrier_storage=None, cta_layout_vmnk=None, mcast_mode_mn=(1, 1), init_thread=None,
               defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages barriers at barrier_storage; tx_count: the bytes of one stage's loads.
        consumer_group_umma counts the MMA commits that release a stage, consumer_group_async the threads."""
        for name, g in (("consumer_group_umma", consumer_group_umma), ("consumer_group_async", consumer_group_async)):
            if not isinstance(g, CooperativeGroup):
                raise TypeError(f"{name} is a CooperativeGroup, got {g!r}")
        if cta_masks.size_of(_modes(cta_layout_vmnk)) > 1:
            raise ValueError("PipelineTmaMultiConsumersAsync is made for one CTA here: its asynchronous consumers "
                             f"arrive on their own CTA's barriers, got the cluster {cta_layout_vmnk}")
        both = CooperativeGroup(consumer_group_umma.agent, consumer_group_umma.arrivals + consumer_group_async.arrivals)
        p = super().create(barrier_storage=barrier_storage, num_stages=num_stages, producer_group=producer_group,
                           consumer_group=both, tx_count=tx_count, cta_layout_vmnk=cta_layout_vmnk,
                           mcast_mode_mn=mcast_mode_mn, init_thread=init_thread, defer_sync=defer_sync)
        empty = p.sync_object_empty
        async_view = MbarrierArray(empty.ptr, num_stages, PipelineOp.AsyncThread, consumer_group_async)
        return dataclasses.replace(p, sync_object_empty_async=async_view)

    def consumer_release(self, state, op_type: PipelineOp = PipelineOp.TCGen05Mma, *, loc=None, ip=None):
        if op_type is PipelineOp.TCGen05Mma:
            super().consumer_release(state)
        elif op_type is PipelineOp.AsyncThread:
            self.sync_object_empty_async.arrive(state.index)
        else:
            raise ValueError(f"consumer_release: op_type is PipelineOp.TCGen05Mma (the MMA consumers) or "
                             f"PipelineOp.AsyncThread (the thread consumers), got {op_type!r}")
