"""Dynamic loops: a `for` over a range with runtime bounds becomes scf.for, a `while` on a runtime condition
scf.while, carrying the variables their bodies assign (region_carry.py); static ones run as Python while tracing.
Also the ranges programs write (cutlass.range, range_constexpr) and the loops' unrolling hints."""
from __future__ import annotations

import builtins
import math
import warnings

from ..base import trace
from ..base.errors import DSLTypeError, user_location
from ..values import hooks
from .branches import as_condition
from .carried_values import is_static, static_value
from .region_carry import Carry, at_line
from ..values.numeric import Boolean, Int32, Int64, Numeric, select
from ..values.tensor import RMEM, Pointer, Tensor


# --- for ----------------------------------------------------------------------------------------------------------

def _range_bounds(args):
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    if len(args) == 3:
        return args
    raise DSLTypeError(f"range expects 1 to 3 arguments, got {len(args)}", user_location(3))


# A loop with static bounds that indexes a register tensor with its variable is unrolled while tracing (up to this
# many trips): registers cannot be indexed at run time, so a loop kept in the IR would move the tensor to local
# memory. (CuTe DSL programs write `for i in range(cute.size(acc)): acc[i] = ...`.)
UNROLL_REGISTER_LOOPS_UP_TO = 512


# A host loop of static bounds with at least this many trips is traced once and run at each call, as one of
# runtime bounds is (its element copies then run in bulk), instead of trip by trip in Python while tracing: a
# scale-factor conversion over a static tensor has millions of trips.
HOST_LOOP_STATIC_TRIPS = 1 << 16


def _many_trips(start, stop, step) -> bool:
    a, b, c = (static_value(x) for x in (start, stop, step))
    return c != 0 and len(builtins.range(a, b, c)) >= HOST_LOOP_STATIC_TRIPS


def loop_attributes(unroll, unroll_full, where) -> str:
    """The unrolling a kernel's loop asks of the compiler, as the scf.for's LLVM loop annotation (lowered onto the
    loop's latch branch): unroll=1 keeps the loop rolled (nothing peeled or unrolled: a pipelined mainloop keeps
    the one copy of its body the program wrote), unroll=N unrolls N times, unroll_full completely; none (or 0)
    leaves it to the compiler's heuristics."""
    if unroll_full:
        return "loop_annotation = #llvm.loop_annotation<unroll = <full = true>>"
    if unroll is None:
        return ""
    if not is_static(unroll) or isinstance(static_value(unroll), bool) \
            or not isinstance(static_value(unroll), int):
        raise DSLTypeError(f"cutlass.range(unroll=...) takes an integer known while tracing, got {unroll!r}", where)
    n = static_value(unroll)
    if n < 0:
        raise DSLTypeError(f"cutlass.range(unroll={n}): the unroll count cannot be negative", where)
    if n == 0:
        return ""
    if n == 1:
        return "loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>"
    return f"loop_annotation = #llvm.loop_annotation<unroll = <count = {n} : i32>>"


# A loop that the program leaves to the compiler's unrolling and whose body waits at a block-level barrier stays a
# loop down to the assembler (the unroll-disable annotation, which the PTX carries as the loop's no-unroll pragma).
# Unrolling such a loop saves little, each trip waiting for the whole block anyway, and lets the assembler move one
# trip's register-only work past the barriers into the next trips: the sub-tile loop of a Blackwell epilogue that
# also reduces its accumulators (the absolute maximum of the tile) then held several sub-tiles of accumulators at
# once (132 registers under the CUDA 13.5 PTX compiler, where CuTe DSL's loop takes 44). The assembler decides by
# the size of the body, and the same body is smaller in our PTX than in NVIDIA's compiler's (which moves register
# pairs through 64-bit registers): it unrolled ours and kept CuTe DSL's rolled.
ROLLED_WHEN_SYNCHRONISED = "loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>"


def rolled_if_synchronised(attributes: str, waits_before: int) -> str:
    """The loop's annotation: `attributes` (the program's unrolling), or none given and the body waited at a
    block-level barrier since the kernel had traced `waits_before` of them, the rolled loop's."""
    if attributes or trace.current().kernel.barrier_waits == waits_before:
        return attributes
    return ROLLED_WHEN_SYNCHRONISED


def _indexes_registers(indexed) -> bool:
    return any(isinstance(t, Tensor) and isinstance(t.iterator, Pointer) and t.iterator.memspace == RMEM
               for t in indexed)


def for_range(body, range_args, names, values, lineno, unroll=None, unroll_full=False, mutables=(),
              prefetch_stages=None, vectorize=False, indexed=(), mutable_names=(), rebound=(), **kwargs):
    # prefetch_stages: CuTe DSL's request to software-pipeline the loop's loads; a scheduling hint that does not
    # change what the loop computes, and that is not applied here; nor is at_least_once (that the loop runs a trip,
    # for analyses). Any other keyword is ignored, as CuTe DSL 4.8.1 ignores it (shipped code misspells one:
    # unfoll_full), with a warning at the user's line so that a misspelling is still seen.
    # vectorize: a request that the trips' element operations become vector operations. A loop with static bounds
    # is unrolled while tracing for it, so that LLVM's vectorizer sees the trips side by side (a loop kept in the
    # IR would hide them); a loop with runtime bounds stays a loop.
    # indexed: the values of the names the body subscripts with the loop variable (from the preprocessor).
    kwargs.pop("at_least_once", None)
    if kwargs:
        loc = user_location(2)
        warnings.warn_explicit(f"cutlass.range() ignores the keyword argument {next(iter(kwargs))!r}, as CuTe DSL "
                               "does (its keywords: unroll, unroll_full, prefetch_stages, vectorize, at_least_once)",
                               SyntaxWarning, loc[0] if loc else "<unknown>", lineno)
    start, stop, step = _range_bounds(range_args)
    attributes = ""
    if unroll is not None or unroll_full:
        loc = user_location(2)
        attributes = loop_attributes(unroll, unroll_full, (loc[0], lineno) if loc else None)
    st = trace.current()
    static = all(is_static(x) for x in (start, stop, step))
    if vectorize and static and unroll is None:
        unroll_full = True
    if static and unroll is None and not unroll_full and static_value(step) != 0 and _indexes_registers(indexed):
        trips = len(builtins.range(static_value(start), static_value(stop), static_value(step)))
        unroll_full = trips <= UNROLL_REGISTER_LOOPS_UP_TO
    if st.kernel is None and (not static or not unroll_full and _many_trips(start, stop, step)):
        # a loop of the compiled host code, run at each call (host/host_loop.py); one of static bounds too where
        # its trips are too many to run one by one in Python while tracing (a whole tensor's elements)
        return hooks.loop_on_host(body, (start, stop, step), names, values, lineno)
    if st.kernel is None or (unroll_full and static):
        # Host code runs as Python; a fully unrolled loop is unrolled while tracing, so its index is a constant.
        vals = tuple(values)
        for i in builtins.range(static_value(start), static_value(stop), static_value(step)):
            vals = body(i, *vals)
        return vals
    if static and static_value(step) == 0:
        raise DSLTypeError("range() step must not be zero", user_location(2))
    t = Int64 if any(isinstance(x, Numeric) and type(x) in (Int64,) for x in (start, stop, step)) else Int32
    start, stop, step = t(start), t(stop), t(step)
    carry = Carry(names, values, mutables, mutable_names, rebound)
    b = st.builder
    at_line(b, lineno)
    # The IR's loop counts up (it runs while its variable is below the bound): a loop with a negative step (range(n,
    # -1, -1)) runs over k in [0, trips) and its variable is start + k * step. A step known only at run time may be
    # either: a negative one walks [stop, start) up by -step, and the variable is start + stop - that.
    down = step.is_static and step.value < 0
    either = not step.is_static
    if down:
        lb, ub, sp = t(0).ir(), ((start - stop + (-step.value - 1)) // -step.value).ir(), t(1).ir()
    elif either:
        neg = step < 0
        lb, ub, sp = select(neg, stop, start).ir(), select(neg, start, stop).ir(), select(neg, -step, step).ir()
    else:
        lb, ub, sp = start.ir(), stop.ir(), step.ir()
    inits = carry.inits()
    at_line(b, lineno)  # the region's own line: the builder names it when a value escapes the region
    block = b.begin_region([t.ir_type] + carry.ir_types())
    if down:
        iv = start + t._wrap(trace.lift_int(block[0], t.ir_type, nonneg=True)) * step
    elif either:
        walked = t._wrap(trace.lift_int(block[0], t.ir_type))
        iv = select(neg, start + stop - walked, walked)
    else:
        nonneg = start.is_static and step.is_static and start.value >= 0 and step.value > 0
        div = math.gcd(start.value, step.value) if start.is_static and step.is_static else 1
        iv = t._wrap(trace.lift_int(block[0], t.ir_type, nonneg=nonneg, divisibility=max(div, 1)))
    waits = st.kernel.barrier_waits
    with carry.scope():
        results = body(iv, *carry.inner(block[1:]))
        ys = carry.yields(results, lineno, "loop")
    at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    attributes = rolled_if_synchronised(attributes, waits)
    outs = b.op("scf.for", [lb, ub, sp] + inits, carry.ir_types(), attributes=attributes, num_regions=1)
    return carry.outputs(outs, lineno)


# --- while --------------------------------------------------------------------------------------------------------

def while_(cond_fn, body_fn, names, values, lineno, mutables=(), mutable_names=()):
    st = trace.current()
    raw = cond_fn(*values)
    probe = as_condition(raw)
    # A loop on a flag variable made a DSL Boolean (`go = cutlass.Boolean(True)`, `while go:`) runs at run time, as
    # in CuTe DSL, where that Boolean is an IR value: its body usually sets the flag from runtime values.
    if is_static(probe) and not (isinstance(raw, Boolean) and any(raw is v for v in values)):
        vals = tuple(values)
        while True:
            c = as_condition(cond_fn(*vals))
            if not is_static(c):
                raise DSLTypeError(f"the condition of the while loop at line {lineno} became a runtime value after "
                                   "some iterations; make it dynamic from the start (e.g. with cutlass.Int32)",
                                   user_location(2))
            if not static_value(c):
                return vals
            vals = body_fn(*vals)
    if st.kernel is None:  # a loop of the compiled host code, run at each call (host/host_loop.py)
        return hooks.while_on_host(cond_fn, body_fn, names, values, lineno)
    carry = Carry(names, values, mutables, mutable_names)
    b = st.builder
    at_line(b, lineno)
    inits = carry.inits()
    types = carry.ir_types()
    at_line(b, lineno)
    before = b.begin_region(types)
    c = as_condition(cond_fn(*carry.inner(before)))
    c = (c if isinstance(c, Numeric) else Boolean(c)).ir()
    at_line(b, lineno)
    b.op0("scf.condition", [c] + list(before))
    b.end_region()
    at_line(b, lineno)
    after = b.begin_region(types)
    with carry.scope():
        ys = carry.yields(body_fn(*carry.inner(after)), lineno, "while loop")
    at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    outs = b.op("scf.while", inits, types, num_regions=2)
    return carry.outputs(outs, lineno)


# --- ranges and compile-time markers --------------------------------------------------------------------------

def range_constexpr(*args, unroll=None, unroll_full=False):
    """A loop unrolled while tracing: every bound must be known (Constexpr). unroll / unroll_full, which programs
    pass as to cutlass.range, ask for what such a loop always is: unrolled whole."""
    for a in args:
        if not is_static(a):
            raise DSLTypeError("cutlass.range_constexpr needs bounds known while tracing; use range() for a runtime "
                               "bound", user_location(2))
    return builtins.range(*(int(static_value(a)) for a in args))


def dsl_range(*args, unroll=None, unroll_full=False, prefetch_stages=None):
    """cutlass.range: in a `for` statement of a kernel it emits a loop (rewritten); elsewhere a Python range."""
    return range_constexpr(*args)
