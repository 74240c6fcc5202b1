"""NVVM ops that every generation from sm_80 has, as CuTe DSL code calls them through `cutlass._mlir.dialects.nvvm`
(registered as `nvvm.<op>`; the backends that build on this one see them too): atomicrmw (an atomic read-modify-write
returning the old value, with the AtomicOpKind / MemOrderKind / MemScopeKind enumerations) and fmax / fmin of f32
values. Each is written as the PTX it lowers to, with its checks at the user's line.

The atomics are one atom instruction carrying the requested memory order, scope and state space (the pointer's
address space decides it: global, shared, or generic), so what the program asks for is what the memory model sees;
a fence-and-relaxed-atomic rewrite would be stronger than asked, never weaker. The three-input fmax / fmin exists only
on targets of compute capability 10.0 and later, and the |x| form with the sign of the product only from 8.6: on
other targets they are refused, never computed some other way behind the program's back."""
from __future__ import annotations

import enum

from warpweave import ext

NAMES = ["atomicrmw", "AtomicOpKind", "MemOrderKind", "MemScopeKind", "fmax", "fmin"]


class AtomicOpKind(enum.IntEnum):
    """The operations of nvvm.atomicrmw (CuTe DSL's numbering)."""
    AND = 0
    OR = 1
    XOR = 2
    CAS = 3
    EXCH = 4
    ADD = 5
    INC = 6
    DEC = 7
    MIN = 8
    MAX = 9
    UMIN = 10
    UMAX = 11
    FADD = 12
    SUB = 13


class MemOrderKind(enum.IntEnum):
    """Memory orders of NVVM's memory ops (CuTe DSL's numbering); an atomic takes WEAK / RELAXED (the same for an
    atomic: relaxed), ACQUIRE, RELEASE and ACQ_REL."""
    WEAK = 0
    RELAXED = 1
    ACQUIRE = 2
    RELEASE = 3
    ACQ_REL = 4
    SC = 5
    MMIO = 6
    CONSTANT = 7
    VOLATILE = 8


class MemScopeKind(enum.IntEnum):
    """The set of threads an ordering is about (CuTe DSL's numbering)."""
    CTA = 0
    CLUSTER = 1
    GPU = 2
    SYS = 3


def _member(cls, x, what):
    """x as a member of cls: a member, its number, or its name (any case)."""
    if isinstance(x, cls):
        return x
    try:
        if isinstance(x, str):
            return cls[x.upper()]
        if isinstance(x, int) and not isinstance(x, bool):
            return cls(x)
    except (KeyError, ValueError):
        pass
    raise ext.user_error(f"{what} is one of nvvm.{cls.__name__}'s members ({', '.join(m.name for m in cls)}), "
                         f"got {x!r}", ext.DSLValueError)


def _value(x, what):
    """An IR value for an operand: an IR value, or a DSL number (its ir_value())."""
    if isinstance(x, ext.ir.Value):
        return x
    to_ir = getattr(x, "ir_value", None)
    if callable(to_ir) and not isinstance(x, type):
        v = to_ir()
        if isinstance(v, ext.ir.Value):
            return v
    raise ext.user_error(f"{what} is an IR value (or a DSL number), got {type(x).__name__} {x!r}", ext.DSLTypeError)


def _cc() -> int:
    return ext.current_target().compute_capability


# --- atomicrmw ---------------------------------------------------------------------------------------------------

# address space of the pointer -> (state space qualifier, register constraint of the address, least compute
# capability): 7 is another CTA's shared memory in the cluster (a mapped distributed-shared-memory pointer).
_SPACES = {0: ("", "l", 0), 1: (".global", "l", 0), 3: (".shared", "r", 0), 7: (".shared::cluster", "r", 90)}
_SPACE_NAMES = {0: "generic", 1: "global", 3: "shared", 7: "cluster shared"}

_ORDERS = {MemOrderKind.WEAK: "", MemOrderKind.RELAXED: "", MemOrderKind.ACQUIRE: ".acquire",
           MemOrderKind.RELEASE: ".release", MemOrderKind.ACQ_REL: ".acq_rel"}
# GPU is the instruction's own default scope: written out or not, it is the same instruction
_SCOPES = {MemScopeKind.CTA: ".cta", MemScopeKind.CLUSTER: ".cluster", MemScopeKind.GPU: "", MemScopeKind.SYS: ".sys"}

# operation -> (PTX operation, value kind: "int", "float" or "bits", the type's prefix, the widths it has)
_OPS = {AtomicOpKind.AND: ("and", "int", "b", (32, 64)), AtomicOpKind.OR: ("or", "int", "b", (32, 64)),
        AtomicOpKind.XOR: ("xor", "int", "b", (32, 64)), AtomicOpKind.CAS: ("cas", "int", "b", (32, 64)),
        AtomicOpKind.EXCH: ("exch", "bits", "b", (32, 64)), AtomicOpKind.ADD: ("add", "int", "u", (32, 64)),
        AtomicOpKind.SUB: ("add", "int", "u", (32, 64)),   # adds the negated operand: atom has no subtraction
        AtomicOpKind.INC: ("inc", "int", "u", (32,)), AtomicOpKind.DEC: ("dec", "int", "u", (32,)),
        AtomicOpKind.MIN: ("min", "int", "s", (32, 64)), AtomicOpKind.MAX: ("max", "int", "s", (32, 64)),
        AtomicOpKind.UMIN: ("min", "int", "u", (32, 64)), AtomicOpKind.UMAX: ("max", "int", "u", (32, 64)),
        AtomicOpKind.FADD: ("add", "float", "f", (32, 64))}


def _kind_of(t) -> tuple:
    """("int" | "float", width) of a scalar IR type, or None."""
    if ext.ir.IntegerType.isinstance(t):
        return "int", ext.ir.IntegerType(t).width
    if ext.ir.FloatType.isinstance(t):
        return "float", ext.ir.FloatType(t).width
    return None


def _atomic_operand_type(kind, a, b):
    what = f"nvvm.atomicrmw {kind.name}"
    ptx_op, wants, prefix, widths = _OPS[kind]
    got = _kind_of(a.type)
    if got is None or got[1] not in (32, 64):
        raise ext.user_error(f"{what}: the value is a 32- or 64-bit number, got {a.type}", ext.DSLTypeError)
    vkind, width = got
    if wants == "int" and vkind != "int":
        hint = " (use AtomicOpKind.FADD for a float sum)" if kind is AtomicOpKind.ADD else ""
        raise ext.user_error(f"{what} works on integers, the value is {a.type}{hint}", ext.DSLTypeError)
    if wants == "float" and vkind != "float":
        raise ext.user_error(f"{what} works on floats, the value is {a.type} (use AtomicOpKind.ADD for integers)",
                             ext.DSLTypeError)
    if width not in widths:
        raise ext.user_error(f"{what} works on {' or '.join(map(str, widths))}-bit values, got {a.type}",
                             ext.DSLTypeError)
    if kind is AtomicOpKind.CAS:
        if b is None:
            raise ext.user_error(f"{what} needs the new value as b= (a is the value expected in memory)",
                                 ext.DSLValueError)
        if b.type != a.type:
            raise ext.user_error(f"{what}: the expected value a ({a.type}) and the new value b ({b.type}) differ in "
                                 f"type", ext.DSLTypeError)
    elif b is not None:
        raise ext.user_error(f"{what} takes only a; b= is the new value of a compare-and-swap (AtomicOpKind.CAS)",
                             ext.DSLValueError)
    return ptx_op, f".{prefix}{width}", width


def atomicrmw(op, ptr, a, *, b=None, mem_order=None, syncscope=None, results=None, loc=None, ip=None):
    """Atomically `*ptr = op(*ptr, a)` (for CAS: `*ptr = b` where `*ptr == a`) on global, shared or generic memory;
    returns the value that was in memory before, an IR value of a's type. ptr is an LLVM pointer (`ptr.llvm_ptr`
    of a DSL pointer, or an IR `!llvm.ptr<space>` value); a (and b) are IR values or DSL numbers. mem_order
    (MemOrderKind: WEAK / RELAXED, the default, ACQUIRE, RELEASE, ACQ_REL) and syncscope (MemScopeKind: CTA,
    CLUSTER, GPU, the default, SYS) are the instruction's own."""
    kind = _member(AtomicOpKind, op, "nvvm.atomicrmw: op")
    order = _member(MemOrderKind, mem_order if mem_order is not None else MemOrderKind.RELAXED,
                    "nvvm.atomicrmw: mem_order")
    scope = _member(MemScopeKind, syncscope if syncscope is not None else MemScopeKind.GPU,
                    "nvvm.atomicrmw: syncscope")
    if order not in _ORDERS:
        raise ext.user_error(f"nvvm.atomicrmw: an atomic's mem_order is WEAK, RELAXED, ACQUIRE, RELEASE or ACQ_REL; "
                             f"{order.name} is not supported here", ext.DSLNotImplementedError)
    p = _value(ptr, "nvvm.atomicrmw: ptr")
    if not ext.ir_llvm.PointerType.isinstance(p.type):
        raise ext.user_error(f"nvvm.atomicrmw: ptr is an LLVM pointer (a DSL pointer's .llvm_ptr), got a value of "
                             f"type {p.type}", ext.DSLTypeError)
    space = ext.ir_llvm.PointerType(p.type).address_space
    if space not in _SPACES:
        raise ext.user_error(f"nvvm.atomicrmw works on global, shared or generic memory, got a pointer of address "
                             f"space {space}", ext.DSLTypeError)
    space_q, addr_code, least_cc = _SPACES[space]
    cc = _cc()
    if cc < least_cc or (scope is MemScopeKind.CLUSTER and cc < 90):
        what = "syncscope=CLUSTER" if scope is MemScopeKind.CLUSTER else f"a {_SPACE_NAMES[space]} pointer"
        raise ext.user_error(f"nvvm.atomicrmw with {what} needs a target with thread-block clusters (compute "
                             f"capability 9.0 and later); compiling for {ext.current_target().name}",
                             ext.DSLValueError)
    av = _value(a, "nvvm.atomicrmw: a")
    bv = _value(b, "nvvm.atomicrmw: b") if b is not None else None
    ptx_op, ptx_type, width = _atomic_operand_type(kind, av, bv)
    if results is not None and list(results) and ext.ir.Type(list(results)[0]) != av.type:
        raise ext.user_error(f"nvvm.atomicrmw gives the old value, of a's type {av.type}, not {list(results)[0]}",
                             ext.DSLTypeError)
    if kind is AtomicOpKind.SUB:
        av = ext.ir_arith.subi(ext.ir_arith.constant(av.type, 0), av)
    code = ("d" if width == 64 else "f") if ptx_type.startswith(".f") else ("l" if width == 64 else "r")
    operands, places = [p, av], "[$1], $2"
    if bv is not None:
        operands.append(bv)
        places += ", $3"
    asm = f"atom{_ORDERS[order]}{_SCOPES[scope]}{space_q}.{ptx_op}{ptx_type} $0, {places};"
    constraints = ",".join([f"={code}", addr_code] + [code] * (len(operands) - 1) + ["~{memory}"])
    return ext.ir_llvm.inline_asm(av.type, operands, asm, constraints, has_side_effects=True)


# --- fmax / fmin -------------------------------------------------------------------------------------------------

def _extremum(name, a, b, c, ftz, nan, abs_):
    what = f"nvvm.{name}"
    vals = [_value(a, f"{what}: a"), _value(b, f"{what}: b")]
    if c is not None:
        vals.append(_value(c, f"{what}: c"))
    for x in vals:
        if not ext.ir.F32Type.isinstance(x.type):
            raise ext.user_error(f"{what} works on f32 values here, got {x.type}", ext.DSLTypeError)
    cc, tname = _cc(), ext.current_target().name
    if len(vals) == 3 and cc < 100:
        raise ext.user_error(f"{what} of three values (c=) needs a target of compute capability 10.0 or later; "
                             f"compiling for {tname}: take the {name[1:]} of two, then of that and c",
                             ext.DSLValueError)
    if abs_:
        if len(vals) == 3:
            raise ext.user_error(f"{what}: abs=True takes two values, not three", ext.DSLValueError)
        if cc < 86:
            raise ext.user_error(f"{what} with abs=True needs a target of compute capability 8.6 or later; "
                                 f"compiling for {tname}", ext.DSLValueError)
    qual = (".ftz" if ftz else "") + (".NaN" if nan else "") + (".xorsign.abs" if abs_ else "")
    places = ", ".join(f"${i + 1}" for i in range(len(vals)))
    f32 = ext.ir.F32Type.get()
    return ext.ir_llvm.inline_asm(f32, vals, f"{name[1:]}{qual}.f32 $0, {places};",
                                  ",".join(["=f"] + ["f"] * len(vals)))


def fmax(a, b, *, c=None, ftz=None, nan=None, abs=None, results=None, loc=None, ip=None):
    """The larger of a and b (and c: targets of compute capability 10.0 and later), f32 IR values: a NaN operand
    is ignored unless nan=True (then the result is NaN); ftz flushes subnormals to zero; abs=True gives the larger
    magnitude with the sign of a*b (compute capability 8.6 and later)."""
    return _extremum("fmax", a, b, c, ftz, nan, abs)


def fmin(a, b, *, c=None, ftz=None, nan=None, abs=None, results=None, loc=None, ip=None):
    """The smaller of a and b (and c), as fmax."""
    return _extremum("fmin", a, b, c, ftz, nan, abs)
