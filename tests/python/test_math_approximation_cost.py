"""What the accurate (non-fastmath) approximations of transcendental functions cost in instructions: erf on f32 is
two polynomials and one exp2, with no division and no branch; the rational approximations' own divisions (tanh's)
are the hardware's approximate quotient, while a program's division stays IEEE-rounded. CuTe DSL's Hopper FP8
GEMM with a GELU epilogue evaluates erf once per accumulator value: MLIR's erf, a rational approximation per
interval with an IEEE division (a range check and a call to a slow path each), made that epilogue twice as long; and
with one warp per scheduler in that epilogue, each instruction of erf is paid for in time per tile."""
import math
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, requires_gpu, sass_opcodes, target  # noqa: F401


def _compile(fn, arch="sm_90a", dtype=np.float32, cubin=False):
    """The PTX (or the cubin) of a kernel that stores fn(a[i], a[i + 32]) to b[i]."""
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gB[tidx] = fn(gA[tidx], gA[tidx + 32])

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        compiled = cute.compile(h, from_dlpack(np.zeros(64, dtype)), from_dlpack(np.zeros(32, dtype)))
    return compiled.cubin if cubin else compiled.info["ptx"]


def _body(ptx):
    return [line.strip() for line in ptx.splitlines() if line.strip() and not line.strip().startswith(("//", "."))]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_erf_is_two_polynomials_and_one_exp2(arch):
    body = _body(_compile(lambda a, b: cute.math.erf(a), arch))
    assert not [x for x in body if re.match(r"(div|rcp)\.", x)], "no division"
    assert not [x for x in body if re.match(r"(@%p\d+\s+)?bra\b", x)], "no branch"
    assert len([x for x in body if x.startswith("ex2.approx")]) == 1
    fmas = [x for x in body if x.startswith("fma.rn.f32")]
    assert 12 <= len(fmas) <= 13, len(fmas)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_erf_saturates_by_a_clamp_and_flushes_the_tail(arch):
    """One compare (which polynomial), the saturation a NaN-propagating min of |x| (no second compare and select),
    the sign applied once, and the tail's exp2 in its flushing form (its result is above 2^-26 wherever it is used;
    the subnormal-preserving form costs a compare and two predicated multiplies more in SASS)."""
    body = _body(_compile(lambda a, b: cute.math.erf(a), arch))
    assert len([x for x in body if x.startswith("setp.")]) == 1, [x for x in body if x.startswith("setp.")]
    assert len([x for x in body if x.startswith("selp.")]) == 1
    assert len([x for x in body if x.startswith("min.NaN.f32")]) == 1
    assert len([x for x in body if x.startswith("copysign.")]) == 1
    assert [x for x in body if x.startswith("ex2.approx.ftz.f32")]


def _sass_count(fn, arch="sm_90a"):
    return len([op for op in sass_opcodes(_compile(fn, arch, cubin=True)) if op != "NOP"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_erf_costs_at_most_21_sass_instructions(fresh_compilations, arch):
    """What erf adds to a kernel that copies a value, in SASS (ptxas folds the select into a predicated last FMA of
    the small polynomial and the sign into one LOP3): 13 FMAs, 1 multiply, 1 min, 1 exp2, 1 subtract, 1 sign,
    1 compare and a constant or two. It was 29 (two selects, a second sign and compare, the subnormal fix-up of exp2
    and two FMAs more)."""
    cost = _sass_count(lambda a, b: cute.math.erf(a), arch) - _sass_count(lambda a, b: a, arch)
    assert cost <= 21, cost


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
