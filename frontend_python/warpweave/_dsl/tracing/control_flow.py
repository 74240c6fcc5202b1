"""Run-time side of the preprocessor: the namespace rewritten code calls into (ast_rewrite.py). Dynamic loops and
branches become scf.for / scf.if / scf.while (loops.py, branches.py), carrying the variables their bodies assign
(region_carry.py, carried_values.py); static ones run as Python.
"""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, user_location
from ..values import hooks
from .branches import (  # noqa: F401 - rewritten code's if, ifexp, and/or/not, min/max (ast_rewrite.py)
    and_, builtin_min_max, compare_chain, if_, ifexp, not_, or_, static_condition,
)
from .carried_values import read, static_value  # noqa: F401 - rewritten code's reads of variables
from .loops import dsl_range, for_range, range_constexpr, while_  # noqa: F401 - rewritten code's loops
from .membership import contains  # noqa: F401 - rewritten code's `in` (ast_rewrite.visit_Compare)
from ..values.numeric import Numeric, SymInt


def const_expr(x):
    """Marks a condition evaluated while tracing; a runtime value here is an error, except a host-side Boolean
    that the values being compiled for decide (kept as a guard of the compiled function, host/host_guards.py)."""
    if isinstance(x, Numeric) and not x.is_static and trace.on_host():
        r = hooks.decide_on_host(x)
        if r is not None:
            return r
    if isinstance(x, Numeric) and not x.is_static or isinstance(x, SymInt):
        raise DSLTypeError("cutlass.const_expr got a runtime value; its condition must be known while tracing",
                           user_location(2))
    return static_value(x)
