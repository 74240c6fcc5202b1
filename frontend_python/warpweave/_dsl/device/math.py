"""Elementwise math on DSL numbers and TensorSSA values (cute.math).

Each function takes a DSL float (or a Python number, then Float32), or a TensorSSA, which it maps value by value.
Static inputs are computed in Python, rounded to the type. Dynamic ones become `math` dialect ops, which the
compiler lowers to accurate f32 code (polynomials, as NVPTX has no libm); f16 and bf16 compute in f32 and round
back. `fastmath=True` picks the hardware's approximate forms instead (ex2/lg2/sin/cos/rsqrt/sqrt/tanh .approx,
reached through NVVM intrinsics or LLVM's `afn` flag), as CUDA's `__expf` and `-use_fast_math` do: a few ulp,
denormals flushed to zero.
"""
from __future__ import annotations

import builtins as _builtins
import enum as _enum
import math as _pymath

from ..base import trace
from ..base.markers import accept_locations
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..host.host_values import defer, is_host
from ..values import hooks
from ..values.numeric import (
    BFloat16, Float, Float16, Float32, Float64, Numeric, TFloat32, as_numeric, coerce_pair, max_, min_,
)
from ..values.tensor import TensorSSA

_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_LOG10_2 = 0.30102999566398120


def _as_float(x, fname):
    if isinstance(x, Numeric):
        if isinstance(x, Float):
            return x
        if x.is_integer or x.is_boolean:
            return Float32(x)
    if isinstance(x, bool):
        return Float32(float(x))
    if isinstance(x, (int, float)):
        return Float32(float(x))
    raise DSLTypeError(f"cute.math.{fname}: expected a DSL float, a Python number or a TensorSSA, got "
                       f"{type(x).__name__}", user_location(3))


def _compute_type(t):
    """The type an op computes in: f16/bf16 (and the 8-bit and smaller floats) go through f32."""
    if t is Float64 or t is Float32:
        return t
    if t is TFloat32:
        return Float32
    return Float32


def _call_intrinsic(b, name, operands, result_type, fastmath=None):
    props = f'intrin = "{name}", op_bundle_sizes = array<i32>, operandSegmentSizes = array<i32: {len(operands)}, 0>'
    if fastmath:
        props += f", fastmathFlags = #llvm.fastmath<{fastmath}>"
    return b.op1("llvm.call_intrinsic", list(operands), result_type, props)


_FM = "fastmath = #arith.fastmath<afn>"

# name -> (Python function for static values, math dialect op)
_UNARY = {
    "exp": (_pymath.exp, "math.exp"), "exp2": (lambda x: 2.0 ** x, "math.exp2"), "log": (_pymath.log, "math.log"),
    "log2": (_pymath.log2, "math.log2"), "log10": (_pymath.log10, "math.log10"),
    "sqrt": (_pymath.sqrt, "math.sqrt"), "rsqrt": (lambda x: 1.0 / _pymath.sqrt(x), "math.rsqrt"),
    "sin": (_pymath.sin, "math.sin"), "cos": (_pymath.cos, "math.cos"), "tan": (_pymath.tan, "math.tan"),
    "tanh": (_pymath.tanh, "math.tanh"), "sinh": (_pymath.sinh, "math.sinh"), "cosh": (_pymath.cosh, "math.cosh"),
    "asin": (_pymath.asin, "math.asin"), "acos": (_pymath.acos, "math.acos"), "atan": (_pymath.atan, "math.atan"),
    "asinh": (_pymath.asinh, "math.asinh"), "acosh": (_pymath.acosh, "math.acosh"),
    "atanh": (_pymath.atanh, "math.atanh"),
    "erf": (_pymath.erf, "math.erf"), "erfc": (_pymath.erfc, "math.erfc"), "expm1": (_pymath.expm1, "math.expm1"),
    "log1p": (_pymath.log1p, "math.log1p"),
    "cbrt": (lambda x: _pymath.copysign(_builtins.abs(x) ** (1 / 3), x), "math.cbrt"),
    "floor": (_pymath.floor, "math.floor"), "ceil": (_pymath.ceil, "math.ceil"), "trunc": (_pymath.trunc, "math.trunc"),
    "round": (lambda x: _pymath.copysign(_pymath.floor(_builtins.abs(x) + 0.5), x), "math.round"),
    "roundeven": (lambda x: float(_builtins.round(x)), "math.roundeven"), "absf": (_builtins.abs, "math.absf"),
}


def _static_unary(name, fn, x: float) -> float:
    try:
        return float(fn(x))
    except (ValueError, OverflowError, ZeroDivisionError):
        # Outside the function's domain: IEEE's answer (nan, or inf where it diverges).
        if name in ("exp", "exp2", "expm1", "sinh", "cosh"):
            return _pymath.inf if x > 0 else (0.0 if name != "sinh" else -_pymath.inf)
        if name in ("log", "log2", "log10", "log1p") and x == (-1.0 if name == "log1p" else 0.0):
            return -_pymath.inf
        if name == "rsqrt" and x == 0:
            return _pymath.copysign(_pymath.inf, x)
        if name == "atanh" and _builtins.abs(x) == 1:
            return _pymath.copysign(_pymath.inf, x)
        return _pymath.nan


def _fast_f32(b, name, v):
    """The approximate form of `name` on an f32 SSA value, or None where there is none."""
    if name == "exp2":
        return _call_intrinsic(b, "llvm.nvvm.ex2.approx.ftz.f", [v], "f32")
    if name == "exp":
        s = b.op1("arith.mulf", [v, b.constant_float(_LOG2E, "f32")], "f32")
        return _call_intrinsic(b, "llvm.nvvm.ex2.approx.ftz.f", [s], "f32")
    if name in ("log2", "log", "log10"):
        r = _call_intrinsic(b, "llvm.nvvm.lg2.approx.ftz.f", [v], "f32")
        if name == "log2":
            return r
        return b.op1("arith.mulf", [r, b.constant_float(_LN2 if name == "log" else _LOG10_2, "f32")], "f32")
    if name in ("sin", "cos", "rsqrt", "sqrt"):
        return _call_intrinsic(b, f"llvm.nvvm.{name}.approx.ftz.f", [v], "f32")
    if name == "tan":
        s = _call_intrinsic(b, "llvm.nvvm.sin.approx.ftz.f", [v], "f32")
        c = _call_intrinsic(b, "llvm.nvvm.cos.approx.ftz.f", [v], "f32")
        return b.op1("arith.divf", [s, c], "f32", "fastmath = #arith.fastmath<arcp,afn>")
    if name == "tanh":
        # LLVM selects tanh.approx for llvm.tanh with afn (sm_75 and later: every target warpweave has).
        return b.op1("llvm.intr.tanh", [v], "f32", "fastmathFlags = #llvm.fastmath<afn>")
    return None


def _host_value(x) -> bool:
    """A number the host side of a @cute.jit function knows only at each call (host_values.py)."""
    return is_host(x) and not trace.in_kernel()


class RoundingMode(str, _enum.Enum):
    """IEEE rounding of a correctly rounded result (cute.math.sqrt's rounding=)."""
    NEAREST_EVEN = "rn"
    ZERO = "rz"
    UP = "rp"
    DOWN = "rm"


# The keywords each function takes beyond fastmath (as CuTe DSL's cute.math has them), and the hardware
# instruction family `approx=True` selects.
_APPROX_NAME = {"sqrt": "sqrt", "rsqrt": "rsqrt", "exp2": "ex2", "log2": "lg2", "sin": "sin", "cos": "cos",
                "tanh": "tanh"}
_KEYWORDS = {"sqrt": ("approx", "ftz", "rounding"), "rsqrt": ("approx", "ftz"), "exp2": ("approx", "ftz"),
             "log2": ("approx", "ftz"), "sin": ("approx", "ftz"), "cos": ("approx", "ftz"), "tanh": ("approx",)}


def _check_modes(name, approx, ftz, rounding):
    """The rounding mode as its suffix (or None); contradictory keywords are refused at the user's line."""
    if not isinstance(approx, bool) or not isinstance(ftz, bool):
        raise DSLTypeError(f"cute.math.{name}: approx= and ftz= take Python bools", user_location(4))
    mode = None
    if rounding is not None:
        try:
            mode = RoundingMode(rounding.value if isinstance(rounding, _enum.Enum) else rounding).value
        except ValueError:
            raise DSLValueError(f"cute.math.{name}: rounding={rounding!r} is not a rounding mode (one of "
                                f"{[m.name for m in RoundingMode]})", user_location(4)) from None
        if approx:
            raise DSLValueError(f"cute.math.{name}: rounding= names a correctly rounded result, approx=True an "
                                "approximate one: pass one of them", user_location(4))
    if ftz and not approx and mode is None:
        raise DSLValueError(f"cute.math.{name}: ftz=True flushes denormals of the approximate form"
                            f"{' or of a rounded one (rounding=)' if name == 'sqrt' else ''}: pass approx=True",
                            user_location(4))
    return mode


def _moded(b, name, ct, v, approx, ftz, mode):
    """The explicitly chosen form: the approximate instruction, or sqrt with its rounding."""
    if ct is Float64:
        if approx or ftz:
            raise DSLValueError(f"cute.math.{name}: approx= and ftz= are f32 forms; this value is f64",
                                user_location(5))
        return _call_intrinsic(b, f"llvm.nvvm.sqrt.{mode}.d", [v], "f64")
    if approx and (name == "tanh" or (name == "exp2" and not ftz)):
        # LLVM has no intrinsic for these two; it selects the approximate instruction for the generic op with afn.
        return b.op1(f"llvm.intr.{name}", [v], "f32", "fastmathFlags = #llvm.fastmath<afn>")
    kind = "approx" if approx else mode
    return _call_intrinsic(b, f"llvm.nvvm.{_APPROX_NAME[name]}.{kind}{'.ftz' if ftz else ''}.f", [v], "f32")


def _unary_scalar(name, x, fastmath, approx=False, ftz=False, mode=None):
    fn, op = _UNARY[name]
    x = _as_float(x, name)
    t = type(x)
    if x.is_static:
        return t(_static_unary(name, fn, float(x.value)))
    if _host_value(x):
        return defer(lambda s: _unary_scalar(name, s, fastmath, approx, ftz, mode), (x,), t)  # at each call
    ct = _compute_type(t)
    xc = x if t is ct else ct(x)
    b = trace.builder()
    v = xc.ir()
    r = _moded(b, name, ct, v, approx, ftz, mode) if approx or mode else None
    if r is None and fastmath and ct is Float32:
        r = _fast_f32(b, name, v)
    if r is None and name == "log10":
        # The compiler has no log10 expansion: log2 times log10(2) (one more rounding).
        r = b.op1("math.log2", [v], ct.ir_type, _FM if fastmath else "")
        r = b.op1("arith.mulf", [r, b.constant_float(_LOG10_2, ct.ir_type)], ct.ir_type)
    if r is None:
        r = b.op1(op, [v], ct.ir_type, _FM if fastmath else "")
    out = ct.from_ir(r)
    return out if ct is t else t(out)


def _map(fn, *args):
    """fn over scalars, or value by value over TensorSSA arguments (a scalar argument broadcasts)."""
    tensors = [a for a in args if isinstance(a, TensorSSA)]
    if not tensors:
        return fn(*args)
    n = len(tensors[0].values)
    for t in tensors[1:]:
        if len(t.values) != n:
            raise DSLValueError(f"elementwise math on TensorSSA values of {n} and {len(t.values)} elements",
                                user_location(3))
    vals = [fn(*[a.values[i] if isinstance(a, TensorSSA) else a for a in args]) for i in range(n)]
    dt = type(vals[0]) if vals else tensors[0].dtype
    return TensorSSA(vals, tensors[0].shape, dt)


def _make_unary(name, doc):
    keywords = _KEYWORDS.get(name, ())
    if not keywords:
        def f(a, fastmath: bool = False):
            return _map(lambda x: _unary_scalar(name, x, fastmath), a)
    elif "rounding" in keywords:
        def f(a, fastmath: bool = False, approx: bool = False, ftz: bool = False, rounding=None):
            mode = _check_modes(name, approx, ftz, rounding)
            return _map(lambda x: _unary_scalar(name, x, fastmath, approx, ftz, mode), a)
    elif "ftz" in keywords:
        def f(a, fastmath: bool = False, approx: bool = False, ftz: bool = False):
            mode = _check_modes(name, approx, ftz, None)
            return _map(lambda x: _unary_scalar(name, x, fastmath, approx, ftz, mode), a)
    else:
        def f(a, fastmath: bool = False, approx: bool = False):
            _check_modes(name, approx, False, None)
            return _map(lambda x: _unary_scalar(name, x, fastmath, approx), a)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


exp = _make_unary("exp", "e**a. fastmath: ex2.approx of a*log2(e).")
exp2 = _make_unary("exp2", "2**a. fastmath: ex2.approx.ftz.")
log = _make_unary("log", "The natural logarithm. fastmath: lg2.approx times ln 2.")
log2 = _make_unary("log2", "log2(a). fastmath: lg2.approx.ftz.")
log10 = _make_unary("log10", "log10(a). fastmath: lg2.approx times log10(2).")
sqrt = _make_unary("sqrt", "The square root (correctly rounded; fastmath: sqrt.approx).")
rsqrt = _make_unary("rsqrt", "1/sqrt(a). fastmath: rsqrt.approx.")
sin = _make_unary("sin", "sin(a), a in radians. fastmath: sin.approx (accurate for |a| up to about pi).")
cos = _make_unary("cos", "cos(a). fastmath: cos.approx.")
tan = _make_unary("tan", "tan(a). fastmath: sin.approx / cos.approx.")
tanh = _make_unary("tanh", "tanh(a). fastmath: tanh.approx.")
sinh = _make_unary("sinh", "sinh(a).")
cosh = _make_unary("cosh", "cosh(a).")
asin = _make_unary("asin", "asin(a).")
acos = _make_unary("acos", "acos(a).")
atan = _make_unary("atan", "atan(a).")
asinh = _make_unary("asinh", "asinh(a).")
acosh = _make_unary("acosh", "acosh(a).")
atanh = _make_unary("atanh", "atanh(a).")
erf = _make_unary("erf", "The error function.")
erfc = _make_unary("erfc", "1 - erf(a).")
expm1 = _make_unary("expm1", "e**a - 1, accurate near 0.")
log1p = _make_unary("log1p", "log(1 + a), accurate near 0.")
cbrt = _make_unary("cbrt", "The cube root.")
floor = _make_unary("floor", "The largest integral value not above a.")
ceil = _make_unary("ceil", "The smallest integral value not below a.")
trunc = _make_unary("trunc", "a rounded toward zero.")
round = _make_unary("round", "a rounded to the nearest integral value, halves away from zero.")  # noqa: A001
roundeven = _make_unary("roundeven", "a rounded to the nearest integral value, halves to even.")
absf = _make_unary("absf", "|a| of a float.")


def abs(a, fastmath: bool = False):  # noqa: A001
    """|a| of a float or an integer (keeps the type)."""
    def one(x):
        if isinstance(x, Numeric) and not isinstance(x, Float):
            return x.__abs__()
        return _unary_scalar("absf", x, False)
    return _map(one, a)


def _binary_float(name, a, b, fastmath):
    if isinstance(a, TensorSSA) or isinstance(b, TensorSSA):
        return _map(lambda x, y: _binary_float(name, x, y, fastmath), a, b)
    x, y = _as_float(a, name), _as_float(b, name)
    x, y, t = coerce_pair(x, y)
    if x.is_static and y.is_static:
        fx, fy = float(x.value), float(y.value)
        if name == "atan2":
            return t(_pymath.atan2(fx, fy))
        if name == "copysign":
            return t(_pymath.copysign(fx, fy))
        if name == "pow":
            try:
                return t(_pymath.pow(fx, fy))
            except (ValueError, OverflowError, ZeroDivisionError):
                return t(_pymath.nan if fx < 0 else _pymath.inf)
        raise AssertionError(name)
    if _host_value(x) or _host_value(y):
        return defer(lambda p, q: _binary_float(name, p, q, fastmath), (x, y), t)  # at each call
    ct = _compute_type(t)
    xs, ys = (x, y) if ct is t else (ct(x), ct(y))
    bld = trace.builder()
    op = {"atan2": "math.atan2", "copysign": "math.copysign", "pow": "math.powf"}[name]
    r = ct.from_ir(bld.op1(op, [xs.ir(), ys.ir()], ct.ir_type, _FM if fastmath else ""))
    return r if ct is t else t(r)


def atan2(a, b, fastmath: bool = False):
    """The angle of the point (b, a): atan(a / b) in the right quadrant."""
    return _binary_float("atan2", a, b, fastmath)


def copysign(a, b):
    """|a| with the sign of b."""
    return _binary_float("copysign", a, b, False)


def pow(a, b, fastmath: bool = False):  # noqa: A001
    """a**b for floats."""
    return _binary_float("pow", a, b, fastmath)


def fma(a, b, c):
    """a*b + c with one rounding."""
    if any(isinstance(v, TensorSSA) for v in (a, b, c)):
        return _map(fma, a, b, c)
    x, y, z = (_as_float(v, "fma") for v in (a, b, c))
    x, y, t = coerce_pair(x, y)
    x, z, t = coerce_pair(x, z)
    y = t(y) if type(y) is not t else y
    if x.is_static and y.is_static and z.is_static:
        fx, fy, fz = float(x.value), float(y.value), float(z.value)
        from fractions import Fraction  # here: its decimal module would cost every import of warpweave ~3 ms
        if all(_pymath.isfinite(v) for v in (fx, fy, fz)):
            return t(float(Fraction(fx) * Fraction(fy) + Fraction(fz)))
        return t(fx * fy + fz)
    if _host_value(x) or _host_value(y) or _host_value(z):
        return defer(fma, (x, y, z), t)  # computed at each call (host_values.py)
    ct = _compute_type(t)
    if ct is not t:
        return t(fma(ct(x), ct(y), ct(z)))
    bld = trace.builder()
    return t.from_ir(bld.op1("math.fma", [x.ir(), y.ir(), z.ir()], t.ir_type))


def rcp(a, approx: bool = False, ftz: bool = False):
    """1/a; approx picks rcp.approx (ftz flushes denormals)."""
    def one(x):
        x = _as_float(x, "rcp")
        t = type(x)
        if x.is_static:
            v = float(x.value)
            return t(_pymath.copysign(_pymath.inf, v) if v == 0 else 1.0 / v)
        if approx and t is Float32:
            if not ftz:
                return t.from_ir(trace.builder().op1("arith.divf", [Float32(1.0).ir(), x.ir()], "f32",
                                                     "fastmath = #arith.fastmath<arcp,afn>"))
            return t.from_ir(_call_intrinsic(trace.builder(), "llvm.nvvm.rcp.approx.ftz.f", [x.ir()], "f32"))
        return t(1.0) / x
    return _map(one, a)


def _fold(fn, args, name):
    if not args:
        raise DSLTypeError(f"{name} expects at least one argument", user_location(3))
    if len(args) == 1:
        only = args[0]
        if isinstance(only, (list, tuple)):
            return _fold(fn, tuple(only), name)
        if isinstance(only, TensorSSA):
            return only.reduce(name.split(".")[-1], None)
        return only
    acc = args[0]
    for x in args[1:]:
        if isinstance(acc, TensorSSA) or isinstance(x, TensorSSA):
            acc = _map(fn, acc, x)
        elif not isinstance(acc, Numeric) and not isinstance(x, Numeric) and not hasattr(acc, "__ww_int__") \
                and not hasattr(x, "__ww_int__"):
            acc = (_builtins.min if fn is min_ else _builtins.max)(acc, x)    # plain Python values stay Python
        else:
            acc = fn(acc if isinstance(acc, Numeric) else as_numeric(acc),
                     x if isinstance(x, Numeric) else x)
    return acc


def max(*args, fastmath: bool = False):  # noqa: A001
    """The largest of the arguments (DSL numbers, Python numbers, TensorSSA values elementwise); a NaN argument
    gives NaN. One TensorSSA argument: its largest value."""
    return _fold(max_, args, "max")


def min(*args, fastmath: bool = False):  # noqa: A001
    """The smallest of the arguments (see max)."""
    return _fold(min_, args, "min")


@hooks.min_max.register
def _builtin_min_max(name, *args):
    """Python's min / max called in traced code with a DSL number (tracing/branches.builtin_min_max)."""
    return _FOLDS[name](*args)


__all__ = ["exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh",
           "asin", "acos", "atan", "asinh", "acosh", "atanh", "atan2", "erf", "erfc", "expm1", "log1p", "cbrt",
           "floor", "ceil", "trunc", "round", "roundeven", "abs", "absf", "copysign", "pow", "fma", "rcp", "max",
           "min", "RoundingMode"]


accept_locations(globals(), __all__)
_FOLDS = {"min": min, "max": max}  # as cute.math gives them (taking loc= and ip=)
