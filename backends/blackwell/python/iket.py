"""cute.experimental.iket: in-kernel event tracing, as CuTe DSL names it. A kernel marks named ranges of its
execution (`range_push("tma_k_tile", k_tile)` ... `range_pop()`), which an event-tracing run records with their
times; in any other run a range costs nothing, and the kernel's code is the one it has without them (what CuTe DSL
compiles outside its tracing tool, whose recording and collection warpweave has not).

What a range is checked for, at the user's line: its name is a compile-time string, its index (optional) an
integer (a Python one, or a DSL integer such as a loop's), both only inside a kernel, and a pop closes a range the
kernel pushed (ranges nest).
"""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

# The open ranges of the kernel being traced, innermost last, and that kernel's IR builder (a kernel of another
# builder starts with none open; the builder is held until then).
_open: dict = {"builder": None, "ranges": []}


def _ranges() -> list:
    if not ext.in_kernel():
        raise ext.user_error("cute.experimental.iket ranges mark a kernel's execution: call them inside a "
                             "@cute.kernel", ext.DSLRuntimeError)
    b = ext.builder()
    if _open["builder"] is not b:
        _open.update(builder=b, ranges=[])
    return _open["ranges"]


def range_push(name, index=None, *, loc=None, ip=None) -> None:
    """Opens the range `name` (with `index`, e.g. the k-tile it is for) in the calling thread."""
    if not isinstance(name, str) or not name:
        raise ext.user_error(f"iket.range_push: the range's name is a non-empty string known when compiling, got "
                             f"{name!r}", ext.DSLTypeError)
    if index is not None and not (isinstance(index, int) and not isinstance(index, bool) or
                                  isinstance(index, cutlass.Numeric) and type(index).is_integer):
        raise ext.user_error(f"iket.range_push: the index of range {name!r} is an integer, got "
                             f"{type(index).__name__} {index!r}", ext.DSLTypeError)
    _ranges().append(name)


def range_pop(*, loc=None, ip=None) -> None:
    """Closes the innermost range the calling thread opened."""
    ranges = _ranges()
    if not ranges:
        raise ext.user_error("iket.range_pop: no range is open (each pop closes a range_push of the kernel)",
                             ext.DSLRuntimeError)
    ranges.pop()


NAMES = ("range_push", "range_pop")
