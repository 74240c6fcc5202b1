"""Atomic read-modify-write operations on global and shared memory (cute.arch.atomic_*), as LLVM atomics.

Every function takes the address (a Pointer, e.g. `tensor.iterator + i` or its `.llvm_ptr`, or a Tensor for its
first element), the operand, and CuTe DSL's `sem` ("relaxed", "acquire", "release", "acq_rel"; default relaxed)
and `scope` ("cta", "cluster", "gpu", "sys"; default gpu); it returns the value that was in memory before. An
operation the hardware lacks for a type (e.g. a float max) becomes LLVM's compare-and-swap loop, so every target
has every operation.

LLVM's NVPTX back end emits every atomicrmw as a relaxed, GPU-scope atom, whatever its ordering. So the ordering
is made of fences (the PTX memory model's release and acquire patterns: fence.release; atom.relaxed, and atom;
fence.acquire, at the requested scope), the operation itself is relaxed at GPU scope (which covers "cta" and
"cluster"), and "sys" uses NVVM's system-scope atomic intrinsics. Compare-and-swap carries its ordering and scope
itself.
"""
from __future__ import annotations

from ..atoms.atoms import current_cc
from ..base import trace
from ..base.markers import accept_locations
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Float32, Numeric
from ..values.tensor import GENERIC, GMEM, SMEM, Pointer, Tensor, elem_bytes
from .array import Array

# LLVM's AtomicOrdering and AtomicBinOp numbers (the generic syntax spells the enums as integers).
ORDERING = {"relaxed": 2, "acquire": 4, "release": 5, "acq_rel": 6, "sc": 7, "seq_cst": 7}
SYNCSCOPE = {"cta": "block", "cluster": "cluster", "gpu": "device", "sys": ""}
_BIN_OP = {"xchg": 0, "add": 1, "sub": 2, "and": 3, "or": 5, "xor": 6, "max": 7, "min": 8, "umax": 9, "umin": 10,
           "fadd": 11, "fsub": 12, "fmax": 13, "fmin": 14, "uinc_wrap": 15, "udec_wrap": 16}


def pointer_of(ptr, fname):
    if isinstance(ptr, Tensor) and isinstance(ptr.iterator, Pointer):
        ptr = ptr.iterator
    if not isinstance(ptr, Pointer):
        raise DSLTypeError(f"cute.arch.{fname}: expected a pointer (e.g. tensor.iterator + offset), got "
                           f"{type(ptr).__name__}", user_location(3))
    if ptr.memspace not in (GMEM, SMEM, GENERIC):
        raise DSLTypeError(f"cute.arch.{fname}: atomics work on global or shared memory, not on {ptr.memspace}",
                           user_location(3))
    return ptr


def checked_order(sem, scope, fname):
    sem = "relaxed" if sem is None else sem
    scope = "gpu" if scope is None else scope
    if sem not in ORDERING:
        raise DSLValueError(f"cute.arch.{fname}: sem={sem!r} is not one of {', '.join(ORDERING)}", user_location(4))
    if scope not in SYNCSCOPE:
        raise DSLValueError(f"cute.arch.{fname}: scope={scope!r} is not one of {', '.join(SYNCSCOPE)}",
                            user_location(4))
    if scope == "cluster":
        cc = current_cc()
        if cc is not None and cc < 90:
            name = trace.current().target["name"]
            raise DSLValueError(f"cute.arch.{fname}: scope='cluster' needs a target with thread-block clusters "
                                f"(compute capability 9.0 and later); compiling for {name}", user_location(4))
    return sem, scope


def _memory_order(sem, scope, fname):
    sem, scope = checked_order(sem, scope, fname)
    props = f"ordering = {ORDERING[sem]} : i64"
    if SYNCSCOPE[scope]:
        props += f', syncscope = "{SYNCSCOPE[scope]}"'
    return props


def fence(b, ordering: int, scope: str):
    props = f"ordering = {ordering} : i64"
    if SYNCSCOPE[scope]:
        props += f', syncscope = "{SYNCSCOPE[scope]}"'
    b.op0("llvm.fence", [], props)


# System-scope atomics: NVVM's intrinsics (generic addresses), by LLVM bin_op name.
_SYS_INTRINSIC = {"add": "add.gen.i", "fadd": "add.gen.f", "and": "and.gen.i", "or": "or.gen.i", "xor": "xor.gen.i",
                  "max": "max.gen.i", "min": "min.gen.i", "xchg": "exch.gen.i"}


def _emit_rmw(fname, op, addr, value, ty, sem, scope):
    """One atomic read-modify-write with its ordering as fences (see the module's note)."""
    sem, scope = checked_order(sem, scope, fname)
    b = trace.builder()
    if sem in ("release", "acq_rel", "sc", "seq_cst"):
        fence(b, ORDERING["sc"] if sem in ("sc", "seq_cst") else ORDERING["release"], scope)
    if scope == "sys":
        name = _SYS_INTRINSIC.get(op)
        if name is None or (op == "fadd" and ty != "f32" and ty != "f64"):
            raise DSLTypeError(f"cute.arch.{fname} with scope='sys' is not available for this type ({ty}); use "
                               "scope='gpu', or atomic_cas in a loop", user_location(3))
        if op == "xchg" and ty.startswith("f"):
            raise DSLTypeError(f"cute.arch.{fname} with scope='sys' needs an integer type", user_location(3))
        generic = b.op1("llvm.addrspacecast", [addr], "!llvm.ptr") if b.type_of(addr) != "!llvm.ptr" else addr
        old = b.op1("llvm.call_intrinsic", [generic, value], ty,
                    f'intrin = "llvm.nvvm.atomic.{name}.sys.{ty}.p0", op_bundle_sizes = array<i32>, '
                    "operandSegmentSizes = array<i32: 2, 0>")
    else:
        width = {"i16": 2, "f16": 2, "bf16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}[ty]
        # The scope still matters where LLVM expands the operation into a compare-and-swap loop.
        old = b.op1("llvm.atomicrmw", [addr, value], ty,
                    f"bin_op = {_BIN_OP[op]} : i64, ordering = {ORDERING['relaxed']} : i64, "
                    f'syncscope = "{SYNCSCOPE[scope]}", alignment = {width} : i64')
    if sem in ("acquire", "acq_rel", "sc", "seq_cst"):
        fence(b, ORDERING["acquire"], scope)
    return old


def operand(t, val, fname):
    if isinstance(val, Numeric):
        return val if type(val) is t else t(val)
    if isinstance(val, (bool, int, float)) or hasattr(val, "__ww_int__"):
        return t(val)
    raise DSLTypeError(f"cute.arch.{fname}: the value must be a number, got {type(val).__name__}", user_location(3))


def _rmw(fname, kind, ptr, val, sem, scope):
    p = pointer_of(ptr, fname)
    t = p.dtype
    if t.is_boolean or t.width not in (16, 32, 64) or t.ir_type == "i8":
        raise DSLTypeError(f"cute.arch.{fname}: no atomic on {t.__name__} values (16-, 32- or 64-bit numbers)",
                           user_location(2))
    if t.is_float:
        if kind in ("and", "or", "xor"):
            raise DSLTypeError(f"cute.arch.{fname} needs integers, the pointer is to {t.__name__}", user_location(2))
        op = {"add": "fadd", "sub": "fsub", "max": "fmax", "min": "fmin"}.get(kind, kind)
    else:
        if kind in ("fmax", "fmin"):
            raise DSLTypeError(f"cute.arch.{fname} needs a pointer to floats, got one to {t.__name__}",
                               user_location(2))
        op = ("u" + kind) if kind in ("max", "min") and not t.signed else kind
    v = operand(t, val, fname)
    return t.from_ir(_emit_rmw(fname, op, p.address(0), v.ir(), t.ir_type, sem, scope))


def atomic_add(ptr, val, *, sem=None, scope=None):
    """*ptr += val; returns the old value."""
    return _rmw("atomic_add", "add", ptr, val, sem, scope)


def atomic_sub(ptr, val, *, sem=None, scope=None):
    """*ptr -= val; returns the old value."""
    return _rmw("atomic_sub", "sub", ptr, val, sem, scope)


def atomic_max(ptr, val, *, sem=None, scope=None):
    """*ptr = max(*ptr, val) (signed or unsigned as the pointer's type; floats ignore NaN); returns the old value."""
    return _rmw("atomic_max", "max", ptr, val, sem, scope)


def atomic_min(ptr, val, *, sem=None, scope=None):
    """*ptr = min(*ptr, val); returns the old value."""
    return _rmw("atomic_min", "min", ptr, val, sem, scope)


def atomic_and(ptr, val, *, sem=None, scope=None):
    return _rmw("atomic_and", "and", ptr, val, sem, scope)


def atomic_or(ptr, val, *, sem=None, scope=None):
    return _rmw("atomic_or", "or", ptr, val, sem, scope)


def atomic_xor(ptr, val, *, sem=None, scope=None):
    return _rmw("atomic_xor", "xor", ptr, val, sem, scope)


def atomic_exch(ptr, val, *, sem=None, scope=None):
    """Stores val; returns the old value."""
    return _rmw("atomic_exch", "xchg", ptr, val, sem, scope)


def _float_extremum(fname, kind, ptr, val, sem, scope, sign_bit):
    p = pointer_of(ptr, fname)
    if p.dtype is not Float32:
        raise DSLTypeError(f"cute.arch.{fname} works on Float32 memory, got a pointer to {p.dtype.__name__}",
                           user_location(3))
    if sign_bit is False:
        # The caller promises non-negative values: their bit patterns order as the floats do, so a single
        # integer atomic does it (no compare-and-swap loop).
        v = operand(Float32, val, fname)
        b = trace.builder()
        bits = b.op1("arith.bitcast", [v.ir()], "i32")
        old = _emit_rmw(fname, "max" if kind == "fmax" else "min", p.address(0), bits, "i32", sem, scope)
        return Float32.from_ir(b.op1("arith.bitcast", [old], "f32"))
    return _rmw(fname, kind, p, val, sem, scope)


def atomic_fmax(ptr, val, *, sem=None, scope=None, sign_bit=None):
    """*ptr = fmax(*ptr, val) on Float32 memory; returns the old value. sign_bit=False promises that every value
    stored there is non-negative (then one integer max on the bits does it)."""
    return _float_extremum("atomic_fmax", "fmax", ptr, val, sem, scope, sign_bit)


def atomic_fmin(ptr, val, *, sem=None, scope=None, sign_bit=None):
    """*ptr = fmin(*ptr, val) on Float32 memory; returns the old value (sign_bit as for atomic_fmax)."""
    return _float_extremum("atomic_fmin", "fmin", ptr, val, sem, scope, sign_bit)


def atomic_cas(ptr, cmp, val, *, sem=None, scope=None):
    """If *ptr == cmp, stores val; returns the old value either way."""
    p = pointer_of(ptr, "atomic_cas")
    t = p.dtype
    if t.is_float or t.width not in (16, 32, 64):
        raise DSLTypeError(f"cute.arch.atomic_cas works on 16-, 32- or 64-bit integers, got {t.__name__}",
                           user_location(2))
    c, v = operand(t, cmp, "atomic_cas"), operand(t, val, "atomic_cas")
    order = _memory_order(sem, scope, "atomic_cas")
    success = order.split(",")[0].split("=")[1].strip()
    failure = {"5 : i64": "2 : i64", "6 : i64": "4 : i64"}.get(success, success)  # no release on failure
    scope_part = "".join("," + part for part in order.split(",")[1:])
    props = (f"success_ordering = {success}, failure_ordering = {failure}{scope_part}, "
             f"alignment = {elem_bytes(t)} : i64")
    b = trace.builder()
    pair = b.op1("llvm.cmpxchg", [p.address(0), c.ir(), v.ir()], f"!llvm.struct<({t.ir_type}, i1)>", props)
    return t.from_ir(b.op1("llvm.extractvalue", [pair], t.ir_type, "position = array<i64: 0>"))


# cutlass.experimental.primitives.atomicrmw's operations: the wrapping increment and decrement are LLVM's
# uinc_wrap / udec_wrap, the hardware's wrapping counters (`old >= a ? 0 : old + 1`,
# `old == 0 || old > a ? a : old - 1`).
_PRIMITIVE_OPS = {"and": "and", "or": "or", "xor": "xor", "exch": "xchg", "add": "add", "min": "min", "max": "max",
                  "inc": "uinc_wrap", "dec": "udec_wrap"}


def _qualifier(x, what):
    """An enumeration member of PTX's vocabulary (MemOrder, MemScope, ...) or its name, as the qualifier string."""
    if x is None or isinstance(x, str):
        return x
    value = getattr(x, "value", None)
    if isinstance(value, str):
        return value
    raise DSLTypeError(f"primitives.atomicrmw: {what} must be one of its enumeration's members, got {x!r}",
                       user_location(3))


def _primitive_address(ptr, space):
    if isinstance(ptr, Array):
        ptr = ptr.iterator
    p = pointer_of(ptr, "atomicrmw")
    if space is not None:
        want = _qualifier(space, "space")
        if want == "shared::cluster":
            raise DSLValueError("primitives.atomicrmw: space=SharedSpace.shared_cluster (another CTA's shared "
                                "memory) is not supported; map the address into this CTA's window first",
                                user_location(3))
        if want == "shared::cta" and p.memspace not in (SMEM, GENERIC):
            raise DSLTypeError(f"primitives.atomicrmw: space=shared_cta, but the pointer is to {p.memspace}",
                               user_location(3))
    return p


def atomicrmw(op, ptr, a, *, b=None, mem_order=None, syncscope=None, space=None, results=None, loc=None, ip=None):
    """`*ptr = op(*ptr, a)` atomically (for `cas`: `*ptr = b` where `*ptr == a`); returns the old value, of the
    pointer's element type. `add` / `min` / `max` follow that type (float, unsigned or signed); `inc` / `dec` wrap
    at `a`. mem_order (relaxed, acquire, release, acq_rel; default relaxed) and syncscope (cta, cluster, gpu, sys;
    default gpu) as cute.arch's atomics."""
    kind = _qualifier(op, "op")
    order = _qualifier(mem_order, "mem_order")
    order = "relaxed" if order == "weak" else order
    scope = _qualifier(syncscope, "syncscope")
    p = _primitive_address(ptr, space)
    if kind == "cas":
        if b is None:
            raise DSLValueError("primitives.atomicrmw: op=cas needs the new value as b= (a is the expected one)",
                                user_location(2))
        return atomic_cas(p, a, b, sem=order, scope=scope)
    if b is not None:
        raise DSLValueError(f"primitives.atomicrmw: b= is the new value of op=cas; op={kind} takes only a",
                            user_location(2))
    if kind not in _PRIMITIVE_OPS:
        raise DSLValueError(f"primitives.atomicrmw: op={op!r} is not one of {', '.join(_PRIMITIVE_OPS)}, cas",
                            user_location(2))
    t = p.dtype
    if kind in ("inc", "dec") and t.is_float:
        raise DSLTypeError(f"primitives.atomicrmw: op={kind} counts in integers, the pointer is to {t.__name__}",
                           user_location(2))
    return _rmw("atomicrmw", _PRIMITIVE_OPS[kind], p, a, order, scope)


__all__ = ["atomic_add", "atomic_sub", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor",
           "atomic_exch", "atomic_fmax", "atomic_fmin", "atomic_cas", "atomicrmw"]


accept_locations(globals(), __all__)
