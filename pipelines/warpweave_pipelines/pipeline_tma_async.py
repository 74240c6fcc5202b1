"""PipelineTmaAsync: a PipelineAsync whose producer fills stages with TMA loads that complete the stage's `full`
barrier by their transaction bytes.

producer_acquire(state)  waits until stage state.index is empty, then one elected lane of the calling warp arrives
                         on its full barrier expecting tx_count bytes (the loads that follow bring them);
producer_get_barrier     the full barrier the stage's TMA loads complete (cute.copy(..., tma_bar_ptr=...));
producer_commit          nothing: the loads' bytes complete the phase;
consumer_wait(state)     waits until the stage is full (skipped when a consumer_try_wait token says it is);
consumer_release(state)  marks the stage empty: in a cluster, for every CTA whose loads write this CTA's shared
                         memory (its row and its column of the cluster when A and B are multicast), not only this
                         one, since that CTA's producer reuses the stage only after all its receivers are done.

Releases are per warp: lane r of each consumer warp arrives on the empty barrier of the CTA of rank r in the
cluster if that CTA is one of this CTA's peers, so each empty barrier counts (consumer warps) x (peers) arrivals
per phase; make the consumer group with that count. Built from the backends' arch primitives (mbarrier_init,
mbarrier_arrive, mbarrier_arrive_cluster, mbarrier_arrive_and_expect_tx, mbarrier_wait, mbarrier_try_wait,
elect_one, block_rank_in_cluster); no instruction is spelled here.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .barriers import own_barriers
from .pipeline_async import PipelineAsync


def _flat_shape(layout):
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    # a mode of one extent written as a 1-tuple (cute.tiled_divide's ((V), M, N, K)) is that extent
    shape = tuple(s[0] if isinstance(s, tuple) and len(s) == 1 else s for s in shape)
    if any(isinstance(s, tuple) or not isinstance(s, int) for s in shape):
        raise ValueError(f"cta_layout_vmnk must be a flat static layout, got {layout}")
    return shape


class PipelineTmaAsync(PipelineAsync):
    def __init__(self, full, empty, num_stages, producer_group, consumer_group, tx_count, cluster_mn):
        super().__init__(full, empty, num_stages, producer_group, consumer_group)
        self.tx_count = tx_count
        self.cluster_mn = cluster_mn

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, tx_count: int,
               cta_layout_vmnk=None, init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage. tx_count: the bytes the TMA loads of one
        stage bring into each CTA. cta_layout_vmnk: the cluster as a (1, M, N, 1) layout of CTAs (None: one CTA).
        Every thread of the block calls it; with defer_sync=True the kernel syncs later (pipeline_init_arrive /
        pipeline_init_wait, cluster-wide when the cluster has several CTAs)."""
        if num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages}")
        if not isinstance(tx_count, int) or tx_count <= 0:
            raise ValueError(f"tx_count must be the positive static byte count of a stage's loads, got {tx_count!r}")
        cluster_mn = (1, 1)
        if cta_layout_vmnk is not None:
            shape = _flat_shape(cta_layout_vmnk)
            if len(shape) != 4 or shape[0] != 1 or shape[3] != 1:
                raise ValueError(f"cta_layout_vmnk is a (1, M, N, 1) layout of the cluster's CTAs, got "
                                 f"{cta_layout_vmnk}")
            cluster_mn = (shape[1], shape[2])
        if cluster_mn[0] * cluster_mn[1] > 16:
            raise ValueError(f"a cluster has at most 16 CTAs, got {cluster_mn}")
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = cls._array(barrier_storage, num_stages)
        empty = cls._array(barrier_storage + num_stages, num_stages)
        p = cls(full, empty, num_stages, producer_group, consumer_group, tx_count, cluster_mn)
        tidx, _, _ = cute.arch.thread_idx()
        first = tidx == (0 if init_thread is None else init_thread)

        def init():
            # One arrival (the elected producer lane's expect_tx) per phase of a full barrier.
            p.full.init(1)
            p.empty.init(consumer_group.arrivals)
            # TMA (the async proxy) and, in a cluster, peer CTAs arrive on them: make the inits visible to both.
            cute.arch.mbarrier_init_fence()

        when(first, init)
        if not defer_sync:
            if cluster_mn == (1, 1):
                cute.arch.sync_threads()
            else:
                cute.arch.mbarrier_init_fence()
                cute.arch.cluster_arrive()
                cute.arch.cluster_wait()
        return p

    @staticmethod
    def _array(ptr, n):
        from .barriers import MbarrierArray

        return MbarrierArray(ptr, n)

    @property
    def cluster_size(self) -> int:
        return self.cluster_mn[0] * self.cluster_mn[1]

    # --- producer ---------------------------------------------------------------------------------------------
    def producer_acquire(self, state, try_acquire_token=None):
        self._wait(self.empty, state, try_acquire_token)
        when(cute.arch.elect_one(), lambda: cute.arch.mbarrier_arrive_and_expect_tx(
            self.full.at(state.index), cutlass.Int32(self.tx_count)))

    def producer_try_acquire(self, state):
        return cute.arch.mbarrier_try_wait(self.empty.at(state.index), cutlass.Int32(state.phase))

    def producer_commit(self, state):
        pass

    def producer_get_barrier(self, state):
        return self.full.at(state.index)

    def producer_tail(self, state):
        """Waits until the consumers (in every peer CTA) have released each stage this producer filled, so that no
        arrival on this CTA's barriers is still to come when it exits. Only waits: it fills nothing, so unlike
        producer_acquire it expects no bytes on the full barriers."""
        for _ in cutlass.range_constexpr(self.num_stages):
            self.empty.wait(state.index, state.phase)
            state.advance()

    # --- consumer ---------------------------------------------------------------------------------------------
    def consumer_try_wait(self, state):
        return cute.arch.mbarrier_try_wait(self.full.at(state.index), cutlass.Int32(state.phase))

    def consumer_wait(self, state, try_wait_token=None):
        self._wait(self.full, state, try_wait_token)

    def consumer_release(self, state):
        lane = cute.arch.lane_idx()
        if self.cluster_size == 1:
            when(lane == 0, lambda: self.empty.arrive(state.index))
            return
        cm = self.cluster_mn[0]
        me = cute.arch.block_rank_in_cluster()
        peer = (lane < self.cluster_size) & ((lane % cm == me % cm) | (lane // cm == me // cm))
        when(peer, lambda: cute.arch.mbarrier_arrive_cluster(self.empty.at(state.index), lane))

    def _wait(self, barriers, state, token):
        if token is None:
            barriers.wait(state.index, state.phase)
            return
        if isinstance(token, bool):
            if not token:
                barriers.wait(state.index, state.phase)
            return
        when(~cutlass.Boolean(token), lambda: barriers.wait(state.index, state.phase))
