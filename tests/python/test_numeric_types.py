"""The narrow numeric types (Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Float8E8M0FNU, Int4, Uint4, Int128): host
conversions checked against exact references built here from the formats' definitions (every code enumerated),
their in-kernel conversions and packing (PTX shape; results on a GPU), and integer range errors."""
import math
import os
from fractions import Fraction

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values import fp8
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

THIS = os.path.abspath(__file__)

# (type, exponent bits, mantissa bits, bias): sign-magnitude formats without inf or NaN (the OCP MX elements).
MX = [(cutlass.Float4E2M1FN, 2, 1, 1), (cutlass.Float6E2M3FN, 2, 3, 1), (cutlass.Float6E3M2FN, 3, 2, 3)]


def reference_values(e_bits, m_bits, bias):
    """code -> exact value, from the definition: subnormals at exponent field 0, no special codes."""
    out = {}
    width = 1 + e_bits + m_bits
    for code in range(1 << width):
        sign = -1 if code >> (width - 1) else 1
        e = (code >> m_bits) & ((1 << e_bits) - 1)
        m = code & ((1 << m_bits) - 1)
        if e == 0:
            v = Fraction(m, 1 << m_bits) * Fraction(2) ** (1 - bias)
        else:
            v = (1 + Fraction(m, 1 << m_bits)) * Fraction(2) ** (e - bias)
        out[code] = sign * v
    return out


@pytest.mark.parametrize("t,e,m,bias", MX)
def test_every_code_decodes_to_its_definition_and_round_trips(t, e, m, bias):
    ref = reference_values(e, m, bias)
    assert len(ref) == 1 << t.width
    for code, v in ref.items():
        got = fp8.decode_static(t, code)
        assert got == float(v) and math.copysign(1, got) == (-1 if code >> (t.width - 1) else 1), (code, got)
        assert fp8.encode_static(t, got) == code
        assert t(float(v)).value == float(v)


def test_known_grids():
    e2m1 = sorted({fp8.decode_static(cutlass.Float4E2M1FN, c) for c in range(8)})
    assert e2m1 == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    assert max(fp8.decode_static(cutlass.Float6E2M3FN, c) for c in range(64)) == 7.5
    assert max(fp8.decode_static(cutlass.Float6E3M2FN, c) for c in range(64)) == 28.0
    assert fp8.decode_static(cutlass.Float8E8M0FNU, 127) == 1.0
    assert fp8.decode_static(cutlass.Float8E8M0FNU, 0) == 2.0 ** -127
    assert math.isnan(fp8.decode_static(cutlass.Float8E8M0FNU, 255))


@pytest.mark.parametrize("t,e,m,bias", MX)
def test_encoding_is_the_nearest_value_ties_to_even_saturating(t, e, m, bias):
    ref = reference_values(e, m, bias)
    finite = sorted(set(ref.values()))
    top = max(finite)
    rng = np.random.default_rng(1234)
    samples = list(rng.uniform(-1.5 * float(top), 1.5 * float(top), 3000))
    # exact midpoints between neighbours, and just beside them
    for a, b in zip(finite, finite[1:]):
        mid = (a + b) / 2
        samples += [float(mid), float(mid) * (1 + 1e-9), float(mid) * (1 - 1e-9)]
    for x in samples:
        code = fp8.encode_static(t, x)
        got = Fraction(fp8.decode_static(t, code))
        if abs(Fraction(x)) >= top:
            assert got == (top if x > 0 else -top), x
            continue
        best = min(abs(Fraction(x) - v) for v in finite)
        assert abs(Fraction(x) - got) == best, (x, float(got))
        ties = [v for v in finite if abs(Fraction(x) - v) == best]
        if len(ties) == 2:      # halfway: the even code (mantissa's last bit 0)
            assert code & 1 == 0, (x, code)


def test_e8m0_rounds_toward_zero_and_saturates():
    t = cutlass.Float8E8M0FNU
    for k in range(-127, 128):
        assert fp8.encode_static(t, 2.0 ** k) == k + 127
        assert fp8.encode_static(t, 2.0 ** k * 1.999) == k + 127
    assert fp8.encode_static(t, 2.0 ** 200) == 254 and fp8.encode_static(t, math.inf) == 254
    assert fp8.encode_static(t, 2.0 ** -140) == 0 and fp8.encode_static(t, 0.0) == 0
    assert fp8.encode_static(t, -3.0) == 0 and fp8.encode_static(t, math.nan) == 255
    assert t(3.0).value == 2.0 and t(0.75).value == 0.5


def test_nan_into_a_format_without_nan_is_refused():
    with pytest.raises(ValueError, match="has no NaN"):
        cutlass.Float4E2M1FN(math.nan)
    assert math.isnan(cutlass.Float8E4M3FN(math.nan).value)


def test_bfloat16_static_values_round_to_nearest_even_from_the_double():
    assert cutlass.BFloat16(1.0 + 2.0 ** -8).value == 1.0          # halfway: to even
    assert cutlass.BFloat16(1.0 + 3 * 2.0 ** -8).value == 1.0 + 2.0 ** -6
    assert cutlass.BFloat16(1.0 + 2.0 ** -8 + 2.0 ** -40).value == 1.0 + 2.0 ** -7   # no double rounding
    assert cutlass.BFloat16(3.4e38).value == math.inf


def test_integer_types_ranges():
    assert cutlass.Int4(-8).value == -8 and cutlass.Int4(7).value == 7
    assert cutlass.Uint4(15).value == 15 and cutlass.Int4(15).value == -1    # the bit pattern of 4 bits
    assert cutlass.Int128(2 ** 100).value == 2 ** 100
    assert (cutlass.Int4(7) + cutlass.Int4(1)).value == -8                   # arithmetic wraps
    assert (cutlass.Int32(2 ** 31 - 1) + 1).value == -2 ** 31
    assert cutlass.Int32(0xFFFFFFFF).value == -1
    for t, bad in [(cutlass.Int32, 2 ** 40), (cutlass.Int32, -2 ** 31 - 1), (cutlass.Uint8, 256), (cutlass.Int4, 16),
                   (cutlass.Uint4, -9), (cutlass.Int64, 2 ** 64)]:
        with pytest.raises(OverflowError) as e:
            t(bad)
        assert str(bad) in str(e.value) and t.__name__ in str(e.value)
    # Explicit wrapping stays possible.
    assert cutlass.Int32(2 ** 40 & 0xFFFFFFFF).value == 0
    assert cutlass.Int32(cutlass.Int64(2 ** 40)).value == 0


def test_overflow_is_reported_at_the_users_line():
    with pytest.raises(OverflowError) as e:
        cutlass.Int32(5) + 2 ** 40  # too big for Int32
    assert f"{THIS}:" in str(e.value)


def test_types_are_exported_at_both_places():
    for name in ["Float4E2M1FN", "Float6E2M3FN", "Float6E3M2FN", "Float8E8M0FNU", "Int4", "Uint4", "Int128", "Int32",
                 "Float32", "Boolean", "Numeric"]:
        assert getattr(cute, name) is getattr(cutlass, name)
        if name not in ("Numeric",):
            assert cutlass.dtype(name) is getattr(cutlass, name)
    assert cutlass.Float32.inf == math.inf and math.isnan(cutlass.Float16.nan)


# --- in kernels ------------------------------------------------------------------------------------------------

NARROW = [cutlass.Float4E2M1FN, cutlass.Float6E2M3FN, cutlass.Float6E3M2FN, cutlass.Float8E8M0FNU,
          cutlass.Float8E4M3FN, cutlass.Float8E5M2]


@pytest.mark.parametrize("t", NARROW)
def test_conversion_kernels_compile_for_every_target(t):
    @cute.kernel
    def k(gX: cute.Tensor, gY: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gY[tidx] = cutlass.Float32(t(gX[tidx])) + cutlass.Float32(t(cutlass.Float16(gX[tidx])))

    @cute.jit
    def h(x, y):
        k(x, y).launch(grid=[1, 1, 1], block=[32, 1, 1])

    for arch in ("sm_80", "sm_90a", "sm_100a"):
        with target(arch):
            c = cute.compile(h, from_dlpack(np.zeros(32, np.float32)), from_dlpack(np.zeros(32, np.float32)))
        assert c.cubin[:4] == b"\x7fELF"


def test_packed_tensors_hold_two_values_per_byte():
    @cute.kernel
    def k(gX: cute.Tensor, gY: cute.Tensor):
        r = cute.make_rmem_tensor((8,), cutlass.Float4E2M1FN)
        for i in cutlass.range_constexpr(8):
            r[i] = gX[i]
        for i in cutlass.range_constexpr(8):
            gY[i] = cutlass.Float32(r[i])

    @cute.jit
    def h(x, y):
        k(x, y).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(8, np.float32)), from_dlpack(np.zeros(8, np.float32)))
    assert "!llvm.array<4 x i8>" in c.ir
    assert cute.size_in_bytes(cutlass.Float4E2M1FN, cute.make_layout(10)) == 5
    # 6-bit values count their bits, as CuTe DSL counts them (what a TMA load of dense ones reads), though a
    # tensor of them in memory holds them a byte each
    assert cute.size_in_bytes(cutlass.Float6E2M3FN, cute.make_layout(10)) == 8
    assert cute.size_in_bytes(cutlass.Float6E3M2FN, cute.make_layout(128)) == 96


def packed_copy(stride):
    @cute.kernel
    def k(gX: cute.Tensor):
        a = cute.make_rmem_tensor((8,), cutlass.Int4)
        b = cute.make_rmem_tensor((8,), cutlass.Int4)
        cute.autovec_copy(cute.make_tensor(a.iterator, cute.make_layout(4, stride=stride)),
                          cute.make_tensor(b.iterator, cute.make_layout(4, stride=stride)))

    @cute.jit
    def h(x):
        k(x).launch(grid=[1, 1, 1], block=[1, 1, 1])

    return h


def test_copy_of_packed_tensors_moves_bytes_or_is_refused_not_miscompiled():
    # 4 consecutive int4 from an even element are 2 whole bytes, copied as such; every other element (stride 2)
    # shares its bytes with elements not copied, so it is refused rather than copied with its neighbours
    with target("sm_80"):
        c = cute.compile(packed_copy(1), from_dlpack(np.zeros(8, np.float32)))
        assert "-> (vector<2xi8>)" in c.ir
        with pytest.raises(TypeError, match="packed 4-bit"):
            cute.compile(packed_copy(2), from_dlpack(np.zeros(8, np.float32)))


@requires_gpu
@pytest.mark.parametrize("t", NARROW)
def test_device_conversions_match_the_host_codec(t):
    import torch

    n = 256 * 16
    valid = [c for c in range(1 << t.width) if not math.isnan(fp8.decode_static(t, c))]
    valid = [c for c in valid if math.isfinite(fp8.decode_static(t, c))]
    top = max(abs(fp8.decode_static(t, c)) for c in valid)
    x = np.random.default_rng().uniform(-1.2 * top, 1.2 * top, n)
    x[: len(valid)] = [fp8.decode_static(t, c) for c in valid]    # every code's value converts to itself
    if t is cutlass.Float8E8M0FNU:
        x = np.abs(x)
    xs = torch.from_numpy(x.astype(np.float32)).cuda()
    out = torch.full_like(xs, float("nan"))
    packed = t.width == 4
    code_buf = torch.zeros(n // 2 if packed else n, dtype=torch.uint8, device="cuda")

    @cute.kernel
    def k(gX: cute.Tensor, gOut: cute.Tensor, gCode: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 256 + tidx
        v = t(gX[i])
        gOut[i] = cutlass.Float32(v)
        if cutlass.const_expr(not packed):
            cute.recast_tensor(gCode, t)[i] = v

    @cute.jit
    def h(a, b, c):
        k(a, b, c).launch(grid=[n // 256, 1, 1], block=[256, 1, 1])

    h(from_dlpack(xs), from_dlpack(out), from_dlpack(code_buf))
    torch.cuda.synchronize()
    want = np.array([fp8.encode_static(t, float(np.float32(v))) for v in x])
    want_val = np.array([fp8.decode_static(t, int(c)) for c in want], dtype=np.float32)
    np.testing.assert_array_equal(out.cpu().numpy(), want_val)
    if not packed:
        np.testing.assert_array_equal(code_buf.cpu().numpy(), want.astype(np.uint8))


def packed_round_trip(n):
    """A program that reads a byte buffer as 2n Float4E2M1FN values (recast_tensor), writes their Float32 values,
    and copies them nibble by nibble into a second buffer (each even thread writes both nibbles of its byte)."""
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor, gV: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        fa = cute.recast_tensor(gA, cutlass.Float4E2M1FN)
        fb = cute.recast_tensor(gB, cutlass.Float4E2M1FN)
        v = fa[tidx]
        gV[tidx] = cutlass.Float32(v)
        if tidx % 2 == 0:
            fb[tidx] = v
            fb[tidx + 1] = fa[tidx + 1]

    @cute.jit
    def h(x, y, z):
        k(x, y, z).launch(grid=[1, 1, 1], block=[n, 1, 1])

    return h


def test_packed_round_trip_compiles():
    with target("sm_90a"):
        c = cute.compile(packed_round_trip(512), from_dlpack(np.zeros(256, np.uint8)),
                         from_dlpack(np.zeros(256, np.uint8)), from_dlpack(np.zeros(512, np.float32)))
    assert c.cubin[:4] == b"\x7fELF"
    # recast_tensor of bytes to 4-bit values doubles the unit-stride extent
    assert "ld.global.u8" in c.info["ptx"] or "ld.global.b8" in c.info["ptx"]


@requires_gpu
def test_packed_global_tensor_round_trip_on_the_gpu():
    import torch

    n = 512
    src = np.random.default_rng().integers(0, 256, n // 2, dtype=np.uint8)
    a = torch.from_numpy(src).cuda()
    dst = torch.zeros_like(a)
    vals = torch.full((n,), float("nan"), device="cuda")
    packed_round_trip(n)(from_dlpack(a), from_dlpack(dst), from_dlpack(vals))
    torch.cuda.synchronize()
    assert np.array_equal(dst.cpu().numpy(), src)
    nibbles = np.stack([src & 15, src >> 4], 1).reshape(-1)
    want = np.array([fp8.decode_static(cutlass.Float4E2M1FN, int(c)) for c in nibbles], np.float32)
    np.testing.assert_array_equal(vals.cpu().numpy(), want)
