"""PipelineOrder: groups of threads taking turns (CUTLASS's ordered sequence barrier), e.g. the two math warpgroups
of a ping-pong GEMM, whose main loops and epilogues alternate.

`length` groups form a ring and `depth` turns may be in flight. Barrier (d, g), at d * length + g, counts the
arrivals of one group (producer_group): group g waits on its barrier of turn d, and when its turn is over arrives
on the next group's barrier of that turn. Group 0 starts a phase ahead, so its first wait passes at once and the
others wait for their predecessor.
"""
from __future__ import annotations

import warpweave as cutlass
from warpweave.ext import select, when

from .agents import CooperativeGroup, PipelineOp
from .barriers import MbarrierArray, own_barriers
from .pipeline_async import first_thread, sync_after_init
from .state import PipelineState


class PipelineOrder:
    def __init__(self, barriers: MbarrierArray, depth: int, length: int, group_id):
        self.sync_object = barriers
        self.depth = depth
        self.length = length
        self.group_id = group_id

    @classmethod
    def create(cls, *, barrier_storage=None, depth: int, length: int, group_id, producer_group: CooperativeGroup,
               init_thread=None, defer_sync: bool = False, loc=None, ip=None):
        """The turns of `length` groups (this thread's is group_id), over depth * length mbarriers at
        barrier_storage, each expecting producer_group's arrivals. Every thread of the block calls it; with
        defer_sync=True the kernel syncs after the barriers' initialisation itself."""
        for name, v in (("depth", depth), ("length", length)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"PipelineOrder.create: {name} is a positive int, got {v!r}")
        if not isinstance(producer_group, CooperativeGroup):
            raise TypeError(f"PipelineOrder.create: producer_group is a CooperativeGroup, got {producer_group!r}")
        storage = own_barriers(barrier_storage, depth * length, per_stage=1)
        bars = MbarrierArray(storage, depth * length, PipelineOp.AsyncThread, producer_group)
        when(first_thread(init_thread), lambda: bars.init(producer_group.arrivals))
        if not defer_sync:
            sync_after_init(False)
        return cls(bars, depth, length, group_id)

    @property
    def state(self) -> PipelineState:
        """This group's place: turn 0, group 0 a phase ahead."""
        first = cutlass.Int32(self.group_id) == 0
        return PipelineState(self.depth, 0, 0, select(first, cutlass.Int32(1), cutlass.Int32(0)))

    def wait(self, state: PipelineState, *, loc=None, ip=None):
        """Until this group's turn `state` has come."""
        self.sync_object.wait(state.index * self.length + self.group_id, state.phase)

    def arrive(self, state: PipelineState, *, loc=None, ip=None) -> PipelineState:
        """Ends this group's turn `state`: the next group's turn comes; `state` moves to this group's next turn
        (in place, and returned: state = order.arrive(state) keeps one object, as loops carry it)."""
        nxt = (cutlass.Int32(self.group_id) + 1) % self.length
        self.sync_object.arrive(state.index * self.length + nxt)
        state.advance()
        return state

    def __repr__(self):
        return f"PipelineOrder(depth {self.depth}, {self.length} groups)"
