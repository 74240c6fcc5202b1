"""Element types of the manifests on the host: their bit patterns, random values, and decoding, in numpy.

numpy rather than torch so that everything here (and every probe's reference) also runs on machines without a
GPU, where the tests exercise it. Values are drawn as bit patterns with a narrow exponent range and a short
mantissa, so that they are exactly representable in the type, never zero, and their products and short sums
are exact in float64: a mismatch then means a wrong element or a wrong instruction, not rounding.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ElementType:
    name: str
    bits: int
    kind: str            # "float", "int", "bits" (packed b1 values: compared bit for bit)
    signed: bool = False
    exp_bits: int = 0
    mant_bits: int = 0
    bias: int = 0
    # Random values keep only the top `rand_mant` mantissa bits, so that a value of this type also fits the
    # narrowest type the hardware may read it as (tf32 reads f32 registers with 10 mantissa bits).
    rand_mant: int = 0

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def code_dtype(self):
        return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[self.bytes]


_FLOAT = dict(kind="float", signed=True)
TYPES = {t.name: t for t in [
    ElementType("f16", 16, exp_bits=5, mant_bits=10, bias=15, rand_mant=10, **_FLOAT),
    ElementType("bf16", 16, exp_bits=8, mant_bits=7, bias=127, rand_mant=7, **_FLOAT),
    ElementType("tf32", 32, exp_bits=8, mant_bits=23, bias=127, rand_mant=10, **_FLOAT),
    ElementType("f32", 32, exp_bits=8, mant_bits=23, bias=127, rand_mant=10, **_FLOAT),
    ElementType("f64", 64, exp_bits=11, mant_bits=52, bias=1023, rand_mant=20, **_FLOAT),
    ElementType("e4m3", 8, exp_bits=4, mant_bits=3, bias=7, rand_mant=3, **_FLOAT),
    ElementType("e5m2", 8, exp_bits=5, mant_bits=2, bias=15, rand_mant=2, **_FLOAT),
    ElementType("s8", 8, "int", True), ElementType("u8", 8, "int"),
    ElementType("s16", 16, "int", True), ElementType("u16", 16, "int"),
    ElementType("s32", 32, "int", True), ElementType("u32", 32, "int"),
    ElementType("s64", 64, "int", True), ElementType("u64", 64, "int"),
    ElementType("b8", 8, "bits"), ElementType("b16", 16, "bits"), ElementType("b32", 32, "bits"),
    ElementType("b64", 64, "bits"),
]}


def element_type(name: str) -> ElementType:
    if name not in TYPES:
        raise KeyError(f"element type {name!r} is not known to the conformance probes")
    return TYPES[name]


def random_codes(t: ElementType, shape, rng: np.random.Generator, *, small_ints: bool = False) -> np.ndarray:
    """Random non-zero bit patterns of type t (uint64 array). Floats: normal numbers of magnitude in
    [2^-3, 2^2); integers: the full range, or |x| <= 2^20 for accumulators (small_ints)."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if t.kind == "float":
        sign = rng.integers(0, 2, shape, dtype=np.uint64)
        exp = rng.integers(t.bias - 3, t.bias + 2, shape, dtype=np.uint64)
        mant = rng.integers(0, 1 << t.rand_mant, shape, dtype=np.uint64) << np.uint64(t.mant_bits - t.rand_mant)
        return ((sign << np.uint64(t.bits - 1)) | (exp << np.uint64(t.mant_bits)) | mant).astype(np.uint64)
    if t.kind == "int":
        if small_ints:
            lo, hi = (-(1 << 20), 1 << 20) if t.signed else (1, 1 << 20)
        else:
            lo, hi = (-(1 << (t.bits - 1)), 1 << (t.bits - 1)) if t.signed else (1, 1 << t.bits)
        hi = min(hi, 1 << 62)
        lo = max(lo, -(1 << 62))
        v = rng.integers(lo, hi, shape, dtype=np.int64)
        v[v == 0] = 1
        return (v.astype(np.uint64) & np.uint64((1 << t.bits) - 1 if t.bits < 64 else (1 << 64) - 1))
    # bits: any non-zero pattern
    if t.bits == 64:
        v = rng.integers(0, 1 << 63, shape, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, shape, dtype=np.uint64)
    else:
        v = rng.integers(1, 1 << t.bits, shape, dtype=np.uint64)
    v[v == 0] = 1
    return v


def decode(t: ElementType, codes: np.ndarray) -> np.ndarray:
    """Bit patterns -> float64 (floats) or int64 (integers; bit types as unsigned values)."""
    codes = np.asarray(codes).astype(np.uint64)
    if t.kind == "float":
        if t.name == "f16":
            return codes.astype(np.uint16).view(np.float16).astype(np.float64)
        if t.name in ("f32", "tf32"):
            return codes.astype(np.uint32).view(np.float32).astype(np.float64)
        if t.name == "f64":
            return codes.view(np.float64).copy()
        if t.name == "bf16":
            return (codes.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
        # fp8: decoded by hand (numpy has no fp8 types). Finite values only; probes never draw NaN or inf.
        sign = np.where((codes >> np.uint64(t.bits - 1)) & np.uint64(1), -1.0, 1.0)
        exp = ((codes >> np.uint64(t.mant_bits)) & np.uint64((1 << t.exp_bits) - 1)).astype(np.int64)
        mant = (codes & np.uint64((1 << t.mant_bits) - 1)).astype(np.float64) / (1 << t.mant_bits)
        normal = sign * (1.0 + mant) * np.exp2((exp - t.bias).astype(np.float64))
        sub = sign * mant * np.exp2(float(1 - t.bias))
        return np.where(exp == 0, sub, normal)
    if t.kind == "int" and t.signed:
        v = codes.astype(np.int64)
        if t.bits < 64:
            v = np.where(v >= (1 << (t.bits - 1)), v - (1 << t.bits), v)
        return v
    return codes.astype(np.int64) if t.bits < 64 else codes


def to_bytes(t: ElementType, codes: np.ndarray) -> np.ndarray:
    """Bit patterns (any shape) -> little-endian bytes, the last axis growing by t.bytes."""
    c = np.ascontiguousarray(np.asarray(codes).astype(np.uint64).astype(np.dtype(t.code_dtype).newbyteorder("<")))
    if c.ndim == 0:
        c = c.reshape(1)
    return c.view(np.uint8).reshape(c.shape[:-1] + (c.shape[-1] * t.bytes,))


def from_bytes(t: ElementType, raw: np.ndarray) -> np.ndarray:
    """Little-endian bytes (last axis a multiple of t.bytes) -> bit patterns (uint64)."""
    raw = np.ascontiguousarray(raw, dtype=np.uint8)
    return raw.view(np.dtype(t.code_dtype).newbyteorder("<")).astype(np.uint64)


def popcount(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x).astype(np.uint64)
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    out = np.zeros(x.shape, dtype=np.int64)
    for i in range(64):
        out += ((x >> np.uint64(i)) & np.uint64(1)).astype(np.int64)
    return out


def mismatches(t: ElementType, got: np.ndarray, exp: np.ndarray, tol: float, bound: np.ndarray) -> np.ndarray:
    """Where a device result `got` of type t misses the reference `exp`: floats beyond tol * bound (the magnitude
    the accumulation went through), integers unequal once exp wraps to t's width as the hardware's does."""
    if t.kind == "float":
        return ~(np.abs(got - exp) <= 1e-300 + tol * bound)
    bits = t.bits
    e = exp.astype(np.int64)
    wrap = ((e + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1)) if t.signed else e % (1 << bits)
    return got.astype(np.int64) != wrap
