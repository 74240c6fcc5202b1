"""cute.arch's numeric conversions with CuTe DSL 4.8.1's signatures: f32 to a TF32 operand, f32 to bf16 (one value
or a pair, saturating to the finite range), sign extension of int4 values held in 8-bit containers, and int8/int4
to f32 or bf16 (one value or a vector of them).

Every target of warpweave has what these need, so they are written here with LLVM's generic conversions and NVVM's
intrinsics: the code generator picks each target's instructions. The integer conversions are exact (an int8 or
int4 is exactly representable in f32 and bf16), so they give CuTe DSL's values on every target, including the
ones where CuTe DSL 4.8.1 itself does not compile them (the scalar int8 to bf16 before compute capability 9.0,
the int4 vector to bf16 on compute capability 8.x).

Operands are what CuTe DSL takes, an IR value (ir.Value: a scalar, or a vector of the stated length), and also
what warpweave's user code holds: a DSL number, a TensorSSA, or a tuple of numbers. A scalar result is a DSL
number (Int32 for the TF32 operand, BFloat16); a vector result is an IR vector of CuTe DSL's type, which
cute.TensorSSA(result, shape, dtype) takes."""
from __future__ import annotations

import struct

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import Type, Value, VectorType, emit
from ..base.markers import accept_locations
from ..values.numeric import BFloat16, Float32, Int4, Int8, Int32, Numeric
from ..values.tensor_ssa import TensorSSA


def _err(msg, cls=DSLTypeError):
    return cls(msg, user_location(4))


def _in_kernel(name: str):
    if not trace.in_kernel():
        raise _err(f"cute.arch.{name} converts values inside a @cute.kernel function")


def _mt(t) -> str:
    """A DSL type's IR type (its lanes in a vector) as text."""
    return str(t.mlir_type)


def _rt(t) -> str:
    """A DSL type's register type (what its numbers hold) as text."""
    return str(t.register_type)


def _vector(x, name: str, length, elems: tuple, what: str) -> Value:
    """x as an IR vector of `length` lanes of one of the element types `elems` (IR type texts)."""
    if isinstance(x, TensorSSA):
        x = x.ir_value()
    elif isinstance(x, (tuple, list)):
        if not x or not all(isinstance(v, Numeric) and _mt(type(v)) in elems for v in x) or \
                len({type(v) for v in x}) != 1:
            raise _err(f"cute.arch.{name}: a tuple operand holds {what} numbers of one type")
        dt = type(x[0])
        x = emit("vector.from_elements", [v.ir_value() if _rt(dt) == _mt(dt) else
                                          emit("arith.trunci", [v.ir_value()], [_mt(dt)])[0] for v in x],
                 [f"vector<{len(x)}x{_mt(dt)}>"])[0]
    if not isinstance(x, Value) or not VectorType.isinstance(x.type):
        raise _err(f"cute.arch.{name} takes a vector of {what} values (an IR vector, a TensorSSA or a tuple), got "
                   f"{getattr(x, 'type', type(x).__name__)}")
    vt = VectorType(x.type)
    if vt.rank != 1 or vt.element_type.text not in elems or (length is not None and vt.shape[0] != length):
        n = "n" if length is None else length
        raise _err(f"cute.arch.{name} takes a vector<{n}x{elems[0]}> ({what}), got {x.type}")
    return x


def _lanes(v: Value) -> list:
    vt = VectorType(v.type)
    t = vt.element_type.text
    return [emit("vector.extract", [v], [t], f"static_position = array<i64: {i}>")[0] for i in range(vt.shape[0])]


def _join(lanes: list, t: str) -> Value:
    return emit("vector.from_elements", lanes, [f"vector<{len(lanes)}x{t}>"])[0]


def _scalar(x, name: str, t, what: str) -> Value:
    """x as an IR scalar of the DSL type t (a number of t, a Python number, or an IR value of t's type)."""
    if isinstance(x, Value) and not VectorType.isinstance(x.type):
        if x.type.text not in (_mt(t), _rt(t)):
            raise _err(f"cute.arch.{name} takes {what}, got an IR value of {x.type}")
        return x if x.type.text == _mt(t) else emit("arith.trunci", [x], [_mt(t)])[0]
    if isinstance(x, bool) or not isinstance(x, (int, float, Numeric)) or \
            (isinstance(x, Numeric) and type(x) is not t and not (t is Float32 and isinstance(x, (int, float)))):
        raise _err(f"cute.arch.{name} takes {what}, got {type(x).__name__}")
    v = (x if isinstance(x, t) else t(x)).ir_value()
    return v if _mt(t) == _rt(t) else emit("arith.trunci", [v], [_mt(t)])[0]


def _f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _tf32_rna(bits: int) -> int:
    """f32 bits rounded to TF32's 10 fraction bits, to nearest with ties away from zero; the 13 bits below are 0."""
    if (bits & 0x7F800000) == 0x7F800000:   # inf and NaN keep their class
        return bits & 0xFFFFE000 if bits & 0x007FFFFF == 0 else bits | 0x00400000
    return ((bits & 0x7FFFFFFF) + 0x1000 & 0xFFFFE000) | (bits & 0x80000000)


def cvt_f32_tf32(src_f32, *, loc=None, ip=None):
    """One f32 value as a TF32 operand of a tensor-core MMA: rounded to nearest (ties away from zero) to TF32's
    10 fraction bits, in a 32-bit register (an Int32 of the f32 bit pattern, the 13 low bits zero)."""
    name = "cvt_f32_tf32"
    if isinstance(src_f32, (int, float)) and not isinstance(src_f32, bool) or \
            (isinstance(src_f32, Float32) and src_f32.is_static):
        bits = _tf32_rna(_f32_bits(float(src_f32.value if isinstance(src_f32, Numeric) else src_f32)))
        return Int32(bits - (1 << 32) if bits >> 31 else bits)
    v = _scalar(src_f32, name, Float32, "an f32 value")
    _in_kernel(name)
    return Int32(emit("llvm.call_intrinsic", [v], ["i32"], 'intrin = "llvm.nvvm.f2tf32.rna", '
                      "op_bundle_sizes = array<i32>, operandSegmentSizes = array<i32: 1, 0>")[0])


def cvt_f32_bf16(src_f32, *, loc=None, ip=None):
    """One f32 value rounded to nearest (ties to even) to a BFloat16."""
    if isinstance(src_f32, Float32) and src_f32.is_static:
        return BFloat16(src_f32)
    v = _scalar(src_f32, "cvt_f32_bf16", Float32, "an f32 value")
    _in_kernel("cvt_f32_bf16")
    return BFloat16(emit("arith.truncf", [v], ["bf16"])[0])


def _bf16x2_satfinite(lo: Value, hi: Value) -> Value:
    """vector<2xbf16> (lo, hi) of two f32 values, rounded to nearest and clamped to bf16's finite range."""
    return emit("llvm.call_intrinsic", [hi, lo], ["vector<2xbf16>"],   # the intrinsic's first operand is the high
                'intrin = "llvm.nvvm.ff2bf16x2.rn.satfinite", op_bundle_sizes = array<i32>, '
                "operandSegmentSizes = array<i32: 2, 0>")[0]


def cvt_f32x2_bf16x2(src_vec2, *, loc=None, ip=None):
    """A vector<2xf32> rounded to nearest (ties to even) to a vector<2xbf16>, saturating: a value beyond bf16's
    finite range becomes its largest finite value of that sign (NaN stays NaN). Lane 0 is the low half of the
    packed word."""
    _in_kernel("cvt_f32x2_bf16x2")
    v = _vector(src_vec2, "cvt_f32x2_bf16x2", 2, ("f32",), "f32")
    lo, hi = _lanes(v)
    return _bf16x2_satfinite(lo, hi)


def _i8_words(lanes: list) -> list:
    """The i8 lanes as i32 words of four (lane 0 in the low byte), the last one padded with zero bytes."""
    words = []
    for k in range(0, len(lanes), 4):
        group = lanes[k:k + 4]
        group += [Int8(0).ir_value()] * (4 - len(group))
        words.append(emit("llvm.bitcast", [_join(group, "i8")], ["i32"])[0])
    return words


def _word_bytes(word: Value, n: int) -> list:
    return _lanes(emit("llvm.bitcast", [word], ["vector<4xi8>"])[0])[:n]


def _sext_nibbles(word: Value) -> Value:
    """Each byte's low 4 bits sign-extended to the byte: ((w & 0x0F0F0F0F) + 0x78787878) ^ 0x78787878, which maps
    0..7 to 0..7 and 8..15 to 0xF8..0xFF without a carry between bytes (4 bytes in 3 integer operations)."""
    c = [Int32(k).ir_value() for k in (0x0F0F0F0F, 0x78787878)]
    w = emit("arith.andi", [word, c[0]], ["i32"])[0]
    w = emit("arith.addi", [w, c[1]], ["i32"])[0]
    return emit("arith.xori", [w, c[1]], ["i32"])[0]


def _sext_unpacked(v: Value) -> Value:
    lanes = _lanes(v)
    out = []
    for k, w in enumerate(_i8_words(lanes)):
        out += _word_bytes(_sext_nibbles(w), min(4, len(lanes) - 4 * k))
    return _join(out, "i8")


def sext_unpacked_i4_i8_intrinsic(vec_unpacked_i4, length: int, *, loc=None, ip=None):
    """Sign extension of int4 values unpacked in 8-bit containers (each byte's low 4 bits) to int8: a vector of
    `length` i8 lanes in, the vector<length x i8> of their values in [-8, 7] out. Only each byte's low 4 bits are
    read (a container's high bits may be its sign extension already, or zero)."""
    name = "sext_unpacked_i4_i8_intrinsic"
    _in_kernel(name)
    if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
        raise _err(f"cute.arch.{name}: length is a positive Python int (the vector's length), got {length!r}",
                   DSLValueError)
    return _sext_unpacked(_vector(vec_unpacked_i4, name, length, ("i8",), "unpacked int4"))


def sext_unpacked_i4x4_to_i8x4(src_vec4, *, loc=None, ip=None):
    """sext_unpacked_i4_i8_intrinsic of a vector of 4."""
    _in_kernel("sext_unpacked_i4x4_to_i8x4")
    return _sext_unpacked(_vector(src_vec4, "sext_unpacked_i4x4_to_i8x4", 4, ("i8",), "unpacked int4"))


def _int_to_float(v: Value, ft: str) -> Value:
    n = VectorType(v.type).shape[0]
    return emit("arith.sitofp", [v], [f"vector<{n}x{ft}>"])[0]


def cvt_i8x2_to_f32x2(src_vec2, *, loc=None, ip=None):
    """A vector<2xi8> (signed) as a vector<2xf32> (exact)."""
    _in_kernel("cvt_i8x2_to_f32x2")
    return _int_to_float(_vector(src_vec2, "cvt_i8x2_to_f32x2", 2, ("i8",), "int8"), "f32")


def cvt_i8x4_to_f32x4(src_vec4, *, loc=None, ip=None):
    """A vector<4xi8> (signed) as a vector<4xf32> (exact)."""
    _in_kernel("cvt_i8x4_to_f32x4")
    return _int_to_float(_vector(src_vec4, "cvt_i8x4_to_f32x4", 4, ("i8",), "int8"), "f32")


def _to_bf16(v: Value) -> Value:
    """A vector of signed integers as bf16 (exact for int8 and int4), through f32 two lanes at a time."""
    f = _lanes(_int_to_float(v, "f32"))
    out = []
    for k in range(0, len(f) - 1, 2):
        out += _lanes(_bf16x2_satfinite(f[k], f[k + 1]))
    if len(f) % 2:
        out.append(emit("arith.truncf", [f[-1]], ["bf16"])[0])
    return _join(out, "bf16")


def _length(length, name):
    if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
        raise _err(f"cute.arch.{name}: length is a positive Python int (the vector's length), got {length!r}",
                   DSLValueError)
    return length


def cvt_i8_bf16(src_i8, *, loc=None, ip=None):
    """One int8 value as a BFloat16 (exact)."""
    if isinstance(src_i8, Int8) and src_i8.is_static:
        return BFloat16(float(src_i8.value))
    v = _scalar(src_i8, "cvt_i8_bf16", Int8, "an int8 value")
    _in_kernel("cvt_i8_bf16")
    return BFloat16(emit("arith.sitofp", [v], ["bf16"])[0])


def cvt_i8_bf16_intrinsic(vec_i8, length: int, *, loc=None, ip=None):
    """A vector of `length` int8 values as the vector<length x bf16> of the same values (exact)."""
    name = "cvt_i8_bf16_intrinsic"
    _in_kernel(name)
    return _to_bf16(_vector(vec_i8, name, _length(length, name), ("i8",), "int8"))


def cvt_i4_bf16(src_i4, *, loc=None, ip=None):
    """One int4 value (an i4) as a BFloat16 (exact)."""
    if isinstance(src_i4, Int4) and src_i4.is_static:
        return BFloat16(float(src_i4.value))
    v = _scalar(src_i4, "cvt_i4_bf16", Int4, "an int4 value")
    _in_kernel("cvt_i4_bf16")
    return BFloat16(emit("arith.sitofp", [v], ["bf16"])[0])


def _no_shuffle(with_shuffle, name):
    if with_shuffle is not False:
        raise _err(f"cute.arch.{name}: with_shuffle=True (int4 values in the interleaved order of a shuffled "
                   "weight layout) is not offered: only with_shuffle=False is", DSLValueError)


def _i4_vector(x, name, n, with_shuffle):
    _in_kernel(name)
    _no_shuffle(with_shuffle, name)
    return _to_bf16(_vector(x, name, n, ("i4",), "int4"))


def cvt_i4x2_to_bf16x2(src_vec2, *, with_shuffle: bool = False, loc=None, ip=None):
    """A vector<2xi4> (signed) as a vector<2xbf16> (exact)."""
    return _i4_vector(src_vec2, "cvt_i4x2_to_bf16x2", 2, with_shuffle)


def cvt_i4x4_to_bf16x4(src_vec4, *, with_shuffle: bool = False, loc=None, ip=None):
    """A vector<4xi4> (signed) as a vector<4xbf16> (exact)."""
    return _i4_vector(src_vec4, "cvt_i4x4_to_bf16x4", 4, with_shuffle)


def cvt_i4x8_to_bf16x8(src_vec8, *, with_shuffle: bool = False, loc=None, ip=None):
    """A vector<8xi4> (signed) as a vector<8xbf16> (exact)."""
    return _i4_vector(src_vec8, "cvt_i4x8_to_bf16x8", 8, with_shuffle)


def cvt_i4_bf16_intrinsic(vec_i4, length: int, *, with_shuffle: bool = False, loc=None, ip=None):
    """A vector of `length` int4 values as the vector<length x bf16> of the same values (exact)."""
    name = "cvt_i4_bf16_intrinsic"
    return _i4_vector(vec_i4, name, _length(length, name), with_shuffle)


NAMES = [f.__name__ for f in (cvt_f32_tf32, cvt_f32_bf16, cvt_f32x2_bf16x2, sext_unpacked_i4_i8_intrinsic,
                              sext_unpacked_i4x4_to_i8x4, cvt_i8x2_to_f32x2, cvt_i8x4_to_f32x4, cvt_i8_bf16,
                              cvt_i8_bf16_intrinsic, cvt_i4_bf16, cvt_i4x2_to_bf16x2, cvt_i4x4_to_bf16x4,
                              cvt_i4x8_to_bf16x8, cvt_i4_bf16_intrinsic)]

__all__ = list(NAMES)

accept_locations(globals(), __all__)
