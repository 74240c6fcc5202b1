"""cute.arch.load / cute.arch.store: one load or store through a pointer, plain (weak) or with a memory-model
ordering at a scope (sem="relaxed" or "acquire" for loads, "relaxed" or "release" for stores; scope "cta",
"cluster", "gpu" or "sys"), as flags and counters shared with other blocks, devices or the host are read and
written. Ordered accesses are LLVM atomic loads and stores with the scope's syncscope, which NVPTX lowers to
the target's relaxed/acquire/release forms."""
from __future__ import annotations

from ..base import trace
from .atomics import ORDERING, SYNCSCOPE, checked_order, operand, pointer_of
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import Value, VectorType, bit_width
from ..values.numeric import Numeric, dtype as dtype_of
from ..values.tensor import mem_type

_LOAD_SEMS = ("relaxed", "acquire")
_STORE_SEMS = ("relaxed", "release")


def _attrs(t, sem, scope, fname, allowed):
    width = max(1, t.width // 8)
    attrs = f"alignment = {width} : i64"
    if sem is None and scope is None:
        return attrs
    if sem is None:
        sem = "relaxed"
    if sem not in allowed:
        raise DSLValueError(f"cute.arch.{fname}: sem={sem!r} is not one of {', '.join(allowed)}", user_location(3))
    if t.is_boolean or t.width not in (8, 16, 32, 64):
        raise DSLTypeError(f"cute.arch.{fname}: an ordered access needs an 8-, 16-, 32- or 64-bit number, got "
                           f"{t.__name__}", user_location(3))
    sem, scope = checked_order(sem, scope, fname)
    attrs += f", ordering = {ORDERING[sem]} : i64"
    if SYNCSCOPE[scope]:
        attrs += f', syncscope = "{SYNCSCOPE[scope]}"'
    return attrs


def load(ptr, dtype, *, sem=None, scope=None, loc=None, ip=None):
    """The `dtype` value at ptr (a pointer, e.g. tensor.iterator + i, or its llvm_ptr)."""
    p = pointer_of(ptr, "load")
    t = dtype_of(dtype)
    attrs = _attrs(t, sem, scope, "load", _LOAD_SEMS)
    b = trace.builder()
    v = b.op1("llvm.load", [p.address(0)], mem_type(t), attrs)
    if t.is_boolean:
        v = b.op1("arith.trunci", [v], "i1")
    return t.from_ir(v)


def store(ptr, value, *, sem=None, scope=None, loc=None, ip=None):
    """Writes value (a number; its type, or the pointer's element type for a Python number; or an IR vector,
    stored whole, plain only) at ptr."""
    p = pointer_of(ptr, "store")
    if isinstance(value, Value) and VectorType.isinstance(value.type):
        if sem is not None or scope is not None:
            raise DSLValueError("cute.arch.store: a vector is stored plain (an ordered access is one number)",
                                user_location(2))
        vt = VectorType(value.type)
        nbytes = _bytes_of(vt)
        trace.builder().op0("llvm.store", [value.use(), p.address(0)], f"alignment = {nbytes} : i64")
        return
    if not isinstance(value, (Numeric, bool, int, float)):
        raise DSLTypeError(f"cute.arch.store: the value must be a number, got {type(value).__name__}",
                           user_location(2))
    t = type(value) if isinstance(value, Numeric) else p.dtype
    v = operand(t, value, "store")
    attrs = _attrs(t, sem, scope, "store", _STORE_SEMS)
    b = trace.builder()
    x = v.ir()
    if t.is_boolean:
        x = b.op1("arith.extui", [x], "i8")
    b.op0("llvm.store", [x, p.address(0)], attrs)


def _bytes_of(vt) -> int:
    """A vector's bytes: a vector store's natural alignment (a 16-byte vector is one 128-bit access)."""
    count = 1
    for n in vt.shape:
        count *= n
    return count * max(1, bit_width(vt.element_type) // 8)
