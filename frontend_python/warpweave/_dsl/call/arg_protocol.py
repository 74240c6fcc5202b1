"""The argument kind of CuTe DSL's JitArgument protocol (values/jit_argument.py): a user object that gives its IR
types, its C pointers and how it is made again of values (a buffer holding a make_ptr pointer and static
properties; a C struct of a pointer, extents and strides).

While tracing, each pointer and integer the object's values hold is stood in for by a host value (a pointer by the
address a call gives under its key, an integer by a host symbol, so that extents and grids made of it are runtime
values), and the function body sees `__new_from_mlir_values__` of them. At each call the values are read through
`__c_pointers__()`. The object's other attributes are its configuration: a compilation is selected by its type, its
IR types and those attributes (integers excepted: they are taken as the call's data, addresses most often).
"""
from __future__ import annotations

import sys

from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import HostIRValue, PointerType, Type, bit_width
from ..values.jit_argument import (HostAddress, assemble, is_jit_argument, leaves, read_leaves, type_texts,
                                   typed_pointers, types_of)
from ..values.pointer import GMEM, Pointer
from ..values.numeric import Int8, Int16, Int32, Int64, Numeric
from ..values.runtime import RuntimePointer, RuntimeTensor
from .arg_kind import ArgPlan, const_key, keyed_by_value, sym_id

_INTS = {8: Int8, 16: Int16, 32: Int32, 64: Int64}


def _is_ctypes_data(x) -> bool:
    """Whether x is a ctypes object (a cell an object's C pointers point at); no object is where ctypes, which
    importing warpweave does not load, was never imported."""
    ctypes = sys.modules.get("ctypes")
    return ctypes is not None and isinstance(x, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array,
                                                 ctypes._Pointer))


def _configuration(value) -> tuple:
    """What selects a compilation among an object's attributes: pointers and tensors by their specialisation,
    integers and ctypes objects (the cells its C pointers point at) not at all (the call's data), anything else by
    value (or identity where unhashable)."""
    out = []
    for k, x in sorted(getattr(value, "__dict__", {}).items()):
        if isinstance(x, (RuntimePointer, RuntimeTensor)):
            out.append((k, x.spec()))
        elif isinstance(x, int) and not isinstance(x, bool):
            out.append((k, "int"))
        elif _is_ctypes_data(x):  # the memory __c_pointers__ points at: the call's data, as integers
            out.append((k, "ctypes"))
        else:
            out.append((k, const_key(x)))
    return tuple(out)


def _typed_pointer(ptr_type, key, name) -> Pointer:
    """The pointer a function sees for a value declared as a typed pointer (cute.PtrType): its element and
    alignment, in global memory (what a call's address is), at the address the call gives under key."""
    if ptr_type.memspace not in ("gmem", "generic"):
        raise DSLValueError(f"argument '{name}': a pointer passed to a @cute.jit function is to global memory, "
                            f"this one's type is to {ptr_type.memspace}", user_location(5))
    return Pointer(None, ptr_type.dtype, GMEM, ptr_type.alignment, host=key, wide=True)


class JitArgumentArg(ArgPlan):
    """An object of the JitArgument protocol; `leaves`: (value, field path, byte offset, type text, key) of each
    pointer (key: where the call's pointers hold its address) and integer (key: its host symbol's id)."""

    kind = "jit_argument"
    fast_path = False  # read through the object's own methods at each call

    def __init__(self, index, name, spec, dtype=None, symbols=None, leaves=(), count=0):
        super().__init__(index, name, spec, dtype, symbols)
        self.leaves = list(leaves)
        self.count = count

    @classmethod
    def takes(cls, value, annotation) -> bool:
        # A tuple giving the protocol (QuACK's @mlir_namedtuple arguments) is read field by field as any tuple is,
        # which TVM FFI and exported C take too; the protocol is for objects warpweave cannot see into. A number
        # giving it (a numeric type of the program's, with its own C pointers) is a number, passed by its value.
        return is_jit_argument(value) and not isinstance(value, (RuntimePointer, tuple, list, Numeric))

    @classmethod
    def spec_key(cls, value, annotation):
        return ("jit_argument", type(value).__qualname__, type_texts(value), _configuration(value))

    cache_key = classmethod(keyed_by_value)

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        types = types_of(value)
        typed = typed_pointers(value)
        layout = leaves(types)
        values, described = [], []
        for i, path, off, t in layout:
            key = (index, i) + path if isinstance(index, int) else index + (i,) + path
            if PointerType.isinstance(t):
                values.append(HostIRValue(HostAddress(key), t) if typed[i] is None else
                              _typed_pointer(typed[i], key, name))
                described.append((i, path, off, t.text, key))
                continue
            w = bit_width(t)
            it = _INTS.get(w)
            if it is None:
                raise DSLTypeError(f"argument '{name}': a {w}-bit integer value of {type(value).__name__} cannot be "
                                   "read on the host (8 to 64 bits can)", user_location(4))
            sym = st.new_host_symbol(key, ("value",), max(w, 32), 1, f"{name}{list(key[1:])}", nonneg=False)
            values.append(HostIRValue(it._wrap(sym), t))
            described.append((i, path, off, t.text, sym_id(sym)))
        host = value.__new_from_mlir_values__(assemble(types, layout, values))
        plan = cls(index, name, cls.spec_key(value, annotation), symbols=[d[4] for d in described if isinstance(
            d[4], int)], leaves=described, count=len(types))
        return host, plan

    def _read(self, v):
        if not is_jit_argument(v) or type(v).__qualname__ != self.spec[1]:
            raise DSLTypeError(f"argument '{self.name}' must be a {self.spec[1]} (the JitArgument it was compiled "
                               f"for), got {type(v).__name__}", None)
        layout = [(i, path, off, Type(t)) for i, path, off, t, _ in self.leaves]
        return read_leaves(v, layout, self.count)

    def read(self, v, read):
        for (_, _, _, t, key), x in zip(self.leaves, self._read(v)):
            if isinstance(key, int):
                read[0][key] = x
            else:
                read[1][key] = x

    def symbol_env(self, v, env) -> bool:
        for (_, _, _, _, key), x in zip(self.leaves, self._read(v)):
            if isinstance(key, int):
                env[key] = x
        return True

    def symbol_ids(self) -> list:
        return list(self.symbols)

    def c_args(self, name, c_identifier, host_symbols):
        raise DSLValueError(f"argument '{self.name}' is a {self.spec[1]} (a JitArgument): exported functions take "
                            "tensors, pointers and numbers", user_location(4))
