"""What the accurate (non-fastmath) approximations of transcendental functions cost in instructions: erf on f32 is
two polynomials and one exp2, with no division and no branch; the rational approximations' own divisions (tanh's)
are the hardware's approximate quotient, while a program's division stays IEEE-rounded. CuTe DSL's Hopper FP8
GEMM with a GELU epilogue evaluates erf once per accumulator value: MLIR's erf, a rational approximation per
interval with an IEEE division (a range check and a call to a slow path each), made that epilogue twice as long."""
import math
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def _compile(fn, arch="sm_90a", dtype=np.float32):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gB[tidx] = fn(gA[tidx], gA[tidx + 32])

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(64, dtype)), from_dlpack(np.zeros(32, dtype))).info["ptx"]


def _body(ptx):
    return [line.strip() for line in ptx.splitlines() if line.strip() and not line.strip().startswith(("//", "."))]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_erf_is_two_polynomials_and_one_exp2(arch):
    body = _body(_compile(lambda a, b: cute.math.erf(a), arch))
    assert not [x for x in body if re.match(r"(div|rcp)\.", x)], "no division"
    assert not [x for x in body if re.match(r"(@%p\d+\s+)?bra\b", x)], "no branch"
    assert len([x for x in body if x.startswith("ex2.approx")]) == 1
    fmas = [x for x in body if x.startswith("fma.rn.f32")]
    assert 14 <= len(fmas) <= 16, len(fmas)


def test_erf_of_half_precision_goes_through_the_f32_form():
    body = _body(_compile(lambda a, b: cute.math.erf(a), dtype=np.float16))
    assert not [x for x in body if re.match(r"(div|rcp)\.", x)]
    assert len([x for x in body if x.startswith("ex2.approx")]) == 1


def test_an_approximations_division_is_approximate_a_programs_is_not():
    tanh = _body(_compile(lambda a, b: cute.math.tanh(a)))
    assert not [x for x in tanh if x.startswith(("div.rn", "div.full"))], "tanh's own division"
    assert [x for x in tanh if x.startswith("div.approx.f32")]
    both = _body(_compile(lambda a, b: cute.math.tanh(a) / b))
    assert len([x for x in both if x.startswith("div.rn.f32")]) == 1, "the program's division stays IEEE"


@requires_gpu
def test_erf_accuracy_over_its_whole_range_on_the_gpu():
    import torch

    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        gB[bidx * 256 + tidx] = cute.math.erf(gA[bidx * 256 + tidx])

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1024, 1, 1], block=[256, 1, 1])

    x = np.concatenate([np.linspace(-6, 6, 1024 * 256 - 8),
                        [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 3.92, 1e-30]]).astype(np.float32)
    a = torch.from_numpy(x).cuda()
    b = torch.full_like(a, float("nan"))
    h(from_dlpack(a), from_dlpack(b))
    torch.cuda.synchronize()
    got = b.cpu().numpy()
    want = np.array([math.erf(float(v)) for v in x])
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - want) / ulp
    assert err.max() <= 3, (float(err.max()), float(x[err.argmax()]))
    assert math.copysign(1, got[-7]) < 0, "erf(-0) is -0"
    nan = torch.full((256 * 1024,), float("nan"), device="cuda")
    h(from_dlpack(nan), from_dlpack(b))
    torch.cuda.synchronize()
    assert torch.isnan(b).all().item()
