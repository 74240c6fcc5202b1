"""Numeric types: names, parsing, static arithmetic and conversions, 8-bit float encodings."""
import math

import pytest

import warpweave as cutlass
from warpweave._dsl.values import fp8


def test_dtype_parsing_and_widths():
    assert cutlass.dtype("Float16") is cutlass.Float16
    assert cutlass.dtype(cutlass.BFloat16) is cutlass.BFloat16
    widths = {cutlass.Boolean: 1, cutlass.Int8: 8, cutlass.Uint16: 16, cutlass.Int32: 32, cutlass.Uint64: 64,
              cutlass.Float16: 16, cutlass.BFloat16: 16, cutlass.TFloat32: 32, cutlass.Float32: 32,
              cutlass.Float64: 64, cutlass.Float8E4M3FN: 8, cutlass.Float8E5M2: 8}
    for t, w in widths.items():
        assert t.width == w, t
    with pytest.raises(ValueError, match="unknown numeric type"):
        cutlass.dtype("Float17")


def test_static_arithmetic_follows_the_types():
    a, b = cutlass.Int32(7), cutlass.Int32(-2)
    assert (a + b).value == 5 and (a * b).value == -14
    assert (a // b).value == -4 and (a % b).value == -1  # Python's floor semantics
    assert (cutlass.Int8(127) + 1).value == -128         # wraps at the type's width
    assert (cutlass.Uint8(0) - 1).value == 255
    f = cutlass.Float16(1.0) / 3
    assert isinstance(f, cutlass.Float16) and abs(f.value - 1 / 3) < 1e-3
    assert isinstance(cutlass.Int32(3) * 1.5, cutlass.Float32)
    assert isinstance(cutlass.Float16(1) + cutlass.Float32(1), cutlass.Float32)
    assert (cutlass.Int32(5) < 7).value is True
    assert bool(cutlass.Boolean(True) & cutlass.Boolean(False)) is False
    assert cutlass.Float32(2.5).to(cutlass.Int32).value == 2


def test_conversions_round_like_the_hardware():
    assert cutlass.Float16(65504.0).value == 65504.0
    assert math.isinf(cutlass.Float16(1e6).value)
    assert cutlass.Float32(1 / 3).value != 1 / 3  # rounded to f32
    assert cutlass.Int32(3.9).value == 3


@pytest.mark.parametrize("t, values", [
    (cutlass.Float8E4M3FN, [(0.0, 0x00), (1.0, 0x38), (-2.0, 0xC0), (448.0, 0x7E), (1e9, 0x7E), (2 ** -9, 0x01),
                            (0.0625, 0x18)]),
    (cutlass.Float8E5M2, [(0.0, 0x00), (1.0, 0x3C), (-2.0, 0xC0), (57344.0, 0x7B), (1e9, 0x7B), (2 ** -16, 0x01)]),
])
def test_fp8_encodings(t, values):
    for x, code in values:
        assert fp8.encode_static(t, x) == code, (t, x)
        if abs(x) <= (448 if t is cutlass.Float8E4M3FN else 57344):
            assert fp8.decode_static(t, code) == x
    assert math.isnan(fp8.decode_static(t, fp8.encode_static(t, math.nan)))


@pytest.mark.parametrize("t", [cutlass.Float8E4M3FN, cutlass.Float8E5M2])
def test_fp8_round_trip_and_nearest_even(t):
    for code in range(256):
        v = fp8.decode_static(t, code)
        if math.isnan(v) or math.isinf(v):
            continue
        back = fp8.encode_static(t, v)
        assert fp8.decode_static(t, back) == v
    # Halfway between 1.0 and the next value rounds to the even code (1.0).
    m_bits = 3 if t is cutlass.Float8E4M3FN else 2
    half = 1.0 + 2.0 ** -(m_bits + 1)
    assert fp8.decode_static(t, fp8.encode_static(t, half)) == 1.0


def test_dynamic_values_have_no_python_truth_outside_kernels():
    x = cutlass.Int32._wrap(cutlass.cute.SymInt.symbol(5))
    with pytest.raises(TypeError, match="truth value"):
        bool(x)


def test_is_same_kind_groups_floats_integers_and_booleans():
    from warpweave._dsl.values.numeric import ALL_TYPES

    for a in ALL_TYPES:
        for b in ALL_TYPES:
            kind = lambda t: "float" if t.is_float else "int" if t.is_integer else "bool"  # noqa: E731
            assert a.is_same_kind(b) == (kind(a) == kind(b)) == b.is_same_kind(a), (a, b)
    assert cutlass.Float8E4M3FN.is_same_kind(cutlass.Float8E5M2) and cutlass.Int8.is_same_kind(cutlass.Uint8)
    assert not cutlass.Float16.is_same_kind(cutlass.Int16)
    with pytest.raises(TypeError, match="is_same_kind"):
        cutlass.Float16.is_same_kind(16)


@pytest.mark.parametrize("t", [cutlass.Uint32, cutlass.Int32, cutlass.Uint8, cutlass.Int64])
@pytest.mark.parametrize("mask", [~(1 << 31), -2, ~0, 0x7FFF, -(1 << 70) + 5])
def test_a_python_mask_in_a_bitwise_op_stands_for_its_bits(t, mask):
    """`x & ~(1 << 31)` clears bit 31 of any integer type: a Python int in &, | and ^ is its two's-complement bits,
    which give the result's bits exactly (whatever its magnitude); other operators still refuse what does not fit."""
    bits = (1 << t.width) - 1
    for v in (0, 1, bits, 0x5A5A5A5A5A5A5A5A & bits):
        x = t(v if not t.signed or v < 1 << (t.width - 1) else v - (1 << t.width))
        assert int((x & mask).value) & bits == v & mask & bits
        assert int((mask | x).value) & bits == (v | mask) & bits
        assert int((x ^ mask).value) & bits == (v ^ mask) & bits
        assert type(x & mask) is t
    with pytest.raises(OverflowError):
        t(1) + (1 << 70)
