"""PipelineClcFetchAsync: a scheduler warp fetches the next work tile by cluster launch control; every warp of the
cluster that walks the tiles consumes the response.

One CTA of the cluster (rank 0) produces: its scheduler warp asks the hardware to cancel a cluster that has not
started yet (utils.ClcDynamicPersistentTileScheduler.advance_to_next_work), and the 16-byte response is written to
the same shared-memory offset in every CTA of the cluster, completing tx_count bytes on the full barrier there.

producer_acquire(state)  waits until every consumer of the cluster released stage state.index (its empty barrier
                         lives in the producing CTA); then one elected lane arrives on the full barrier of every CTA
                         of the cluster expecting tx_count bytes (the response's);
producer_get_barrier     the full barrier the response completes (at the same offset in every CTA);
producer_commit          nothing: the response's bytes complete the phase;
producer_tail(state)     waits, without fetching, until the consumers released every stage, so that the producing
                         CTA does not exit while a peer's release is still to arrive on its barrier;
consumer_wait(state)     waits until this CTA's copy of the response has landed;
consumer_release(state)  each consumer thread arrives on the empty barrier of the producing CTA, so that barrier
                         counts the consumer group's arrivals (the threads of all the cluster's consumer warps).

Built from the backends' primitives (arch.mbarrier_init, arch.mbarrier_init_fence, arch.mbarrier_arrive,
arch.mbarrier_arrive_cluster, arch.mbarrier_arrive_and_expect_tx, arch.mbarrier_arrive_and_expect_tx_cluster,
arch.mbarrier_wait, arch.elect_one); no instruction is spelled here.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .barriers import MbarrierArray, own_barriers
from .pipeline_async import PipelineAsync

PRODUCER_RANK = 0   # the CTA of the cluster whose scheduler warp fetches


def _cluster_size(cta_layout_vmnk) -> int:
    if cta_layout_vmnk is None:
        return 1
    size = cute.size(cta_layout_vmnk)
    if not isinstance(size, int):
        raise ValueError(f"cta_layout_vmnk must be a static layout of the cluster's CTAs, got {cta_layout_vmnk}")
    return size


class PipelineClcFetchAsync(PipelineAsync):
    def __init__(self, full, empty, num_stages, producer_group, consumer_group, tx_count, cluster_size):
        super().__init__(full, empty, num_stages, producer_group, consumer_group)
        self.tx_count = tx_count
        self.cluster_size = cluster_size

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, tx_count: int,
               cta_layout_vmnk=None, init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage (every CTA of the cluster calls it, with
        the same storage offset). tx_count: the bytes of one response (16). consumer_group: every consumer thread
        of the whole cluster (each arrives once per release). cta_layout_vmnk: the cluster's layout of CTAs (None:
        one CTA). With defer_sync=True the kernel syncs later (pipeline_init_arrive / pipeline_init_wait)."""
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages!r}")
        if not isinstance(tx_count, int) or tx_count <= 0:
            raise ValueError(f"tx_count must be the positive static byte count of a response, got {tx_count!r}")
        cluster_size = _cluster_size(cta_layout_vmnk)
        if not 1 <= cluster_size <= 16:
            raise ValueError(f"a cluster has 1 to 16 CTAs, got {cta_layout_vmnk}")
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = MbarrierArray(barrier_storage, num_stages)
        empty = MbarrierArray(barrier_storage + num_stages, num_stages)
        p = cls(full, empty, num_stages, producer_group, consumer_group, tx_count, cluster_size)
        tidx, _, _ = cute.arch.thread_idx()
        first = tidx == (0 if init_thread is None else init_thread)

        def init():
            p.full.init(1)                                # the producer's expect_tx arrival, in every CTA
            p.empty.init(consumer_group.arrivals)         # every consumer thread of the cluster
            cute.arch.mbarrier_init_fence()               # peers and the async response use them

        when(first, init)
        if not defer_sync:
            if cluster_size == 1:
                cute.arch.sync_threads()
            else:
                cute.arch.cluster_arrive()
                cute.arch.cluster_wait()
        return p

    # --- producer (the scheduler warp of the producing CTA) ---------------------------------------------------
    def producer_acquire(self, state, try_acquire_token=None):
        self._wait_unless(self.empty, state, try_acquire_token)
        bar = self.full.at(state.index)
        tx = cutlass.Int32(self.tx_count)

        def expect():
            if self.cluster_size == 1:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, tx)
                return
            for rank in cutlass.range_constexpr(self.cluster_size):
                cute.arch.mbarrier_arrive_and_expect_tx_cluster(bar, tx, cutlass.Int32(rank))

        when(cute.arch.elect_one(), expect)

    def producer_commit(self, state):
        pass

    def producer_get_barrier(self, state):
        return self.full.at(state.index)

    def producer_tail(self, state):
        for _ in cutlass.range_constexpr(self.num_stages):
            self._wait_unless(self.empty, state, None)
            state.advance()

    # --- consumers (every warp of the cluster walking the tiles) ------------------------------------------------
    def consumer_wait(self, state, try_wait_token=None):
        self._wait_unless(self.full, state, try_wait_token)

    def consumer_release(self, state):
        bar = self.empty.at(state.index)
        if self.cluster_size == 1:
            cute.arch.mbarrier_arrive(bar)
        else:
            cute.arch.mbarrier_arrive_cluster(bar, cutlass.Int32(PRODUCER_RANK))
