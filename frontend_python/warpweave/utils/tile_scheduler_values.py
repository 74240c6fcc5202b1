"""What the tile schedulers ask of their extents and indices: Python ints outside a kernel (so that a scheduler's
walk can be checked there), DSL values inside one."""
from __future__ import annotations

from .._dsl.device.math import min as dsl_min
from .._dsl.values.numeric import Numeric, SymInt


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
