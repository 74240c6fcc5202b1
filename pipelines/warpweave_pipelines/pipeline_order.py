"""PipelineOrder: groups that take turns, in a fixed order (CUTLASS's OrderedSequenceBarrier; CuTe DSL's name).

`length` groups (the math warpgroups of a ping-pong kernel) each wait for their turn, do the ordered part (issue
their MMAs, say), and pass the turn to the next group, group_id + 1 modulo length; `depth` turns may be in flight.
Barrier (d, g) of a depth x length array of mbarriers is group g's turn at depth d: a group arrives on the next
group's barrier (each of its threads: producer_group's size arrivals complete a turn) and waits on its own. Group
0 has the first turn: its state starts in phase 1, whose wait on a fresh barrier passes at once, the others in
phase 0, which completes when the previous group hands over.

Each group makes its own PipelineOrder over the same barriers, with its group_id. Programs use it in either of
CuTe DSL's two forms: wait() / arrive() on the order's own state (carried through dynamic loops, advanced in
place), or wait(state) / state = arrive(state) on a state they carry themselves (from order.state).
"""
from __future__ import annotations

from dataclasses import dataclass

import warpweave as cutlass
from warpweave.ext import select, when

from .agents import CooperativeGroup, PipelineOp
from .barriers import MbarrierArray, own_barriers
from .pipeline_async import first_thread, sync_after_init
from .state import PipelineState

__all__ = ["PipelineOrder"]


def _positive(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"PipelineOrder: {what} is a positive static integer, got {value!r}")
    return value


@dataclass(frozen=True, eq=False)
class PipelineOrder:
    """Turns of `length` groups, `depth` in flight, over depth * length mbarriers (sync_object_full)."""

    sync_object_full: MbarrierArray
    depth: int
    length: int
    group_id: object
    state: PipelineState

    @staticmethod
    def create(*, barrier_storage=None, depth: int, length: int, group_id, producer_group: CooperativeGroup,
               init_thread=None, defer_sync: bool = False, loc=None, ip=None) -> "PipelineOrder":
        """The order barrier of group `group_id` (0 <= group_id < length; a static or run-time integer) over the
        depth * length barriers at barrier_storage (allocated here without it), each expecting producer_group's
        arrivals per turn. Thread 0 (or init_thread) initializes them; with defer_sync the kernel syncs before first use (pipeline_init_arrive / _wait),
        otherwise the block syncs here."""
        depth, length = _positive(depth, "depth"), _positive(length, "length")
        if not isinstance(producer_group, CooperativeGroup):
            raise TypeError(f"PipelineOrder: producer_group is a CooperativeGroup, got {producer_group!r}")
        if isinstance(group_id, int) and not isinstance(group_id, bool) and not 0 <= group_id < length:
            raise ValueError(f"PipelineOrder: group_id {group_id} is not one of the {length} groups")
        storage = own_barriers(barrier_storage, depth * length, per_stage=1)
        so = MbarrierArray(storage, depth * length, PipelineOp.AsyncThread, producer_group)
        when(first_thread(init_thread), lambda: so.init(producer_group.arrivals))
        if not defer_sync:
            sync_after_init(False)
        gid = cutlass.Int32(group_id)
        state = PipelineState(depth, 0, 0, select(gid == 0, cutlass.Int32(1), cutlass.Int32(0)))
        return PipelineOrder(so, depth, length, gid, state)

    def get_barrier_for_current_stage_idx(self, group_id, *, loc=None, ip=None):
        """The barrier of group `group_id`'s turn at the current depth."""
        return self.sync_object_full.get_barrier(self.state.index * self.length + group_id)

    def wait(self, state=None, *, loc=None, ip=None):
        """Waits for this group's turn (the order's own, or `state`'s)."""
        s = self.state if state is None else state
        self.sync_object_full.wait(s.index * self.length + self.group_id, s.phase)

    def arrive(self, state=None, *, loc=None, ip=None):
        """Passes the turn to the next group (each thread of this group arrives) and moves the state (the order's
        own, or `state`) to this group's next turn, in place; returns it (state = order.arrive(state))."""
        s = self.state if state is None else state
        nxt = (self.group_id + 1) % self.length
        self.sync_object_full.arrive(s.index * self.length + nxt)
        s.advance()
        return s

    # carried through dynamic control flow with its state (wait/arrive change it in place)
    def _ww_carry_get(self):
        return self.state._ww_carry_get()

    def _ww_carry_set(self, values):
        self.state._ww_carry_set(values)
