"""PipelineUmmaAsync: asynchronous MMAs produce the stages (accumulators in tensor memory), threads consume them
(an epilogue).

producer_acquire(state)  the MMA's leader CTA waits until the consumers released stage state.index;
producer_commit(state)   the MMAs' commit: once the MMAs issued so far have completed, one arrival on the full
                         barrier of this CTA (of both CTAs of the pair with 2-CTA MMAs);
consumer_wait(state)     waits until the stage is full (in each CTA);
consumer_release(state)  every consumer thread arrives on the empty barrier of the MMA's leader CTA, so that
                         barrier counts (consumer group) x (CTAs of the MMA) arrivals per phase.
Built from the backends' primitives (arch.mbarrier_init, arch.mbarrier_arrive, arch.mbarrier_arrive_cluster,
arch.mbarrier_wait, arch.block_rank_in_cluster, arch.umma_commit_arrive); no instruction is spelled here.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from . import cta_masks
from .barriers import MbarrierArray, own_barriers
from .pipeline_async import PipelineAsync


def _modes(cta_layout_vmnk):
    if cta_layout_vmnk is None:
        return [(1, 0), (1, 0), (1, 0), (1, 0)]
    return cta_masks.flat_modes(cta_layout_vmnk)


class _UmmaPipeline(PipelineAsync):
    """What the pipelines with MMAs on one side share: the cluster's layout, the pair of a 2-CTA MMA."""

    def __init__(self, full, empty, num_stages, producer_group, consumer_group, modes):
        super().__init__(full, empty, num_stages, producer_group, consumer_group)
        self.modes = modes
        self.cta_group = modes[0][0]
        self.cluster_size = cta_masks.size_of(modes)

    @classmethod
    def _make(cls, barrier_storage, num_stages, producer_group, consumer_group, cta_layout_vmnk, init_thread,
              defer_sync, full_count, empty_count):
        if num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages}")
        modes = _modes(cta_layout_vmnk)
        if modes[0][0] not in (1, 2):
            raise ValueError(f"the V mode of cta_layout_vmnk counts the CTAs of one MMA (1 or 2), got {modes[0][0]}")
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = MbarrierArray(barrier_storage, num_stages)
        empty = MbarrierArray(barrier_storage + num_stages, num_stages)
        p = cls(full, empty, num_stages, producer_group, consumer_group, modes)
        tidx, _, _ = cute.arch.thread_idx()
        first = tidx == (0 if init_thread is None else init_thread)

        def init():
            p.full.init(full_count(p))
            p.empty.init(empty_count(p))
            cute.arch.mbarrier_init_fence()

        when(first, init)
        if not defer_sync:
            if p.cluster_size == 1:
                cute.arch.sync_threads()
            else:
                cute.arch.cluster_arrive()
                cute.arch.cluster_wait()
        return p

    def _rank(self):
        return cute.arch.block_rank_in_cluster() if self.cluster_size > 1 else cutlass.Int32(0)

    def leader_rank(self):
        """The rank of the CTA that issues this CTA's MMAs (V coordinate 0)."""
        rank = self._rank()
        if self.cta_group == 1:
            return rank
        return rank - cta_masks.coordinate(rank, self.modes, 0) * self.modes[0][1]

    def pair_mask(self):
        """Both CTAs of this CTA's MMA (None with one-CTA MMAs: the committing CTA's own barrier)."""
        if self.cta_group == 1:
            return None
        return cta_masks.along(self._rank(), self.modes, 0)

    def _arrive_at_leader(self, barrier):
        if self.cta_group == 1:
            cute.arch.mbarrier_arrive(barrier)
        else:
            cute.arch.mbarrier_arrive_cluster(barrier, self.leader_rank())

    def producer_tail(self, state):
        for _ in cutlass.range_constexpr(self.num_stages):
            self._wait_unless(self.empty, state, None)
            state.advance()


class PipelineUmmaAsync(_UmmaPipeline):
    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, cta_layout_vmnk=None,
               init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage; consumer_group: the threads of each CTA
        that consume a stage (each arrives once per release)."""
        return cls._make(barrier_storage, num_stages, producer_group, consumer_group, cta_layout_vmnk, init_thread,
                         defer_sync, lambda p: 1, lambda p: consumer_group.arrivals * p.cta_group)

    def producer_acquire(self, state, try_acquire_token=None):
        self._wait_unless(self.empty, state, try_acquire_token)

    def producer_commit(self, state):
        cute.arch.umma_commit_arrive(self.full.at(state.index), mask=self.pair_mask(), cta_group=self.cta_group)

    def consumer_try_wait(self, state):
        return cute.arch.mbarrier_try_wait(self.full.at(state.index), cutlass.Int32(state.phase))

    def consumer_wait(self, state, try_wait_token=None):
        self._wait_unless(self.full, state, try_wait_token)

    def consumer_release(self, state):
        self._arrive_at_leader(self.empty.at(state.index))
