"""Host-side decisions taken while tracing: a runtime Boolean that Python asks the truth of.

A comparison of runtime integers (extents of dynamic tensors, Int32 arguments) in a @cute.jit function is a
Boolean of its host program (host_program.py): an `if` on it branches at each call. Python code that asks for its
truth value while tracing (a library's own `if`, `and`, `bool()`) gets it from the values of the arguments being
compiled for, and the outcome is recorded as a guard of the compiled function. A later call whose arguments decide
it otherwise is refused by an explicitly compiled function (compile again) and recompiled by a @cute.jit function
called directly. With fake tensors (cute.sym_int extents) there is no value, and that is an error naming the line.
"""
from __future__ import annotations

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values import hooks
from . import host_program

# Whether a comparison holds, from the difference of its sides.
OUTCOMES = {"lt": lambda d: d < 0, "le": lambda d: d <= 0, "gt": lambda d: d > 0, "ge": lambda d: d >= 0,
            "eq": lambda d: d == 0, "ne": lambda d: d != 0}


class Guard:
    def __init__(self, diff, op: str, outcome: bool, where):
        self.diff = diff          # a SymInt: left - right
        self.op = op
        self.outcome = outcome
        self.where = where

    def holds(self, env) -> bool:
        return OUTCOMES[self.op](int(_core.evaluate(self.diff, env))) == self.outcome

    def describe(self) -> str:
        loc = f"{self.where[0]}:{self.where[1]}" if self.where else "?"
        return f"the host comparison at {loc} was {self.outcome} when compiled"


class GuardMismatch(DSLValueError):
    """A call's arguments decide a host comparison otherwise than the compiled function did."""


@hooks.decide_on_host.register
def decide(cond):
    """The truth of a runtime Boolean of the host side (a comparison of runtime integers, say) from the values of
    the arguments being compiled for, with a guard recorded; None when some value is unknown (a fake tensor's
    extent, a Float32 argument). An `if` in the user's @cute.jit function does not ask: it branches at each call
    (host_branch.py); Python code that needs a truth value now (a library's own `if`, `and`, `bool()`) does."""
    st = trace.current_or_none()
    if st is None or st.kernel is not None:
        return None
    sym = cond._v
    if not isinstance(sym, _core.SymInt):
        try:
            sym = host_program.derive(cond, user_location(3))
        except DSLTypeError:
            return None
    ids = _core.symbols_of(sym)
    if any(i not in st.host_values for i in ids):
        return None
    outcome = int(_core.evaluate(sym, {i: st.host_values[i] for i in ids})) != 0
    st.host_guards.append(Guard(sym, "ne", outcome, user_location(3)))
    return outcome


def check(guards, env) -> None:
    failed = [g.describe() for g in guards if not g.holds(env)]
    if failed:
        raise GuardMismatch("these arguments decide host code of the compiled function otherwise: " +
                            "; ".join(failed) + ". Compile again for them (a @cute.jit function called directly "
                            "does so itself)", None)
