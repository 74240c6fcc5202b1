"""PipelineAsync: producers and consumers that signal each other with mbarrier arrivals.

A pipeline is a frozen dataclass, as CuTe DSL's are, so that libraries subclass it (adding fields of their own,
constructing positionally, or re-classing what create() returns): its fields are (sync_object_full,
sync_object_empty, num_stages, producer_mask, consumer_mask). A sync object (barriers.MbarrierArray) is the array of
one agent's barriers, a barrier per stage: the producers arrive on the full ones, the consumers on the empty ones.
producer_mask / consumer_mask say whose barriers an arrival lands on (None: this CTA's; for thread arrivals the rank
of a CTA of the cluster, for TMA loads and MMA commits a mask of CTAs).
"""
from __future__ import annotations

from dataclasses import dataclass

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .agents import CooperativeGroup, PipelineOp
from .barriers import MAX_CLUSTER, MbarrierArray, own_barriers, check_destination

__all__ = ["PipelineAsync", "ExpectTxProducer", "first_thread", "cluster_size_of",
           "sync_after_init"]


def first_thread(init_thread=None):
    """Whether this thread initializes a pipeline's barriers (thread 0, or init_thread)."""
    tidx, _, _ = cute.arch.thread_idx()
    return tidx == (0 if init_thread is None else init_thread)


def cluster_size_of(cta_layout_vmnk) -> int:
    """The CTAs of a static layout of the cluster (None: one CTA)."""
    if cta_layout_vmnk is None:
        return 1
    size = cute.size(cta_layout_vmnk)
    if not isinstance(size, int):
        raise ValueError(f"cta_layout_vmnk must be a static layout of the cluster's CTAs, got {cta_layout_vmnk}")
    if not 1 <= size <= MAX_CLUSTER:
        raise ValueError(f"a cluster has 1 to {MAX_CLUSTER} CTAs, got {cta_layout_vmnk}")
    return size


def sync_after_init(across_cluster: bool, fence: bool = False):
    """No thread may use a barrier before it is initialized: the block syncs, or, when peer CTAs arrive on this
    CTA's barriers, the whole cluster (after the inits are made visible to it: by the initializing thread, or here
    by every thread with fence)."""
    if across_cluster:
        if fence:
            cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
    else:
        cute.arch.sync_threads()


@dataclass(frozen=True, eq=False)
class PipelineAsync:
    """A ring of num_stages stages between a producer and a consumer group, synchronised by mbarriers.

    producer_acquire(state)  waits until consumers released stage state.index;
    producer_commit(state)   marks it full (each producer thread arrives, on the barrier of CTA producer_mask);
    consumer_wait(state)     waits until it is full;
    consumer_release(state)  marks it empty again (each consumer thread arrives, on the barrier of CTA
                             consumer_mask: consumer_mask=0 sends every CTA's releases to the barrier of CTA 0).
    """

    sync_object_full: MbarrierArray
    sync_object_empty: MbarrierArray
    num_stages: int
    producer_mask: object
    consumer_mask: object

    # warpweave's earlier names of the sync objects and groups
    @property
    def full(self) -> MbarrierArray:
        return self.sync_object_full

    @property
    def empty(self) -> MbarrierArray:
        return self.sync_object_empty

    @property
    def producer_group(self):
        return self.sync_object_full.cg

    @property
    def consumer_group(self):
        return self.sync_object_empty.cg

    @staticmethod
    def _make_sync_object(barrier_storage, num_stages: int, agent, tx_count=None, *, cta_group: int = 1,
                          loc=None, ip=None) -> MbarrierArray:
        """The sync object of one agent, (PipelineOp, CooperativeGroup), over num_stages barriers at
        barrier_storage, initialized by thread 0 to expect the group's arrivals per phase. The caller syncs (the
        block, or the cluster after an init fence when peers arrive) before any thread uses it."""
        so = PipelineAsync._sync_object(barrier_storage, num_stages, agent, tx_count, cta_group)
        when(first_thread(), lambda: so.init(so.cg.arrivals))
        return so

    @staticmethod
    def _sync_object(barrier_storage, num_stages, agent, tx_count=None, cta_group=1) -> MbarrierArray:
        if not isinstance(agent, tuple) or len(agent) != 2 or not isinstance(agent[0], PipelineOp) \
                or not isinstance(agent[1], CooperativeGroup):
            raise TypeError(f"a sync object's agent is a (PipelineOp, CooperativeGroup) pair, got {agent!r}")
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages!r}")
        op, group = agent
        return MbarrierArray(barrier_storage, num_stages, op, group, tx_count=tx_count, cta_group=cta_group)

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group: CooperativeGroup,
               consumer_group: CooperativeGroup, init_thread=None, defer_sync: bool = False,
               producer_mask=None, consumer_mask=None, cta_layout_vmnk=None, loc=None, ip=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage (a shared-memory pointer to Int64).
        Every thread of the block calls it: one thread initializes the barriers, then the block syncs (the cluster
        when it has several CTAs or the masks send arrivals to peers; with defer_sync=True the kernel syncs later,
        with pipeline_init_arrive / pipeline_init_wait). producer_mask / consumer_mask: the rank of the CTA whose
        full / empty barriers that side arrives on (None: its own CTA's); cta_layout_vmnk: the cluster's CTAs."""
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages!r}")
        cluster = cluster_size_of(cta_layout_vmnk)
        for name, mask in (("producer_mask", producer_mask), ("consumer_mask", consumer_mask)):
            check_destination(PipelineOp.AsyncThread, mask, name, cluster if cta_layout_vmnk is not None else None)
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = cls._sync_object(barrier_storage, num_stages, (PipelineOp.AsyncThread, producer_group))
        empty = cls._sync_object(barrier_storage + num_stages, num_stages, (PipelineOp.AsyncThread, consumer_group))
        p = cls(full, empty, num_stages, producer_mask, consumer_mask)
        across = cluster > 1 or producer_mask is not None or consumer_mask is not None

        def init():
            full.init(producer_group.arrivals)
            empty.init(consumer_group.arrivals)
            if across:
                cute.arch.mbarrier_init_fence()     # peer CTAs arrive on these barriers

        when(first_thread(init_thread), init)
        if not defer_sync:
            sync_after_init(across)
        return p

    def make_participants(self):
        """(PipelineProducer, PipelineConsumer): the handle API over this pipeline (participants.py)."""
        from .participants import make_participants

        return make_participants(self)

    def _wait_unless(self, sync_object, state, token):
        """Waits on sync_object's barrier of stage state.index unless a try-wait token says the phase completed."""
        if token is None or (isinstance(token, bool) and not token):
            sync_object.wait(state.index, state.phase)
        elif not isinstance(token, bool):
            when(~cutlass.Boolean(token), lambda: sync_object.wait(state.index, state.phase))

    # --- producer ---------------------------------------------------------------------------------------------
    def producer_try_acquire(self, state, *, loc=None, ip=None):
        return self.sync_object_empty.try_wait(state.index, state.phase)

    def producer_acquire(self, state, try_acquire_token=None, *, loc=None, ip=None):
        self._wait_unless(self.sync_object_empty, state, try_acquire_token)

    def producer_commit(self, state, *, loc=None, ip=None):
        self.sync_object_full.arrive(state.index, self.producer_mask)

    def producer_get_barrier(self, state, *, loc=None, ip=None):
        """The full barrier of the stage (the one TMA loads filling it complete)."""
        return self.sync_object_full.get_barrier(state.index)

    def producer_tail(self, state, *, loc=None, ip=None):
        """Waits until consumers released every stage (before the block exits while copies may be in flight)."""
        for _ in cutlass.range_constexpr(self.num_stages):
            self.producer_acquire(state)
            state.advance()

    # --- consumer ---------------------------------------------------------------------------------------------
    def consumer_try_wait(self, state, *, loc=None, ip=None):
        return self.sync_object_full.try_wait(state.index, state.phase)

    def consumer_wait(self, state, try_wait_token=None, *, loc=None, ip=None):
        self._wait_unless(self.sync_object_full, state, try_wait_token)

    def consumer_release(self, state, *, loc=None, ip=None):
        self.sync_object_empty.arrive(state.index, self.consumer_mask)


class ExpectTxProducer:
    """For a pipeline whose stages are filled by an asynchronous copy that completes bytes on the full barrier (a
    TMA load, a cluster launch control response): acquiring a stage arrives on its full barrier with the bytes to
    expect, and the copy's completion, not the producer, commits it."""

    @property
    def tx_count(self) -> int:
        return self.sync_object_full.tx_count

    def producer_acquire(self, state, try_acquire_token=None, *, loc=None, ip=None):
        self._wait_unless(self.sync_object_empty, state, try_acquire_token)
        self.sync_object_full.arrive(state.index, self.producer_mask)

    def producer_commit(self, state, *, loc=None, ip=None):
        pass
