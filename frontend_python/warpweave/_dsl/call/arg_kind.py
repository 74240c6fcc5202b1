"""The typed argument plan: one class per kind of argument of a @cute.jit function (arg_tensor.py: tensors,
pointers and lists of tensors; arg_values.py: integers, scalars, streams and compile-time constants), each knowing
how its argument is stood in for while tracing, read at each call (the general path, the generated Python fast
path and the C++ fast path), keyed in the caches, and passed through exported C and TVM FFI. This module holds
what they share: the base class, the C wrapper's parameter (CArg) and the stand-in of a stream argument."""
from __future__ import annotations

import dataclasses

from ... import _core
from ..base.errors import DSLNotImplementedError, DSLValueError, user_location

# The argument kinds of _core.FastCall (bindings/fast_call.hpp, ArgKind): a plan's native description
# starts with one of these (NATIVE_TREE: a list or tuple of numbers and compile-time values, arg_tensor.TreeArg).
(NATIVE_SKIP, NATIVE_TENSOR, NATIVE_INT, NATIVE_SCALAR, NATIVE_STREAM, NATIVE_CONST, NATIVE_POINTER, NATIVE_EVENT,
 NATIVE_TREE) = range(9)


class HostStream:
    """The stream argument of a jit function (its handle is read at each call)."""

    def __init__(self, arg_index):
        self.arg_index = arg_index


class CArg:
    """One parameter of the exported C wrapper, from one argument plan (a list of tensors gives one per element)."""

    def __init__(self, plan, name, ctype, **extra):
        self.plan = plan
        self.name = name
        self.ctype = ctype
        self.__dict__.update(extra)

    @property
    def kind(self) -> str:
        return self.plan.kind


class NativeSlots:
    """The value slots of a C++ fast path being built: symbol values, addresses and stream handles, and the
    number objects of scalar arguments, each numbered in the order first asked for."""

    def __init__(self):
        self.syms: dict = {}   # symbol id -> slot
        self.ptrs: dict = {}   # argument index -> slot (tensor and pointer addresses, stream and event handles)
        self.objs: dict = {}   # argument index -> slot (scalars)

    @staticmethod
    def slot(table: dict, key) -> int:
        if key not in table:
            table[key] = len(table)
        return table[key]


class ArgPlan:
    """How one argument of a jit function is stood in for, read at each call, keyed and exported. Subclasses set
    `kind` (its name in cached entries and exported metadata) and override what applies to them."""

    kind = ""
    native_code = NATIVE_SKIP
    passed_to_c = True     # whether the exported C wrapper takes it (compile-time constants are compiled in)
    fast_path = True       # whether the generated Python fast path can read it
    constexpr = False      # a Constexpr parameter, which a call of the compiled function may leave out

    def __init__(self, index, name: str, spec, dtype=None, symbols=None):
        self.index = index
        self.name = name
        self.spec = spec
        self.dtype = dtype
        self.symbols = [] if symbols is None else symbols  # (symbol id, "shape"/"stride", mode) for tensors

    def __repr__(self):
        return f"{type(self).__name__}({self.index!r}, {self.name!r}, {self.spec!r})"

    # --- before tracing: which arguments are this kind, and their keys -----------------------------------------

    @classmethod
    def takes(cls, value, annotation) -> bool:
        """Whether an argument of this value and annotation is of this kind (kinds are asked in arg_plan's
        order)."""
        return False

    @classmethod
    def spec_key(cls, value, annotation):
        """What selects, in this process, the compilation this argument was made for."""
        return type(value).__name__

    @classmethod
    def cache_key(cls, value, annotation, stable) -> str:
        """The same across processes (the function cache's key); `stable` keys a compile-time value by value."""
        return type(value).__name__

    @classmethod
    def stand_in(cls, st, index, name: str, value, annotation, make_host_arg):
        """(the stand-in traced with, the plan); make_host_arg stands in for elements of a container."""
        raise NotImplementedError

    # --- stored in the function cache (call/function_cache.py), with `kind` ----------------------------------

    def stored_fields(self) -> dict:
        return dict(vars(self))

    def restore(self, values) -> None:
        """Completes a plan read back from the cache with the values of the call that found it."""

    # --- at each call ------------------------------------------------------------------------------------------

    def read(self, v, read) -> None:
        """The general path: reads argument v into read = (symbol values, pointers, scalars, streams, tensors),
        checking it against what was compiled."""

    def symbol_env(self, v, env: dict) -> bool:
        """Puts the values of the symbols this argument gives into env (False when it has none to give)."""
        return True

    def symbol_ids(self) -> list:
        return []

    def fast_lines(self, env: dict, hosted: bool) -> list:
        """The lines of the generated Python fast path (its argument is a<index>) that read this argument into
        p<index> (an address), s<symbol id>, x<index> (a scalar) or q<index> (a stream), with what they need
        added to env; `hosted`: a host argument is computed from this tensor (t<index> is its view). The plan is
        `plans[<index>]` there; an element of a list or tuple (numbers, compile-time values: TreeArg.fast_path)
        is named by fast_id(index) instead and its plan is P<fast_id>."""
        return []

    def native(self, slots: NativeSlots):
        """The C++ fast path's description of this argument (starting with its NATIVE_ code), None where it
        cannot take it."""
        return None

    # --- exported C and TVM FFI (export/export_c.py, export/tvm_ffi_call.py, export/exported_module.py) --------

    def c_args(self, name: str, c_identifier, host_symbols) -> list:
        """The C wrapper's parameters for this argument (c_identifier: the C name of a Python one)."""
        return []

    def c_parameter(self, a: CArg, prefix: str) -> str:
        return f"{a.ctype.format(prefix=prefix)} {a.name}"

    def c_declarations(self, a: CArg, prefix: str) -> list:
        """What the header declares for the parameter (C lines)."""
        return []

    def c_checks(self, a: CArg, symbols: dict) -> list:
        """The wrapper's checks of the parameter (C lines); the symbols it gives are added to symbols."""
        return []

    def c_address(self, a: CArg) -> str:
        """The C expression of the address this argument passes to a kernel."""
        raise DSLValueError(f"export_to_c: argument '{self.name}' has no address", user_location(4))

    def c_metadata(self, a: CArg) -> dict:
        """What load_module needs of the parameter, beside its name and kind."""
        return {}

    def tvm_lines(self, a: CArg, i, o: list, call: list, prefix: str) -> None:
        """The TVM FFI entry's reading of args[i] into the wrapper's parameter: C lines into o, the parameter's
        expression into call. `i` is the parameter's position as text (or a name of its own, `env0`, for an argument
        that has no parameter of the entry), used in C names."""

    def tvm_after(self, a: CArg, i) -> list:
        """C lines of the TVM FFI entry once every argument is read (a default that depends on the others)."""
        return []

    @classmethod
    def ctypes_type(cls, meta: dict, function, ctypes):
        """The ctypes type of the exported wrapper's parameter described by meta (load_module); function: the
        ExportedFunction; ctypes: the module (passed in: importing it is left to the programs that load)."""
        return None

    @classmethod
    def ctypes_value(cls, meta: dict, x, function, ctypes):
        """The wrapper's argument for Python value x (load_module); function: the ExportedFunction calling."""
        return x


class ExportOnlyHandle:
    """A parameter that the exported C wrapper takes as an opaque handle (a `void *` to ctypes) and a TVM FFI call
    does not pass (an event, a device workspace); `tvm_refusal(a)` says what it is."""

    def tvm_refusal(self, a) -> str:
        raise NotImplementedError

    def tvm_lines(self, a, i, o, call, prefix):
        raise DSLNotImplementedError(f"--enable-tvm-ffi: {self.tvm_refusal(a)}, which a TVM FFI call does not pass; "
                                     "export the function with export_to_c", user_location(5))

    @classmethod
    def ctypes_type(cls, meta, function, ctypes):
        return ctypes.c_void_p


def tvm_value(i) -> str:
    """The TVMFFIAny (a C lvalue) that the TVM FFI entry reads its parameter i from: `args[<i>]`, or, for an element
    of a tuple argument (i is then `<position>_<k>_...`), that element of the tuple's array (ww_tvm_elem, which
    export/tvm_ffi_call.py defines once it has checked the array's length)."""
    parts = str(i).split("_")
    v = f"args[{parts[0]}]"
    for k in parts[1:]:
        v = f"(*ww_tvm_elem(&{v}, {k}))"
    return v


def fast_id(index) -> str:
    """The suffix of an argument's names in the generated Python fast path (a<id>, x<id>, P<id>, ...): its position,
    or for an element of a list or tuple argument its path (`0_1`: element 1 of argument 0)."""
    return str(index) if isinstance(index, int) else "_".join(str(k) for k in index)


def keyed_by_value(cls, value, annotation, stable) -> str:
    """The function cache's key of an argument known only by its value (a compile-time value, or one whose address
    is part of it): the value, as `stable` writes it."""
    return "const " + stable(value)


BY_FIELDS = "by fields"


def const_key(value):
    """A compile-time value's key: the value itself where it is hashable; a dataclass that is not (one with eq
    and without frozen) by its fields' keys, so that an equal object made for each call selects the same
    compilation; else its identity."""
    try:
        hash(value)
        return (type(value).__qualname__, value)
    except TypeError:
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and type(value).__eq__ is not object.__eq__:
            return (type(value).__qualname__, (BY_FIELDS,) + tuple(const_key(getattr(value, f.name))
                                                                   for f in dataclasses.fields(value)))
        return (type(value).__qualname__, id(value))


def sym_id(sym) -> int:
    return int(_core.symbols_of(sym)[0])
