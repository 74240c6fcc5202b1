"""cute.arch's numeric conversions (CuTe DSL 4.8.1's cvt_* and sext_* names), the Blackwell E2M1 ones and the
tensor-memory names beside them: each compiles to its conversion for its targets, gives CuTe DSL's result types
(vectors that cute.TensorSSA takes back), computes known operands while tracing, and refuses bad input or a target
without the instruction at the user's line."""
import re
import struct

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import kernel_ptx, requires_gpu

A = cute.arch
I32, I8, I4, F32, F16, BF16, F4 = (cutlass.Int32, cutlass.Int8, cutlass.Int4, cutlass.Float32, cutlass.Float16,
                                   cutlass.BFloat16, cutlass.Float4E2M1FN)


_ptx = kernel_ptx


def _sum(x, vec, n, dtype):
    t = cute.TensorSSA(vec, (n,), dtype)
    acc = F32(t[0])
    for i in range(1, n):
        acc = acc + F32(t[i])
    x[0] = I32(acc)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a"])
def test_tf32_operand_and_saturating_bf16_pair(arch):
    types = {}

    def body(x):
        r = A.cvt_f32_tf32(F32(x[1]))
        types["tf32"] = type(r)
        x[1] = r
        v = A.cvt_f32x2_bf16x2(cute.TensorSSA([F32(x[2]), F32(x[3]) * 3.0], (2,), F32))
        types["pair"] = str(v.type)
        _sum(x, v, 2, BF16)
        x[2] = I32(F32(A.cvt_f32_bf16(F32(x[4]) * 1.5)))

    ptx = _ptx(body, arch)
    assert re.search(r"cvt\.rna\.tf32\.f32\s", ptx), ptx
    # lane 1 (x[3] * 3) is the high half: the instruction's first source
    m = re.search(r"cvt\.rn\.satfinite\.bf16x2\.f32\s+%r\d+, (%r\d+), (%r\d+);", ptx)
    assert m, ptx
    assert re.search(rf"mul\.(rn\.)?f32\s+{re.escape(m.group(1))}, %r\d+, 0f40400000;", ptx), ptx
    assert re.search(r"cvt\.rn\.bf16\.f32\s", ptx)
    assert types == {"tf32": I32, "pair": "vector<2xbf16>"}


def _tf32_bits(v: float) -> int:
    return A.cvt_f32_tf32(v).value & 0xFFFFFFFF


def test_tf32_of_known_values_rounds_to_nearest_ties_away():
    def f32(bits):
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    assert _tf32_bits(1.0) == 0x3F800000
    assert _tf32_bits(f32(0x3F800FFF)) == 0x3F800000          # below half an ulp: down
    assert _tf32_bits(f32(0x3F801000)) == 0x3F802000          # the tie: away from zero
    assert _tf32_bits(f32(0xBF801000)) == 0xBF802000          # ... for negatives too
    assert _tf32_bits(f32(0x7F7FFFFF)) == 0x7F800000          # the largest f32 rounds up to inf
    assert _tf32_bits(float("inf")) == 0x7F800000 and _tf32_bits(float("-inf")) == 0xFF800000
    assert _tf32_bits(float("nan")) & 0x7F800000 == 0x7F800000 and _tf32_bits(float("nan")) & 0x007FFFFF
    assert type(A.cvt_f32_tf32(F32(2.5))) is I32 and A.cvt_f32_tf32(F32(2.5)).value == 0x40200000


def test_sext_of_unpacked_int4_is_three_word_operations_per_four_values():
    types = {}

    def body(x):
        t = cute.TensorSSA([I8(x[i]) for i in range(8)], (8,), I8)
        r = A.sext_unpacked_i4_i8_intrinsic(t.maybe_downcast(), 8)
        types["r"] = str(r.type)
        s = cute.TensorSSA(r, (8,), I8)
        acc = I32(s[0])
        for i in range(1, 8):
            acc = acc + I32(s[i]) * (i + 1)
        x[0] = acc
        x[1] = I32(cute.TensorSSA(A.sext_unpacked_i4x4_to_i8x4(tuple(I8(x[i]) for i in range(4))), (4,), I8)[2])

    ptx = _ptx(body)
    assert types["r"] == "vector<8xi8>"
    # per word: mask to the low nibbles, add 0x78 to each byte, xor 0x78 back (the sign bit into the high nibble)
    assert len(re.findall(r"and\.b32\s+%r\d+, %r\d+, 252645135;", ptx)) >= 2, ptx
    assert len(re.findall(r"add\.s32\s+%r\d+, %r\d+, 2021161080;", ptx)) >= 2, ptx
    assert len(re.findall(r"xor\.b32\s+%r\d+, %r\d+, 2021161080;", ptx)) >= 2, ptx


def _sext_reference(byte: int) -> int:
    n = byte & 0xF
    return n - 16 if n >= 8 else n


def test_sext_trick_is_the_sign_extension_of_every_nibble():
    # the three word operations of _sext_nibbles over every byte value in every byte position, on the CPU
    for b in range(256):
        for pos in range(4):
            w = (b << (8 * pos)) | (0x05 << (8 * ((pos + 1) % 4)))
            r = (((w & 0x0F0F0F0F) + 0x78787878) & 0xFFFFFFFF) ^ 0x78787878
            got = [((r >> (8 * k)) & 0xFF) for k in range(4)]
            want = [_sext_reference((w >> (8 * k)) & 0xFF) & 0xFF for k in range(4)]
            assert got == want, (hex(w), got, want)


@pytest.mark.parametrize("arch", ["sm_80", "sm_100a"])
def test_int8_and_int4_to_float(arch):
    types = {}

    def body(x):
        f = A.cvt_i8x4_to_f32x4(tuple(I8(x[i]) for i in range(4)))
        g = A.cvt_i8x2_to_f32x2(tuple(I8(x[i]) for i in range(2)))
        b = A.cvt_i8_bf16_intrinsic(tuple(I8(x[i]) for i in range(6)), 6)
        c = A.cvt_i4x8_to_bf16x8(tuple(I4(x[i]) for i in range(8)))
        d = A.cvt_i4_bf16_intrinsic(cute.TensorSSA([I4(x[i]) for i in range(5)], (5,), I4), 5)
        types.update(f=str(f.type), g=str(g.type), b=str(b.type), c=str(c.type), d=str(d.type),
                     s8=type(A.cvt_i8_bf16(I8(x[1]))), s4=type(A.cvt_i4_bf16(I4(x[1]))))
        _sum(x, f, 4, F32)
        x[1] = I32(cute.TensorSSA(g, (2,), F32)[1])
        x[2] = I32(F32(cute.TensorSSA(b, (6,), BF16)[5]))
        x[3] = I32(F32(cute.TensorSSA(c, (8,), BF16)[7]))
        x[4] = I32(F32(cute.TensorSSA(d, (5,), BF16)[4]))

    ptx = _ptx(body, arch)
    assert types == {"f": "vector<4xf32>", "g": "vector<2xf32>", "b": "vector<6xbf16>", "c": "vector<8xbf16>",
                     "d": "vector<5xbf16>", "s8": BF16, "s4": BF16}
    # int -> f32 conversions feed pairs rounded to bf16 (exact: every int8 is a bf16)
    assert re.search(r"cvt\.rn\.f32\.s(16|32|8)\s", ptx) and re.search(r"cvt\.rn\.satfinite\.bf16x2\.f32\s", ptx)


def test_known_int8_and_int4_convert_while_tracing():
    assert A.cvt_i8_bf16(I8(-128)).value == -128.0 and A.cvt_i4_bf16(I4(-8)).value == -8.0
    assert A.cvt_f32_bf16(F32(1.0 + 2 ** -9)).value == 1.0   # below bf16's half ulp: rounds to 1


@pytest.mark.parametrize("call,msg", [
    (lambda x: A.cvt_f32_tf32(I32(x[1])), r"cvt_f32_tf32 takes an f32 value, got Int32"),
    (lambda x: A.cvt_f32x2_bf16x2((F32(x[1]), F32(x[2]), F32(x[3]))), r"takes a vector<2xf32>"),
    (lambda x: A.cvt_f32x2_bf16x2((F32(x[1]), I32(x[2]))), r"a tuple operand holds f32 numbers of one type"),
    (lambda x: A.sext_unpacked_i4_i8_intrinsic(tuple(I8(x[i]) for i in range(4)), 8), r"vector<8xi8>"),
    (lambda x: A.sext_unpacked_i4_i8_intrinsic(tuple(I8(x[i]) for i in range(4)), 0), r"length is a positive"),
    (lambda x: A.cvt_i8x4_to_f32x4(tuple(I32(x[i]) for i in range(4))), r"int8"),
    (lambda x: A.cvt_i4x2_to_bf16x2((I4(x[1]), I4(x[2])), with_shuffle=True), r"with_shuffle=True .* not offered"),
    (lambda x: A.cvt_i4_bf16_intrinsic(tuple(I4(x[i]) for i in range(8)), 8, with_shuffle=True), r"not offered"),
    (lambda x: A.cvt_i8_bf16(F32(x[1])), r"cvt_i8_bf16 takes an int8 value, got Float32"),
])
def test_bad_operands_are_refused_at_the_users_line(call, msg):
    def body(x):
        x[0] = I32(0)
        call(x)

    with pytest.raises(DSLError, match=msg) as e:
        _ptx(body)
    assert "test_cute_arch_conversions.py" in str(e.value)


@pytest.mark.parametrize("arch", ["sm_100a", "sm_103a", "sm_120a"])
def test_e2m1_pairs_are_one_conversion_each_on_family_specific_blackwell(arch):
    types = {}

    def body(x):
        codes = tuple(F4(F32(x[i])) for i in range(8))
        v = A.cvt_f4e2m1x8_to_f16x8(codes)
        w = A.cvt_f4e2m1x4_to_f16x4(cute.TensorSSA(list(codes[:4]), (4,), F4))
        u = A.cvt_f4e2m1x2_to_f16x2(codes[4:6])
        s = A.cvt_f4e2m1_f16(codes[7])
        types.update(v=str(v.type), w=str(w.type), u=str(u.type), s=type(s))
        _sum(x, v, 8, F16)
        x[1] = I32(F32(cute.TensorSSA(w, (4,), F16)[3]) + F32(cute.TensorSSA(u, (2,), F16)[1]) + F32(s))

    ptx = _ptx(body, arch)
    assert types == {"v": "vector<8xf16>", "w": "vector<4xf16>", "u": "vector<2xf16>", "s": F16}
    # 4 pairs of the x8, the x4's 2 (lanes 2, 3 read), the x2's 1 and the single value's 1: CSE may merge equal ones
    n = len(re.findall(r"cvt\.rn\.f16x2\.e2m1x2\s", ptx))
    assert 4 <= n <= 8, ptx


@pytest.mark.parametrize("arch", ["sm_80", "sm_89", "sm_90a"])
def test_e2m1_conversion_needs_a_family_specific_blackwell_target(arch):
    def body(x):
        x[0] = I32(F32(A.cvt_f4e2m1_f16(F4(F32(x[1])))))

    with pytest.raises(DSLError, match=r"cvt_f4e2m1_f16: the conversion of packed E2M1 values .* compiling for "
                                       + arch) as e:
        _ptx(body, arch)
    assert "test_cute_arch_conversions.py" in str(e.value)


def test_e2m1_code_values():
    from warpweave.backends.blackwell.fp4_convert import e2m1_value
    assert [e2m1_value(c) for c in range(16)] == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                                                  -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def test_tmem_fence_by_kind_and_exclusive_allocation():
    def body(x):
        A.fence_view_async_tmem_op("load")
        A.fence_view_async_tmem_op("store")
        x[0] = I32(0)

    ptx = _ptx(body, "sm_100a")
    assert re.search(r"tcgen05\.wait::ld\.sync\.aligned", ptx) and re.search(r"tcgen05\.wait::st\.sync\.aligned", ptx)

    def bad(x):
        A.fence_view_async_tmem_op("both")

    with pytest.raises(DSLError, match=r"kind is 'load' or 'store', got 'both'"):
        _ptx(bad, "sm_100a")
    from warpweave.base_dsl.arch import Arch
    # CuTe DSL 4.8.1: more than 512 columns exist only on sm_107, none of warpweave's targets
    assert not any(A.is_tmem_allocation_exclusive(n, a) for a in Arch for n in (32, 512, 576))
    with pytest.raises(DSLError, match=r"num_columns is a Python int"):
        A.is_tmem_allocation_exclusive(512.0, Arch.sm_100a)


def test_target_version_is_the_toolchains():
    assert A.target_version is cutlass.target_version
    assert A.target_version(min_version="12.0") is True and A.target_version(max_version="11.0") is False


@requires_gpu
def test_conversions_on_the_gpu():
    import torch

    @cute.kernel
    def k(src: cute.Tensor, out: cute.Tensor):
        lane = A.lane_idx()
        out[lane, 0] = A.cvt_f32_tf32(F32(src[lane]))
        p = cute.TensorSSA(A.cvt_f32x2_bf16x2((F32(src[lane]), F32(src[lane]) * 3.0e38)), (2,), BF16)
        out[lane, 1] = I32(F32(p[0]))
        out[lane, 2] = I32(F32(p[1]) * 1.0e-30)   # saturated to bf16's largest finite value, not inf
        s = cute.TensorSSA(A.sext_unpacked_i4_i8_intrinsic((I8(lane), I8(lane + 3), I8(lane * 5), I8(7)), 4),
                           (4,), I8)
        out[lane, 3] = I32(s[0]) + I32(s[1]) * 16 + I32(s[2]) * 256
        b = cute.TensorSSA(A.cvt_i4x2_to_bf16x2((I4(lane), I4(lane + 1))), (2,), BF16)
        out[lane, 4] = I32(F32(b[0])) * 100 + I32(F32(b[1]))

    @cute.jit
    def h(src: cute.Tensor, out: cute.Tensor):
        k(src, out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    src = torch.arange(32, dtype=torch.float32, device="cuda") * 1.37 - 11.0
    out = torch.zeros(32, 5, dtype=torch.int32, device="cuda")
    cute.compile(h, from_dlpack(src), from_dlpack(out))(from_dlpack(src), from_dlpack(out))
    got = out.cpu().numpy()
    for lane in range(32):
        v = float(np.float32(lane * 1.37 - 11.0))
        assert got[lane, 0] & 0xFFFFFFFF == _tf32_bits(v) & 0xFFFFE000 | (got[lane, 0] & 0x1FFF)
        assert got[lane, 1] == int(float(torch.tensor(v).to(torch.bfloat16)))
        sx = [_sext_reference(b & 0xFF) for b in (lane, lane + 3, lane * 5)]
        assert got[lane, 3] == sx[0] + sx[1] * 16 + sx[2] * 256
        lo, hi = _sext_reference(lane), _sext_reference(lane + 1)
        assert got[lane, 4] == lo * 100 + hi
