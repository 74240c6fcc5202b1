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

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from . import cta_masks
from .barriers import MbarrierArray, own_barriers
from .pipeline_async import PipelineAsync


def _vmnk(cta_layout_vmnk):
    if cta_layout_vmnk is None:
        return [(1, 0), (1, 0), (1, 0), (1, 0)]
    return cta_masks.flat_modes(cta_layout_vmnk)


class PipelineTmaUmma(PipelineAsync):
    def __init__(self, full, empty, num_stages, producer_group, consumer_group, tx_count, modes):
        super().__init__(full, empty, num_stages, producer_group, consumer_group)
        self.tx_count = tx_count
        self.modes = modes
        self.cta_group = modes[0][0]
        self.cluster_size = cta_masks.size_of(modes)

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, tx_count: int,
               cta_layout_vmnk=None, mcast_mode_mn=(1, 1), init_thread=None, defer_sync: bool = False, loc=None,
               ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage. tx_count: the bytes one stage's loads
        bring in, for the whole MMA (both CTAs of a pair). cta_layout_vmnk: the cluster's (V, M, N, K) layout of
        CTAs (None: one CTA). mcast_mode_mn: whether A is multicast along N and B along M ((1, 1): both)."""
        if num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages}")
        if not isinstance(tx_count, int) or tx_count <= 0:
            raise ValueError(f"tx_count must be the positive static byte count of a stage's loads, got {tx_count!r}")
        modes = _vmnk(cta_layout_vmnk)
        if modes[0][0] not in (1, 2):
            raise ValueError(f"the V mode of cta_layout_vmnk counts the CTAs of one MMA (1 or 2), got {modes[0][0]}")
        if cta_masks.size_of(modes) > 16:
            raise ValueError(f"a cluster has at most 16 CTAs, got {cta_layout_vmnk}")
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = MbarrierArray(barrier_storage, num_stages)
        empty = MbarrierArray(barrier_storage + num_stages, num_stages)
        p = cls(full, empty, num_stages, producer_group, consumer_group, tx_count, modes)
        p.mcast_mode_mn = tuple(mcast_mode_mn)
        tidx, _, _ = cute.arch.thread_idx()
        first = tidx == (0 if init_thread is None else init_thread)

        def init():
            p.full.init(1)                               # the leader's expect_tx arrival
            p.empty.init(consumer_group.arrivals)        # one MMA commit per MMA reading the stage
            cute.arch.mbarrier_init_fence()

        when(first, init)
        if not defer_sync:
            if p.cluster_size == 1:
                cute.arch.sync_threads()
            else:
                cute.arch.cluster_arrive()
                cute.arch.cluster_wait()
        return p

    # --- where this CTA is -------------------------------------------------------------------------------------
    def _rank(self):
        return cute.arch.block_rank_in_cluster() if self.cluster_size > 1 else cutlass.Int32(0)

    def is_leader_cta(self):
        """Whether this CTA issues the MMAs (V coordinate 0)."""
        if self.cta_group == 1:
            return cutlass.Boolean(True)
        return cta_masks.coordinate(self._rank(), self.modes, 0) == 0

    def consumer_mask(self):
        """The CTAs whose empty barriers this (leader) CTA's MMA commit arrives on; None: only this CTA's."""
        if self.cluster_size == 1:
            return None
        rank = self._rank()
        mask = cutlass.Int32(0)
        a_mc, b_mc = self.mcast_mode_mn
        lead = {0: cutlass.Int32(0)}
        if a_mc:
            mask = mask | cta_masks.along(rank, self.modes, 2, lead)      # the CTAs A is multicast to
        if b_mc:
            mask = mask | cta_masks.along(rank, self.modes, 1, lead)      # those B is multicast to
        if not (a_mc or b_mc):
            mask = cta_masks.along(rank, self.modes, 0, {}) if self.cta_group == 2 else cutlass.Int32(1) << rank
        if self.cta_group == 2:
            mask = mask | (mask << self.modes[0][1])                      # both CTAs of each pair
        return mask

    # --- producer -----------------------------------------------------------------------------------------------
    def producer_acquire(self, state, try_acquire_token=None):
        self._wait_unless(self.empty, state, try_acquire_token)
        when(self.is_leader_cta() & cute.arch.elect_one(), lambda: cute.arch.mbarrier_arrive_and_expect_tx(
            self.full.at(state.index), cutlass.Int32(self.tx_count)))

    def producer_commit(self, state):
        pass

    def producer_get_barrier(self, state):
        return self.full.at(state.index)

    def producer_tail(self, state):
        """Waits until the MMAs released every stage (before the CTA exits while a peer's MMA may still arrive)."""
        for _ in cutlass.range_constexpr(self.num_stages):
            self._wait_unless(self.empty, state, None)
            state.advance()

    # --- consumer -----------------------------------------------------------------------------------------------
    def consumer_try_wait(self, state):
        return cute.arch.mbarrier_try_wait(self.full.at(state.index), cutlass.Int32(state.phase))

    def consumer_wait(self, state, try_wait_token=None):
        self._wait_unless(self.full, state, try_wait_token)

    def consumer_release(self, state):
        cute.arch.umma_commit_arrive(self.empty.at(state.index), mask=self.consumer_mask(),
                                     cta_group=self.cta_group)
