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

import warpweave as cutlass
import warpweave.cute as cute

from .pipeline_umma_async import _UmmaPipeline


class PipelineAsyncUmma(_UmmaPipeline):
    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, cta_layout_vmnk=None,
               init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage; producer_group: the threads of each CTA
        that fill a stage (each arrives once per commit)."""
        return cls._make(barrier_storage, num_stages, producer_group, consumer_group, cta_layout_vmnk, init_thread,
                         defer_sync, lambda p: producer_group.arrivals * p.cta_group, lambda p: 1)

    def producer_acquire(self, state, try_acquire_token=None):
        self._wait_unless(self.empty, state, try_acquire_token)

    def producer_commit(self, state):
        self._arrive_at_leader(self.full.at(state.index))

    def consumer_try_wait(self, state):
        return cute.arch.mbarrier_try_wait(self.full.at(state.index), cutlass.Int32(state.phase))

    def consumer_wait(self, state, try_wait_token=None):
        self._wait_unless(self.full, state, try_wait_token)

    def consumer_release(self, state):
        cute.arch.umma_commit_arrive(self.empty.at(state.index), mask=self.pair_mask(), cta_group=self.cta_group)
