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
per phase; make the consumer group with that count. Those lanes are the pipeline's is_signalling_thread, their
destination rank its consumer_mask (None with one CTA: lane 0 arrives on this CTA's barrier). The full barriers
count the producer group's arrivals per phase (one elected lane's expect_tx for a TMA warp). Built from the backends' arch primitives (mbarrier_init,
mbarrier_arrive, mbarrier_arrive_cluster, mbarrier_arrive_and_expect_tx, mbarrier_wait, mbarrier_try_wait,
elect_one, block_rank_in_cluster); no instruction is spelled here.
"""
from __future__ import annotations

from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .agents import PipelineOp
from .barriers import own_barriers
from .pipeline_async import ExpectTxProducer, PipelineAsync, first_thread, sync_after_init


def _flat_shape(layout):
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    # a mode of one extent written as a 1-tuple (cute.tiled_divide's ((V), M, N, K)) is that extent
    shape = tuple(s[0] if isinstance(s, tuple) and len(s) == 1 else s for s in shape)
    if any(isinstance(s, tuple) or not isinstance(s, int) for s in shape):
        raise ValueError(f"cta_layout_vmnk must be a flat static layout, got {layout}")
    return shape


def _mcast_modes(mcast_mode_mn) -> tuple:
    mcast_mode_mn = tuple(mcast_mode_mn)
    if len(mcast_mode_mn) != 2 or any(m not in (0, 1) for m in mcast_mode_mn) or mcast_mode_mn == (0, 0):
        raise ValueError(f"mcast_mode_mn is (A multicast, B multicast), each 0 or 1 and not both 0, got "
                         f"{mcast_mode_mn!r}")
    return mcast_mode_mn


def _cluster_mn(cta_layout_vmnk) -> tuple:
    """(M, N) of the cluster a (1, M, N, 1) layout of its CTAs describes ((1, 1) for None: one CTA)."""
    if cta_layout_vmnk is None:
        return (1, 1)
    shape = _flat_shape(cta_layout_vmnk)
    if len(shape) != 4 or shape[0] != 1 or shape[3] != 1:
        raise ValueError(f"cta_layout_vmnk is a (1, M, N, 1) layout of the cluster's CTAs, got {cta_layout_vmnk}")
    if shape[1] * shape[2] > 16:
        raise ValueError(f"a cluster has at most 16 CTAs, got {(shape[1], shape[2])}")
    return (shape[1], shape[2])


@dataclass(frozen=True, eq=False)
class PipelineTmaAsync(ExpectTxProducer, PipelineAsync):
    is_signalling_thread: object = None
    cluster_mn: tuple = (1, 1)

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group, consumer_group, tx_count: int,
               cta_layout_vmnk=None, tidx=None, mcast_mode_mn=(1, 1), init_thread=None, defer_sync: bool = False,
               loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage. tx_count: the bytes the TMA loads of one
        stage bring into each CTA. cta_layout_vmnk: the cluster as a (1, M, N, 1) layout of CTAs (None: one CTA).
        Every thread of the block calls it; with defer_sync=True the kernel syncs later (pipeline_init_arrive /
        pipeline_init_wait, cluster-wide when the cluster has several CTAs). tidx: the thread index whose lane
        (tidx % 32) chooses what a consumer thread releases in place of its own lane (None); one value for all
        threads, e.g. 0, makes every consumer thread release this CTA's stage, for a consumer group that counts
        each of its threads. mcast_mode_mn: which loads are multicast into this CTA, (A along N, B along M), each 0
        or 1: a consumer releases the stage to the CTAs that sent them (those of its cluster row for A, of its
        column for B)."""
        mcast_mode_mn = _mcast_modes(mcast_mode_mn)
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages!r}")
        if not isinstance(tx_count, int) or tx_count <= 0:
            raise ValueError(f"tx_count must be the positive static byte count of a stage's loads, got {tx_count!r}")
        cluster_mn = _cluster_mn(cta_layout_vmnk)
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = cls._sync_object(barrier_storage, num_stages, (PipelineOp.TmaLoad, producer_group), tx_count)
        empty = cls._sync_object(barrier_storage + num_stages, num_stages, (PipelineOp.AsyncThread, consumer_group))
        signalling, dst = cls._release_lanes(cluster_mn, tidx, mcast_mode_mn)
        p = cls(full, empty, num_stages, None, dst, signalling, cluster_mn)

        def init():
            full.init(producer_group.arrivals)
            empty.init(consumer_group.arrivals)
            # TMA (the async proxy) and, in a cluster, peer CTAs arrive on them: make the inits visible to both.
            cute.arch.mbarrier_init_fence()

        when(first_thread(init_thread), init)
        if not defer_sync:
            sync_after_init(cluster_mn != (1, 1), fence=True)
        return p

    @staticmethod
    def _release_lanes(cluster_mn, tidx=None, mcast_mode_mn=(1, 1)):
        """(is_signalling_thread, consumer_mask): with one CTA lane 0 of each consumer warp releases this CTA's
        stage; in a cluster lane r releases it in the CTA of rank r when that CTA shares this one's row (its M,
        where A is multicast from) or column (its N, for B), of the modes mcast_mode_mn names (its loads were
        multicast here). tidx, when given, stands for the thread's index (its lane tidx % 32)."""
        lane = cute.arch.lane_idx() if tidx is None else cutlass.Int32(tidx) % 32
        size = cluster_mn[0] * cluster_mn[1]
        if size == 1:
            return lane == 0, None
        cm = cluster_mn[0]
        me = cute.arch.block_rank_in_cluster()
        a_mc, b_mc = mcast_mode_mn
        same_m, same_n = lane % cm == me % cm, lane // cm == me // cm
        peer = (same_m | same_n) if a_mc and b_mc else (same_m if a_mc else same_n)
        return (lane < size) & peer, lane

    @staticmethod
    def init_empty_barrier_arrive_signal(cta_layout_vmnk, tidx, mcast_mode_mn=(1, 1), *, loc=None, ip=None):
        """(dst_rank, is_signalling_thread): which CTA of the cluster the thread of index tidx releases a stage
        in, and whether it is one that releases (create's choice, for pipelines a kernel builds itself): lane r
        of a consumer warp releases it in the CTA of rank r when that CTA sent this one multicast loads (its row
        of the cluster for A, its column for B, as mcast_mode_mn says); with one CTA, lane 0 releases this CTA's
        own."""
        cluster_mn = _cluster_mn(cta_layout_vmnk)
        signalling, dst = PipelineTmaAsync._release_lanes(cluster_mn, tidx, _mcast_modes(mcast_mode_mn))
        return (cutlass.Int32(tidx) % 32 if dst is None else dst), signalling

    @property
    def cluster_size(self) -> int:
        return self.cluster_mn[0] * self.cluster_mn[1]

    # --- producer ---------------------------------------------------------------------------------------------
    def producer_tail(self, state, *, loc=None, ip=None):
        """Waits until the consumers (in every peer CTA) have released each stage this producer filled, so that no
        arrival on this CTA's barriers is still to come when it exits. Only waits: it fills nothing, so unlike
        producer_acquire it expects no bytes on the full barriers."""
        for _ in cutlass.range_constexpr(self.num_stages):
            self.sync_object_empty.wait(state.index, state.phase)
            state.advance()

    # --- consumer ---------------------------------------------------------------------------------------------
    def consumer_release(self, state, *, loc=None, ip=None):
        when(self.is_signalling_thread, lambda: self.sync_object_empty.arrive(state.index, self.consumer_mask))
