"""Floats narrower than LLVM's types (the 8-bit E4M3FN, E5M2 and IEEE-style E4M3, the microscaling E2M1, E2M3,
E3M2 and E8M0), converted with integer and f32 arithmetic, so that every target has them; a backend may offer a hardware
conversion atom instead. A value lives in an i8 register, its code in the low bits.

Encoding rounds to nearest even and saturates to the largest finite value (PTX's .rn.satfinite); NaN stays NaN
where the format has one, and saturates where it has none. E8M0 (unsigned powers of two, no zero) rounds toward
zero (PTX's .rz.satfinite): every positive value takes the largest power of two not above it, values below 2**-127
and non-positive ones the smallest code.
"""
from __future__ import annotations

import math
import struct

from ..base import trace


def round_to_binary(v: float, frac_bits: int, emin: int, max_finite: float) -> float:
    """v rounded to nearest even with frac_bits fraction bits and normals from 2**emin (IEEE-style, inf past
    max_finite), directly from the double (no double rounding through f32): BFloat16's static values."""
    if v == 0 or not math.isfinite(v):
        return v
    _, e = math.frexp(abs(v))
    q = max(e - 1, emin) - frac_bits
    r = round(math.ldexp(abs(v), -q)) * 2.0 ** q
    if r > max_finite:
        r = math.inf
    return math.copysign(r, v)


class Format:
    """The bits of one narrow float format. A plain class: numeric.py imports this module with warpweave, and a
    dataclass would cost every process ~2 ms to build."""
    __slots__ = ("width", "e_bits", "m_bits", "bias", "max_code", "nan_code", "ieee_special")

    def __init__(self, width: int, e_bits: int, m_bits: int, bias: int, max_code: int, nan_code: int | None,
                 ieee_special: bool):
        self.width, self.e_bits, self.m_bits, self.bias = width, e_bits, m_bits, bias
        self.max_code = max_code            # the largest finite magnitude's code
        self.nan_code = nan_code            # the magnitude code of NaN, if any
        self.ieee_special = ieee_special    # the all-ones exponent holds inf (m == 0) and NaN (E5M2)

    @property
    def sign_bit(self) -> int:
        return 1 << (self.width - 1)


_FORMATS = {
    "Float8E4M3FN": Format(8, 4, 3, 7, 0x7E, 0x7F, False),
    "Float8E5M2": Format(8, 5, 2, 15, 0x7B, 0x7F, True),
    "Float8E4M3": Format(8, 4, 3, 7, 0x77, 0x7F, True),
    "Float6E2M3FN": Format(6, 2, 3, 1, 0x1F, None, False),
    "Float6E3M2FN": Format(6, 3, 2, 3, 0x1F, None, False),
    "Float4E2M1FN": Format(4, 2, 1, 1, 0x7, None, False),
}
_E8M0 = "Float8E8M0FNU"


def _fmt(t) -> Format:
    return _FORMATS[t.__name__]


def has_nan(t) -> bool:
    return t.__name__ == _E8M0 or _fmt(t).nan_code is not None


def codes(t) -> range:
    """Every code of the format."""
    return range(1 << t.width)


def decode_static(t, code: int) -> float:
    if t.__name__ == _E8M0:
        return math.nan if code == 0xFF else 2.0 ** (code - 127)
    f = _fmt(t)
    sign = -1.0 if code & f.sign_bit else 1.0
    mag = code & (f.sign_bit - 1)
    e = mag >> f.m_bits
    m = mag & ((1 << f.m_bits) - 1)
    if f.nan_code is not None and not f.ieee_special and mag == f.nan_code:
        return math.nan
    if f.ieee_special and e == (1 << f.e_bits) - 1:
        return sign * math.inf if m == 0 else math.nan
    if e == 0:
        return sign * m * 2.0 ** (1 - f.bias - f.m_bits)
    return sign * (1 + m / (1 << f.m_bits)) * 2.0 ** (e - f.bias)


def encode_static(t, x: float) -> int:
    if t.__name__ == _E8M0:
        if math.isnan(x):
            return 0xFF
        if x <= 0:
            return 0
        if math.isinf(x):
            return 0xFE
        return min(max(math.frexp(x)[1] - 1 + 127, 0), 0xFE)
    f = _fmt(t)
    sign = f.sign_bit if math.copysign(1.0, x) < 0 else 0
    if math.isnan(x):
        return sign | (f.nan_code if f.nan_code is not None else f.max_code)
    a = abs(x)
    if a == 0:
        return sign
    if math.isinf(a):
        return sign | f.max_code
    e = max(math.frexp(a)[1] - 1, 1 - f.bias)
    r = round(math.ldexp(a, f.m_bits - e))   # exact scaling; Python rounds half to even
    code = (e + f.bias - 1) * (1 << f.m_bits) + r
    return sign | min(code, f.max_code)


# --- in a kernel -----------------------------------------------------------------------------------------------

def _decode_e8m0(b, u):
    c = lambda v: b.constant_int(v, "i32")  # noqa: E731
    bits = b.op1("arith.shli", [u, c(23)], "i32")
    # code 0 is 2**-127, an f32 subnormal; 0xFF is NaN
    is_zero = b.op1("arith.cmpi", [u, c(0)], "i1", "predicate = 0 : i64")
    bits = b.op1("arith.select", [is_zero, c(0x00400000), bits], "i32")
    is_nan = b.op1("arith.cmpi", [u, c(0xFF)], "i1", "predicate = 0 : i64")
    bits = b.op1("arith.select", [is_nan, c(0x7FC00000), bits], "i32")
    return b.op1("arith.bitcast", [bits], "f32")


def decode(t, byte_value: int) -> int:
    """An i8 SSA value holding a t code -> its f32 SSA value."""
    b = trace.builder()
    c = lambda v: b.constant_int(v, "i32")  # noqa: E731
    u = b.op1("arith.extui", [byte_value], "i32")
    if t.__name__ == _E8M0:
        return _decode_e8m0(b, u)
    f = _fmt(t)
    u = b.op1("arith.andi", [u, c((1 << f.width) - 1)], "i32")
    sign = b.op1("arith.shli", [b.op1("arith.andi", [u, c(f.sign_bit)], "i32"), c(32 - f.width)], "i32")
    e = b.op1("arith.andi", [b.op1("arith.shrui", [u, c(f.m_bits)], "i32"), c((1 << f.e_bits) - 1)], "i32")
    m = b.op1("arith.andi", [u, c((1 << f.m_bits) - 1)], "i32")
    # normal: sign | (e - bias + 127) << 23 | m << (23 - M)
    exp32 = b.op1("arith.shli", [b.op1("arith.addi", [e, c(127 - f.bias)], "i32"), c(23)], "i32")
    normal = b.op1("arith.ori", [b.op1("arith.ori", [sign, exp32], "i32"),
                                 b.op1("arith.shli", [m, c(23 - f.m_bits)], "i32")], "i32")
    normal_f = b.op1("arith.bitcast", [normal], "f32")
    # subnormal: +-m * 2^(1 - bias - M)
    mf = b.op1("arith.uitofp", [m], "f32")
    sub = b.op1("arith.mulf", [mf, b.constant_float(2.0 ** (1 - f.bias - f.m_bits), "f32")], "f32")
    sub_abs_bits = b.op1("arith.bitcast", [sub], "i32")
    sub_f = b.op1("arith.bitcast", [b.op1("arith.ori", [sub_abs_bits, sign], "i32")], "f32")
    is_sub = b.op1("arith.cmpi", [e, c(0)], "i1", "predicate = 0 : i64")
    r = b.op1("arith.select", [is_sub, sub_f, normal_f], "f32")
    nan = b.constant_float(math.nan, "f32")
    if f.ieee_special:
        is_special = b.op1("arith.cmpi", [e, c((1 << f.e_bits) - 1)], "i1", "predicate = 0 : i64")
        m_zero = b.op1("arith.cmpi", [m, c(0)], "i1", "predicate = 0 : i64")
        inf_bits = b.op1("arith.ori", [sign, c(0x7F800000)], "i32")
        inf = b.op1("arith.bitcast", [inf_bits], "f32")
        special = b.op1("arith.select", [m_zero, inf, nan], "f32")
        return b.op1("arith.select", [is_special, special, r], "f32")
    if f.nan_code is not None:
        mag = b.op1("arith.andi", [u, c(f.sign_bit - 1)], "i32")
        is_nan = b.op1("arith.cmpi", [mag, c(f.nan_code)], "i1", "predicate = 0 : i64")
        return b.op1("arith.select", [is_nan, nan, r], "f32")
    return r


def _encode_e8m0(b, bits):
    c = lambda v: b.constant_int(v, "i32")  # noqa: E731
    code = b.op1("arith.andi", [b.op1("arith.shrui", [bits, c(23)], "i32"), c(0xFF)], "i32")
    a = b.op1("arith.andi", [bits, c(0x7FFFFFFF)], "i32")
    is_nan = b.op1("arith.cmpi", [a, c(0x7F800000)], "i1", "predicate = 8 : i64")   # ugt
    is_inf = b.op1("arith.cmpi", [a, c(0x7F800000)], "i1", "predicate = 0 : i64")
    negative = b.op1("arith.cmpi", [bits, c(0)], "i1", "predicate = 2 : i64")       # slt: the sign bit
    code = b.op1("arith.select", [is_inf, c(0xFE), code], "i32")
    code = b.op1("arith.select", [negative, c(0), code], "i32")
    code = b.op1("arith.select", [is_nan, c(0xFF), code], "i32")
    return b.op1("arith.trunci", [code], "i8")


def encode(t, f32_value: int) -> int:
    """An f32 SSA value -> the i8 code of t (round to nearest even, saturating)."""
    b = trace.builder()
    c = lambda v: b.constant_int(v, "i32")  # noqa: E731
    bits = b.op1("arith.bitcast", [f32_value], "i32")
    if t.__name__ == _E8M0:
        return _encode_e8m0(b, bits)
    f = _fmt(t)
    sign = b.op1("arith.andi", [b.op1("arith.shrui", [bits, c(32 - f.width)], "i32"), c(f.sign_bit)], "i32")
    a = b.op1("arith.andi", [bits, c(0x7FFFFFFF)], "i32")
    is_nan = b.op1("arith.cmpi", [a, c(0x7F800000)], "i1", "predicate = 8 : i64")  # ugt
    # Clamp the magnitude (inf included) to twice the largest finite value, which saturates, so that the
    # scaled value below stays finite.
    limit = 2 * decode_static(t, f.max_code)
    limit_bits = struct.unpack("<I", struct.pack("<f", limit))[0]
    a = b.op1("arith.minui", [a, c(limit_bits)], "i32")
    exp32 = b.op1("arith.subi", [b.op1("arith.shrui", [a, c(23)], "i32"), c(127)], "i32")
    e = b.op1("arith.maxsi", [exp32, c(1 - f.bias)], "i32")
    # scale = 2^(M - e) as f32 bits: (M - e + 127) << 23
    scale_bits = b.op1("arith.shli", [b.op1("arith.subi", [c(f.m_bits + 127), e], "i32"), c(23)], "i32")
    scale = b.op1("arith.bitcast", [scale_bits], "f32")
    af = b.op1("arith.bitcast", [a], "f32")
    q = b.op1("arith.mulf", [af, scale], "f32")
    r = b.op1("math.roundeven", [q], "f32")
    ri = b.op1("arith.fptoui", [r], "i32")
    code = b.op1("arith.addi", [b.op1("arith.muli", [b.op1("arith.addi", [e, c(f.bias - 1)], "i32"),
                                                     c(1 << f.m_bits)], "i32"), ri], "i32")
    code = b.op1("arith.minui", [code, c(f.max_code)], "i32")
    code = b.op1("arith.select", [is_nan, c(f.nan_code if f.nan_code is not None else f.max_code), code], "i32")
    out = b.op1("arith.ori", [code, sign], "i32")
    return b.op1("arith.trunci", [out], "i8")

