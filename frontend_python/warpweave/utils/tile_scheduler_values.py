"""What the tile schedulers ask of their extents and indices: Python ints outside a kernel (so that a scheduler's
walk can be checked there), DSL values inside one."""
from __future__ import annotations

from .._dsl.device.math import min as dsl_min
from .._dsl.values.numeric import Int32, Numeric, SymInt, Uint32


def is_dynamic(x) -> bool:
    return isinstance(x, SymInt) or (isinstance(x, Numeric) and not x.is_static)


def static_int(x):
    """x as a Python int when it is known while tracing, else None."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, Numeric) and x.is_static and x.is_integer:
        return int(x.value)
    return None


def smaller(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return dsl_min(a, b)


def ceil_div(a, b: int):
    return (a + (b - 1)) // b


def index_div(a, b):
    """a // b of two indices or extents known to be non-negative: on run-time values an unsigned division. A signed
    floor division (Int32's //) corrects the truncated quotient for negative operands, and the assembler's
    sign handling of the divide around it takes registers of its own, in the loop of each warp role that walks
    the tiles."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return Int32(_unsigned(a) // _unsigned(b))


def _unsigned(x):
    # as a fresh unsigned value, which the algebra takes to be non-negative (a conversion alone keeps the signed
    # symbol, whose quotient it floors)
    u = Uint32(x)
    return u if u.is_static else Uint32.from_ir(u.ir())
