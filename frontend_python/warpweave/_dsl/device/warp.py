"""Warp-level collectives (cute.arch): shuffles, votes and warp reductions, through NVVM's shfl.sync / vote.sync.

They are architecture-neutral (every target of warpweave has them) and so are emitted by the core, except a float
warp reduction where the target's backend publishes one instruction for it (warp_redux_sync asks the manifests).
A value of any DSL type moves through 32-bit registers: narrower types are widened bit for bit, 64-bit ones take
two shuffles.
"""
from __future__ import annotations

import operator

from ..atoms.atoms import current_cc, entries_named, entry_usable
from ..atoms.instructions import emit_instruction
from ..base import trace
from ..base.markers import accept_locations
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Boolean, Float, Int32, Numeric, as_numeric, max_, min_
from .arch import fmax, fmin

WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF


def _i32(x, what: str) -> int:
    """An Int32 operand (mask, lane, clamp) as an SSA value."""
    if isinstance(x, Numeric):
        if not (x.is_integer or x.is_boolean):
            raise DSLTypeError(f"{what} must be an integer, got {type(x).__name__}", user_location(3))
        return (x if type(x) is Int32 else Int32(x)).ir()
    if isinstance(x, bool) or not isinstance(x, int) and not hasattr(x, "__ww_int__"):
        raise DSLTypeError(f"{what} must be an integer, got {type(x).__name__}", user_location(3))
    return Int32(x).ir()


def sync_warp(mask=-1):
    """The lanes of `mask` (default: the whole warp) wait for each other and order their memory accesses
    (bar.warp.sync, __syncwarp)."""
    trace.builder().op0("nvvm.bar.warp.sync", [_i32(mask, "mask")])


def _shfl32(kind: str, v: int, ty: str, offset, mask_and_clamp, mask) -> int:
    b = trace.builder()
    return b.op1("nvvm.shfl.sync", [_i32(mask, "mask"), v, _i32(offset, "offset"),
                                    _i32(mask_and_clamp, "mask_and_clamp")], ty, f"kind = #nvvm<shfl_kind {kind}>")


def _shuffle(kind: str, value, offset, mask, mask_and_clamp):
    if not isinstance(value, Numeric):
        if isinstance(value, (bool, int, float)) or hasattr(value, "__ww_int__"):
            value = as_numeric(value)
        else:
            raise DSLTypeError(f"shuffle_sync: cannot shuffle a {type(value).__name__} (a DSL number is needed)",
                               user_location(3))
    t = type(value)
    b = trace.builder()
    v = value.ir()
    if t.ir_type in ("f32", "i32"):
        return t.from_ir(_shfl32(kind, v, t.ir_type, offset, mask_and_clamp, mask))
    if t.is_boolean:
        w = b.op1("arith.extui", [v], "i32")
        r = _shfl32(kind, w, "i32", offset, mask_and_clamp, mask)
        return Boolean.from_ir(b.op1("arith.cmpi", [r, b.constant_int(0, "i32")], "i1", "predicate = 1 : i64"))
    width = t.width
    bits_t = f"i{width}"
    bits = v if t.ir_type == bits_t else b.op1("arith.bitcast", [v], bits_t)
    if width < 32:
        w = b.op1("arith.extui", [bits], "i32")
        r = b.op1("arith.trunci", [_shfl32(kind, w, "i32", offset, mask_and_clamp, mask)], bits_t)
    elif width == 64:
        lo = b.op1("arith.trunci", [bits], "i32")
        hi = b.op1("arith.trunci", [b.op1("arith.shrui", [bits, b.constant_int(32, "i64")], "i64")], "i32")
        lo = b.op1("arith.extui", [_shfl32(kind, lo, "i32", offset, mask_and_clamp, mask)], "i64")
        hi = b.op1("arith.extui", [_shfl32(kind, hi, "i32", offset, mask_and_clamp, mask)], "i64")
        r = b.op1("arith.ori", [lo, b.op1("arith.shli", [hi, b.constant_int(32, "i64")], "i64")], "i64")
    else:
        raise DSLTypeError(f"shuffle_sync: {t.__name__} values cannot be shuffled", user_location(3))
    return t.from_ir(r if t.ir_type == bits_t else b.op1("arith.bitcast", [r], t.ir_type))


def shuffle_sync(value, offset, mask=-1, mask_and_clamp=31):
    """Each lane of `mask` gets `value` of lane `offset` (shfl.sync.idx)."""
    return _shuffle("idx", value, offset, mask, mask_and_clamp)


def shuffle_sync_up(value, offset, mask=-1, mask_and_clamp=0):
    """Each lane gets `value` of the lane `offset` below it; lanes below `offset` keep their own."""
    return _shuffle("up", value, offset, mask, mask_and_clamp)


def shuffle_sync_down(value, offset, mask=-1, mask_and_clamp=31):
    """Each lane gets `value` of the lane `offset` above it; the top lanes keep their own."""
    return _shuffle("down", value, offset, mask, mask_and_clamp)


def shuffle_sync_bfly(value, offset, mask=-1, mask_and_clamp=31):
    """Each lane gets `value` of its lane xor `offset` (a butterfly)."""
    return _shuffle("bfly", value, offset, mask, mask_and_clamp)


_SHFL_KINDS = ("idx", "up", "down", "bfly")


def shuffle_sync_op(value, offset, mask=-1, mask_and_clamp=31, kind="idx"):
    """The shuffle of the given kind (idx, up, down or bfly: a name, or an enum whose name is one, as CuTe DSL's
    ShflKind), the others' common form."""
    name = str(getattr(kind, "name", kind)).lower()
    if name not in _SHFL_KINDS:
        raise DSLValueError(f"shuffle_sync_op: kind is one of {', '.join(_SHFL_KINDS)}, got {kind!r}",
                            user_location(2))
    return _shuffle(name, value, offset, mask, mask_and_clamp)


def _pred(p, what) -> int:
    if isinstance(p, Numeric):
        if p.is_boolean:
            return p.ir()
        return (p != 0).ir()
    if isinstance(p, (bool, int)):
        return Boolean(bool(p)).ir()
    raise DSLTypeError(f"{what}: the predicate must be a DSL Boolean or number, got {type(p).__name__}",
                       user_location(3))


def _vote(kind: str, pred, mask, result: str):
    b = trace.builder()
    return b.op1("nvvm.vote.sync", [_i32(mask, "mask"), _pred(pred, f"vote_{kind}_sync")], result,
                 f"kind = #nvvm<vote_sync_kind {kind}>")


def vote_ballot_sync(pred, mask=-1):
    """A 32-bit word with bit i set where lane i of `mask` has `pred` true."""
    return Int32.from_ir(_vote("ballot", pred, mask, "i32"))


def vote_any_sync(pred, mask=-1):
    """True in every lane of `mask` if `pred` is true in any of them."""
    return Boolean.from_ir(_vote("any", pred, mask, "i1"))


def vote_all_sync(pred, mask=-1):
    """True in every lane of `mask` if `pred` is true in all of them."""
    return Boolean.from_ir(_vote("all", pred, mask, "i1"))


def vote_uni_sync(pred, mask=-1):
    """True in every lane of `mask` if `pred` has the same value in all of them."""
    return Boolean.from_ir(_vote("uni", pred, mask, "i1"))


_VOTES = {"any": vote_any_sync, "all": vote_all_sync, "uni": vote_uni_sync, "ballot": vote_ballot_sync}


def vote_sync_op(pred, kind, mask=FULL_MASK):
    """The vote of `kind` ("any", "all", "uni": a Boolean; "ballot": the Int32 word of lanes) over the lanes of
    mask: vote_<kind>_sync by its kind's name."""
    f = _VOTES.get(kind) if isinstance(kind, str) else None
    if f is None:
        raise DSLValueError(f"vote_sync_op: kind is one of {', '.join(_VOTES)}, got {kind!r}", user_location(2))
    return f(pred, mask)


def _reduction_function(op):
    def typed_max(a, b):
        return fmax(a, b) if isinstance(a, Float) else max_(a, b)

    def typed_min(a, b):
        return fmin(a, b) if isinstance(a, Float) else min_(a, b)

    names = {"add": operator.add, "sum": operator.add, "mul": operator.mul, "max": typed_max, "min": typed_min,
             "and": operator.and_, "or": operator.or_, "xor": operator.xor}
    name = getattr(op, "value", op) if not callable(op) else op
    if isinstance(name, str):
        if name.lower() not in names:
            raise DSLValueError(f"warp_reduction: unknown operation {op!r} (one of {', '.join(names)}, or a "
                                "function of two values)", user_location(4))
        return names[name.lower()]
    if callable(op):
        return op
    raise DSLTypeError(f"warp_reduction: op must be a function of two values or an operation name, got {op!r}",
                       user_location(4))


def warp_reduction(val, op, threads_in_group: int = 32):
    """Combines `val` over each group of `threads_in_group` consecutive lanes with `op` (butterfly shuffles): every
    lane of a group gets the group's result."""
    if isinstance(threads_in_group, Numeric):
        threads_in_group = threads_in_group.value
    if not isinstance(threads_in_group, int) or not 1 <= threads_in_group <= 32 \
            or threads_in_group & (threads_in_group - 1):
        raise DSLValueError(f"warp_reduction: threads_in_group must be a power of two from 1 to 32, got "
                            f"{threads_in_group}", user_location(2))
    fn = _reduction_function(op)
    if not isinstance(val, Numeric):
        val = as_numeric(val)
    off = threads_in_group // 2
    while off >= 1:
        val = fn(val, shuffle_sync_bfly(val, off))
        off //= 2
    return val


def warp_reduction_sum(val, threads_in_group: int = 32):
    """The sum of `val` over each group of `threads_in_group` lanes, in every lane of the group."""
    return warp_reduction(val, "add", threads_in_group)


def warp_reduction_max(val, threads_in_group: int = 32):
    """The largest `val` of each group of lanes (floats: fmax, NaN ignored)."""
    return warp_reduction(val, "max", threads_in_group)


def warp_reduction_min(val, threads_in_group: int = 32):
    """The smallest `val` of each group of lanes (floats: fmin, NaN ignored)."""
    return warp_reduction(val, "min", threads_in_group)


_REDUX_INT = {"add": "add", "and": "and", "or": "or", "xor": "xor", "max": "max", "min": "min"}


def _float_redux_instruction(t, abs: bool, nan: bool):  # noqa: A002
    """(backend name, entry) of the current target's one-instruction warp reduction of `t` values with these
    qualifiers (a loaded backend's primitives.redux_sync of that type, usable on the target), or None where the
    target has none and the reduction is made of shuffles. Only the loaded backends are asked: a trace loads those
    of its target, and another generation's instruction would not be usable anyway."""
    params = {"type": t.ir_type, "abs": "1" if abs else "0", "nan": "1" if nan else "0"}
    cc = current_cc()
    for b, ins in entries_named("primitives.redux_sync"):
        own = ins.get("python_params", {})
        if all(own.get(k) == v for k, v in params.items()) and entry_usable(b, ins, cc):
            return b.name, ins
    return None


def warp_redux_sync(value, kind: str, mask_and_clamp=-1, *, abs: bool = False, nan: bool = False,  # noqa: A002
                    mask=None, loc=None, ip=None):
    """The reduction of `value` over the lanes of `mask_and_clamp` (or `mask`), in every one of them. Integers
    (kind "add", "min", "max", "and", "or", "xor") use redux.sync. Floats (kind "fmax" or "fmin", or "max" /
    "min", with `abs` taking magnitudes and `nan` making a NaN win) reduce over the whole warp: in one instruction
    where the target's backend offers one for the type and qualifiers, by butterfly shuffles otherwise (the same
    result: the maximum or minimum, of magnitudes with `abs`, NaN where any lane holds one with `nan`, NaNs
    ignored without it)."""
    if not isinstance(value, Numeric):
        value = as_numeric(value)
    t = type(value)
    b = trace.builder()
    mask = mask_and_clamp if mask is None else mask
    if t.is_float and kind in ("max", "min"):
        kind = "f" + kind
    if kind in ("fmax", "fmin"):
        if not t.is_float:
            raise DSLTypeError(f"warp_redux_sync: kind={kind!r} needs a float, got {t.__name__}", user_location(2))
        if not (isinstance(mask, int) and mask in (-1, FULL_MASK)):
            raise DSLValueError("warp_redux_sync: float reductions cover the whole warp (mask=-1)", user_location(2))
        single = _float_redux_instruction(t, bool(abs), bool(nan))
        if single is not None:
            out = emit_instruction(b, single[0], single[1], {"value": [value.ir()], "mask": [_i32(mask, "mask")]},
                                   {"op": kind[1:]})
            return t.from_ir(out["result"][0])
        x = value
        if abs:
            x = t.from_ir(b.op1("math.absf", [x.ir()], t.ir_type)) if t.ir_type in ("f32", "f64", "f16", "bf16") \
                else x.__abs__()
        if nan:
            def fn(u, v):
                op = "arith.maximumf" if kind == "fmax" else "arith.minimumf"   # NaN-propagating
                return type(u).from_ir(trace.builder().op1(op, [u.ir(), v.ir()], type(u).ir_type))
        else:
            fn = fmax if kind == "fmax" else fmin
        return warp_reduction(x, fn)
    if kind not in _REDUX_INT:
        kinds = ", ".join(list(_REDUX_INT) + ["fmax", "fmin"])
        raise DSLValueError(f"warp_redux_sync: kind={kind!r} is not one of {kinds}", user_location(2))
    if not t.is_integer or t.width != 32:
        raise DSLTypeError(f"warp_redux_sync: kind={kind!r} needs a 32-bit integer, got {t.__name__}",
                           user_location(2))
    k = kind
    if kind in ("max", "min") and not t.signed:
        k = "u" + kind
    r = b.op1("nvvm.redux.sync", [value.ir(), _i32(mask, "mask")], "i32", f"kind = #nvvm<redux_kind {k}>")
    return t.from_ir(r)


def make_warp_uniform(value):
    """`value` as the compiler's warp-uniform value: lane 0's, broadcast (so that it lives in a uniform register
    and branches on it do not diverge). Static values are returned as they are."""
    if not isinstance(value, Numeric):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if hasattr(value, "__ww_int__"):
            value = as_numeric(value)
        else:
            raise DSLTypeError(f"make_warp_uniform expects a DSL number, got {type(value).__name__}",
                               user_location(2))
    if value.is_static:
        return value
    return shuffle_sync(value, 0)


def popc(value):
    """The number of set bits of a 32- or 64-bit integer."""
    x = value if isinstance(value, Numeric) else as_numeric(value)
    if not x.is_integer:
        raise DSLTypeError(f"popc needs an integer, got {type(x).__name__}", user_location(2))
    if x.is_static:
        return Int32(bin(x.value & ((1 << x.width) - 1)).count("1"))
    b = trace.builder()
    r = b.op1("math.ctpop", [x.ir()], x.ir_type)
    out = type(x).from_ir(r)
    return out if type(x) is Int32 else Int32(out)


__all__ = ["WARP_SIZE", "FULL_MASK", "shuffle_sync", "shuffle_sync_op", "shuffle_sync_up", "shuffle_sync_down", "shuffle_sync_bfly",
           "vote_ballot_sync", "vote_any_sync", "vote_all_sync", "vote_uni_sync", "warp_reduction",
           "warp_reduction_sum", "warp_reduction_max", "warp_reduction_min", "warp_redux_sync", "make_warp_uniform",
           "popc", "sync_warp", "vote_sync_op"]


accept_locations(globals(), __all__)
