"""cute.arch.calc_packed_f32x2_op with NVVM's packed ops as calc_func (CuTe DSL 4.8.1's form of the packed f32x2
arithmetic): a library makes its packed operations from it at import, on every target (here: before any target is
chosen), and a kernel for a target with the instruction gets exactly the one instruction, rounded as rnd says;
a wrong operand count or a calc_func that is not a packed op is refused."""
import functools
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._mlir.dialects import nvvm
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

# made at import, as QuACK makes its packed subtraction (no target is chosen yet)
sub_rz = functools.partial(cute.arch.calc_packed_f32x2_op, src_c=None, calc_func=nvvm.sub_packed_f32x2, rnd="rz")


def ptx_of(body, arch="sm_100a"):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        body(gA, gB, tidx)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        c = cute.compile(h, from_dlpack(np.zeros(32, np.float32)), from_dlpack(np.zeros(32, np.float32)))
    return c.info["ptx"]


def test_each_packed_op_through_calc_func_is_its_one_instruction():
    def body(gA, gB, t):
        x, y = gA[t], gB[t]
        d = sub_rz((x, y), (y, x))
        a = cute.arch.calc_packed_f32x2_op(d, (x, 1.0), None, nvvm.add_packed_f32x2)
        m = cute.arch.calc_packed_f32x2_op(a, (2.0, y), None, nvvm.mul_packed_f32x2, rnd="rp")
        f = cute.arch.calc_packed_f32x2_op(m, (x, y), d, nvvm.fma_packed_f32x2, rnd="rm")
        gB[t] = f[0] + f[1]

    ptx = ptx_of(body)
    for op, r in (("sub", "rz"), ("add", "rn"), ("mul", "rp"), ("fma", "rm")):
        assert len(re.findall(rf"\b{op}\.{r}\.f32x2\b", ptx)) == 1, op
    assert len(re.findall(r"\.f32x2\b", ptx)) == 4


def test_the_result_is_a_pair_of_float32():
    seen = {}

    def body(gA, gB, t):
        r = sub_rz((gA[t], gA[t]), (gB[t], gB[t]))
        seen["types"] = [type(v) for v in r]
        gB[t] = r[0]

    ptx_of(body)
    assert seen["types"] == [cutlass.Float32, cutlass.Float32]


def test_operand_count_must_match_the_op():
    with pytest.raises(TypeError, match="fma_packed_f32x2 takes 3 operands"):
        ptx_of(lambda gA, gB, t: cute.arch.calc_packed_f32x2_op((gA[t], gA[t]), (gB[t], gB[t]), None,
                                                                nvvm.fma_packed_f32x2))
    with pytest.raises(TypeError, match="sub_packed_f32x2 takes 2 operands"):
        ptx_of(lambda gA, gB, t: sub_rz((gA[t], gA[t]), (gB[t], gB[t]), src_c=(gA[t], gB[t])))


def test_a_calc_func_that_is_not_a_packed_op_is_refused():
    with pytest.raises(NotImplementedError, match="calc_func is one of nvvm.add_packed_f32x2"):
        ptx_of(lambda gA, gB, t: cute.arch.calc_packed_f32x2_op((gA[t], gA[t]), (gB[t], gB[t]), None,
                                                                lambda a, b, **k: a))
    with pytest.raises(NotImplementedError, match="pass it as calc_func"):
        nvvm.sub_packed_f32x2(None, None)


def test_without_the_instruction_the_target_is_named():
    with pytest.raises(TypeError, match="compiling for sm_90a"):
        ptx_of(lambda gA, gB, t: sub_rz((gA[t], gA[t]), (gB[t], gB[t])), "sm_90a")
