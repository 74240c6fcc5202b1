"""PipelineAsync: producers and consumers that signal each other with mbarrier arrivals."""
from __future__ import annotations

import enum

import warpweave as cutlass
import warpweave.cute as cute

from warpweave.ext import when

from .barriers import MbarrierArray, own_barriers


class Agent(enum.Enum):
    """Who takes part in a pipeline or a sync: threads, warps, the CTA, or the whole cluster."""
    Thread = "thread"
    Warp = "warp"
    ThreadBlock = "threadblock"
    ThreadBlockCluster = "threadblockcluster"


class PipelineOp(enum.Enum):
    """What a pipeline side does to complete a stage (CuTe DSL's kinds): its barrier arrivals follow from it."""
    AsyncThread = 1
    TCGen05Mma = 2
    TmaLoad = 3
    ClcLoad = 4
    TmaStore = 5
    Composite = 6
    AsyncLoad = 7


class CooperativeGroup:
    """The threads of one side of a pipeline: `size` threads (or warps) each arrive once per stage."""

    def __init__(self, agent: Agent, size: int = 1, alignment: int = 1):
        if size <= 0:
            raise ValueError(f"a cooperative group has at least one member, got {size}")
        self.agent = agent
        self.size = size

    @property
    def arrivals(self) -> int:
        return self.size


class PipelineAsync:
    """A ring of num_stages stages between a producer and a consumer group, synchronised by mbarriers.

    producer_acquire(state)  waits until consumers released stage state.index;
    producer_commit(state)   marks it full (each producer thread arrives);
    consumer_wait(state)     waits until it is full;
    consumer_release(state)  marks it empty again (each consumer thread arrives).
    """

    def __init__(self, full: MbarrierArray, empty: MbarrierArray, num_stages: int, producer_group, consumer_group):
        self.full = full
        self.empty = empty
        self.num_stages = num_stages
        self.producer_group = producer_group
        self.consumer_group = consumer_group

    @classmethod
    def _barrier_count(cls) -> int:
        return 2

    @classmethod
    def create(cls, *, barrier_storage=None, num_stages: int, producer_group: CooperativeGroup,
               consumer_group: CooperativeGroup, init_thread=None, defer_sync: bool = False,
               producer_mask=None, consumer_mask=None, cta_layout_vmnk=None):
        """The pipeline over 2 * num_stages mbarriers at barrier_storage (a shared-memory pointer to Int64).
        Every thread of the block calls it: one thread initializes the barriers, then the block syncs (with
        defer_sync=True the kernel syncs later, with pipeline_init_arrive / pipeline_init_wait).
        producer_mask, consumer_mask and cta_layout_vmnk address the barriers of other CTAs of a cluster:
        pipelines across a cluster are not built here yet, so they are refused rather than ignored."""
        for name, value in (("producer_mask", producer_mask), ("consumer_mask", consumer_mask),
                            ("cta_layout_vmnk", cta_layout_vmnk)):
            if value is not None:
                raise NotImplementedError(f"{cls.__name__}.create({name}=...): pipelines across the CTAs of a "
                                          "cluster are not implemented")
        if num_stages < 1:
            raise ValueError(f"a pipeline needs at least one stage, got {num_stages}")
        barrier_storage = own_barriers(barrier_storage, num_stages)
        full = MbarrierArray(barrier_storage, num_stages)
        empty = MbarrierArray(barrier_storage + num_stages, num_stages)
        p = cls(full, empty, num_stages, producer_group, consumer_group)
        tidx, _, _ = cute.arch.thread_idx()
        first = tidx == (0 if init_thread is None else init_thread)
        p._init_barriers(first)
        if not defer_sync:
            cute.arch.sync_threads()
        return p

    def _init_barriers(self, first):
        def init():
            self.full.init(self.producer_group.arrivals)
            self.empty.init(self.consumer_group.arrivals)

        when(first, init)

    def make_participants(self):
        """(PipelineProducer, PipelineConsumer): the handle API over this pipeline (participants.py)."""
        from .participants import make_participants

        return make_participants(self)

    def _wait_unless(self, barriers, state, token):
        """Waits on barriers[state.index] unless a try-wait token says the phase completed already."""
        if token is None or (isinstance(token, bool) and not token):
            barriers.wait(state.index, state.phase)
        elif not isinstance(token, bool):
            when(~cutlass.Boolean(token), lambda: barriers.wait(state.index, state.phase))

    # --- producer ---------------------------------------------------------------------------------------------
    def producer_try_acquire(self, state):
        return cute.arch.mbarrier_try_wait(self.empty.at(state.index), cutlass.Int32(state.phase))

    def producer_acquire(self, state, try_acquire_token=None):
        self._wait_unless(self.empty, state, try_acquire_token)

    def producer_commit(self, state):
        self.full.arrive(state.index)

    def producer_tail(self, state):
        """Waits until consumers released every stage (before the block exits while copies may be in flight)."""
        for _ in cutlass.range_constexpr(self.num_stages):
            self.producer_acquire(state)
            state.advance()

    # --- consumer ---------------------------------------------------------------------------------------------
    def consumer_try_wait(self, state):
        return cute.arch.mbarrier_try_wait(self.full.at(state.index), cutlass.Int32(state.phase))

    def consumer_wait(self, state, try_wait_token=None):
        self._wait_unless(self.full, state, try_wait_token)

    def consumer_release(self, state):
        self.empty.arrive(state.index)
