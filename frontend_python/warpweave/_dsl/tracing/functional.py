"""CuTe DSL's functional forms of control flow, for code that builds IR without the preprocessor's rewrite (library
helpers called from kernels, `@dsl_user_op` functions): `if_generate` (an if with bodies as functions and typed
results), `while_generate` / `yield_out` (a loop whose body is a `with` block), and `and_` / `or_` / `not_` over values (Python's short-circuit where they are static, Boolean
operations where they are not). They write the same regions as a rewritten `if` (branches.if_)."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import Value
from ..values.numeric import Boolean, Int32, Int64, Numeric, NumericMeta, as_numeric
from . import branches, loops


def _condition(cond):
    if isinstance(cond, Value):
        return as_numeric(cond)
    return cond


def if_generate(cond, then_body, else_body=None, input_args=None, return_types=None, *, loc=None, ip=None):
    """`then_body(*input_args)` where cond holds, else `else_body(*input_args)`; with `return_types`, each body
    returns values of those types and so does the op (one value, or a list of several). Without an else body the op
    has no results."""
    where = user_location(2)
    args = list(input_args or [])
    rtypes = list(return_types or [])
    for t in rtypes:
        if not isinstance(t, NumericMeta):
            raise DSLTypeError(f"if_generate: return_types are DSL numeric types, got {t!r}", where)
    if rtypes and else_body is None:
        raise DSLValueError("if_generate with return_types needs an else_body: both branches give the results", where)

    def branch(body, which):
        def fn(*_carried):
            out = body(*args) if body is not None else None
            if not rtypes:
                return ()
            vals = list(out) if isinstance(out, (list, tuple)) else [out]
            if len(vals) != len(rtypes):
                raise DSLValueError(f"if_generate: the {which} body returns {len(vals)} value(s), return_types "
                                    f"gives {len(rtypes)}", where)
            return tuple(t(v) for t, v in zip(rtypes, vals))
        return fn

    names = tuple(f"result {i}" for i in range(len(rtypes)))
    init = tuple(t(0) for t in rtypes)
    outs = branches.if_(_condition(cond), branch(then_body, "then"), branch(else_body, "else"), names, init,
                            where[1] if where else 0)
    if not rtypes:
        return None
    return outs[0] if len(outs) == 1 else list(outs)


class _WhileContext:
    """`with while_generate(inits, cond) as values:` ... `yield_out(new_values)`: an scf.while whose condition is
    cond(*values) and whose body is the block of the `with`. The values are numbers (or IR values) of fixed types;
    `results` holds the loop's final values after the block."""

    _open: list = []

    def __init__(self, inits, cond_fn, where):
        self.where = where
        vals = [_condition(v) for v in inits]
        for v in vals:
            if not isinstance(v, Numeric):
                raise DSLTypeError(f"while_generate carries DSL numbers or IR values, got {type(v).__name__}", where)
        self.types = [type(v) for v in vals]
        self.inits = vals
        self.cond_fn = cond_fn
        self.yielded = None
        self.results = None

    def __enter__(self):
        b = trace.builder()
        inits = [t(v).ir() for t, v in zip(self.types, self.inits)]
        tys = [t.ir_type for t in self.types]
        self._inits, self._tys = inits, tys
        before = b.begin_region(tys)
        c = _condition(self.cond_fn(*[t.from_ir(v) for t, v in zip(self.types, before)]))
        c = (c if isinstance(c, Numeric) else Boolean(c)).ir()
        b.op0("scf.condition", [c] + list(before))
        b.end_region()
        after = b.begin_region(tys)
        _WhileContext._open.append(self)
        return [t.from_ir(v) for t, v in zip(self.types, after)]

    def __exit__(self, exc_type, exc, tb):
        _WhileContext._open.pop()
        b = trace.builder()
        if exc_type is not None:
            b.end_region()
            return False
        if self.yielded is None:
            raise DSLValueError("the block of while_generate ends without yield_out(...) of its values", self.where)
        b.op0("scf.yield", self.yielded)
        b.end_region()
        outs = b.op("scf.while", self._inits, self._tys, num_regions=2)
        self.results = [t.from_ir(v) for t, v in zip(self.types, outs)]
        return False


def while_generate(inits, cond_fn, *, loc=None, ip=None):
    """A loop as a context manager (CuTe DSL's functional while): see _WhileContext."""
    return _WhileContext(list(inits), cond_fn, user_location(2))


def for_generate(start, stop=None, step=None, iter_args=None, *, unroll=None, loc=None, ip=None):
    """`for i in for_generate(start, stop, step): ...`: a loop over runtime bounds written without the
    preprocessor (a library helper called from a kernel): the body, run once while tracing, is the loop's body in the
    IR. Static bounds in host code loop in Python. Values the body changes do not escape it (there is no carried
    value yet: iter_args is refused)."""
    where = user_location(2)
    if iter_args:
        raise DSLValueError("for_generate(iter_args=...): loop-carried values are not supported here; carry them "
                            "through a rewritten `for ... in cutlass.range(...)` loop", where)
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    return _for_generate(start, stop, step, loops.loop_attributes(unroll, False, where), where)


def _for_generate(start, stop, step, attributes, where, rolled=False):
    """rolled: a loop in the kernel's IR even over static bounds (ext.rolled_range), which otherwise loop in Python."""
    st = trace.current()
    bounds = [as_numeric(x) if not isinstance(x, Numeric) else x for x in (start, stop, step)]
    if st.kernel is None or (all(x.is_static for x in bounds) and not rolled):
        if not all(x.is_static for x in bounds):
            raise DSLValueError("for_generate over a runtime bound in host code: loop inside the kernel", where)
        yield from range(*(int(x.value) for x in bounds))
        return
    t = Int64 if any(type(x) is Int64 for x in bounds) else Int32
    lo, hi, sp = (t(x) for x in bounds)
    b = st.builder
    if where is not None:
        b.set_location(where[0], where[1], 1)
    operands = [lo.ir(), hi.ir(), sp.ir()]
    block = b.begin_region([t.ir_type])
    waits = st.kernel.barrier_waits
    yield t._wrap(trace.lift_int(block[0], t.ir_type))
    b.op0("scf.yield", [])
    b.end_region()
    b.op("scf.for", operands, [], attributes=loops.rolled_if_synchronised(attributes, waits), num_regions=1)


def yield_out(values=(), *, loc=None, ip=None):
    """The values the current while_generate block passes to the next iteration (of the loop's types)."""
    where = user_location(2)
    if not _WhileContext._open:
        if not list(values):
            return  # the end of a for_generate body, which carries nothing
        raise DSLValueError("yield_out of values outside the block of a while_generate", where)
    ctx = _WhileContext._open[-1]
    vals = [_condition(v) for v in values]
    if len(vals) != len(ctx.types):
        raise DSLValueError(f"yield_out of {len(vals)} value(s) in a while_generate of {len(ctx.types)}", where)
    ctx.yielded = [t(v).ir() for t, v in zip(ctx.types, vals)]


def _check_args(name, args):
    if not args:
        raise DSLValueError(f"{name} takes one value or more", user_location(3))
    return [_condition(a) for a in args]


def and_(*args, loc=None, ip=None):
    """Python's `a and b and ...` over values: the first falsy one or the last, deciding at run time for dynamic
    ones (then Booleans)."""
    vals = _check_args("and_", args)
    return branches.and_(vals[0], *[(lambda v=v: v) for v in vals[1:]])


def or_(*args, loc=None, ip=None):
    vals = _check_args("or_", args)
    return branches.or_(vals[0], *[(lambda v=v: v) for v in vals[1:]])


def not_(x, *, loc=None, ip=None):
    return branches.not_(_condition(x))


__all__ = ["and_", "if_generate", "not_", "or_", "while_generate", "yield_out"]
