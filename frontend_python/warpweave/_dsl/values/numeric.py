"""Numeric types of the DSL: Boolean, Int8..Int64, Uint8..Uint64, Float16, BFloat16, TFloat32, Float32, Float64,
Float8E4M3FN, Float8E5M2.

A value of such a type is either static (a Python value known while tracing) or dynamic (an SSA value of the
kernel). Dynamic 32- and 64-bit integers are kept as symbolic expressions of the layout algebra (SymInt), so that
index arithmetic simplifies and proves alignment; they become IR where an operation needs them. Python operators
work on both kinds; a static operand takes the type of the dynamic one.
"""
from __future__ import annotations

import math
import struct
from typing import Any

from ... import _core
from ..base import ir_values, trace
from ..base.errors import DSLError, DSLTypeError, DSLValueError, user_location
from . import hooks
from .numeric_meta import BooleanMeta, FloatMeta, IntegerMeta, NumericMeta
from .fp8 import decode as decode_soft_float, decode_static, encode as encode_soft_float, encode_static, has_nan, \
    round_to_binary

SymInt = _core.SymInt


class DSLOverflowError(DSLError, OverflowError):
    """A Python integer that does not fit the DSL integer type it is given to."""


class IRVal(int):
    """An SSA value id (distinguishes IR values from Python ints)."""
    __slots__ = ()


class HostRef:
    """A runtime scalar argument of a @cute.jit function (not an integer), known at launch: a kernel argument."""
    __slots__ = ("arg_index", "name")

    def __init__(self, arg_index, name):
        self.arg_index = arg_index
        self.name = name


class Numeric(metaclass=NumericMeta):
    """Base of the DSL's scalar types."""
    __slots__ = ("_v",)
    width: int = 0
    ir_type: str = ""
    is_integer = False
    is_float = False
    is_boolean = False
    signed = True
    zero: Any = 0

    def __init__(self, value: Any = None, *, loc=None, ip=None):
        if value is None:
            value = self.zero
        self._v = _convert_to(type(self), value)

    # --- construction helpers ----------------------------------------------------------------------------------
    @classmethod
    def _wrap(cls, v):
        obj = object.__new__(cls)
        obj._v = v
        return obj

    @classmethod
    def from_ir(cls, value: int):
        """Wraps an SSA value of this type."""
        if cls.is_integer and cls.width in (32, 64):
            return cls._wrap(trace.lift_int(value, cls.ir_type, nonneg=not cls.signed))
        return cls._wrap(IRVal(value))

    @property
    def is_static(self) -> bool:
        return not isinstance(self._v, (IRVal, SymInt, HostRef))

    @property
    def value(self):
        """The Python value of a static number (raises for a dynamic one)."""
        if not self.is_static:
            raise DSLTypeError(f"{type(self).__name__} value is only known when the kernel runs", user_location(2))
        return self._v

    def ir(self) -> int:
        """The SSA value (a constant for a static number)."""
        return _materialize(type(self), self._v)

    def ir_value(self, *, loc=None, ip=None) -> ir_values.Value:
        """The value as an IR value (`cutlass._mlir.ir.Value`) of its storage type, for ops written with the IR
        directly; `type(self)(value)` makes a number of it again. `loc`/`ip` are accepted as CuTe DSL passes them:
        the value is made at the user's line, at the current insertion point."""
        if (self.is_static or isinstance(self._v, (SymInt, HostRef))) and trace.on_host():
            return ir_values.HostIRValue(self, ir_values.Type(type(self).ir_type))  # host code (host/host_ir.py)
        return ir_values.wrap(self.ir(), type(self).ir_type, self._v if self.is_static else None)

    def to(self, dtype, *, loc=None, ip=None):
        return dtype(self)

    # CuTe DSL's protocol for objects made of IR values (what a region carries, what get_mlir_types lists)
    def __extract_mlir_values__(self) -> list:
        return [self.ir_value()]

    def __new_from_mlir_values__(self, values):
        return type(self)(values[0])

    def __get_mlir_types__(self) -> list:
        return [type(self).register_type]

    @classmethod
    def is_same_kind(cls, other) -> bool:
        """Whether `other` is a type of the same kind: both floats, both integers (of either signedness) or both
        booleans. Widths may differ (Float8E4M3FN and Float8E5M2 are of one kind, Int8 and Uint8 too)."""
        if not (isinstance(other, type) and issubclass(other, Numeric)):
            raise DSLTypeError(f"is_same_kind compares numeric types, got {other!r}", user_location(2))
        return (cls.is_float, cls.is_integer, cls.is_boolean) == (other.is_float, other.is_integer, other.is_boolean)

    def __bool__(self):
        if self.is_static:
            return bool(self._v)
        if isinstance(self._v, (HostRef, SymInt)) and trace.on_host():
            r = hooks.decide_on_host(self)  # with the values compiled for, as a guard (host/host_guards.py)
            if r is not None:
                return r
        raise DSLTypeError(
            f"a dynamic {type(self).__name__} has no Python truth value: use it as the condition of an if/while "
            "inside a @cute.kernel or @cute.jit function (emitted as IR), or make it cutlass.Constexpr",
            user_location(2))

    def __repr__(self):
        if self.is_static:
            return f"{type(self).__name__}({self._v!r})"
        if isinstance(self._v, SymInt):
            return f"{type(self).__name__}({self._v.expr})"
        return f"{type(self).__name__}(?)"

    __str__ = __repr__

    def __hash__(self):
        if self.is_static:
            return hash((type(self).__name__, self._v))
        return id(self)

    # --- operators ---------------------------------------------------------------------------------------------
    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("truediv", self, o)
    def __rtruediv__(self, o): return _binary("truediv", o, self)
    def __floordiv__(self, o): return _binary("floordiv", self, o)
    def __rfloordiv__(self, o): return _binary("floordiv", o, self)
    def __mod__(self, o): return _binary("mod", self, o)
    def __rmod__(self, o): return _binary("mod", o, self)
    def __pow__(self, o): return _binary("pow", self, o)
    def __rpow__(self, o): return _binary("pow", o, self)
    def __and__(self, o): return _binary("and", self, o)
    def __rand__(self, o): return _binary("and", o, self)
    def __or__(self, o): return _binary("or", self, o)
    def __ror__(self, o): return _binary("or", o, self)
    def __xor__(self, o): return _binary("xor", self, o)
    def __rxor__(self, o): return _binary("xor", o, self)
    def __lshift__(self, o): return _binary("shl", self, o)
    def __rlshift__(self, o): return _binary("shl", o, self)
    def __rshift__(self, o): return _binary("shr", self, o)
    def __rrshift__(self, o): return _binary("shr", o, self)
    def __lt__(self, o): return _compare("lt", self, o)
    def __le__(self, o): return _compare("le", self, o)
    def __gt__(self, o): return _compare("gt", self, o)
    def __ge__(self, o): return _compare("ge", self, o)
    def __eq__(self, o): return _compare("eq", self, o)
    def __ne__(self, o): return _compare("ne", self, o)
    def __neg__(self): return _unary("neg", self)
    def __pos__(self): return self
    def __abs__(self): return _unary("abs", self)
    def __invert__(self): return _unary("invert", self)


def _tvm_ffi_value(x):
    """A number as a call through TVM FFI (options="--enable-tvm-ffi") passes it: Int32(n) as n, a Boolean as 0/1."""
    if not x.is_static:
        raise DSLTypeError(f"a dynamic {type(x).__name__} has no value outside a trace", user_location(3))
    return float(x._v) if x.is_float else int(x._v)


class Boolean(Numeric, metaclass=BooleanMeta):
    __slots__ = ()
    width, ir_type, is_boolean, zero = 1, "i1", True, False
    __tvm_ffi_int__ = _tvm_ffi_value


class Integer(Numeric, metaclass=IntegerMeta):
    __slots__ = ()
    is_integer = True

    def __ww_int__(self):
        return self._v

    def __index__(self):
        if self.is_static:
            return self._v
        raise DSLTypeError(f"a dynamic {type(self).__name__} cannot be used as a Python index or range bound here",
                           user_location(2))

    __tvm_ffi_int__ = _tvm_ffi_value


class Float(Numeric, metaclass=FloatMeta):
    __slots__ = ()
    is_float = True
    zero = 0.0
    __tvm_ffi_float__ = _tvm_ffi_value


def _int_type(name, width, signed):
    return type(name, (Integer,), {"__slots__": (), "width": width, "ir_type": f"i{width}", "signed": signed})


def _float_type(name, width, ir_type, lane_type=None):
    return type(name, (Float,), {"__slots__": (), "width": width, "ir_type": ir_type, "lane_type": lane_type})


Int8 = _int_type("Int8", 8, True)
Int16 = _int_type("Int16", 16, True)
Int32 = _int_type("Int32", 32, True)
Int64 = _int_type("Int64", 64, True)
Uint8 = _int_type("Uint8", 8, False)
Uint16 = _int_type("Uint16", 16, False)
Uint32 = _int_type("Uint32", 32, False)
Uint64 = _int_type("Uint64", 64, False)
Float16 = _float_type("Float16", 16, "f16")
BFloat16 = _float_type("BFloat16", 16, "bf16")
Float32 = _float_type("Float32", 32, "f32")
# TF32 is a matrix-unit input mode: stored and computed as f32 outside the MMA atoms.
TFloat32 = _float_type("TFloat32", 32, "f32")
Float64 = _float_type("Float64", 64, "f64")
# LLVM has no 8-bit float types: fp8 values live in i8 registers; arithmetic goes through Float32.
Float8E4M3FN = _float_type("Float8E4M3FN", 8, "i8")
Float8E5M2 = _float_type("Float8E5M2", 8, "i8")
Float8E4M3 = _float_type("Float8E4M3", 8, "i8")  # IEEE-style E4M3 (inf and NaN in the top exponent), not the FN one
FLOAT8_TYPES = (Float8E4M3FN, Float8E5M2, Float8E4M3)
# The OCP microscaling formats, also in i8 registers (the code in the low bits): E2M1 (4 bits), E2M3 and E3M2 (6
# bits), finite only; E8M0, an unsigned power-of-two scale (no zero; 0xFF is NaN).
Float4E2M1FN = _float_type("Float4E2M1FN", 4, "i8", lane_type="i4")   # 4-bit lanes in IR vectors, as CuTe DSL's
Float6E2M3FN = _float_type("Float6E2M3FN", 6, "i8")
Float6E3M2FN = _float_type("Float6E3M2FN", 6, "i8")
Float8E8M0FNU = _float_type("Float8E8M0FNU", 8, "i8")
# Floats without an LLVM type: converted by fp8.py's codecs, computed with through Float32.
SOFT_FLOAT_TYPES = FLOAT8_TYPES + (Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Float8E8M0FNU)
Int4 = _int_type("Int4", 4, True)
Uint4 = _int_type("Uint4", 4, False)
Int128 = _int_type("Int128", 128, True)
# Types whose tensors hold two values per byte (low nibble first), as the hardware's 4-bit operands do.
PACKED_TYPES = (Float4E2M1FN, Int4, Uint4)

ALL_TYPES = [Boolean, Int4, Int8, Int16, Int32, Int64, Int128, Uint4, Uint8, Uint16, Uint32, Uint64, Float16,
             BFloat16, TFloat32, Float32, Float64, Float8E4M3FN, Float8E5M2, Float8E8M0FNU, Float6E2M3FN,
             Float6E3M2FN, Float4E2M1FN, Float8E4M3]
_BY_NAME = {t.__name__: t for t in ALL_TYPES} | {"Bool": Boolean}
# An IR value's type -> the DSL type it is taken as where a number is expected (signless integers as signed).
_BY_IR_TYPE = {t.ir_type: t for t in (Boolean, Int8, Int16, Int32, Int64, Int128, Float16, BFloat16, Float32,
                                      Float64)}
# The names cute and cutlass both export.
NUMERIC_EXPORTS = ["Numeric", "Integer", "Float", "Boolean"] + [t.__name__ for t in ALL_TYPES]


def _float_limits():
    for t in ALL_TYPES:
        if t.is_float:
            t.inf, t.nan = math.inf, math.nan


_float_limits()


def dtype(name):
    """The numeric type named `name` (e.g. "Float16"), or `name` itself if it already is one."""
    if isinstance(name, type) and issubclass(name, Numeric):
        return name
    if isinstance(name, str) and name in _BY_NAME:
        return _BY_NAME[name]
    raise DSLValueError(f"unknown numeric type {name!r}; known: {', '.join(sorted(_BY_NAME))}", user_location(2))


def storage_type(t) -> str:
    """The MLIR type that holds a value of t in memory and registers."""
    return t.ir_type


# --- static conversions ---------------------------------------------------------------------------------------

def _wrap_int(v: int, width: int, signed: bool) -> int:
    v &= (1 << width) - 1
    if signed and v >= 1 << (width - 1):
        v -= 1 << width
    return v


def _round_float(v: float, t) -> float:
    if t is Float32 or t is TFloat32:
        return struct.unpack("f", struct.pack("f", v))[0] if math.isfinite(v) and abs(v) < 3.5e38 else v
    if t is Float16:
        try:
            return struct.unpack("e", struct.pack("e", v))[0]
        except OverflowError:
            return math.copysign(math.inf, v)
    if t is BFloat16:
        return round_to_binary(v, 7, -126, (2 - 2.0 ** -7) * 2.0 ** 127)
    if t in SOFT_FLOAT_TYPES:
        if math.isnan(v) and not has_nan(t):
            raise DSLValueError(f"{t.__name__} has no NaN", user_location(4))
        return decode_static(t, encode_static(t, v))
    return v


def _check_fits(t, x: int):
    """A Python integer must fit t: its signed or its unsigned reading of t's bits (so that Int32(0xFFFFFFFF)
    stays the all-ones mask). Arithmetic and conversions between DSL integer types wrap, as in C."""
    lo, hi = -(1 << (t.width - 1)), (1 << t.width) - 1
    if not lo <= x <= hi:
        raise DSLOverflowError(f"{x} does not fit {t.__name__} ({'' if t.signed else 'un'}signed {t.width}-bit); use "
                               f"a wider type, or wrap it explicitly: {t.__name__}(x & {hex((1 << t.width) - 1)})",
                               user_location(4))


def _static_value(t, x, exact=False):
    """The value of type t for x; `exact` (a Python value given by the user) refuses integers out of range."""
    if t.is_boolean:
        return bool(x)
    if t.is_integer:
        if isinstance(x, float):
            if not math.isfinite(x):
                raise DSLValueError(f"cannot convert {x} to {t.__name__}", user_location(3))
            x = int(x)
            if exact:
                _check_fits(t, x)
        elif exact and not isinstance(x, bool):
            _check_fits(t, int(x))
        return _wrap_int(int(x), t.width, t.signed)
    return _round_float(float(x), t)


def _same_bits(a, b) -> bool:
    """Types whose values convert without an op: TFloat32 and Float32, signed and unsigned integers of a width."""
    if a.is_integer and b.is_integer:
        return a.width == b.width
    return {a, b} == {Float32, TFloat32}


def _from_ir_value(t, value: ir_values.Value):
    """The representation of an IR value as type t: its IR type must be t's (an i32 for Int32 or Uint32, f32 for
    Float32), as a user op's result is built back into a number."""
    if isinstance(value, ir_values.HostIRValue):  # a number of the host side, given back
        if value.type.text != t.ir_type and not (t.is_integer and value.type.text.startswith("i")):
            raise DSLTypeError(f"{t.__name__} is made from an IR value of type {t.ir_type}, this one is {value.type}",
                               user_location(4))
        return _convert_to(t, value.number)
    vid = value.use()
    if value.type.text != t.ir_type:
        raise DSLTypeError(f"{t.__name__} is made from an IR value of type {t.ir_type}, this one is {value.type} "
                           "(does the user op return the type it declares?)", user_location(4))
    return Numeric.from_ir.__func__(t, vid)._v  # the representation itself (a user class's from_ir makes a value)


def numeric_type_of(ty: ir_values.Type):
    """The DSL type that an IR value of type `ty` is taken as where a number is expected; None if none is."""
    return _BY_IR_TYPE.get(ty.text)


def _convert_to(t, value):
    """The representation (_v) of `value` as type t."""
    if isinstance(value, ir_values.Value):
        return _from_ir_value(t, value)
    if isinstance(value, Numeric):
        src = type(value)
        if value.is_static:
            return _static_value(t, value._v)
        if src is t or _same_bits(src, t):
            return value._v
        if isinstance(value._v, (HostRef, SymInt)) and trace.on_host():
            # a conversion the host side makes (to another width, to a float): computed at each call
            return hooks.defer_on_host(lambda x: t(x), (value,), t, op=("cast", t))._v
        return cast(value, t)._v
    if isinstance(value, SymInt):
        # to a float: the conversion of the integer it stands for (Int32, or Int64 for a 64-bit extent)
        return value if t.is_integer else _convert_to(t, as_numeric(value))
    if hasattr(value, "__ww_int__") and t.is_integer:
        return value.__ww_int__()
    if isinstance(value, (bool, int, float)):
        return _static_value(t, value, exact=True)
    raise DSLTypeError(f"cannot make a {t.__name__} from {type(value).__name__}", user_location(3))


def as_numeric(x, like=None):
    """A Python value as a DSL number: bool -> Boolean, int -> Int32, float -> Float32 (or the type of `like`)."""
    if isinstance(x, Numeric):
        return x
    if isinstance(x, SymInt):
        return Int32._wrap(x) if x.bits <= 32 else Int64._wrap(x)
    if isinstance(x, ir_values.Value):
        t = numeric_type_of(x.type)
        if t is None:
            raise DSLTypeError(f"an IR value of type {x.type} is not a DSL number (a scalar integer or float is)",
                               user_location(3))
        return t._wrap(_from_ir_value(t, x))
    if like is not None:
        return like(x)
    if isinstance(x, bool):
        return Boolean(x)
    if isinstance(x, int):
        return Int32(x) if -(1 << 31) <= x < (1 << 31) else Int64(x)
    if isinstance(x, float):
        return Float32(x)
    if hasattr(x, "__ww_int__"):
        return as_numeric(x.__ww_int__())
    raise DSLTypeError(f"expected a number, got {type(x).__name__}", user_location(3))


# --- IR emission ------------------------------------------------------------------------------------------------

def _materialize(t, v) -> int:
    if isinstance(v, HostRef):
        raise DSLTypeError(f"the runtime argument '{v.name}' is known only when a kernel runs: pass it to the "
                           "kernel to compute with it", user_location(2))
    b = trace.builder()
    if isinstance(v, IRVal):
        return int(v)
    if isinstance(v, SymInt):
        if v.bits > 32 and t.ir_type in ("i8", "i16", "i32"):
            # A 64-bit expression (a 64-bit symbol, a constant beyond 32 bits) made a narrower number: computed in
            # 64 bits and truncated, as a conversion of a 64-bit number is.
            return b.op1("arith.trunci", [b.materialize(v, "i64")], t.ir_type)
        return b.materialize(v, t.ir_type)
    if t.is_boolean:
        return b.constant_int(1 if v else 0, "i1")
    if t.is_integer:
        if t.width > 64 and not -(1 << 63) <= int(v) < (1 << 63):
            # The builder's constants are 64-bit: a wider one is assembled from its two halves.
            lo, hi = int(v) & ((1 << 64) - 1), int(v) >> 64
            lo = b.op1("arith.extui", [b.constant_int(_wrap_int(lo, 64, True), "i64")], t.ir_type)
            hi = b.op1("arith.extsi", [b.constant_int(_wrap_int(hi, 64, True), "i64")], t.ir_type)
            hi = b.op1("arith.shli", [hi, b.constant_int(64, t.ir_type)], t.ir_type)
            return b.op1("arith.ori", [hi, lo], t.ir_type)
        return b.constant_int(int(v), t.ir_type)
    if t in SOFT_FLOAT_TYPES:
        return b.constant_int(encode_static(t, float(v)), "i8")
    if t.ir_type == "f64" and math.isnan(v):  # its bits, sign and payload (a type of the user's may be bits)
        return b.op1("arith.bitcast", [b.constant_int(struct.unpack("<q", struct.pack("<d", v))[0], "i64")], "f64")
    return b.constant_float(float(v), t.ir_type)


def cast(x: Numeric, t):
    """Converts a dynamic number to type t with the matching arith op."""
    src = type(x)
    if src is t:
        return x
    if t in SOFT_FLOAT_TYPES or src in SOFT_FLOAT_TYPES:
        return _convert_soft_float(x, t)
    b = trace.builder()
    v = x.ir()
    if _same_bits(src, t):
        return t.from_ir(v)
    if t.is_boolean:
        zero = b.constant_float(0.0, src.ir_type) if src.is_float else b.constant_int(0, src.ir_type)
        if src.is_float:
            return Boolean.from_ir(b.op1("arith.cmpf", [v, zero], "i1", "predicate = 6 : i64"))  # une
        return Boolean.from_ir(b.op1("arith.cmpi", [v, zero], "i1", "predicate = 1 : i64"))  # ne
    if src.is_boolean:
        src_int = Uint8 if t.is_integer else Int32
        return cast(src_int.from_ir(b.op1("arith.extui", [v], src_int.ir_type)), t) if src_int.ir_type != t.ir_type \
            else t.from_ir(b.op1("arith.extui", [v], t.ir_type))
    if src.is_integer and t.is_integer:
        if t.width > src.width:
            op = "arith.extsi" if src.signed else "arith.extui"
        else:
            op = "arith.trunci"
        return t.from_ir(b.op1(op, [v], t.ir_type))
    if src.is_integer and t.is_float:
        return t.from_ir(b.op1("arith.sitofp" if src.signed else "arith.uitofp", [v], t.ir_type))
    if src.is_float and t.is_integer:
        return t.from_ir(b.op1("arith.fptosi" if t.signed else "arith.fptoui", [v], t.ir_type))
    # float -> float
    if t.width > src.width or (t.width == src.width and t.ir_type == "f32"):
        return t.from_ir(b.op1("arith.extf", [v], t.ir_type))
    if src.ir_type == "bf16" and t.ir_type == "f16" or src.ir_type == "f16" and t.ir_type == "bf16":
        mid = Float32.from_ir(b.op1("arith.extf", [v], "f32"))
        return cast(mid, t)
    return t.from_ir(b.op1("arith.truncf", [v], t.ir_type))


def _convert_soft_float(x, t):
    """x converted to t, where one of them is a narrow float (through f32, with fp8.py's codecs)."""
    src = type(x)
    if src in SOFT_FLOAT_TYPES:
        f = Float32.from_ir(decode_soft_float(src, x.ir()))
        return f if t is Float32 else cast(f, t)
    f = x if src is Float32 else cast(x, Float32)
    return t.from_ir(encode_soft_float(t, f.ir()))


_RANK = {Float64: 50, Float32: 40, TFloat32: 39, BFloat16: 31, Float16: 30}


def _result_type(a, b, op):
    ta, tb = type(a), type(b)
    if ta is tb:
        return ta
    if ta.is_float or tb.is_float:
        fa = ta if ta.is_float else None
        fb = tb if tb.is_float else None
        if fa and fb:
            if {fa, fb} == {Float16, BFloat16}:
                return Float32
            return fa if _RANK.get(fa, 35) >= _RANK.get(fb, 35) else fb
        return fa or fb
    if ta.is_boolean:
        return tb
    if tb.is_boolean:
        return ta
    if ta.width != tb.width:
        return ta if ta.width > tb.width else tb
    return ta if ta.signed == tb.signed else (ta if not ta.signed else tb)


def coerce_pair(a, b):
    """Two operands as numbers of one type; a Python value takes the type of the DSL operand."""
    if not isinstance(a, Numeric) and not isinstance(b, Numeric):
        raise DSLTypeError("expected a DSL number", user_location(4))
    if not isinstance(a, Numeric):
        if isinstance(a, float) and b.is_integer:
            a = Float32(a)
        else:
            a = as_numeric(a, type(b) if not isinstance(a, SymInt) else None)
    if not isinstance(b, Numeric):
        if isinstance(b, float) and a.is_integer:
            b = Float32(b)
        else:
            b = as_numeric(b, type(a) if not isinstance(b, SymInt) else None)
    t = _result_type(a, b, None)
    return _convert(a, t), _convert(b, t), t


def _convert(x, t):
    return x if type(x) is t else t(x)


_INT_SYMBOLIC = {"add", "sub", "mul", "floordiv", "mod"}


def _binary_type(op, t):
    """The type of `a op b` for operands of type t, as _binary makes it."""
    if t.is_integer and op == "truediv":
        return Float32
    if t.is_boolean and op not in ("and", "or", "xor"):
        return Int32
    return t


def _static_binary(op, a, b, t):
    if op == "add": r = a + b
    elif op == "sub": r = a - b
    elif op == "mul": r = a * b
    elif op == "truediv": r = a / b
    elif op == "floordiv":
        if b == 0:
            raise DSLValueError("integer division by zero", user_location(4))
        r = a // b
    elif op == "mod":
        if b == 0:
            raise DSLValueError("integer modulo by zero", user_location(4))
        r = math.fmod(a, b) if t.is_float else a % b
    elif op == "pow": r = a ** b
    elif op in ("and", "or", "xor"): r = a & b if op == "and" else (a | b if op == "or" else a ^ b)
    elif op == "shl": r = a << b
    elif op == "shr": r = a >> b
    else:
        raise AssertionError(op)
    if t.is_integer:
        return t._wrap(_wrap_int(int(r), t.width, t.signed))   # static integer arithmetic wraps, as in C
    return t(r)


_FLOAT_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "truediv": "arith.divf",
              "mod": "arith.remf"}
_INT_OPS = {"and": "arith.andi", "or": "arith.ori", "xor": "arith.xori", "shl": "arith.shli"}


def _binary(op, a, b):
    if op in ("and", "or", "xor"):  # a Python int mask (~(1 << 31)) stands for its bits, which is exact for these
        a, b = [_wrap_int(x, type(y).width, type(y).signed) if type(x) is int and isinstance(y, Numeric) and
                type(y).is_integer else x for x, y in ((a, b), (b, a))]
    try:
        a, b, t = coerce_pair(a, b)
    except DSLTypeError:
        return NotImplemented
    if t in SOFT_FLOAT_TYPES:
        return t(_binary(op, Float32(a), Float32(b)))
    zero_divisor = t.is_integer and op in ("floordiv", "mod") and type(b._v) is int and b._v == 0 and trace.in_kernel()
    if a.is_static and b.is_static and not zero_divisor:
        if t.is_float and op in ("and", "or", "xor", "shl", "shr"):
            raise DSLTypeError(f"operator {op} needs integers, got {t.__name__}", user_location(3))
        return _static_binary(op, a._v, b._v, t)
    if (isinstance(a._v, HostRef) or isinstance(b._v, HostRef)) and not trace.in_kernel():
        return hooks.defer_on_host(lambda x, y: _binary(op, x, y), (a, b), _binary_type(op, t),
                                   op=(op,) if op != "pow" else None)  # computed at each call (host_values.py)
    if t.is_integer and op == "truediv":
        return _binary("truediv", Float32(a), Float32(b))
    if trace.on_host() and any(isinstance(x._v, SymInt) for x in (a, b)) and \
            not (t.is_integer and op in _INT_SYMBOLIC and t.width in (32, 64)):
        # what the algebra's integers do not compute (shifts, bitwise ops, narrow widths): the host program does
        return hooks.defer_on_host(lambda x, y: _binary(op, x, y), (a, b), _binary_type(op, t),
                                   op=(op,) if op != "pow" else None)
    if t.is_integer and t.width < 32 and op in ("add", "sub", "mul", "floordiv", "mod", "pow"):
        # Narrow integers compute in 32 bits and wrap back, as C does.
        wide = Int32 if t.signed else Uint32
        return cast(_binary(op, wide(a), wide(b)), t)
    if t.is_integer and op in _INT_SYMBOLIC and t.width in (32, 64) and not zero_divisor:
        x, y = a._v, b._v
        if op == "add": r = x + y
        elif op == "sub": r = x - y
        elif op == "mul": r = x * y
        elif op == "floordiv":
            if isinstance(y, int) and y == 0: raise DSLValueError("integer division by zero", user_location(3))
            if isinstance(y, SymInt) and not trace.in_kernel():
                hooks.divisor_on_host(y, "division")
            r = x // y
        else:
            if isinstance(y, int) and y == 0: raise DSLValueError("integer modulo by zero", user_location(3))
            if isinstance(y, SymInt) and not trace.in_kernel():
                hooks.divisor_on_host(y, "modulo")
            r = x % y
        return t._wrap(r) if isinstance(r, SymInt) else t(r)
    bld = trace.builder()
    if t.is_float:
        if op in _FLOAT_OPS:
            return t.from_ir(bld.op1(_FLOAT_OPS[op], [a.ir(), b.ir()], t.ir_type))
        if op == "floordiv":
            q = bld.op1("arith.divf", [a.ir(), b.ir()], t.ir_type)
            return t.from_ir(bld.op1("math.floor", [q], t.ir_type))
        if op == "pow":
            return t.from_ir(bld.op1("math.powf", [a.ir(), b.ir()], t.ir_type))
        raise DSLTypeError(f"operator {op} needs integers, got {t.__name__}", user_location(3))
    if t.is_boolean:
        if op in ("and", "or", "xor"):
            return Boolean.from_ir(bld.op1(_INT_OPS[op], [a.ir(), b.ir()], "i1"))
        return _binary(op, Int32(a), Int32(b))
    if op in _INT_OPS:
        return t.from_ir(bld.op1(_INT_OPS[op], [a.ir(), b.ir()], t.ir_type))
    if op == "shr":
        return t.from_ir(bld.op1("arith.shrsi" if t.signed else "arith.shrui", [a.ir(), b.ir()], t.ir_type))
    if op in ("add", "sub", "mul", "floordiv", "mod"):  # floordiv, mod: in a kernel by a known 0 (as CuTe DSL)
        name = {"add": "addi", "sub": "subi", "mul": "muli", "floordiv": "divsi" if t.signed else "divui",
                "mod": "remsi" if t.signed else "remui"}[op]
        return t.from_ir(bld.op1("arith." + name, [a.ir(), b.ir()], t.ir_type))
    if op == "pow":
        return t.from_ir(bld.op1("math.ipowi", [a.ir(), b.ir()], t.ir_type))
    raise DSLTypeError(f"unsupported operator {op} on {t.__name__}", user_location(3))


# arith.cmpi / cmpf predicate numbers
_CMPI = {("eq", True): 0, ("ne", True): 1, ("lt", True): 2, ("le", True): 3, ("gt", True): 4, ("ge", True): 5,
         ("eq", False): 0, ("ne", False): 1, ("lt", False): 6, ("le", False): 7, ("gt", False): 8, ("ge", False): 9}
_CMPF = {"eq": 1, "gt": 2, "ge": 3, "lt": 4, "le": 5, "ne": 13}  # ordered, but ne is unordered-or-not-equal


def _compare(op, a, b):
    if not isinstance(a, Numeric) and not isinstance(b, Numeric):
        return NotImplemented
    if op in ("eq", "ne") and not isinstance(b, (Numeric, int, float, bool, SymInt)) and not hasattr(b, "__ww_int__"):
        return op == "ne"
    try:
        a, b, t = coerce_pair(a, b)
    except DSLTypeError:
        return NotImplemented
    if t in SOFT_FLOAT_TYPES:
        return _compare(op, Float32(a), Float32(b))
    if a.is_static and b.is_static:
        x, y = a._v, b._v
        r = {"lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y, "eq": x == y, "ne": x != y}[op]
        return Boolean(r)
    if (isinstance(a._v, HostRef) or isinstance(b._v, HostRef)) and not trace.in_kernel():
        return hooks.defer_on_host(lambda x, y: _compare(op, x, y), (a, b), Boolean, op=(op,))  # at each call
    if t.is_integer and isinstance(a._v, SymInt) and isinstance(b._v, (SymInt, int)):
        # Decided by the normal form when possible (e.g. x + 1 > x).
        d = a._v - b._v
        if isinstance(d, int):
            return Boolean({"lt": d < 0, "le": d <= 0, "gt": d > 0, "ge": d >= 0, "eq": d == 0, "ne": d != 0}[op])
    if not trace.in_kernel():
        # A Boolean of the host program, known at each call (host/host_program.py): an `if` on it is a branch of
        # the compiled host code; Python asking for its truth gets the value compiled for, kept as a guard.
        return hooks.defer_on_host(lambda x, y: _compare(op, x, y), (a, b), Boolean, op=(op,))
    bld = trace.builder()
    if t.is_float:
        return Boolean.from_ir(bld.op1("arith.cmpf", [a.ir(), b.ir()], "i1", f"predicate = {_CMPF[op]} : i64"))
    signed = t.signed if t.is_integer else False
    return Boolean.from_ir(bld.op1("arith.cmpi", [a.ir(), b.ir()], "i1", f"predicate = {_CMPI[(op, signed)]} : i64"))


def _unary(op, a):
    t = type(a)
    if t in SOFT_FLOAT_TYPES:
        return t(_unary(op, Float32(a)))
    if a.is_static:
        v = a._v
        if op == "neg":
            return t(-v) if not t.is_boolean else Int32(-int(v))
        if op == "abs":
            return t(abs(v))
        if op == "invert":
            if t.is_float:
                raise DSLTypeError("~ needs an integer or a Boolean", user_location(3))
            return Boolean(not v) if t.is_boolean else t(~v)
    if isinstance(a._v, HostRef) and not trace.in_kernel():
        return hooks.defer_on_host(lambda x: _unary(op, x), (a,), t, op=(op,))
    if t.is_integer and t.width in (32, 64) and op == "neg":
        return t._wrap(-a._v)
    bld = trace.builder()
    if op == "neg":
        if t.is_float:
            return t.from_ir(bld.op1("arith.negf", [a.ir()], t.ir_type))
        return t(0) - a
    if op == "abs":
        if t.is_float:
            return t.from_ir(bld.op1("math.absf", [a.ir()], t.ir_type))
        if not t.signed:
            return a
        return t.from_ir(bld.op1("math.absi", [a.ir()], t.ir_type))
    if op == "invert":
        if t.is_float:
            raise DSLTypeError("~ needs an integer or a Boolean", user_location(3))
        ones = bld.constant_int(1 if t.is_boolean else -1, t.ir_type)
        return t.from_ir(bld.op1("arith.xori", [a.ir(), ones], t.ir_type))
    raise AssertionError(op)


def select(cond, a, b):
    """cond ? a : b for numbers (a static condition picks in Python)."""
    cond = cond if isinstance(cond, Numeric) else Boolean(cond)
    if cond.is_static:
        return a if cond._v else b
    a2, b2, t = coerce_pair(a, b)
    if any(isinstance(x._v, HostRef) for x in (cond, a2, b2)) and not trace.in_kernel():
        return hooks.defer_on_host(lambda c, x, y: select(c, x, y), (cond, a2, b2), t, op=("select",))  # at each call
    bld = trace.builder()
    return t.from_ir(bld.op1("arith.select", [cond.ir(), a2.ir(), b2.ir()], t.ir_type))


def _extremum(which, a, b):
    """min_ or max_ ("min" / "max") of two numbers."""
    a, b, t = coerce_pair(a, b)
    if a.is_static and b.is_static:
        return t((min if which == "min" else max)(a._v, b._v))
    if any(isinstance(x._v, (HostRef, SymInt)) for x in (a, b)) and trace.on_host():
        return hooks.defer_on_host(min_ if which == "min" else max_, (a, b), t, op=(which,))  # at each call
    if which == "min" and t.is_integer and t.width in (32, 64) and isinstance(a._v, (SymInt, int)) and \
            isinstance(b._v, (SymInt, int)):
        return select(a < b, a, b)
    bld = trace.builder()
    name = f"arith.{which}imumf" if t.is_float else f"arith.{which}{'si' if t.signed else 'ui'}"
    return t.from_ir(bld.op1(name, [a.ir(), b.ir()], t.ir_type))


def min_(a, b):
    return _extremum("min", a, b)


def max_(a, b):
    return _extremum("max", a, b)
