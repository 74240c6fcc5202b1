"""`if` in the host side of a @cute.jit function on a value only a call knows (`if grid_n > 5:` on a dynamic
extent, `if alpha != 0.0:` on a Float32 argument).

Both branches are traced. What each one launches, and the host actions it records (prints, element writes), are
predicated on the branch's condition, a Boolean of the host program (host_program.py) that each call computes.
Variables the branches assign are merged after the `if`: a number that differs between them is chosen at each
call (a select of the host program), so `raster = 8` in one branch and `raster = 4` in the other gives a runtime
integer that the grid and the kernel take like any other. Anything else must be the same in both branches (a
layout whose shape differs between them has no single form), which is an error at the `if`'s line.
"""
from __future__ import annotations

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, user_location
from ..tracing.carried_values import Undefined
from ..values import hooks
from ..values.numeric import Boolean, Int32, Int64, Numeric, SymInt, as_numeric, select
from . import host_program


class Predicated:
    """A host action recorded under a host `if`: run when its predicate (a derived symbol) is true."""

    def __init__(self, action, sid: int):
        self.action = action
        self.sid = sid

    def run(self, values, env) -> None:
        if env[self.sid]:
            self.action.run(values, env)


def _is_number(x) -> bool:
    return isinstance(x, (Numeric, SymInt, int, float)) or (hasattr(x, "__ww_int__") and not hasattr(x, "shape"))


def _as_number(x):
    if isinstance(x, Numeric):
        return x
    if isinstance(x, bool):
        return Boolean(x)
    if isinstance(x, SymInt):
        return (Int64 if x.bits == 64 else Int32)._wrap(x)
    if hasattr(x, "__ww_int__"):
        return _as_number(x.__ww_int__())
    return as_numeric(x)


def same_value(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, Numeric) and isinstance(b, Numeric):
        if type(a) is not type(b):
            return False
        if a.is_static and b.is_static:
            return a._v == b._v
        return isinstance(a._v, SymInt) and isinstance(b._v, SymInt) and (a._v - b._v) == 0
    if isinstance(a, SymInt) or isinstance(b, SymInt):
        d = a - b
        return isinstance(d, int) and d == 0
    if isinstance(a, (int, float, str, type(None))) and isinstance(b, (int, float, str, type(None))):
        return type(a) is type(b) and a == b
    try:
        return bool(a == b) if type(a) is type(b) and isinstance(a, (_core.Layout, _core.Swizzle)) else False
    except Exception:  # noqa: BLE001 - a value without a decidable equality differs
        return False


def _describe(x) -> str:
    if isinstance(x, Numeric):
        return repr(x)
    return f"{type(x).__name__} {x!r}"[:80]


def _in_branch(st, sid: int, x):
    """A runtime number of one branch as a value computed only when that branch is taken (host_program.py's
    guards): what it divides by may be zero in the other branch's calls."""
    if not isinstance(x, Numeric) or x.is_static or not (x.is_integer or x.is_boolean):
        return x
    stack = st.__dict__.setdefault("host_branches", [])
    stack.append(sid)
    try:
        t = Int32 if type(x).is_boolean else type(x)
        return t._wrap(host_program.derive(x if type(x) is t else t(x), user_location(3)))
    finally:
        stack.pop()


def merge(cond, cond_sids, name: str, a, b, where):
    """The value of `name` after the `if`: a when both branches leave the same, else chosen at each call
    (cond_sids: the derived symbols of the condition and of its negation)."""
    if isinstance(a, Undefined) or isinstance(b, Undefined):
        return a if isinstance(a, Undefined) else b
    if same_value(a, b):
        return a
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and type(a) is type(b) and len(a) == len(b):
        items = [merge(cond, cond_sids, f"{name}[{k}]", x, y, where) for k, (x, y) in enumerate(zip(a, b))]
        return type(a)(items)
    if _is_number(a) and _is_number(b):
        st, (t_sid, e_sid) = trace.current(), cond_sids
        return select(cond, _in_branch(st, t_sid, _as_number(a)), _in_branch(st, e_sid, _as_number(b)))
    raise DSLTypeError(f"after this `if` on a runtime value, '{name}' differs between its branches "
                       f"({_describe(a)} / {_describe(b)}); only numbers may differ, as they are chosen at each call. "
                       "Decide the branch while tracing (cutlass.const_expr) or compute the value in the kernel",
                       where)


def _predicate(cond, where) -> Numeric:
    cond = cond if isinstance(cond, Numeric) else Int32._wrap(cond)
    if type(cond) is not Boolean:
        cond = cond != 0
    return cond


def _mark(st, launches_from: int, actions_from: int, sid: int) -> None:
    for launch in st.launches[launches_from:]:
        launch.predicates = list(launch.predicates) + [sid]
    st.host_actions[actions_from:] = [Predicated(a, sid) for a in st.host_actions[actions_from:]]


def _traced_branch(st, fn, sid: int, values):
    """One branch traced: the values it makes are computed when it is taken, its launches and host actions
    predicated on it."""
    stack = st.__dict__.setdefault("host_branches", [])
    n_l, n_a = len(st.launches), len(st.host_actions)
    stack.append(sid)
    try:
        out = fn(*values)
    finally:
        stack.pop()
    _mark(st, n_l, n_a, sid)
    return out


@hooks.branch_on_host.register
def branch(cond, then_fn, else_fn, names, values, lineno):
    """Both branches traced, their launches and host actions predicated, their variables merged (module text)."""
    st = trace.current()
    where = user_location(3)
    if where is not None and lineno:
        where = (where[0], lineno) + tuple(where[2:])
    c = _predicate(cond, where)
    then_sid = host_program.predicate_symbol(c, where)
    else_sid = host_program.predicate_symbol(~c, where)
    then_vals, else_vals = (_traced_branch(st, fn, sid, values) for fn, sid in ((then_fn, then_sid),
                                                                                 (else_fn, else_sid)))
    if not names:
        return then_vals
    merged = [merge(c, (then_sid, else_sid), n, a, b, where) for n, a, b in zip(names, then_vals, else_vals)]
    return type(then_vals)(merged) if isinstance(then_vals, (tuple, list)) else merged
