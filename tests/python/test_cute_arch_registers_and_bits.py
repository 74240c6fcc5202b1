"""cute.arch's special-register reads, integer bit operations, carry chains, half-precision arithmetic and the
other CuTe DSL 4.8.1 names of cute.arch added with them: each compiles to its instruction for its targets, gives
CuTe DSL's result type, computes known operands while tracing where it can, and refuses bad input at the user's
line."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import kernel_ptx, requires_gpu

A = cute.arch
I32, U32, I64, U64 = cutlass.Int32, cutlass.Uint32, cutlass.Int64, cutlass.Uint64
F32, F16, BF16 = cutlass.Float32, cutlass.Float16, cutlass.BFloat16


_ptx = kernel_ptx


def _store(x, r):
    x[0] = I32(F32(r[0]) + F32(r[1])) if isinstance(r, tuple) else I32(r)


_SREGS = {"lanemask_lt": "%lanemask_lt", "lanemask_le": "%lanemask_le", "lanemask_eq": "%lanemask_eq",
          "lanemask_ge": "%lanemask_ge", "lanemask_gt": "%lanemask_gt", "smid": "%smid", "nsmid": "%nsmid",
          "gridid": "%gridid", "nwarpid": "%nwarpid", "physical_warp_id": "%warpid",
          "total_smem_size": "%total_smem_size", "get_dyn_smem_size": "%dynamic_smem_size"}


@pytest.mark.parametrize("name", sorted(_SREGS))
def test_special_register_reads_are_one_move_from_their_register(name):
    types = {}

    def body(x):
        r = getattr(A, name)()
        types["t"] = type(r)
        x[0] = I32(r)

    ptx = _ptx(body)
    assert re.search(r"mov\.u(32|64)\s+%(r|rd)\d+, " + re.escape(_SREGS[name]) + ";", ptx), ptx
    assert types["t"] is (U32 if name.startswith("lanemask") else I32)


def test_activemask_warpsize_and_aggregate_smem():
    def body(x):
        x[0] = I32(A.activemask()) + A.warpsize()
        x[1] = A.aggr_smem_size()

    ptx = _ptx(body, "sm_90a")
    assert re.search(r"activemask\.b32", ptx) and "%aggr_smem_size" in ptx
    # the warp's width is the constant 32 once read: the store adds it
    assert re.search(r"add\.s32\s+%r\d+, %r\d+, 32;", ptx), ptx


def test_aggregate_smem_needs_sm90_at_the_users_line():
    def body(x):
        x[0] = A.aggr_smem_size()

    with pytest.raises(DSLError, match=r"aggr_smem_size needs compute capability 9\.0") as e:
        _ptx(body, "sm_80")
    assert "test_cute_arch_registers_and_bits.py" in str(e.value)


def test_bit_counts_and_reversal():
    def body(x):
        x[0] = I32(A.clz(I32(x[1]))) + I32(A.clz(U64(x[2])))
        x[1] = I32(A.brev(U32(x[3])))
        x[2] = A.log2_of_pow2_int(I32(x[4]))

    ptx = _ptx(body)
    assert re.search(r"clz\.b32", ptx) and re.search(r"clz\.b64", ptx) and re.search(r"brev\.b32", ptx), ptx
    # known operands are computed while tracing, with CuTe DSL's result types
    assert A.clz(U32(1)).value == 31 and type(A.clz(I64(0))) is U32 and A.clz(I64(0)).value == 64
    assert A.log2_of_pow2_int(I32(1 << 20)).value == 20 and A.log2_of_pow2_int(I32(0)).value == -1


@pytest.mark.parametrize("kind,instr", [("l", "shf.l.wrap.b32"), ("r", "shf.r.wrap.b32"),
                                        ("clamp_left", "shf.l.clamp.b32"), ("clamp_right", "shf.r.clamp.b32")])
def test_funnel_shift_takes_a_as_the_low_word(kind, instr):
    def body(x):
        x[0] = A.shf(I32(x[1]), I32(x[2]), x[3], kind)

    ptx = _ptx(body)
    m = re.search(re.escape(instr) + r"\s+%r\d+, (%r\d+), (%r\d+), %r\d+;", ptx)
    assert m, ptx
    # the instruction's first source is the low word: the value loaded from x[1]
    lo_load = re.search(r"ld\.global\.b32\s+(%r\d+), \[%rd\d+\+4\];", ptx)
    assert lo_load and lo_load.group(1) == m.group(1), ptx


def test_match_sync_any_and_all():
    def body(x):
        x[0] = I32(A.match_sync(0xFFFFFFFF, I32(x[1]))) + I32(A.match_sync(0xFFFFFFFF, I64(x[2]), "all"))

    ptx = _ptx(body)
    assert re.search(r"match\.any\.sync\.b32", ptx) and re.search(r"match\.all\.sync\.b64", ptx), ptx


def test_vote_sync_op_is_the_vote_of_its_kind():
    def body(x):
        x[0] = A.vote_sync_op(I32(x[1]) > 0, "ballot") + I32(A.vote_sync_op(I32(x[2]) > 0, "uni", 0xFF))

    ptx = _ptx(body)
    assert re.search(r"vote\.sync\.ballot\.b32", ptx) and re.search(r"vote\.sync\.uni\.pred\s+%p\d+, %p\d+, 255;", ptx)


@pytest.mark.parametrize("call,msg", [
    (lambda x: A.clz(F32(x[1])), r"clz takes an Int32, Uint32, Int64 or Uint64, got Float32"),
    (lambda x: A.shf(I32(x[1]), I32(x[2]), 3, "left"), r"kind is one of l, r, clamp_left, clamp_right"),
    (lambda x: A.match_sync(-1, I32(x[1]), "some"), r"kind is 'any' or 'all'"),
    (lambda x: A.vote_sync_op(I32(x[1]) > 0, "most"), r"kind is one of any, all, uni, ballot"),
    (lambda x: A.bfe(F32(x[1]), 0, 4), r"bfe: value must be an Int32 or Uint32, got Float32"),
    (lambda x: A.mul24(I32(x[1]), U32(x[2])), r"mul24: the operands must be of one type"),
    (lambda x: A.add_sat_int(U32(x[1]), I32(x[2])), r"add_sat_int: a must be an Int32"),
    (lambda x: A.add_packed_f16x2(F32(x[1]), I32(x[2])), r"a is an Int32 word of two packed f16 values"),
    (lambda x: A.fma_packed_bf16x2(I32(x[1]), I32(x[2]), I32(x[3]), rnd="rz"), r"rnd is 'rn' or None"),
    (lambda x: A.add_packed_bf16x2(I32(x[1]), I32(x[2]), sat=True), r"ftz and sat are qualifiers of f16"),
    (lambda x: A.exp2_packed_bf16x2(I32(x[1])), r"needs compute capability 9\.0 or later"),
    (lambda x: A.fma_f16(F16(F32(x[1])), F16(F32(x[1])), F16(F32(x[1])), oob=True), r"oob=True needs compute"),
])
def test_bad_operands_are_refused_at_the_users_line(call, msg):
    def body(x):
        x[0] = I32(0)
        call(x)

    with pytest.raises(DSLError, match=msg) as e:
        _ptx(body)
    assert "test_cute_arch_registers_and_bits.py" in str(e.value)


def test_bit_fields_bfind_and_24_bit_multiplies():
    def body(x):
        x[0] = A.bfe(I32(x[1]), 3, 5) + I32(A.bfe(U32(x[2]), x[3], x[4]))
        x[1] = I32(A.bfi(U32(x[1]), U32(x[2]), 8, 4))
        x[2] = I32(A.bfind(I32(x[1]))) + I32(A.bfind(U64(x[5])))
        x[3] = A.mul24(I32(x[1]), I32(x[2])) + A.mad24(I32(x[1]), I32(x[2]), I32(x[3]), True)
        x[4] = I32(A.mul24(U32(x[4]), U32(x[5]), True))

    ptx = _ptx(body)
    for instr in ("bfe.s32", "bfe.u32", "bfi.b32", "bfind.s32", "bfind.u64", "mul24.lo.s32", "mad24.hi.s32",
                  "mul24.hi.u32"):
        assert re.search(re.escape(instr) + r"\s", ptx), (instr, ptx)
    types = {}

    def typed(x):
        types["bfind"] = (type(A.bfind(I32(x[1]))), type(A.bfind(U32(x[1]))))
        x[0] = I32(0)

    _ptx(typed)
    assert types["bfind"] == (U32, I32)   # CuTe DSL 4.8.1's result types


def test_saturating_add_and_subtract_are_one_instruction():
    def body(x):
        x[0] = A.add_sat_int(I32(x[1]), I32(x[2])) + A.sub_sat_int(I32(x[3]), I32(x[4]))

    ptx = _ptx(body)
    assert re.search(r"add\.sat\.s32", ptx) and re.search(r"sub\.sat\.s32", ptx), ptx
    assert A.add_sat_int(I32(2**31 - 1), I32(5)).value == 2**31 - 1
    assert A.sub_sat_int(I32(-2**31), I32(1)).value == -2**31


def test_carry_chains_stay_in_order():
    def body(x):
        lo = A.add_cc(U32(x[1]), U32(x[2]))
        hi = A.addc(U32(x[3]), U32(x[4]))
        x[0] = I32(lo)
        x[1] = I32(hi)
        d0 = A.sub_cc(I64(x[5]), I64(x[6]))
        d1 = A.subc(I64(x[7]), I64(x[8]))
        x[2] = I32(d0 + d1)
        m0 = A.mad_cc(I32(x[9]), I32(x[10]), I32(x[11]))
        m1 = A.madc(I32(x[12]), I32(x[13]), I32(x[14]))
        x[3] = m0 + m1

    ptx = _ptx(body)
    seq = re.findall(r"\b(add\.cc\.u32|addc\.cc\.u32|sub\.cc\.s64|subc\.cc\.s64|mad\.lo\.cc\.s32|madc\.lo\.cc\.s32)\b",
                     ptx)
    assert seq == ["add.cc.u32", "addc.cc.u32", "sub.cc.s64", "subc.cc.s64", "mad.lo.cc.s32", "madc.lo.cc.s32"], ptx


def test_packed_half_arithmetic_takes_words_or_pairs():
    types = {}

    def body(x):
        r = A.add_packed_f16x2((F32(x[1]), F32(x[2])), (F32(x[3]), F32(x[4])))
        types["pair"] = tuple(type(v) for v in r)
        w = A.sub_packed_f16x2(I32(x[1]), I32(x[2]), rnd="rn", ftz=True, sat=True)
        types["word"] = type(w)
        _store(x, r)
        x[1] = w + A.fma_packed_f16x2(I32(x[1]), I32(x[2]), I32(x[3]), relu=True)
        x[2] = A.fma_packed_bf16x2(I32(x[1]), I32(x[2]), I32(x[3]))
        x[3] = A.exp2_packed_f16x2(I32(x[4]), predicate=I32(x[5]) > 0)
        x[4] = I32(F32(A.fma_f16(F32(x[1]), F32(x[2]), F32(x[3]), ftz=True)))
        x[5] = I32(F32(A.fma_bf16(F32(x[1]), F32(x[2]), F32(x[3]), relu=True)))

    ptx = _ptx(body)
    for pat in (r"add\.f16x2\s", r"sub\.rn\.ftz\.sat\.f16x2\s", r"fma\.rn\.relu\.f16x2\s", r"fma\.rn\.bf16x2\s",
                r"@%p\d+ ex2\.approx\.f16x2\s", r"fma\.rn\.ftz\.f16\s", r"fma\.rn\.relu\.bf16\s"):
        assert re.search(pat, ptx), (pat, ptx)
    assert types == {"pair": (F16, F16), "word": I32}


def test_bf16x2_add_is_its_instruction_from_sm90_and_an_exact_fma_before():
    def body(x):
        x[0] = A.add_packed_bf16x2(I32(x[1]), I32(x[2])) + A.sub_packed_bf16x2(I32(x[3]), I32(x[4]))
        x[1] = A.add_packed_bf16x2(I32(x[1]), I32(x[2]), predicate=I32(x[5]) > 0)

    sm90 = _ptx(body, "sm_90a")
    assert re.search(r"add\.bf16x2\s", sm90) and re.search(r"sub\.bf16x2\s", sm90)
    assert re.search(r"@%p\d+ add\.bf16x2\s", sm90)
    sm80 = _ptx(body, "sm_80")
    assert not re.search(r"(add|sub)(\.rn)?\.bf16x2", sm80)
    # b * (+1 | -1) + a: the words of 1.0 and -1.0 in both halves
    assert "1065369472" in sm80 or "0x3F803F80" in sm80.upper() or "3F803F80" in sm80.upper(), sm80
    assert len(re.findall(r"fma\.rn\.bf16x2", sm80)) == 3


def test_bf16x2_exponential_on_sm90():
    def body(x):
        r = A.exp2_packed_bf16x2((F32(x[1]), F32(x[2])))
        _store(x, r)

    assert re.search(r"ex2\.approx\.ftz\.bf16x2\s", _ptx(body, "sm_90a"))


def test_exp_packed_f32x2_scales_by_log2e_then_exp2():
    def body(x):
        _store(x, A.exp_packed_f32x2((F32(x[1]), F32(x[2]))))

    sm80 = _ptx(body, "sm_80")
    assert len(re.findall(r"mul(\.rn)?\.f32\s+%r\d+, %r\d+, 0f3FB8AA3B;", sm80)) == 2
    assert len(re.findall(r"ex2\.approx\.ftz\.f32", sm80)) == 2
    sm100 = _ptx(body, "sm_100a")
    assert re.search(r"mul\.rn\.f32x2", sm100) and len(re.findall(r"ex2\.approx\.ftz\.f32", sm100)) == 2


def test_alloc_smem_carves_fresh_shared_memory():
    def body(x):
        p = A.alloc_smem(cutlass.Int64, 4)
        q = A.alloc_smem(F32, 8, alignment=128)
        x[0] = I32(p.toint()) + I32(q.toint())

    ptx = _ptx(body)
    # p is shared memory's first byte; q comes after p's 32 bytes, rounded up to its 128-byte alignment
    assert re.search(r"add\.s32\s+%r\d+, %r\d+, 128;", ptx), ptx
    assert not re.search(r"add\.s32\s+%r\d+, %r\d+, (32|64);", ptx), ptx

    def bad(x):
        A.alloc_smem(F32, 0)

    with pytest.raises(DSLError, match="size_in_elems is a positive static number") as e:
        _ptx(bad)
    assert "test_cute_arch_registers_and_bits.py" in str(e.value)


def test_atomic_max_float32_is_atomic_fmax():
    def body(x):
        p = A.alloc_smem(F32, 1)
        A.atomic_max_float32(p, F32(x[1]))
        A.atomic_max_float32(p, F32(x[2]), positive_only=False)
        x[0] = I32(0)

    ptx = _ptx(body)
    # a value promised non-negative is one integer max on its bits; the general one is a compare-and-swap loop
    assert len(re.findall(r"atom\.shared\.max\.s32", ptx)) == 1, ptx
    assert re.search(r"atom\.[a-z.]*shared\.cas\.b32", ptx), ptx


@requires_gpu
def test_lanemasks_and_bits_on_the_gpu():
    import torch

    @cute.kernel
    def k(out: cute.Tensor):
        lane = A.lane_idx()
        out[lane, 0] = I32(A.lanemask_lt())
        out[lane, 1] = I32(A.lanemask_ge())
        out[lane, 2] = I32(A.brev(U32(lane + 1)))
        out[lane, 3] = A.bfe(I32(lane - 16), 2, 3)
        out[lane, 4] = A.shf(I32(lane), I32(7), lane, "l")
        out[lane, 5] = A.add_packed_f16x2(I32(0x3C003C00), I32(0x3C003C00))

    @cute.jit
    def h(out: cute.Tensor):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    out = torch.zeros(32, 6, dtype=torch.int32, device="cuda")
    h(from_dlpack(out))
    got = out.cpu().numpy().astype(np.int64) & 0xFFFFFFFF
    for lane in range(32):
        assert got[lane, 0] == (1 << lane) - 1
        assert got[lane, 1] == (0xFFFFFFFF << lane) & 0xFFFFFFFF
        assert got[lane, 2] == int(f"{lane + 1:032b}"[::-1], 2)
        field = ((lane - 16) & 0xFFFFFFFF) >> 2 & 7
        assert got[lane, 3] == ((field - 8 if field & 4 else field) & 0xFFFFFFFF)
        assert got[lane, 4] == ((7 << 32 | lane) << (lane % 32) >> 32) & 0xFFFFFFFF
        assert got[lane, 5] == 0x40004000   # 1 + 1 = 2 in both halves
