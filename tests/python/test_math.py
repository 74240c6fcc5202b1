"""cute.math and cutlass.min/max: static values against Python's math, the PTX each form compiles to (accurate by
default, the hardware's approximations with fastmath), TensorSSA mapping, errors at the user's line, and (on a
GPU) accuracy against numpy in float64 on random data."""
import math
import os
import re
import struct

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

THIS = os.path.abspath(__file__)


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


UNARY = ["exp", "exp2", "log", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "erf", "sinh",
         "cosh", "asin", "acos", "atan", "asinh", "atanh", "erfc", "expm1", "log1p", "cbrt", "floor", "ceil",
         "trunc", "round", "roundeven", "absf"]
# (name, Python reference, domain of random samples)
REFERENCE = {
    "exp": (math.exp, (-20, 20)), "exp2": (lambda x: 2.0 ** x, (-30, 30)), "log": (math.log, (1e-3, 1e4)),
    "log2": (math.log2, (1e-3, 1e4)), "log10": (math.log10, (1e-3, 1e4)), "sqrt": (math.sqrt, (0, 1e4)),
    "rsqrt": (lambda x: 1 / math.sqrt(x), (1e-3, 1e4)), "sin": (math.sin, (-3, 3)), "cos": (math.cos, (-3, 3)),
    "tan": (math.tan, (-1.4, 1.4)), "tanh": (math.tanh, (-5, 5)), "erf": (math.erf, (-3, 3)),
    "sinh": (math.sinh, (-5, 5)), "cosh": (math.cosh, (-5, 5)), "asin": (math.asin, (-0.99, 0.99)),
    "acos": (math.acos, (-0.99, 0.99)), "atan": (math.atan, (-10, 10)), "asinh": (math.asinh, (-10, 10)),
    "atanh": (math.atanh, (-0.9, 0.9)), "erfc": (math.erfc, (-2, 3)), "expm1": (math.expm1, (-2, 2)),
    "log1p": (math.log1p, (-0.5, 10)), "cbrt": (lambda x: math.copysign(abs(x) ** (1 / 3), x), (-100, 100)),
    "floor": (math.floor, (-50, 50)), "ceil": (math.ceil, (-50, 50)), "trunc": (math.trunc, (-50, 50)),
    "round": (lambda x: math.copysign(math.floor(abs(x) + 0.5), x), (-50, 50)),
    "roundeven": (lambda x: float(round(x)), (-50, 50)), "absf": (abs, (-50, 50)),
}


@pytest.mark.parametrize("name", UNARY)
def test_static_values_are_pythons_rounded_to_the_type(name):
    ref, (lo, hi) = REFERENCE[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    for x in rng.uniform(lo, hi, 20):
        x = f32(float(x))
        got = getattr(cute.math, name)(cutlass.Float32(x))
        assert isinstance(got, cutlass.Float32) and got.is_static
        assert got.value == f32(float(ref(x))), (name, x)
        # A Python number is a Float32; Float64 keeps double precision.
        assert getattr(cute.math, name)(x).value == got.value
        assert getattr(cute.math, name)(cutlass.Float64(x)).value == float(ref(x))


def test_static_values_outside_the_domain_follow_ieee():
    assert math.isnan(cute.math.log(cutlass.Float32(-1.0)).value)
    assert cute.math.log(cutlass.Float32(0.0)).value == -math.inf
    assert cute.math.exp(cutlass.Float32(1000.0)).value == math.inf
    assert cute.math.rsqrt(cutlass.Float32(0.0)).value == math.inf
    assert math.isnan(cute.math.sqrt(cutlass.Float32(-4.0)).value)


def test_fma_is_exactly_rounded_once():
    # 1 + 2**-30 squared: the 2**-60 term survives only with one rounding.
    a = 1.0 + 2.0 ** -30
    got = cute.math.fma(cutlass.Float64(a), cutlass.Float64(a), cutlass.Float64(-1.0 - 2.0 ** -29)).value
    assert got == 2.0 ** -60
    assert (a * a - 1.0 - 2.0 ** -29) == 0.0  # two roundings lose it


def test_min_max_are_variadic_over_python_and_dsl_values():
    assert cutlass.max(3, 7, 5) == 7 and isinstance(cutlass.max(3, 7, 5), int)
    assert cutlass.min(2.5, -1.0) == -1.0
    r = cutlass.max(cutlass.Int32(3), 9, cutlass.Int32(4))
    assert isinstance(r, cutlass.Int32) and r.value == 9
    r = cutlass.min(cutlass.Float32(1.5), 0.25, 3)
    assert isinstance(r, cutlass.Float32) and r.value == 0.25
    assert cute.math.max(cutlass.Float32(1.0), cutlass.Float32(2.0)).value == 2.0
    with pytest.raises(TypeError):
        cutlass.max()


def _compile_unary(name, fastmath, arch="sm_90a", dtype=np.float32):
    fn = getattr(cute.math, name)

    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        gB[tidx] = fn(gA[tidx], fastmath=fastmath)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(32, dtype)), from_dlpack(np.zeros(32, dtype)))


def _approx_instructions(ptx):
    return sorted(set(re.findall(r"\b((?:ex2|lg2|sin|cos|rsqrt|sqrt|tanh|rcp)\.approx[.a-z0-9]*)", ptx)))


FAST = {"exp": ["ex2.approx.ftz.f32"], "exp2": ["ex2.approx.ftz.f32"], "log": ["lg2.approx.ftz.f32"],
        "log2": ["lg2.approx.ftz.f32"], "log10": ["lg2.approx.ftz.f32"], "sqrt": ["sqrt.approx.ftz.f32"],
        "rsqrt": ["rsqrt.approx.ftz.f32"], "sin": ["sin.approx.ftz.f32"], "cos": ["cos.approx.ftz.f32"],
        "tan": ["cos.approx.ftz.f32", "sin.approx.ftz.f32"], "tanh": ["tanh.approx.f32"]}


@pytest.mark.parametrize("name", sorted(FAST))
def test_fastmath_picks_the_hardware_approximation(name):
    fast = _compile_unary(name, True).info["ptx"]
    assert _approx_instructions(fast) == FAST[name]
    accurate = _compile_unary(name, False).info["ptx"]
    # Without fastmath nothing approximate is used, except exp2's ex2 (the only exp2 there is, within 2 ulp)
    # and the IEEE sqrt; the accurate forms are longer (polynomials, range reduction).
    allowed = {"exp2": ["ex2.approx.f32"]}.get(name, [])
    assert _approx_instructions(accurate) == allowed
    assert len(accurate.splitlines()) >= len(fast.splitlines())


@pytest.mark.parametrize("arch", ["sm_80", "sm_100a"])
def test_fastmath_on_every_target(arch):
    assert "ex2.approx.ftz.f32" in _compile_unary("exp", True, arch).info["ptx"]
    assert "tanh.approx.f32" in _compile_unary("tanh", True, arch).info["ptx"]


def test_half_precision_computes_in_f32():
    ptx = _compile_unary("exp2", True, dtype=np.float16).info["ptx"]
    assert "ex2.approx.ftz.f32" in ptx and "cvt.f32.f16" in ptx and re.search(r"cvt\.rn\.f16\.f32", ptx)


def test_math_maps_over_a_tensor_ssa():
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        r = cute.make_rmem_tensor((8,), cutlass.Float32)
        for i in cutlass.range_constexpr(8):
            r[i] = gA[i]
        v = cute.math.exp2(r.load(), fastmath=True)
        w = cute.math.fma(v, v, 1.0)
        gB[0] = w.reduce(cute.ReductionOp.ADD, 0.0)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_90a"):
        c = cute.compile(h, from_dlpack(np.zeros(8, np.float32)), from_dlpack(np.zeros(8, np.float32)))
    ptx = c.info["ptx"]
    assert len(re.findall(r"ex2\.approx\.ftz\.f32", ptx)) == 8
    assert len(re.findall(r"\bfma\.rn\.f32", ptx)) >= 8


def test_rcp_approx():
    @cute.kernel
    def k(gA: cute.Tensor):
        gA[0] = cute.math.rcp(gA[1], approx=True, ftz=True) + cute.arch.rcp_approx(gA[2])

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert len(re.findall(r"rcp\.approx\.ftz\.f32", c.info["ptx"])) == 2


def test_a_non_number_is_refused_at_the_users_line():
    @cute.kernel
    def k(gA: cute.Tensor):
        gA[0] = cute.math.exp("two")  # the bad call

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"), pytest.raises(TypeError) as e:
        cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert f"{THIS}:" in str(e.value) and "the bad call" in open(THIS).read().splitlines()[
        int(str(e.value).split(f"{THIS}:")[1].split(":")[0]) - 1]
    assert "cute.math.exp" in str(e.value)


def test_f64_transcendental_is_refused_clearly():
    with pytest.raises(Exception, match="no NVPTX lowering"):
        _compile_unary("exp", False, dtype=np.float64)
    # sqrt and the rounding functions have f64 instructions.
    assert "sqrt.rn.f64" in _compile_unary("sqrt", False, dtype=np.float64).info["ptx"]


# --- on the GPU -------------------------------------------------------------------------------------------------

# name -> (max relative error accurate, max relative error fastmath) against float64
TOLERANCE = {"exp": (2e-6, 2e-5), "exp2": (2e-6, 2e-6), "log": (2e-6, 2e-5), "log2": (2e-6, 2e-5),
             "log10": (2e-6, 2e-5), "sqrt": (1e-7, 2e-6), "rsqrt": (2e-6, 2e-6), "sin": (3e-7, 2e-6),
             "cos": (3e-7, 2e-6), "tanh": (4e-6, 2e-3), "erf": (4e-6, 4e-6), "tan": (4e-6, 1e-4)}


@requires_gpu
@pytest.mark.parametrize("fastmath", [False, True])
@pytest.mark.parametrize("name", sorted(TOLERANCE))
def test_accuracy_on_the_gpu(name, fastmath, rng):
    import torch

    ref, (lo, hi) = REFERENCE[name]
    fn = getattr(cute.math, name)

    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        tidx, _, _ = cute.arch.thread_idx()
        i = bidx * 256 + tidx
        gB[i] = fn(gA[i], fastmath=fastmath)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[64, 1, 1], block=[256, 1, 1])

    x = np.random.default_rng(rng.randrange(1 << 30)).uniform(lo, hi, 64 * 256).astype(np.float32)
    a = torch.from_numpy(x).cuda()
    b = torch.full_like(a, float("nan"))
    h(from_dlpack(a), from_dlpack(b))
    torch.cuda.synchronize()
    got = b.cpu().numpy().astype(np.float64)
    want = np.array([ref(float(v)) for v in x])
    # Relative error, except near a zero of the function where the instruction's accuracy is absolute: there the
    # error relative to max(|value|, 1). That holds for the trigonometric functions, and for the logarithms under
    # fastmath: lg2.approx is accurate to an absolute 2^-22 on (0.5, 2), so its relative error grows without bound
    # toward x = 1 (a draw of 1.00068 gave 7.6e-5).
    absolute_near_zero = name in ("sin", "cos", "tan") or (fastmath and name in ("log", "log2", "log10"))
    err = np.abs(got - want) / np.maximum(np.abs(want), 1.0 if absolute_near_zero else 1e-30)
    assert np.all(np.isfinite(got))
    assert err.max() <= TOLERANCE[name][1 if fastmath else 0], (name, float(err.max()), float(x[err.argmax()]))


def test_transcendentals_at_cute_top_level_are_cute_math_functions():
    # CuTe DSL programs call cute.exp, cute.rsqrt, cute.erf, cute.tanh as well as cute.math.*.
    for name in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "erf", "tanh", "sin", "cos", "atan2"):
        assert getattr(cute, name) is getattr(cute.math, name) and name in cute.__all__
