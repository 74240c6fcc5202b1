"""Element-wise f32 math on register fragments executes in pairs where the target has two-lane f32 arithmetic
(sm_100a: the code generator's vectors of two f32), and element by element elsewhere (compiler/
paired_float_arithmetic.cpp). A pair computes what its two lanes computed: the same operations with the same
operands, and the same multiplies fused into adds."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

N = 8


def _softmax_like():
    """Per thread, fragments of N f32: x * scale - x[0] * scale (a product shared by the fragment, one fused
    product per element) then rescaled (products alone), written to `out`; x + y (adds alone) written to `y`."""

    @cute.kernel
    def kern(x: cute.Tensor, y: cute.Tensor, scale: cutlass.Float32, rescale: cutlass.Float32, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        frag = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float32)
        cute.autovec_copy(x[None, tidx], frag)
        other = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float32)
        cute.autovec_copy(y[None, tidx], other)
        shift = (0.0 - frag[0]) * scale
        for k in cutlass.range(N, vectorize=True):
            frag[k] = frag[k] * scale + shift
        for k in cutlass.range(N, vectorize=True):
            frag[k] = frag[k] * rescale
        cute.autovec_copy(frag, out[None, tidx])
        other.store(other.load() + x[None, tidx].load())
        cute.autovec_copy(other, y[None, tidx])

    @cute.jit
    def host(x: cute.Tensor, y: cute.Tensor, scale: cutlass.Float32, rescale: cutlass.Float32, out: cute.Tensor):
        kern(x, y, scale, rescale, out).launch(grid=(1, 1, 1), block=(x.shape[1], 1, 1))

    return host


def _ptx(arch):
    frags = [from_dlpack(np.zeros((32, N), np.float32).T) for _ in range(3)]
    with target(arch):
        return cute.compile(_softmax_like(), frags[0], frags[1], cutlass.Float32(0.5), cutlass.Float32(2.0),
                            frags[2]).ptx


def _lanes(ptx):
    """Each f32 arithmetic operation of the PTX, counted per lane: {op: lanes}."""
    counts = {}
    for op, pair in re.findall(r"\b(mul|add|sub|fma)(?:\.rn)?(?:\.ftz)?\.f32(x2)?\s", ptx):
        counts[op] = counts.get(op, 0) + (2 if pair else 1)
    return counts


def test_fragment_math_executes_in_pairs_on_sm_100a(fresh_compilations):
    ptx = _ptx("sm_100a")
    assert len(re.findall(r"\bfma\.rn\.f32x2\s", ptx)) == N // 2, "x * scale + shift: one fused pair per 2 elements"
    assert len(re.findall(r"\bmul(\.rn)?\.f32x2\s", ptx)) == N // 2, "the rescale: one pair per 2 elements"
    assert len(re.findall(r"\badd(\.rn)?\.f32x2\s", ptx)) == N // 2, "the sum: one pair per 2 elements"
    assert not re.search(r"\bfma\.rn\.f32\s", ptx), "an element's fused multiply-add is left unpaired"


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_other_targets_keep_element_by_element_math(arch, fresh_compilations):
    ptx = _ptx(arch)
    assert not re.search(r"\.f32x2\b", ptx)
    assert len(re.findall(r"\bfma\.rn\.f32\s", ptx)) == N


def test_pairs_compute_what_their_lanes_computed(fresh_compilations):
    """Per operation, as many lanes on sm_100a as elements on sm_90a: nothing fused or unfused on the way."""
    assert _lanes(_ptx("sm_100a")) == _lanes(_ptx("sm_90a"))


def _scaled_by_exp():
    """Per thread, fragments of N f32 (b, a, d) and a scalar c: out[k] = exp(c - a[k]) * d[k] * b[k], the steps of
    one element after another (the form of the mamba2 SSD's pre-inter B scaling): c - a[k], times log2(e), exp2,
    times d[k], times b[k]."""

    @cute.kernel
    def kern(b: cute.Tensor, a: cute.Tensor, d: cute.Tensor, c: cutlass.Float32, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        frags = []
        for src in (b, a, d):
            frag = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float32)
            cute.autovec_copy(src[None, tidx], frag)
            frags.append(frag)
        rb, ra, rd = frags
        res = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float32)
        for k in cutlass.range(N, vectorize=True, unroll_full=True):
            res[k] = cute.math.exp(c - ra[k], fastmath=True) * rd[k]
            res[k] = res[k] * rb[k]
        cute.autovec_copy(res, out[None, tidx])

    @cute.jit
    def host(b: cute.Tensor, a: cute.Tensor, d: cute.Tensor, c: cutlass.Float32, out: cute.Tensor):
        kern(b, a, d, c, out).launch(grid=(1, 1, 1), block=(b.shape[1], 1, 1))

    return host


def _scaled_by_exp_ptx(arch):
    frags = [from_dlpack(np.zeros((32, N), np.float32).T) for _ in range(4)]
    with target(arch):
        return cute.compile(_scaled_by_exp(), *frags[:3], cutlass.Float32(0.5), frags[3]).ptx


def test_pairs_join_the_same_step_of_two_elements(fresh_compilations):
    """Each step pairs with the same step of the next element, never with the next element's first step: no pair
    packs the log2(e) scale with a computed value (a register of the constant per pair), and every multiply is
    paired (three per element: by log2(e), by d, by b)."""
    ptx = _scaled_by_exp_ptx("sm_100a")
    immediates = set(re.findall(r"\bmov\.b32\s+(%r\d+),\s*0f[0-9A-F]{8};", ptx))
    for lo, hi in re.findall(r"\bmov\.b64\s+%rd\d+,\s*\{(%r\d+),\s*(%r\d+)\};", ptx):
        assert (lo in immediates) == (hi in immediates), f"a pair of a constant and a computed value: {lo}, {hi}"
    assert not re.search(r"\bmul(\.rn)?(\.ftz)?\.f32\s", ptx), "a multiply left unpaired"
    assert len(re.findall(r"\bmul(\.rn)?(\.ftz)?\.f32x2\s", ptx)) == 3 * N // 2
    assert _lanes(ptx) == _lanes(_scaled_by_exp_ptx("sm_90a"))
