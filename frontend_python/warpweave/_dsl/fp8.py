"""8-bit floats (E4M3FN, E5M2) converted with integer and f32 arithmetic, so that every target has them; a
backend may offer a hardware conversion atom instead. Encoding rounds to nearest even and saturates to the
largest finite value (PTX's .rn.satfinite); NaN stays NaN.
"""
from __future__ import annotations

import math
import struct

from . import trace

# (exponent bits, mantissa bits, bias, largest finite code, NaN code)
_FORMATS = {"Float8E4M3FN": (4, 3, 7, 0x7E, 0x7F), "Float8E5M2": (5, 2, 15, 0x7B, 0x7F)}


def _fmt(t):
    return _FORMATS[t.__name__]


def decode_static(t, code: int) -> float:
    e_bits, m_bits, bias, _, _ = _fmt(t)
    sign = -1.0 if code & 0x80 else 1.0
    e = (code >> m_bits) & ((1 << e_bits) - 1)
    m = code & ((1 << m_bits) - 1)
    if t.__name__ == "Float8E4M3FN" and e == 15 and m == 7:
        return math.nan
    if t.__name__ == "Float8E5M2" and e == 31:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - m_bits)
    return sign * (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)


def encode_static(t, x: float) -> int:
    e_bits, m_bits, bias, max_code, nan_code = _fmt(t)
    if math.isnan(x):
        return nan_code
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if a == 0:
        return sign
    e = max(math.floor(math.log2(a)) if math.isfinite(a) else 1 << 10, 1 - bias)
    q = a * 2.0 ** (m_bits - e) if math.isfinite(a) else math.inf
    r = round(q) if math.isfinite(q) else 1 << 30  # Python rounds half to even
    code = (e + bias - 1) * (1 << m_bits) + r
    return sign | min(code, max_code)


def _f32_bits(b, v):
    return b.op1("arith.bitcast", [v], "i32")


def decode(t, byte_value: int) -> int:
    """An i8 SSA value holding a t code -> its f32 SSA value."""
    e_bits, m_bits, bias, _, _ = _fmt(t)
    b = trace.builder()
    c = lambda v: b.constant_int(v, "i32")  # noqa: E731
    u = b.op1("arith.extui", [byte_value], "i32")
    sign = b.op1("arith.shli", [b.op1("arith.andi", [u, c(0x80)], "i32"), c(24)], "i32")
    e = b.op1("arith.andi", [b.op1("arith.shrui", [u, c(m_bits)], "i32"), c((1 << e_bits) - 1)], "i32")
    m = b.op1("arith.andi", [u, c((1 << m_bits) - 1)], "i32")
    # normal: sign | (e - bias + 127) << 23 | m << (23 - M)
    exp32 = b.op1("arith.shli", [b.op1("arith.addi", [e, c(127 - bias)], "i32"), c(23)], "i32")
    normal = b.op1("arith.ori", [b.op1("arith.ori", [sign, exp32], "i32"),
                                 b.op1("arith.shli", [m, c(23 - m_bits)], "i32")], "i32")
    normal_f = b.op1("arith.bitcast", [normal], "f32")
    # subnormal: +-m * 2^(1 - bias - M)
    mf = b.op1("arith.uitofp", [m], "f32")
    sub = b.op1("arith.mulf", [mf, b.constant_float(2.0 ** (1 - bias - m_bits), "f32")], "f32")
    sub_abs_bits = b.op1("arith.bitcast", [sub], "i32")
    sub_f = b.op1("arith.bitcast", [b.op1("arith.ori", [sub_abs_bits, sign], "i32")], "f32")
    is_sub = b.op1("arith.cmpi", [e, c(0)], "i1", "predicate = 0 : i64")
    r = b.op1("arith.select", [is_sub, sub_f, normal_f], "f32")
    nan = b.constant_float(math.nan, "f32")
    if t.__name__ == "Float8E4M3FN":
        is_nan = b.op1("arith.cmpi", [b.op1("arith.andi", [u, c(0x7F)], "i32"), c(0x7F)], "i1", "predicate = 0 : i64")
        return b.op1("arith.select", [is_nan, nan, r], "f32")
    is_special = b.op1("arith.cmpi", [e, c(31)], "i1", "predicate = 0 : i64")
    m_zero = b.op1("arith.cmpi", [m, c(0)], "i1", "predicate = 0 : i64")
    inf_bits = b.op1("arith.ori", [sign, c(0x7F800000)], "i32")
    inf = b.op1("arith.bitcast", [inf_bits], "f32")
    special = b.op1("arith.select", [m_zero, inf, nan], "f32")
    return b.op1("arith.select", [is_special, special, r], "f32")


def encode(t, f32_value: int) -> int:
    """An f32 SSA value -> the i8 code of t (round to nearest even, saturating)."""
    e_bits, m_bits, bias, max_code, nan_code = _fmt(t)
    b = trace.builder()
    c = lambda v: b.constant_int(v, "i32")  # noqa: E731
    bits = _f32_bits(b, f32_value)
    sign = b.op1("arith.andi", [b.op1("arith.shrui", [bits, c(24)], "i32"), c(0x80)], "i32")
    a = b.op1("arith.andi", [bits, c(0x7FFFFFFF)], "i32")
    exp32 = b.op1("arith.subi", [b.op1("arith.shrui", [a, c(23)], "i32"), c(127)], "i32")
    e = b.op1("arith.maxsi", [exp32, c(1 - bias)], "i32")
    # scale = 2^(M - e) as f32 bits: (M - e + 127) << 23
    scale_bits = b.op1("arith.shli", [b.op1("arith.subi", [c(m_bits + 127), e], "i32"), c(23)], "i32")
    scale = b.op1("arith.bitcast", [scale_bits], "f32")
    af = b.op1("arith.bitcast", [a], "f32")
    q = b.op1("arith.mulf", [af, scale], "f32")
    r = b.op1("math.roundeven", [q], "f32")
    ri = b.op1("arith.fptoui", [r], "i32")
    code = b.op1("arith.addi", [b.op1("arith.muli", [b.op1("arith.addi", [e, c(bias - 1)], "i32"), c(1 << m_bits)], "i32"),
                                ri], "i32")
    code = b.op1("arith.minui", [code, c(max_code)], "i32")
    is_nan = b.op1("arith.cmpi", [a, c(0x7F800000)], "i1", "predicate = 8 : i64")  # ugt
    code = b.op1("arith.select", [is_nan, c(nan_code), code], "i32")
    out = b.op1("arith.ori", [code, sign], "i32")
    return b.op1("arith.trunci", [out], "i8")


def convert_fp8(x, t):
    from .numeric import FLOAT8_TYPES, Float32, cast

    src = type(x)
    if src in FLOAT8_TYPES:
        f = Float32.from_ir(decode(src, x.ir()))
        return f if t is Float32 else cast(f, t)
    f = x if src is Float32 else cast(x, Float32)
    return t.from_ir(encode(t, f.ir()))
