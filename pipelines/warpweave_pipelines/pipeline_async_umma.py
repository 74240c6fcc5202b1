"""PipelineAsyncUmma: threads produce the stages (e.g. operands written to shared or tensor memory), asynchronous
MMAs consume them.

producer_acquire(state)  waits until the MMAs released stage state.index;
producer_commit(state)   every producer thread arrives on the full barrier of the MMA's leader CTA (which so counts
                         (producer group) x (CTAs of the MMA) arrivals per phase);
consumer_wait(state)     the leader waits until the stage is full;
consumer_release(state)  the MMAs' commit: once the MMAs issued so far have completed, one arrival on the empty
                         barrier of this CTA (of both CTAs of the pair with 2-CTA MMAs).
Built from the backends' primitives, as pipeline_umma_async.py; no instruction is spelled here.
"""
from __future__ import annotations

from dataclasses import dataclass

from .agents import PipelineOp
from .pipeline_umma_async import _UmmaPipeline


@dataclass(frozen=True, eq=False)
class PipelineAsyncUmma(_UmmaPipeline):
    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, cta_layout_vmnk=None,
               init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage; producer_group: the threads of each CTA
        that fill a stage (each arrives once per commit, on the full barrier of the MMA's leader CTA)."""
        return cls._make(barrier_storage, num_stages, (PipelineOp.AsyncThread, producer_group),
                         (PipelineOp.TCGen05Mma, consumer_group), cta_layout_vmnk, init_thread, defer_sync,
                         lambda g: producer_group.arrivals * g, lambda g: 1,
                         lambda modes: (cls.leader_rank_in(modes), cls.pair_mask_in(modes)))
