"""cute.assume: a promise about a runtime integer's divisibility, which index arithmetic built on it may use."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from .numeric import HostRef, IRVal, Numeric, SymInt


def assume(src, divby=None):
    """`src` with the promise that it is a multiple of `divby` (CuTe DSL's cute.assume): index arithmetic and
    memory accesses built on it may then rely on the divisibility (e.g. vectorize). A static value is checked; a
    dynamic one is taken at its word (a broken promise rounds it down to a multiple)."""
    if divby is None:
        return src
    if isinstance(divby, Numeric):
        divby = divby.value
    if not isinstance(divby, int) or isinstance(divby, bool) or divby <= 0:
        raise DSLValueError(f"assume: divby must be a positive integer, got {divby!r}", user_location(2))
    if isinstance(src, Numeric):
        if not src.is_integer:
            raise DSLTypeError(f"assume: divisibility is a property of integers, got {type(src).__name__}",
                               user_location(2))
        v = src._v
        t = type(src)
    elif isinstance(src, (int, SymInt)) and not isinstance(src, bool):
        v, t = src, None
    elif hasattr(src, "__ww_int__"):
        v, t = src.__ww_int__(), None
    else:
        raise DSLTypeError(f"assume expects an integer, got {type(src).__name__}", user_location(2))
    if isinstance(v, int):
        if v % divby:
            raise DSLValueError(f"assume: {v} is not a multiple of {divby}", user_location(2))
        return src
    if isinstance(v, IRVal):
        v = trace.lift_int(int(v), t.ir_type, nonneg=not t.signed)
    if isinstance(v, HostRef):
        raise DSLTypeError(f"assume: the runtime argument '{v.name}' is known only when a kernel runs",
                           user_location(2))
    r = v if v.divisibility % divby == 0 else (v // divby) * divby
    return t._wrap(r) if t is not None else r
