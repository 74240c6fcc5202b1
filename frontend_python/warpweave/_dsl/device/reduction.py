"""Reductions of TensorSSA values (cute.ReductionOp, TensorSSA.reduce) over all modes or over the modes a
reduction profile selects.

A profile mirrors the value's shape: 0 (or 1) reduces everything to one number; a tuple with one entry per mode
keeps the modes marked None and reduces those marked 1 (nested tuples select inside a mode), so for a (2, 3)
value `(None, 1)` gives the 2 row results and `(1, None)` the 3 column results. `init` joins every result once.
"""
from __future__ import annotations

import enum

from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values import hooks
from ..values.numeric import Boolean, Numeric, max_, min_
from ..values.tensor import TensorSSA


class ReductionOp(enum.Enum):
    ADD = "add"
    MUL = "mul"
    MAX = "max"
    MIN = "min"


def _function(op):
    fns = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": max_, "min": min_}
    if isinstance(op, ReductionOp):
        return fns[op.value]
    if isinstance(op, str):
        if op.lower() not in fns:
            raise DSLValueError(f"reduce: unknown operation {op!r} (cute.ReductionOp.ADD, MUL, MAX or MIN, or a "
                                "function of two values)", user_location(3))
        return fns[op.lower()]
    if callable(op):
        return op
    raise DSLTypeError(f"reduce: op must be a cute.ReductionOp or a function of two values, got {op!r}",
                       user_location(3))


def _leaves(shape, profile, out):
    """Pairs (extent, reduced?) of the leaves of shape, in colexicographic order, as the profile marks them."""
    if isinstance(shape, tuple):
        if profile is None or isinstance(profile, int):
            for s in shape:
                _leaves(s, profile, out)
            return
        if not isinstance(profile, tuple) or len(profile) != len(shape):
            raise DSLValueError(f"reduce: the reduction profile {profile} does not match the shape {shape}",
                                user_location(4))
        for s, p in zip(shape, profile):
            _leaves(s, p, out)
        return
    if profile is not None and not (isinstance(profile, int) and not isinstance(profile, bool) and profile in (0, 1)):
        raise DSLValueError(f"reduce: a reduction profile holds None (keep) and 1 (reduce), got {profile!r}",
                            user_location(4))
    out.append((shape, profile is not None))


def _kept_shape(shape, profile):
    if profile is None:
        return shape
    if not isinstance(shape, tuple) or isinstance(profile, int):
        return None
    parts = [k for k in (_kept_shape(s, p) for s, p in zip(shape, profile)) if k is not None]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else tuple(parts)


@hooks.reduce_tensor.register
def reduce(ssa, op, init_val=None, reduction_profile=0):
    """The reduction of a TensorSSA: a number for a full reduction, else a TensorSSA of the kept modes."""
    fn = _function(op)
    vals = ssa.values
    if init_val is not None and not isinstance(init_val, Numeric):
        init_val = ssa.dtype(init_val)
    full = isinstance(reduction_profile, int) and not isinstance(reduction_profile, bool)
    if full:
        if reduction_profile not in (0, 1):
            raise DSLValueError(f"reduce: reduction_profile {reduction_profile} (0 reduces every mode)",
                                user_location(2))
        if not vals:
            if init_val is None:
                raise DSLValueError("reduce of no values needs init_val", user_location(2))
            return init_val
        acc = init_val if init_val is not None else vals[0]
        for v in (vals if init_val is not None else vals[1:]):
            acc = fn(acc, v)
        return acc
    leaves: list = []
    _leaves(ssa.shape, reduction_profile, leaves)
    if any(not isinstance(n, int) for n, _ in leaves):
        raise DSLTypeError(f"reduce: needs a static shape, got {ssa.shape}", user_location(2))
    n_out = 1
    for n, red in leaves:
        if not red:
            n_out *= n
    outs = [None] * n_out
    for i, v in enumerate(vals):
        rest, o, scale = i, 0, 1
        for n, red in leaves:
            c = rest % n
            rest //= n
            if not red:
                o += c * scale
                scale *= n
        outs[o] = v if outs[o] is None else fn(outs[o], v)
    if init_val is not None:
        outs = [fn(init_val, x) if x is not None else init_val for x in outs]
    kept = _kept_shape(ssa.shape, reduction_profile)
    dt = type(outs[0]) if outs and isinstance(outs[0], Numeric) else ssa.dtype
    return TensorSSA(outs, kept if kept is not None else (1,), dt)



def _truths(x, fname):
    vals = x.values if isinstance(x, TensorSSA) else [x]
    if not vals:
        raise DSLValueError(f"{fname}: no values", user_location(3))
    out = []
    for v in vals:
        if not isinstance(v, (Numeric, bool, int, float)):
            raise DSLTypeError(f"{fname} expects a TensorSSA or a number, got {type(v).__name__}", user_location(3))
        out.append(v if isinstance(v, Numeric) and type(v) is Boolean else Boolean(v))
    return out


def all_(x):
    """Whether every value of a TensorSSA (or a number) is true: nonzero, for numbers (CuTe DSL's cute.all_)."""
    vals = _truths(x, "all_")
    r = vals[0]
    for v in vals[1:]:
        r = r & v
    return r


def any_(x):
    """Whether some value of a TensorSSA (or a number) is true (CuTe DSL's cute.any_)."""
    vals = _truths(x, "any_")
    r = vals[0]
    for v in vals[1:]:
        r = r | v
    return r
