"""CuTe DSL's JitArgument protocol: a user object passed to a @cute.jit function describes itself with
`__get_mlir_types__()` (the IR types of the values it is made of), `__c_pointers__()` (at each call, the address of
each value, laid out in memory as its type says) and `__new_from_mlir_values__(values)` (the object the function
body sees, made of values of those types).

A host side here is a program each call runs (host/host_program.py), so a value of such an object is a host value
of its type (base.ir_values.HostIRValue): a pointer is a HostAddress (the address a kernel parameter or a host access
takes), an integer a number of the host program, a literal struct the tuple of its fields' values (which
llvm.extractvalue reads on the host). `leaves` lays the types out; `read_leaves` reads a call's values through the
object's C pointers. A make_ptr pointer (values/runtime.py) follows the protocol itself: one pointer value.
"""
from __future__ import annotations

from typing import Protocol

from ..base.errors import DSLTypeError, user_location
from ..base.ir_values import HostIRValue, IntegerType, PointerType, StructType, Type, bit_width
from .ptr_type import PtrType


class HostAddress:
    """The address that a pointer value of a JitArgument holds at a call, known by its key (argument index, value,
    field...): a kernel parameter or a host access reads it from the call's pointers under that key."""
    __slots__ = ("key",)

    def __init__(self, key):
        self.key = key

    def __repr__(self):
        return f"HostAddress{self.key}"


class JitArgument(Protocol):
    """The protocol as a class (`cutlass.base_dsl.typing.JitArgument`): libraries derive their argument classes
    from it (a dataclass of tensors and numbers that describes itself by its fields), as they would from any
    typing.Protocol. Deriving from it is not what makes an object one: is_jit_argument looks for the methods."""

    def __c_pointers__(self) -> list:
        """At each call, the address of each of the object's values (ctypes pointers or ints)."""
        ...

    def __get_mlir_types__(self) -> list:
        """The IR types of the values the object is made of."""
        ...

    def __new_from_mlir_values__(self, values: list) -> "JitArgument":
        """The object the function body sees, made of values of those types."""
        ...


def is_jit_argument(value) -> bool:
    """Whether value describes itself with the JitArgument protocol (an object, not a class)."""
    return not isinstance(value, type) and all(callable(getattr(value, m, None)) for m in (
        "__c_pointers__", "__get_mlir_types__", "__new_from_mlir_values__"))


def types_of(value) -> list:
    """The IR types of a JitArgument's values, as Types (refused at the user's line when they are not types)."""
    out = []
    for t in value.__get_mlir_types__():
        if isinstance(t, PtrType):  # a typed pointer is held as the address (stand_in makes the pointer again)
            out.append(t.llvm_type())
            continue
        try:
            out.append(t if isinstance(t, Type) else Type(t))
        except Exception:  # noqa: BLE001 - whatever the object gave, named at the user's line
            raise DSLTypeError(f"{type(value).__name__}.__get_mlir_types__() gave {t!r}, not an IR type",
                               user_location(4)) from None
    return out


def typed_pointers(value) -> list:
    """For each of a JitArgument's values, the PtrType it was declared with (a typed pointer), else None."""
    return [t if isinstance(t, PtrType) else None for t in value.__get_mlir_types__()]


def type_texts(value) -> tuple:
    """What a JitArgument's types are, to select a compilation: a typed pointer by its element, memory and
    alignment (the kernel is compiled for them), any other type by its spelling."""
    return tuple(t.text if p is None else f"!cute.ptr<{p.dtype.__name__}, {p.memspace}, align<{p.alignment}>>"
                 for t, p in zip(types_of(value), typed_pointers(value)))


def _align(t: Type) -> int:
    if StructType.isinstance(t):
        return max([_align(f) for f in StructType(t).body] or [1])
    return _size(t)


def _size(t: Type) -> int:
    if PointerType.isinstance(t) or IntegerType.isinstance(t):
        return max(1, (bit_width(t) + 7) // 8)
    if StructType.isinstance(t):
        off = 0
        for f in StructType(t).body:
            off = -(-off // _align(f)) * _align(f) + _size(f)
        a = _align(t)
        return -(-off // a) * a
    raise DSLTypeError(f"a JitArgument's value of type {t} cannot be read on the host (pointers, integers and "
                       "literal structs of them can)", user_location(5))


def leaves(types: list) -> list:
    """(value index, path of struct fields, byte offset, type) of each pointer and integer the values hold, in order:
    depth first, fields at C's natural alignment."""
    out = []

    def walk(i, path, off, t):
        if StructType.isinstance(t):
            o = off
            for k, f in enumerate(StructType(t).body):
                o = -(-o // _align(f)) * _align(f)
                walk(i, path + (k,), o, f)
                o += _size(f)
        else:
            _size(t)  # refuses a type the host cannot read
            out.append((i, path, off, t))

    for i, t in enumerate(types):
        walk(i, (), 0, t)
    return out


def read_leaves(value, layout: list, count: int) -> list:
    """The Python value of each leaf (layout: leaves()) at this call, read through value.__c_pointers__()."""
    import ctypes

    ptrs = list(value.__c_pointers__())
    if len(ptrs) != count:
        raise DSLTypeError(f"{type(value).__name__}.__c_pointers__() gave {len(ptrs)} addresses for its {count} "
                           "values", None)
    out = []
    for i, _, off, t in layout:
        w = bit_width(t)
        raw = int.from_bytes(ctypes.string_at(int(ptrs[i]) + off, max(1, (w + 7) // 8)), "little") & ((1 << w) - 1)
        if PointerType.isinstance(t) or w == 1:
            out.append(raw)
        else:
            out.append(raw - (1 << w) if raw >> (w - 1) else raw)  # integers read signed, as IR's are
    return out


def assemble(types: list, layout: list, leaf_values: list) -> list:
    """The values of the types (HostIRValues) from their leaves' (HostIRValues, in layout order): a struct's is the
    tuple of its fields'."""
    from_leaf = {(i, path): v for (i, path, _, _), v in zip(layout, leaf_values)}

    def build(i, path, t):
        if StructType.isinstance(t):
            return HostIRValue(tuple(build(i, path + (k,), f) for k, f in enumerate(StructType(t).body)), t)
        return from_leaf[(i, path)]

    return [build(i, (), t) for i, t in enumerate(types)]
