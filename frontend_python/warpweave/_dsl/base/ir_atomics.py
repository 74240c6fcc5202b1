"""LLVM's atomic memory ops as user code writes them with the IR (`cutlass._mlir.dialects.llvm.atomicrmw` and
`cmpxchg`, with the `AtomicBinOp` and `AtomicOrdering` enumerations).

They are LLVM's own (every GPU has them: what the hardware lacks for a type, LLVM makes a compare-and-swap loop),
and checked here at the user's line against what LLVM's verifier would refuse later: the address must be a
pointer, the operation must fit the value's type (integer operations on integers, float ones on floats), an
atomic needs an ordering of at least `monotonic`, and a compare-and-swap's failure ordering can neither release
nor be stronger than its success ordering.
"""
from __future__ import annotations

import enum

from .errors import DSLTypeError, DSLValueError, user_location
from .ir_ops import mlir_string
from .ir_values import FloatType, IntegerType, PointerType, Type, bit_width, emit, operand


class AtomicBinOp(enum.IntEnum):
    """The read-modify-write operations; the numbers are the LLVM dialect's (its generic syntax spells them)."""
    xchg = 0
    add = 1
    sub = 2
    _and = 3
    nand = 4
    _or = 5
    _xor = 6
    max = 7
    min = 8
    umax = 9
    umin = 10
    fadd = 11
    fsub = 12
    fmax = 13
    fmin = 14
    uinc_wrap = 15
    udec_wrap = 16
    usub_cond = 17
    usub_sat = 18
    fmaximum = 19
    fminimum = 20


class AtomicOrdering(enum.IntEnum):
    not_atomic = 0
    unordered = 1
    monotonic = 2
    acquire = 4
    release = 5
    acq_rel = 6
    seq_cst = 7


_FLOAT_OPS = {AtomicBinOp.fadd, AtomicBinOp.fsub, AtomicBinOp.fmax, AtomicBinOp.fmin, AtomicBinOp.fmaximum,
              AtomicBinOp.fminimum}


def _enum(cls, value, what, where):
    try:
        return cls(value) if not isinstance(value, str) else cls[value]
    except (KeyError, ValueError):
        raise DSLValueError(f"{what}: {value!r} is not one of {', '.join(m.name for m in cls)}", where) from None


def _address(ptr, what, where):
    p = operand(ptr, f"{what}'s address")
    if not PointerType.isinstance(p.type):
        raise DSLTypeError(f"{what} takes the address as an LLVM pointer (!llvm.ptr), got a value of type {p.type}",
                           where)
    return p


def _properties(syncscope, alignment, volatile_, value_type, where, what):
    props = ""
    if syncscope is not None:
        if not isinstance(syncscope, str):
            raise DSLTypeError(f"{what}: syncscope is a string (\"block\", \"cluster\", \"device\"; none for the "
                               f"system), got {type(syncscope).__name__}", where)
        props += f", syncscope = {mlir_string(syncscope)}"
    width = bit_width(value_type)
    align = alignment if alignment is not None else width // 8
    if not isinstance(align, int) or align <= 0 or align & (align - 1) or align < width // 8:
        raise DSLValueError(f"{what}: alignment={alignment!r} must be a power of two of at least the value's "
                            f"{width // 8} bytes (an atomic on a misaligned address faults)", where)
    props += f", alignment = {align} : i64"
    if volatile_:
        props += ", volatile_"
    return props


def atomicrmw(bin_op, ptr, val, ordering, *, syncscope=None, alignment=None, volatile_=None, access_groups=None,
              alias_scopes=None, noalias_scopes=None, tbaa=None, results=None, loc=None, ip=None):
    """Atomically `*ptr = op(*ptr, val)`; returns the value that was in memory before."""
    where = user_location(2)
    op = _enum(AtomicBinOp, bin_op, "llvm.atomicrmw's operation", where)
    order = _enum(AtomicOrdering, ordering, "llvm.atomicrmw's ordering", where)
    p, v = _address(ptr, "llvm.atomicrmw", where), operand(val, "llvm.atomicrmw's value")
    is_int, is_float = IntegerType.isinstance(v.type), FloatType.isinstance(v.type)
    if op in _FLOAT_OPS and not is_float:
        raise DSLTypeError(f"llvm.atomicrmw {op.name} works on floats, the value is {v.type}", where)
    if op is not AtomicBinOp.xchg and op not in _FLOAT_OPS and not is_int:
        raise DSLTypeError(f"llvm.atomicrmw {op.name.strip('_')} works on integers, the value is {v.type}", where)
    if not (is_int or is_float or PointerType.isinstance(v.type)):
        raise DSLTypeError(f"llvm.atomicrmw takes an integer, float or pointer value, got {v.type}", where)
    if order < AtomicOrdering.monotonic:
        raise DSLValueError(f"llvm.atomicrmw needs an ordering of at least monotonic, got {order.name}", where)
    props = (f"bin_op = {int(op)} : i64, ordering = {int(order)} : i64"
             + _properties(syncscope, alignment, volatile_, v.type, where, "llvm.atomicrmw"))
    return emit("llvm.atomicrmw", [p, v], [v.type], props)[0]


def cmpxchg(ptr, cmp, val, success_ordering, failure_ordering, *, syncscope=None, alignment=None, weak=None,
            volatile_=None, access_groups=None, alias_scopes=None, noalias_scopes=None, tbaa=None, results=None,
            loc=None, ip=None):
    """If `*ptr == cmp`, stores val; returns the struct (old value, whether it was stored)."""
    where = user_location(2)
    success = _enum(AtomicOrdering, success_ordering, "llvm.cmpxchg's success ordering", where)
    failure = _enum(AtomicOrdering, failure_ordering, "llvm.cmpxchg's failure ordering", where)
    p = _address(ptr, "llvm.cmpxchg", where)
    c, v = operand(cmp, "llvm.cmpxchg's expected value"), operand(val, "llvm.cmpxchg's new value")
    if c.type != v.type:
        raise DSLTypeError(f"llvm.cmpxchg: the expected value ({c.type}) and the new one ({v.type}) differ in type",
                           where)
    if not (IntegerType.isinstance(v.type) or PointerType.isinstance(v.type)):
        raise DSLTypeError(f"llvm.cmpxchg compares integers or pointers, got {v.type}", where)
    if success < AtomicOrdering.monotonic or failure < AtomicOrdering.monotonic:
        raise DSLValueError("llvm.cmpxchg needs orderings of at least monotonic", where)
    if failure in (AtomicOrdering.release, AtomicOrdering.acq_rel):
        raise DSLValueError(f"llvm.cmpxchg: a failed exchange stores nothing, so its ordering cannot be "
                            f"{failure.name}", where)
    strength = {AtomicOrdering.monotonic: 0, AtomicOrdering.acquire: 1, AtomicOrdering.release: 0,
                AtomicOrdering.acq_rel: 1, AtomicOrdering.seq_cst: 2}
    if strength[failure] > strength[success]:
        raise DSLValueError(f"llvm.cmpxchg: the failure ordering ({failure.name}) is stronger than the success "
                            f"ordering ({success.name})", where)
    props = (f"success_ordering = {int(success)} : i64, failure_ordering = {int(failure)} : i64"
             + _properties(syncscope, alignment, volatile_, v.type, where, "llvm.cmpxchg")
             + (", weak" if weak else ""))
    return emit("llvm.cmpxchg", [p, c, v], [Type(f"!llvm.struct<({v.type.text}, i1)>")], props)[0]


__all__ = ["AtomicBinOp", "AtomicOrdering", "atomicrmw", "cmpxchg"]
