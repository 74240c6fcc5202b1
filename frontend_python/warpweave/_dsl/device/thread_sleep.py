"""cute.arch.nanosleep: suspends the thread for about the given number of nanoseconds (at most 1 ms; the
hardware may wake it earlier or later), as polling loops back off. NVVM's nanosleep intrinsic (sm_70 and later)."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Int32, Numeric, Uint32


def nanosleep(*, sleep_time, loc=None, ip=None) -> None:
    if isinstance(sleep_time, bool) or not isinstance(sleep_time, (int, Numeric)) or \
            isinstance(sleep_time, Numeric) and not type(sleep_time).is_integer:
        raise DSLTypeError(f"cute.arch.nanosleep: sleep_time is an integer number of nanoseconds, got "
                           f"{type(sleep_time).__name__}", user_location(2))
    if isinstance(sleep_time, int) and not 0 <= sleep_time < (1 << 32):
        raise DSLValueError(f"cute.arch.nanosleep: sleep_time must be in [0, 2**32), got {sleep_time}",
                            user_location(2))
    t = Uint32(sleep_time) if isinstance(sleep_time, int) else sleep_time
    v = t.ir() if type(t).width == 32 else Int32(t).ir()
    trace.builder().op0("llvm.call_intrinsic", [v], 'intrin = "llvm.nvvm.nanosleep", op_bundle_sizes = array<i32>, '
                        "operandSegmentSizes = array<i32: 1, 0>")
