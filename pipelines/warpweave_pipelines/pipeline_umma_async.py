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

from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from . import cta_masks
from .agents import PipelineOp
from .barriers import own_barriers
from .pipeline_async import PipelineAsync, first_thread, sync_after_init


def _modes(cta_layout_vmnk):
    if cta_layout_vmnk is None:
        return ((1, 0), (1, 0), (1, 0), (1, 0))
    return tuple(cta_masks.flat_modes(cta_layout_vmnk))


@dataclass(frozen=True, eq=False)
class _UmmaPipeline(cta_masks.VmnkModes, PipelineAsync):
    """What the pipelines with MMAs on one side share: the cluster's layout (modes: (size, stride) of V, M, N, K),
    the pair of a 2-CTA MMA."""

    modes: tuple = ((1, 0), (1, 0), (1, 0), (1, 0))

    @classmethod
    def _make(cls, barrier_storage, num_stages, producer_agent, consumer_agent, cta_layout_vmnk, init_thread,
              defer_sync, full_count, empty_count, masks):
        """masks(modes) -> (producer_mask, consumer_mask); full_count / empty_count(cta_group): arrivals per phase."""
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages!r}")
        modes = _modes(cta_layout_vmnk)
        cta_group = modes[0][0]
        if cta_group not in (1, 2):
            raise ValueError(f"the V mode of cta_layout_vmnk counts the CTAs of one MMA (1 or 2), got {cta_group}")
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = cls._sync_object(barrier_storage, num_stages, producer_agent, cta_group=cta_group)
        empty = cls._sync_object(barrier_storage + num_stages, num_stages, consumer_agent, cta_group=cta_group)
        producer_mask, consumer_mask = masks(modes)
        p = cls(full, empty, num_stages, producer_mask, consumer_mask, modes)

        def init():
            full.init(full_count(cta_group))
            empty.init(empty_count(cta_group))
            cute.arch.mbarrier_init_fence()

        when(first_thread(init_thread), init)
        if not defer_sync:
            sync_after_init(cta_masks.size_of(modes) > 1)
        return p

    @staticmethod
    def _rank_in(modes):
        return cute.arch.block_rank_in_cluster() if cta_masks.size_of(modes) > 1 else cutlass.Int32(0)

    @staticmethod
    def leader_rank_in(modes):
        """The rank of the CTA that issues this CTA's MMAs (V coordinate 0); None with one-CTA MMAs (this CTA)."""
        if modes[0][0] == 1:
            return None
        rank = _UmmaPipeline._rank_in(modes)
        return rank - cta_masks.coordinate(rank, modes, 0) * modes[0][1]

    @staticmethod
    def pair_mask_in(modes):
        """Both CTAs of this CTA's MMA (None with one-CTA MMAs: the committing CTA's own barrier)."""
        if modes[0][0] == 1:
            return None
        return cta_masks.along(_UmmaPipeline._rank_in(modes), modes, 0)

    def producer_tail(self, state, *, loc=None, ip=None):
        for _ in cutlass.range_constexpr(self.num_stages):
            self._wait_unless(self.sync_object_empty, state, None)
            state.advance()


@dataclass(frozen=True, eq=False)
class PipelineUmmaAsync(_UmmaPipeline):
    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, cta_layout_vmnk=None,
               init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage; consumer_group: the threads of each CTA
        that consume a stage (each arrives once per release, on the empty barrier of the MMA's leader CTA)."""
        return cls._make(barrier_storage, num_stages, (PipelineOp.TCGen05Mma, producer_group),
                         (PipelineOp.AsyncThread, consumer_group), cta_layout_vmnk, init_thread, defer_sync,
                         lambda g: 1, lambda g: consumer_group.arrivals * g,
                         lambda modes: (cls.pair_mask_in(modes), cls.leader_rank_in(modes)))

    def producer_commit(self, state, *, loc=None, ip=None):
        self.sync_object_full.arrive(state.index, self.producer_mask)
