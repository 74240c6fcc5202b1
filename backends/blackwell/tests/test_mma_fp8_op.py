"""tcgen05.MmaFP8Op, CuTe DSL's earlier name of the kind::f8f6f4 MMA with one 8-bit float type for A and B, and
MmaF8F6F4Op's CuTe DSL form (a_dtype, b_dtype, acc_dtype, ...), without a GPU.

- MmaFP8Op(ab, acc, shape, cta_group, a_src, majors) selects the atom MmaF8F6F4Op(ab, ab, acc, ...) and
  MmaF8F6F4Op(ab, acc, ...) select, for every type, accumulator, CTA group and A source: the same manifest entry
  and the same thread-value layouts.
- It is a tcgen05 MMA operation (tcgen05.mma.MmaOp, cute.atom.MmaOp) but no MmaF8F6F4Op, as in CuTe DSL, where
  libraries test for either class; tcgen05.mma names it too.
- What the instruction cannot do is refused: 16-bit inputs, K other than 32, A and B of different types.
- A kernel issuing it compiles for sm_100a into the same PTX as MmaF8F6F4Op's (kind::f8f6f4).
"""
from __future__ import annotations

import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import target


def tc():
    from warpweave.cute.nvgpu import tcgen05

    return tcgen05


@pytest.mark.parametrize("ab", ["Float8E4M3FN", "Float8E5M2"])
@pytest.mark.parametrize("acc", ["Float16", "Float32"])
@pytest.mark.parametrize("shape, group, a_src, b_major", [
    ((128, 256, 32), "ONE", "SMEM", "K"), ((64, 64, 32), "ONE", "TMEM", "MN"), ((256, 128, 32), "TWO", "SMEM", "MN")])
def test_fp8_op_is_the_f8f6f4_atom_of_one_type(ab, acc, shape, group, a_src, b_major):
    t = tc()
    ab, acc = getattr(cutlass, ab), getattr(cutlass, acc)
    rest = (shape, getattr(t.CtaGroup, group), t.OperandSource[a_src], t.OperandMajorMode.K, t.OperandMajorMode[b_major])
    with target("sm_100a"):
        fp8 = t.MmaFP8Op(ab, acc, *rest)
        ops = [fp8, t.MmaF8F6F4Op(ab, ab, acc, *rest), t.MmaF8F6F4Op(ab, acc, *rest)]
        ids = {op.entry()[1]["id"] for op in ops}
        assert len(ids) == 1 and ".f8f6f4." in ids.pop()
        assert (fp8.a_dtype, fp8.b_dtype, fp8.acc_dtype, fp8.shape_mnk) == (ab, ab, acc, shape)
        assert (fp8.cta_group, fp8.a_src, fp8.b_major_mode) == rest[1:3] + rest[4:]
        atoms = [cute.make_mma_atom(op) for op in ops]
        assert len({a.manifest["id"] for a in atoms}) == 1
        for which in ("layout_a_tv", "layout_b_tv", "layout_c_tv"):
            assert len({str(getattr(a, which)) for a in atoms}) == 1, which


def test_fp8_op_is_a_tcgen05_mma_op_but_no_f8f6f4_op():
    t = tc()
    with target("sm_100a"):
        op = t.MmaFP8Op(cutlass.Float8E4M3FN, cutlass.Float32, (128, 128, 32), t.CtaGroup.ONE,
                        t.OperandSource.SMEM, t.OperandMajorMode.K, t.OperandMajorMode.K)
        f8f6f4 = t.MmaF8F6F4Op(cutlass.Float8E4M3FN, cutlass.Float32, (128, 128, 32))
    assert t.mma.MmaFP8Op is t.MmaFP8Op and cute.nvgpu.tcgen05.mma.MmaFP8Op is t.MmaFP8Op
    assert isinstance(op, t.mma.MmaOp) and isinstance(op, cute.atom.MmaOp)
    assert not isinstance(op, t.MmaF8F6F4Op) and not isinstance(f8f6f4, t.MmaFP8Op)
    assert isinstance(op, (t.mma.MmaFP8Op, t.mma.MmaF8F6F4Op))
    assert not isinstance(op, (t.mma.MmaF16BF16Op, t.mma.MmaTF32Op, t.mma.MmaI8Op, t.mma.MmaMXF8Op))


def test_what_the_instruction_cannot_do_is_refused_at_the_users_line():
    t = tc()
    with target("sm_100a"):
        with pytest.raises(Exception, match=r"test_mma_fp8_op.py:\d+: .*e4m3 or e5m2"):
            cute.make_mma_atom(t.MmaFP8Op(cutlass.Float16, cutlass.Float32, (128, 128, 32)))
        with pytest.raises(Exception, match=r"test_mma_fp8_op.py:\d+: .*K is 32"):
            cute.make_mma_atom(t.MmaFP8Op(cutlass.Float8E5M2, cutlass.Float32, (128, 128, 16)))
        with pytest.raises(Exception, match=r"test_mma_fp8_op.py:\d+: .*A is Float8E4M3FN and B Float8E5M2"):
            t.MmaF8F6F4Op(cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float32, (128, 128, 32))


def test_a_kernel_of_it_compiles_into_the_f8f6f4_ptx():
    from test_tcgen05_dsl import _compile_small_gemm

    t = tc()
    e4m3 = cutlass.Float8E4M3FN
    fp8 = _compile_small_gemm(e4m3, op=lambda: t.MmaFP8Op(e4m3, cutlass.Float32, (128, 64, 32), t.CtaGroup.ONE,
                                                          t.OperandSource.SMEM, t.OperandMajorMode.K,
                                                          t.OperandMajorMode.K))
    f8f6f4 = _compile_small_gemm(e4m3, op=lambda: t.MmaF8F6F4Op(e4m3, e4m3, cutlass.Float32, (128, 64, 32)))
    ptx = fp8.info["ptx"]
    assert len(re.findall(r"tcgen05\.mma\.cta_group::1\.kind::f8f6f4", ptx)) == 2   # 64 of K, K = 32 each
    assert ptx == f8f6f4.info["ptx"]
