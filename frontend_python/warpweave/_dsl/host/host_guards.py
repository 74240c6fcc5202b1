"""Host-side decisions taken while tracing: a runtime Boolean that Python asks the truth of.

A comparison of runtime integers (extents of dynamic tensors, Int32 arguments) in a @cute.jit function is a
Boolean of its host program (host_program.py): an `if` on it branches at each call. Python code that asks for its
truth value while tracing (a library's own `if`, `and`, `bool()`) gets it from the values of the arguments being
compiled for, and the outcome is recorded as a guard of the compiled function. A later call whose arguments decide
it otherwise is refused by an explicitly compiled function (compile again) and recompiled by a @cute.jit function
called directly. With fake tensors (cute.sym_int extents) there is no value, and that is an error naming the line.

A host division (or modulo) of DSL integers by a runtime one is guarded the same way: its divisor is not zero. A
zero divisor with the values compiled for is an error at the division's line, as a division by a zero constant
is; a call whose arguments make it zero is refused naming that line (compiling again would not help).
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
    def __init__(self, diff, op: str, outcome: bool, where, divisor: str | None = None):
        self.diff = diff          # a SymInt: left - right
        self.op = op
        self.outcome = outcome
        self.where = where
        self.divisor = divisor    # "division" / "modulo": the guard is that the divisor `diff` is not zero

    def holds(self, env) -> bool:
        return OUTCOMES[self.op](int(_core.evaluate(self.diff, env))) == self.outcome

    def describe(self) -> str:
        loc = f"{self.where[0]}:{self.where[1]}" if self.where else "?"
        if self.divisor:
            return f"the integer {self.divisor} at {loc} is by zero for them"
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


@hooks.divisor_on_host.register
def nonzero_divisor(divisor, what: str) -> None:
    """A host division by a runtime integer: an error at the user's line where the values compiled for make the
    divisor zero (as a division by a zero constant is), else a guard that each call checks. A call whose
    arguments make it zero is refused naming that line, never a division by zero on the device (whose result
    no one defines) or a bare ZeroDivisionError of the launch."""
    st = trace.current_or_none()
    if st is None or st.kernel is not None:
        return
    where = user_location(2)
    ids = _core.symbols_of(divisor)
    if ids and all(i in st.host_values for i in ids) and \
            int(_core.evaluate(divisor, {i: st.host_values[i] for i in ids})) == 0:
        raise DSLValueError(f"integer {what} by zero: the divisor {divisor.expr} is 0 for these arguments", where)
    st.host_guards.append(Guard(divisor, "ne", True, where, divisor=what))


def _where(g):
    return tuple(g.where) if g.where else None  # a guard read back from the function cache holds a list


def _holds(g, env) -> bool:
    try:
        return g.holds(env)
    except (ValueError, ZeroDivisionError, OverflowError) as e:  # the guarded value itself has no value for them
        raise DSLValueError(f"host code for these arguments: {e}", _where(g)) from None


def divisor_error(g):
    """The error of a call whose arguments make the divisor of the guarded host division zero."""
    text = getattr(g.diff, "expr", None) or getattr(g.diff, "src", "")
    raise DSLValueError(f"integer {g.divisor} by zero: the divisor {text} is 0 for these arguments", _where(g))


def check(guards, env) -> None:
    for g in guards:
        if g.divisor and not _holds(g, env):
            divisor_error(g)
    failed = [g.describe() for g in guards if not _holds(g, env)]
    if failed:
        raise GuardMismatch("these arguments decide host code of the compiled function otherwise: " +
                            "; ".join(failed) + ". Compile again for them (a @cute.jit function called directly "
                            "does so itself)", None)
