"""A Task: a contiguous range of warps that runs one captured schedule over the resources it lists (src_resources:
those it consumes from; dst_resources: those it produces into)."""
from __future__ import annotations

from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ..._dsl.device import arch as _arch
from ..._dsl.device import warp as _warp
from ..._dsl.tracing import control_flow as _cf
from ..._dsl.values.numeric import Int32
from .resources import MemoryResource
from .schedule_builder import Schedule


class Task:
    """Warps [warp_idx, warp_idx + num_warps) run `schedule`. num_registers, when given, is the per-thread register
    budget the warps set on entry (warps of one group of four share one budget). debug_print prints the task's
    schedule when the kernel is traced. A subclass may define
    get_domain(self, tile_coord) for a domain_loop whose end is Task.get_domain (a per-tile loop bound)."""

    def __init__(self, *, name: str, src_resources=(), dst_resources=(), warp_idx: int, num_warps: int,
                 schedule: Schedule, num_registers: int | None = None, debug_print: bool = False):
        where = user_location()
        if not isinstance(warp_idx, int) or warp_idx < 0 or not isinstance(num_warps, int) or num_warps < 1:
            raise DSLValueError(f"Task {name}: warp_idx >= 0 and num_warps >= 1 are static integers, got "
                                f"warp_idx={warp_idx!r}, num_warps={num_warps!r}", where)
        if not isinstance(schedule, Schedule):
            raise DSLTypeError(f"Task {name}: schedule is what calling a @schedule function returns, got "
                               f"{type(schedule).__name__}", where)
        if num_registers is not None and (not isinstance(num_registers, int) or num_registers % 8
                                          or not 24 <= num_registers <= 256):
            raise DSLValueError(f"Task {name}: num_registers is a multiple of 8 in [24, 256], got {num_registers!r}",
                                where)
        for what, rs in (("src_resources", src_resources), ("dst_resources", dst_resources)):
            for r in rs:
                if not isinstance(r, MemoryResource):
                    raise DSLTypeError(f"Task {name}: {what} holds resources, got {type(r).__name__}", where)
        self.name, self.warp_idx, self.num_warps = name, warp_idx, num_warps
        self.src_resources, self.dst_resources = list(src_resources), list(dst_resources)
        self.schedule, self.num_registers, self.where = schedule, num_registers, where
        self.debug_print = bool(debug_print)

    @property
    def warps(self) -> range:
        return range(self.warp_idx, self.warp_idx + self.num_warps)

    @property
    def resources(self) -> list:
        return self.src_resources + [r for r in self.dst_resources if r not in self.src_resources]

    def is_selected(self):
        """Whether the current warp runs this task (a run-time Boolean)."""
        return in_range(current_warp(), self.warps)

    def __repr__(self):
        return f"Task({self.name!r}, warps {self.warp_idx}..{self.warp_idx + self.num_warps - 1})"


def current_warp():
    return _warp.make_warp_uniform(_arch.warp_idx())


def in_range(warp, warps: range):
    """warps.start <= warp < warps.stop, at run time."""
    return _cf.and_(warp >= Int32(warps.start), lambda: warp < Int32(warps.stop))
