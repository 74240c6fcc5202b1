"""Argument kinds passed by value: a runtime integer (a symbol of the layout algebra), a scalar (another number,
a kernel parameter of its type), a stream and a compile-time constant. See arg_kind.py.

A parameter annotated with a numeric type (`n: cutlass.Int32`) takes that type whatever the value passed, as in
CuTe DSL: a value that is not integral, or does not fit, for an integer annotation is refused at the user's line,
when compiling and at each call."""
from __future__ import annotations

import inspect
import math
import struct

from ..base.constexpr import is_constexpr
from ..base.errors import DSLNotImplementedError, DSLTypeError, DSLValueError, user_location
from ..values.host_inputs import HostEvent, event_handle, is_event, is_stream, stream_handle
from ..values.layout_annotations import compiles_numbers_in
from ..values.runtime import SymbolicInt
from ..values.numeric import ALL_TYPES, Boolean, Float32, HostRef, Int32, Int64, Numeric
from ..values.user_numeric import is_numeric_type, numeric_name, storage_numeric
from .arg_kind import BY_FIELDS, NATIVE_CONST, NATIVE_EVENT, NATIVE_INT, NATIVE_SCALAR, NATIVE_STREAM, ArgPlan, CArg, \
    ExportOnlyHandle, HostStream, const_key, fast_id, keyed_by_value, sym_id, tvm_value

_NUMERIC_BY_NAME = {t.__name__: t for t in ALL_TYPES}

# C types of a scalar argument (a Numeric of the jit function) and its kernel parameter format.
SCALAR_CTYPE = {"Boolean": ("bool", "B"), "Int8": ("int8_t", "b"), "Int16": ("int16_t", "h"),
                "Int32": ("int32_t", "i"), "Int64": ("int64_t", "q"), "Uint8": ("uint8_t", "B"),
                "Uint16": ("uint16_t", "h"), "Uint32": ("uint32_t", "i"), "Uint64": ("uint64_t", "q"),
                "Float16": ("uint16_t", "e"), "BFloat16": ("uint16_t", "H"), "Float32": ("float", "f"),
                "Float64": ("double", "d")}
_CTYPES_NAME = {"bool": "c_bool", "int8_t": "c_int8", "int16_t": "c_int16", "int32_t": "c_int32", "int64_t": "c_int64",
                "uint8_t": "c_uint8", "uint16_t": "c_uint16", "uint32_t": "c_uint32", "uint64_t": "c_uint64",
                "float": "c_float", "double": "c_double"}


def _value_path(t):
    """Where a number argument's symbol reads it; an unsigned one says so, so that its parameter packs unsigned."""
    return ("value", "u") if t.is_integer and not t.signed else ("value",)


def annotated_numeric(annotation):
    """The numeric type a parameter is annotated with (the class, or its name under `from __future__ import
    annotations`), else None."""
    if isinstance(annotation, type) and issubclass(annotation, Numeric):
        return annotation if is_numeric_type(annotation) else None
    if isinstance(annotation, str):
        return _NUMERIC_BY_NAME.get(annotation.split(".")[-1])
    return None


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float, Numeric))


def _passed_at_call(value, annotation) -> bool:
    """Whether a number argument is a runtime value: a DSL number always; a Python number unless its parameter's
    annotation is a layout algebra name (cute.Shape, ...), which compiles it in (values/layout_annotations.py)."""
    return _is_number(value) and (isinstance(value, Numeric) or not compiles_numbers_in(annotation))


def number_value(name: str, value, t, depth: int):
    """The Python value of number argument `value` as type t takes it; for an integer t, a value that is not an
    integer or does not fit t's range (signed, or unsigned: from 0) is refused at the user's line."""
    v = value.value if isinstance(value, Numeric) else value
    if not t.is_integer or isinstance(v, bool):
        return v
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            raise DSLValueError(f"argument '{name}' is {t.__name__}, so it takes integers; got {value!r}",
                                user_location(depth))
        v = int(v)
    elif not isinstance(v, int):
        raise DSLTypeError(f"argument '{name}' is {t.__name__}, so it takes integers; got a {type(value).__name__}",
                           user_location(depth))
    lo, hi = (-(1 << (t.width - 1)), 1 << (t.width - 1)) if t.signed else (0, 1 << t.width)
    if not lo <= v < hi:
        raise DSLValueError(f"argument '{name}' is {t.__name__} ({'' if t.signed else 'un'}signed {t.width}-bit); "
                            f"{v} does not fit it", user_location(depth))
    return v


def check_annotated(name: str, value, annotation) -> None:
    """A number argument of a parameter annotated with a numeric type, checked before compiling."""
    t = annotated_numeric(annotation)
    if t is None or is_constexpr(annotation):
        return
    if _is_number(value):  # anything else is what it was before annotations were read: a compile-time value
        number_value(name, value, t, 5)


def _number_type(value, annotation):
    """The numeric type an argument is passed as: its annotation's, else its value's."""
    t = annotated_numeric(annotation)
    if t is not None:
        return t
    if isinstance(value, bool):
        return Boolean
    if isinstance(value, Numeric):
        return type(value)
    if isinstance(value, int):
        return Int32 if -(1 << 31) <= value < (1 << 31) else Int64
    return Float32


def number_key(cls, value, annotation, stable=None) -> str:
    """The key of a number argument, in this process and across processes: the type it is passed as."""
    if isinstance(value, SymbolicInt):
        t = annotated_numeric(annotation) or (Int64 if value.width == 64 else Int32)
        return f"{t.__name__}/{value.divisibility}"
    return numeric_name(_number_type(value, annotation))


def _is_symbol_type(t) -> bool:
    return t.is_integer and t.width in (32, 64)


class IntArg(ArgPlan):
    """A runtime integer of 32 or 64 bits: a symbol of the layout algebra (extents, grids) and a kernel
    parameter of its width."""

    kind = "int"
    native_code = NATIVE_INT

    @classmethod
    def takes(cls, value, annotation) -> bool:
        if isinstance(value, SymbolicInt):  # cute.sym_int(): an integer compiled for any value
            return annotated_numeric(annotation) is None or _is_symbol_type(annotated_numeric(annotation))
        if not _passed_at_call(value, annotation):
            return False
        t = annotated_numeric(annotation)
        if t is None:
            if isinstance(value, (bool, float)):
                return False
            t = _number_type(value, annotation)
        return _is_symbol_type(t)

    spec_key = cache_key = classmethod(number_key)

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        if isinstance(value, SymbolicInt):  # known at each call only, a multiple of its divisibility
            t = annotated_numeric(annotation) or (Int64 if value.width == 64 else Int32)
            sym = st.new_host_symbol(index, _value_path(t), t.width, value.divisibility, name, nonneg=not t.signed)
            return t._wrap(sym), cls(index, name, ("int", t.__name__), t, [sym_id(sym)])
        t = _number_type(value, annotation)
        # A signed argument may be negative: its divisions and remainders floor as Python's do, never unsigned.
        sym = st.new_host_symbol(index, _value_path(t), t.width, 1, name, nonneg=not t.signed)
        if not isinstance(value, Numeric) or value.is_static:
            st.host_values[sym_id(sym)] = number_value(name, value, t, 3)
        return t._wrap(sym), cls(index, name, ("int", t.__name__), t, [sym_id(sym)])

    def value_of(self, v) -> int:
        return int(number_value(self.name, v, self.dtype, 4))

    def read(self, v, read):
        read[0][self.symbols[0]] = self.value_of(v)

    def symbol_env(self, v, env) -> bool:
        env[self.symbols[0]] = int(v.value if isinstance(v, Numeric) else v)
        return True

    def symbol_ids(self) -> list:
        return [self.symbols[0]]

    def fast_lines(self, env, hosted):
        i, lim = fast_id(self.index), 1 << (self.dtype.width - 1)
        env.update({"int_value": IntArg.value_of, f"P{i}": self})
        return [f"s{self.symbols[0]} = a{i} if type(a{i}) is int and {-lim} <= a{i} < {lim} else "
                f"int_value(P{i}, a{i})"]

    def native(self, slots):
        return (NATIVE_INT, slots.slot(slots.syms, self.symbols[0]), self.dtype.width)

    def c_args(self, name, c_identifier, host_symbols):
        sid = self.symbols[0]
        bits = host_symbols[sid].bits
        return [CArg(self, c_identifier(name), f"int{bits}_t", sid=sid, bits=bits, dtype=self.spec[1])]

    def c_checks(self, a, symbols):
        symbols[a.sid] = a.name
        return []

    def c_metadata(self, a):
        return {"bits": a.bits, "dtype": a.dtype}

    def tvm_lines(self, a, i, o, call, prefix):
        v = tvm_value(i)
        o.append(f"  if ({v}.type_index != kTVMFFIInt && {v}.type_index != kTVMFFIBool) return ww_tvm_error("
                 f'"TypeError", "argument {a.name} must be an integer");')
        lim = 1 << (a.bits - 1)
        o.append(f"  if ({v}.v_int64 < -{lim}LL || {v}.v_int64 > {lim - 1}LL) return ww_tvm_error(\"ValueError\", "
                 f"\"argument {a.name} does not fit the {a.bits}-bit integer it was compiled as\");")
        call.append(f"({a.ctype}){v}.v_int64")

    @classmethod
    def ctypes_type(cls, meta, function, ctypes):
        return ctypes.c_int64 if meta["bits"] == 64 else ctypes.c_int32

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        n = x if type(x) is int else int(number_value(meta["python_name"], x, Int64, 4))  # integral
        lim = 1 << (meta["bits"] - 1)
        if not -lim <= n < lim:
            raise DSLValueError(f"{function.name}: argument '{meta['python_name']}' = {n} does not fit the "
                                f"{meta['bits']}-bit integer it was compiled as", user_location(4))
        return n


def _half_bits(fmt, x) -> int:
    if fmt == "e":
        try:
            return struct.unpack("<H", struct.pack("<e", float(x)))[0]
        except OverflowError:  # beyond half's range: its infinity, as a conversion to half rounds it
            return 0xFC00 if x < 0 else 0x7C00
    # bfloat16: the upper half of the float32, rounded to nearest even
    bits = struct.unpack("<I", struct.pack("<f", float(x)))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


class ScalarArg(ArgPlan):
    """Any other number (a float, a bool, an integer of another width): a kernel parameter of its type."""

    kind = "scalar"
    native_code = NATIVE_SCALAR

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return _passed_at_call(value, annotation)

    spec_key = cache_key = classmethod(number_key)

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        t = _number_type(value, annotation)
        if annotated_numeric(annotation) is not None:
            number_value(name, value, t, 3)
        # a type of the program's own is passed as the DSL type of its bits (user_numeric.py)
        return t._wrap(HostRef(index, name)), cls(index, name, ("scalar", storage_numeric(t).__name__), t)

    def value_of(self, v):
        if self.dtype.is_integer and not isinstance(v, bool):
            return number_value(self.name, v, self.dtype, 4)
        return v.value if isinstance(v, Numeric) else v

    def read(self, v, read):
        read[2][self.index] = self.value_of(v)

    def fast_lines(self, env, hosted):
        i = fast_id(self.index)
        if self.dtype.is_integer:
            env.update({"scalar_value": ScalarArg.value_of, f"P{i}": self})
            return [f"x{i} = scalar_value(P{i}, a{i})"]
        env["Numeric"] = Numeric
        return [f"x{i} = a{i}.value if isinstance(a{i}, Numeric) else a{i}"]

    def native(self, slots):
        return (NATIVE_SCALAR, slots.slot(slots.objs, self.index))

    def c_args(self, name, c_identifier, host_symbols):
        dname = self.spec[1]
        if dname not in SCALAR_CTYPE:
            raise DSLNotImplementedError(f"export_to_c: argument '{name}' is a {dname} scalar, which has no C "
                                         "type in an exported function", user_location(3))
        ctype, fmt = SCALAR_CTYPE[dname]
        return [CArg(self, c_identifier(name), ctype, fmt=fmt, dtype=dname)]

    def c_metadata(self, a):
        return {"dtype": a.dtype, "fmt": a.fmt}

    def tvm_lines(self, a, i, o, call, prefix):
        v = tvm_value(i)
        if a.fmt in ("e", "H"):
            raise DSLNotImplementedError(f"--enable-tvm-ffi: argument '{a.name}' is a {a.dtype} scalar; pass it "
                                         "as Float32", user_location(5))
        if a.fmt in "fd":
            o.append(f"  double v{i};")
            o.append(f"  if ({v}.type_index == kTVMFFIFloat) v{i} = {v}.v_float64;")
            o.append(f"  else if ({v}.type_index == kTVMFFIInt || {v}.type_index == kTVMFFIBool) v{i} = "
                     f"(double){v}.v_int64;")
            o.append(f'  else return ww_tvm_error("TypeError", "argument {a.name} must be a number");')
            call.append(f"({a.ctype})v{i}")
        else:
            o.append(f"  if ({v}.type_index != kTVMFFIInt && {v}.type_index != kTVMFFIBool) return ww_tvm_error("
                     f'"TypeError", "argument {a.name} must be an integer or bool");')
            call.append(f"({a.ctype}){v}.v_int64")

    @classmethod
    def ctypes_type(cls, meta, function, ctypes):
        return getattr(ctypes, _CTYPES_NAME[SCALAR_CTYPE[meta["dtype"]][0]])

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        x = x.value if isinstance(x, Numeric) else x
        fmt = meta["fmt"]
        if fmt in ("e", "H"):
            return _half_bits(fmt, x)
        if fmt in "fd":
            return float(x)
        return int(x)


class StreamArg(ArgPlan):
    """A stream (a CUstream, a torch stream, a handle, None for the default stream): its handle."""

    kind = "stream"
    native_code = NATIVE_STREAM

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return is_stream(value) or annotation is not inspect.Parameter.empty and \
            getattr(annotation, "__name__", "") == "CUstream"

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        env = getattr(value, "use_tvm_ffi_env_stream", False) is True
        return HostStream(index), cls(index, name, ("stream", "env") if env else ("stream",))

    @property
    def tvm_env_stream(self) -> bool:
        """Compiled for TVM FFI's environment stream (make_fake_stream(use_tvm_ffi_env_stream=True)): the TVM FFI
        entry has no parameter for it."""
        return self.spec[1:] == ("env",)

    def read(self, v, read):
        read[3][self.index] = stream_handle(v)

    def fast_lines(self, env, hosted):
        env["stream_of"] = stream_handle
        return [f"q{self.index} = stream_of(a{self.index})"]

    def native(self, slots):
        return (NATIVE_STREAM, slots.slot(slots.ptrs, self.index))

    def c_args(self, name, c_identifier, host_symbols):
        return [CArg(self, c_identifier(name), "CUstream")]

    def tvm_lines(self, a, i, o, call, prefix):
        if self.tvm_env_stream:
            o.append(f"  CUstream q{i};")
            call.append(f"q{i}")
            return
        v = tvm_value(i)
        o.append(f"  CUstream q{i};")
        o.append(f"  if ({v}.type_index == kTVMFFIOpaquePtr) q{i} = (CUstream){v}.v_ptr;")
        o.append(f"  else if ({v}.type_index == kTVMFFIInt) q{i} = (CUstream)(intptr_t){v}.v_int64;")
        o.append(f"  else if ({v}.type_index != kTVMFFINone) return ww_tvm_error(\"TypeError\", \"argument "
                 f"{a.name} must be a stream handle, or None for the current stream\");")
        call.append(f"q{i}")

    def tvm_after(self, a, i) -> list:
        # None (or no parameter): the environment's stream of the tensors' device (known once every tensor is read)
        if self.tvm_env_stream:
            return [f"  q{i} = (CUstream)TVMFFIEnvGetStream(2, device_id < 0 ? 0 : device_id);"]
        return [f"  if ({tvm_value(i)}.type_index == kTVMFFINone) q{i} = (CUstream)TVMFFIEnvGetStream(2, "
                "device_id < 0 ? 0 : device_id);"]

    @classmethod
    def ctypes_type(cls, meta, function, ctypes):
        return ctypes.c_void_p

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        return stream_handle(x)


class EventArg(ExportOnlyHandle, ArgPlan):
    """A CUDA event (a CUevent, a cudaEvent_t, a torch.cuda.Event): its handle, for the event attributes of a
    launch (launch_completion_event=, programmatic_event=)."""

    kind = "event"
    fast_path = False  # the generated Python fast path gives no launch attributes: the native path reads it
    native_code = NATIVE_EVENT

    @classmethod
    def takes(cls, value, annotation) -> bool:
        if is_event(value):
            return True
        names = {getattr(a, "__name__", "") for a in getattr(annotation, "__args__", ())} | {
            getattr(annotation, "__name__", "")}
        return annotation is not inspect.Parameter.empty and bool(names & {"CUevent", "cudaEvent_t"})

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        return HostEvent(index), cls(index, name, ("event",))

    def read(self, v, read):
        read[3][("event", self.index)] = event_handle(v)

    def native(self, slots):
        return (NATIVE_EVENT, slots.slot(slots.ptrs, self.index))

    def c_args(self, name, c_identifier, host_symbols):
        return [CArg(self, c_identifier(name), "CUevent")]

    def tvm_refusal(self, a) -> str:
        return f"argument '{a.name}' is a CUDA event"

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        return event_handle(x) or None   # None: no event, as in the Python call


def const_mismatch(plan, v):
    raise DSLValueError(f"argument '{plan.name}' is a compile-time constant: compiled with {plan.spec[1][1]!r}, "
                        f"called with {v!r}; compile again for this value", None)


class ConstArg(ArgPlan):
    """A compile-time value (layouts, tuples, atoms, other Python objects): compiled in, checked at each call."""

    kind = "const"
    native_code = NATIVE_CONST
    passed_to_c = False
    constexpr = False

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return True

    @classmethod
    def spec_key(cls, value, annotation):
        return const_key(value)

    cache_key = classmethod(keyed_by_value)

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        return value, cls(index, name, ("const", const_key(value)))

    def stored_fields(self) -> dict:
        fields = super().stored_fields()
        fields.pop("spec", None)   # by the value of the call that finds the entry (keyed by value)
        fields.pop("const_value", None)
        return fields

    def restore(self, values) -> None:
        self.spec = ("const", const_key(values[self.index]))

    def read(self, v, read):
        if const_key(v) != self.spec[1]:
            const_mismatch(self, v)

    def fast_lines(self, env, hosted):
        i = fast_id(self.index)
        env.update({f"K{i}": self.spec[1], "const_key": const_key, "const_mismatch": const_mismatch, f"P{i}": self})
        return [f"if const_key(a{i}) != K{i}: const_mismatch(P{i}, a{i})"]

    def native(self, slots):
        key = self.spec[1]
        # const_key keeps a hashable value itself (the same object passes by identity); of an unhashable one only
        # its id, so every call of it goes the Python way, which compares.
        hashable = isinstance(key, tuple) and len(key) == 2 and not (type(key[1]) is int and key[0] != "int") and \
            not (type(key[1]) is tuple and key[1][:1] == (BY_FIELDS,))
        return (NATIVE_CONST, hashable, key[1] if hashable else None)


class ConstexprArg(ConstArg):
    """A parameter annotated cutlass.Constexpr: compiled in; a call of the compiled function may leave it out."""

    kind = "constexpr"
    constexpr = True

    @classmethod
    def stand_in(cls, st, index, name, value, annotation, make_host_arg):
        plan = cls(index, name, ("const", const_key(value)))
        plan.const_value = value
        return value, plan

    @classmethod
    def takes(cls, value, annotation) -> bool:
        """Whatever its value: the annotation decides (a runtime value there is refused by check_arguments)."""
        return is_constexpr(annotation)

    def restore(self, values) -> None:
        super().restore(values)
        self.const_value = values[self.index]

    def native(self, slots):
        return (NATIVE_CONST, True, self.const_value)
