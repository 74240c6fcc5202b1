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

from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .agents import PipelineOp
from .barriers import own_barriers
from .pipeline_async import ExpectTxProducer, PipelineAsync, cluster_size_of, first_thread, sync_after_init

PRODUCER_RANK = 0   # the CTA of the cluster whose scheduler warp fetches


@dataclass(frozen=True, eq=False)
class PipelineClcFetchAsync(ExpectTxProducer, PipelineAsync):
    """producer_mask: every CTA of the cluster (the response lands in each); consumer_mask: the producing CTA."""

    cluster_size: int = 1

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
        cluster_size = cluster_size_of(cta_layout_vmnk)
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = cls._sync_object(barrier_storage, num_stages, (PipelineOp.ClcLoad, producer_group), tx_count)
        empty = cls._sync_object(barrier_storage + num_stages, num_stages, (PipelineOp.AsyncThread, consumer_group))
        every_cta = None if cluster_size == 1 else (1 << cluster_size) - 1
        producer = None if cluster_size == 1 else PRODUCER_RANK
        p = cls(full, empty, num_stages, every_cta, producer, cluster_size)

        def init():
            full.init(1)                                  # the producer's expect_tx arrival, in every CTA
            empty.init(consumer_group.arrivals)           # every consumer thread of the cluster
            cute.arch.mbarrier_init_fence()               # peers and the async response use them

        when(first_thread(init_thread), init)
        if not defer_sync:
            sync_after_init(cluster_size > 1)
        return p

    # --- producer (the scheduler warp of the producing CTA) ---------------------------------------------------
    def producer_tail(self, state, *, loc=None, ip=None):
        for _ in cutlass.range_constexpr(self.num_stages):
            self._wait_unless(self.sync_object_empty, state, None)
            state.advance()
