"""PipelineTmaUmma: TMA loads produce the stages, asynchronous MMAs (issued by one thread for the CTA, or for a
pair of CTAs) consume them.

producer_acquire(state)  waits until stage state.index is empty; in the MMA's leader CTA (V coordinate 0) one
                         elected lane arrives on its full barrier expecting tx_count bytes: with 2-CTA MMAs the
                         loads of both CTAs of the pair complete on the leader's barrier, so tx_count counts both;
producer_get_barrier     the full barrier the stage's TMA loads complete;
producer_commit          nothing: the loads' bytes complete the phase;
consumer_wait(state)     the leader waits until the stage is full;
consumer_release(state)  the MMAs' commit: once the MMAs issued so far have read the stage, one arrival on the
                         empty barrier of every CTA whose loads wrote into what they read (in a cluster: the CTAs
                         of this MMA tile's cluster row and column, both CTAs of each pair), so each empty barrier
                         counts one arrival per MMA that reads it (make the consumer group with that count).
Built from the backends' primitives (arch.mbarrier_init, arch.mbarrier_arrive_and_expect_tx, arch.mbarrier_wait,
arch.mbarrier_try_wait, arch.elect_one, arch.block_rank_in_cluster and arch.umma_commit_arrive, the MMA commit a
backend with asynchronous MMAs publishes); no instruction is spelled here.
"""
from __future__ import annotations

from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from . import cta_masks
from .agents import PipelineOp
from .barriers import own_barriers
from .pipeline_async import ExpectTxProducer, PipelineAsync, first_thread, sync_after_init
from .pipeline_umma_async import _modes


@dataclass(frozen=True, eq=False)
class PipelineTmaUmma(cta_masks.VmnkModes, ExpectTxProducer, PipelineAsync):
    """Fields beyond PipelineAsync's: is_leader_cta (whether this CTA issues the MMAs, a Boolean), modes (the
    cluster's (V, M, N, K) as (size, stride) pairs) and mcast_mode_mn."""

    is_leader_cta: object = True
    modes: tuple = ((1, 0), (1, 0), (1, 0), (1, 0))
    mcast_mode_mn: tuple = (1, 1)

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, tx_count: int,
               cta_layout_vmnk=None, mcast_mode_mn=(1, 1), init_thread=None, defer_sync: bool = False,
               enable_multicast_signaling: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage. tx_count: the bytes one stage's loads
        bring in, for the whole MMA (both CTAs of a pair). cta_layout_vmnk: the cluster's (V, M, N, K) layout of
        CTAs (None: one CTA). mcast_mode_mn: whether A is multicast along N and B along M ((1, 1): both).
        enable_multicast_signaling: a stage's empty barrier counts the MMA commits that reach it (one per leader CTA
        whose MMAs read what this CTA's loads multicast), whatever consumer_group's size; else consumer_group's
        arrivals."""
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages!r}")
        if not isinstance(tx_count, int) or tx_count <= 0:
            raise ValueError(f"tx_count must be the positive static byte count of a stage's loads, got {tx_count!r}")
        modes = _modes(cta_layout_vmnk)
        cta_group = modes[0][0]
        if cta_group not in (1, 2):
            raise ValueError(f"the V mode of cta_layout_vmnk counts the CTAs of one MMA (1 or 2), got {cta_group}")
        if cta_masks.size_of(modes) > 16:
            raise ValueError(f"a cluster has at most 16 CTAs, got {cta_layout_vmnk}")
        mcast_mode_mn = tuple(mcast_mode_mn)
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = cls._sync_object(barrier_storage, num_stages, (PipelineOp.TmaLoad, producer_group), tx_count,
                                cta_group=cta_group)
        empty = cls._sync_object(barrier_storage + num_stages, num_stages, (PipelineOp.TCGen05Mma, consumer_group),
                                 cta_group=cta_group)
        consumer_arrivals = consumer_group.arrivals
        if enable_multicast_signaling:
            # the leaders along N (A's multicast) and along M (B's), this CTA's own leader counted once
            consumer_arrivals = (modes[2][0] if mcast_mode_mn[0] else 1) + (modes[1][0] if mcast_mode_mn[1] else 1) - 1
        p = cls(full, empty, num_stages, None, cls._commit_mask(modes, mcast_mode_mn), cls._leader(modes), modes,
                mcast_mode_mn)

        def init():
            full.init(producer_group.arrivals)           # the leader's expect_tx arrival
            empty.init(consumer_arrivals)                # one MMA commit per MMA reading the stage
            cute.arch.mbarrier_init_fence()

        when(first_thread(init_thread), init)
        if not defer_sync:
            sync_after_init(cta_masks.size_of(modes) > 1)
        return p

    # --- where this CTA is -------------------------------------------------------------------------------------
    @staticmethod
    def _rank(modes):
        return cute.arch.block_rank_in_cluster() if cta_masks.size_of(modes) > 1 else cutlass.Int32(0)

    @staticmethod
    def _leader(modes):
        """Whether this CTA issues the MMAs (V coordinate 0): True with one-CTA MMAs."""
        if modes[0][0] == 1:
            return True
        return cta_masks.coordinate(PipelineTmaUmma._rank(modes), modes, 0) == 0

    @staticmethod
    def _commit_mask(modes, mcast_mode_mn):
        """The CTAs whose empty barriers this (leader) CTA's MMA commit arrives on; None: only this CTA's."""
        if cta_masks.size_of(modes) == 1:
            return None
        rank = PipelineTmaUmma._rank(modes)
        mask = cutlass.Int32(0)
        a_mc, b_mc = mcast_mode_mn
        lead = {0: cutlass.Int32(0)}
        if a_mc:
            mask = mask | cta_masks.along(rank, modes, 2, lead)      # the CTAs A is multicast to
        if b_mc:
            mask = mask | cta_masks.along(rank, modes, 1, lead)      # those B is multicast to
        if not (a_mc or b_mc):
            mask = cta_masks.along(rank, modes, 0, {}) if modes[0][0] == 2 else cutlass.Int32(1) << rank
        if modes[0][0] == 2:
            mask = mask | (mask << modes[0][1])                      # both CTAs of each pair
        return mask

    # --- producer -----------------------------------------------------------------------------------------------
    def producer_acquire(self, state, try_acquire_token=None, *, loc=None, ip=None):
        self._wait_unless(self.sync_object_empty, state, try_acquire_token)
        when(self.is_leader_cta, lambda: self.sync_object_full.arrive(state.index, self.producer_mask))

    def producer_tail(self, state, *, loc=None, ip=None):
        """Waits until the MMAs released every stage (before the CTA exits while a peer's MMA may still arrive)."""
        for _ in cutlass.range_constexpr(self.num_stages):
            self._wait_unless(self.sync_object_empty, state, None)
            state.advance()
