"""CuTe DSL's in-kernel event markers (`cute.experimental.iket`): named ranges and marks a kernel records for the
IKET profiler. A kernel is instrumented only when that profiler runs it (`python -m iket.cli.main ... profile`);
a kernel compiled without it, which is what warpweave compiles, carries no instrumentation, so the markers check
their arguments and leave no code. Libraries (QuACK's GEMM mainloops and epilogues) keep them in their kernels.
"""
from ..._dsl.base import trace
from ..._dsl.base.errors import DSLTypeError, user_location
from ..._dsl.values.numeric import Numeric

__all__ = ["RangeToken", "mark", "range_end", "range_pop", "range_push", "range_start", "sentinel_token"]


class RangeToken:
    """What range_start gives and range_end takes; a sentinel token (sentinel_token) ends no range."""

    def __init__(self, event_name: str, is_none: bool = False):
        self.event_name = event_name
        self.is_none = bool(is_none)

    def __repr__(self):
        return f"RangeToken({self.event_name!r}{', sentinel' if self.is_none else ''})"


def _check(what: str, event_name=None, payload=None, named=True):
    trace.current()  # inside a traced function only, as every instruction
    if named and not isinstance(event_name, str):
        raise DSLTypeError(f"iket.{what}: event_name is a str, got {type(event_name).__name__}", user_location(3))
    if payload is not None and (isinstance(payload, bool) or not isinstance(payload, (int, float, Numeric))):
        raise DSLTypeError(f"iket.{what}: a payload is a number (Int8..Int64, Float32, ...), got "
                           f"{type(payload).__name__}", user_location(3))


def range_push(event_name: str, payload=None, *, loc=None, ip=None):
    """Opens a range closed by the next range_pop (a stack of ranges)."""
    _check("range_push", event_name, payload)


def range_pop(*, loc=None, ip=None):
    """Closes the range of the latest range_push."""
    _check("range_pop", named=False)


def range_start(event_name: str, payload=None, *, loc=None, ip=None) -> RangeToken:
    """Opens a range closed by range_end with the token returned."""
    _check("range_start", event_name, payload)
    return RangeToken(event_name)


def range_end(token: RangeToken, payload=None, *, loc=None, ip=None) -> None:
    _check("range_end", payload=payload, named=False)
    if not isinstance(token, RangeToken):
        raise DSLTypeError(f"iket.range_end: token is what range_start or sentinel_token returned, got "
                           f"{type(token).__name__}", user_location(2))


def mark(event_name: str, payload=None, *, loc=None, ip=None):
    """An event at one point of the kernel."""
    _check("mark", event_name, payload)


def sentinel_token(event_name: str, *, loc=None, ip=None) -> RangeToken:
    """A token that ends no range: the first value of a token carried by a loop."""
    _check("sentinel_token", event_name)
    return RangeToken(event_name, is_none=True)
