"""Dynamic branches: an `if` on a runtime condition becomes scf.if, carrying the variables its branches assign
(region_carry.py); `a if c else b`, `and` / `or` / `not` and min / max of runtime values; static ones are Python's."""
from __future__ import annotations

import builtins
import operator

from ..base import trace
from ..base.errors import DSLNotImplementedError, DSLTypeError, user_location
from ..base.ir_values import Value
from ..values import hooks
from .carried_values import is_static, numeric_type_of, static_value
from .membership import contains
from .region_carry import Carry, at_line
from ..values.numeric import Boolean, Float32, Int32, Int64, Numeric, SymInt, as_numeric, select


# --- if -----------------------------------------------------------------------------------------------------------

def as_condition(c):
    if isinstance(c, Value):  # an IR value of a user op (`if arith.cmpi(...):`) is a runtime condition too
        c = as_numeric(c)
    if isinstance(c, Numeric):
        return c if type(c) is Boolean else c != 0
    if isinstance(c, SymInt):
        return Int32._wrap(c) != 0
    return c


def _branch(b, carry, fn, values, lineno):
    """One region of an scf.if, yielding fn's values; after it the objects the if carries are as they were before
    the if: the else branch starts from there, and the if's results set them after both."""
    at_line(b, lineno)
    b.begin_region([])
    with carry.scope():
        ys = carry.yields(fn(*values), lineno, "if")
    at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    carry.restore_objects()


def if_(cond, then_fn, else_fn, names, values, lineno, mutables=(), mutable_names=()):
    cond = as_condition(cond)
    if is_static(cond):
        return then_fn(*values) if static_value(cond) else else_fn(*values)
    st = trace.current()
    if st.kernel is None:  # a branch of the compiled host code, taken at each call (host/host_branch.py)
        return hooks.branch_on_host(cond, then_fn, else_fn, names, values, lineno)
    carry = Carry(names, values, mutables, mutable_names)
    b = st.builder
    at_line(b, lineno)
    c = cond.ir()
    k = st.kernel
    smem_before, holes_before = k.smem_bytes, list(k.smem_holes)
    _branch(b, carry, then_fn, values, lineno)
    smem_then, holes_then = k.smem_bytes, k.smem_holes
    if k.merge_branch_allocs:  # launch(smem_merge_branch_allocs=True): the else branch reuses the then's space
        k.smem_bytes, k.smem_holes = smem_before, holes_before
    _branch(b, carry, else_fn, values, lineno)
    k.smem_bytes = max(k.smem_bytes, smem_then)
    if k.merge_branch_allocs:  # a hole stays free after the if only where neither branch used it
        k.smem_holes = [h for h in k.smem_holes if h in holes_then]
    outs = b.op("scf.if", [c], carry.ir_types(), num_regions=2)
    return carry.outputs(outs, lineno)


def when(cond, fn):
    """`if cond: fn()` for library code, which the preprocessor does not rewrite (user code writes the if)."""
    def then():
        fn()
        return ()

    return if_(cond, then, lambda: (), (), (), 0)


def static_condition(cond, lineno):
    cond = as_condition(cond)
    if not is_static(cond):
        raise DSLNotImplementedError(f"the if/while at line {lineno} holds a return, break or continue, so its "
                                     "condition must be known while tracing (it is a runtime value here)",
                                     user_location(2))
    return bool(static_value(cond))


# --- boolean operators --------------------------------------------------------------------------------------------

def and_(first, *rest):
    v = as_condition(first) if isinstance(first, Value) else first
    for f in rest:
        if is_static(v):
            if not static_value(v):
                return v
            v = f()
        else:
            w = as_condition(f())
            v = as_condition(v) & (w if isinstance(w, Numeric) else Boolean(bool(w)))
    return v


def or_(first, *rest):
    v = as_condition(first) if isinstance(first, Value) else first
    for f in rest:
        if is_static(v):
            if static_value(v):
                return v
            v = f()
        else:
            w = as_condition(f())
            v = as_condition(v) | (w if isinstance(w, Numeric) else Boolean(bool(w)))
    return v


_COMPARE = {"Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge, "Eq": operator.eq,
            "NotEq": operator.ne, "Is": operator.is_, "IsNot": operator.is_not}


def compare_chain(left, ops, *rights):
    """`left op0 r0 op1 r1 ...` (a chained comparison) as Python means it, `left op0 r0 and r0 op1 r1 ...`, with
    each operand evaluated once and a later one only when the result is not settled yet (rights are thunks): on
    DSL values the comparisons are combined as and_ combines them. `in` / `not in` are membership (contains)."""
    seen = [left]

    def step(i):
        def compare():
            a, b = seen[-1], rights[i]()
            seen.append(b)
            op = ops[i]
            if op in ("In", "NotIn"):
                r = contains(a, b)
                return r if op == "In" else not_(r)
            return _COMPARE[op](a, b)
        return compare

    return and_(step(0)(), *[step(i) for i in range(1, len(ops))])


def not_(x):
    if is_static(x):
        return not static_value(x)
    return ~as_condition(x)


def ifexp(cond, a, b):
    cond = as_condition(cond)
    if is_static(cond):
        return a() if static_value(cond) else b()
    va, vb = a(), b()
    if not isinstance(va, Numeric) and not isinstance(vb, Numeric):
        # Python numbers on both sides (`1.0 if tidx > 3 else 2.0`): they become DSL numbers of one type, as they
        # would in arithmetic with a DSL number.
        ta, tb = numeric_type_of(va), numeric_type_of(vb)
        if ta is None or tb is None:
            raise DSLTypeError(f"`a if cond else b` with a runtime condition picks between numbers, not a "
                               f"{type(va).__name__} and a {type(vb).__name__}; use an if statement (or "
                               "cutlass.const_expr for a condition known while tracing)", user_location(2))
        order = (Boolean, Int32, Int64, Float32)
        t = max(ta, tb, key=order.index)
        va, vb = t(va), t(vb)
    elif not isinstance(va, Numeric) or not isinstance(vb, Numeric):
        other = vb if isinstance(va, Numeric) else va
        if numeric_type_of(other) is None:
            raise DSLTypeError(f"`a if cond else b` with a runtime condition picks between numbers, not a "
                               f"{type(va).__name__} and a {type(vb).__name__}; use an if statement",
                               user_location(2))
    return select(cond, va, vb)


def builtin_min_max(fn, name, *args):
    """`min(a, b, ...)` / `max(...)` in a kernel: Python's builtin on Python values; where `fn` is the builtin and
    an argument is a DSL number (or a runtime integer), cutlass.min / cutlass.max, which compare at run time. A
    user's own min/max (a shadowing name) is called as it is."""
    if fn is getattr(builtins, name) and len(args) > 1 and \
            any(isinstance(a, (Numeric, SymInt)) or hasattr(a, "__ww_int__") for a in args):
        return hooks.min_max(name, *args)
    return fn(*args)
