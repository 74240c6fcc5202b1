"""Integers converted to bf16 or f16 in registers: those of at most 24 significant bits go through f32 (a full-rate
conversion of a 32-bit integer, then a packed rounding of each pair), as NVIDIA's compiler builds CuTe DSL's
programs; wider ones keep their direct conversion, since rounding twice could differ from rounding once
(compiler/narrow_float_conversions.cpp). A mixed-input kernel's conversion warpgroup at its register ceiling
(mixed_input_fmha_decode) no longer spills for it."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

INTS = {cutlass.Int8: np.int8, cutlass.Int16: np.int16, cutlass.Int32: np.int32, cutlass.Uint8: np.uint8}


def _convert(src, dst):
    """Each thread converts a fragment of 8 integers to `dst` and scales it there (so that the 16-bit values are
    used as such), then writes them out widened to f32."""

    @cute.kernel
    def kern(x: cute.Tensor, scale: cutlass.Float32, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        col = bidx * 128 + tidx
        frag = cute.make_rmem_tensor(cute.make_layout(8), src)
        cute.autovec_copy(x[None, col], frag)
        sc = cute.make_rmem_tensor(cute.make_layout(8), dst)
        sc.fill(dst(scale))
        res = cute.make_rmem_tensor(cute.make_layout(8), dst)
        res.store(frag.load().to(dst) * sc.load())
        wide = cute.make_rmem_tensor(cute.make_layout(8), cutlass.Float32)
        wide.store(res.load().to(cutlass.Float32))
        cute.autovec_copy(wide, out[None, col])

    @cute.jit
    def host(x: cute.Tensor, scale: cutlass.Float32, out: cute.Tensor):
        kern(x, scale, out).launch(grid=(x.shape[1] // 128, 1, 1), block=(128, 1, 1))

    return host


def _compile(src, dst, cols=128):
    x = np.zeros((cols, 8), INTS[src]).T
    with target("sm_100a"):
        return cute.compile(_convert(src, dst), from_dlpack(x), cutlass.Float32(1.0),
                            from_dlpack(np.zeros((cols, 8), np.float32).T))


@pytest.mark.parametrize("src", [cutlass.Int8, cutlass.Int16, cutlass.Uint8], ids=str)
@pytest.mark.parametrize("dst", [cutlass.BFloat16, cutlass.Float16], ids=str)
def test_small_integers_convert_through_f32_and_round_in_pairs(src, dst, fresh_compilations):
    ptx = _compile(src, dst).ptx
    name = "bf16" if dst is cutlass.BFloat16 else "f16"
    assert not re.search(rf"cvt\.rn\.{name}\.[su]\d+", ptx), "a direct integer conversion is left"
    kind = "s" if src.signed else "u"
    assert len(re.findall(rf"cvt\.rn\.f32\.{kind}32", ptx)) == 8
    assert len(re.findall(rf"cvt\.rn\.{name}x2\.f32", ptx)) == 4


def test_32_bit_integers_keep_their_direct_conversion(fresh_compilations):
    ptx = _compile(cutlass.Int32, cutlass.BFloat16).ptx
    assert len(re.findall(r"cvt\.rn\.bf16\.s32", ptx)) == 8
    assert not re.search(r"cvt\.rn\.f32\.s32", ptx)


def _rounded(v: np.ndarray, digits: int, largest: float) -> np.ndarray:
    """Integers rounded once, to nearest even, to `digits` significant bits; past `largest`, infinity."""
    mag = np.abs(v.astype(np.int64))
    shift = np.maximum(np.frexp(mag.astype(np.float64))[1].astype(np.int64) - digits, 0)  # exact below 2**53
    q, r = mag >> shift, mag & ((np.int64(1) << shift) - 1)
    halfway = np.where(shift > 0, np.int64(1) << np.maximum(shift - 1, 0), 1)
    q = q + ((r > halfway) | ((r == halfway) & (q % 2 == 1) & (shift > 0)))
    out = (q << shift).astype(np.float64) * np.sign(v)
    return np.where(np.abs(out) > largest, np.copysign(np.inf, v), out)


@requires_gpu
@pytest.mark.parametrize("src", [cutlass.Int8, cutlass.Int16, cutlass.Int32], ids=str)
@pytest.mark.parametrize("dst", [cutlass.BFloat16, cutlass.Float16], ids=str)
def test_converted_values_are_rounded_once(src, dst):
    """Every 8- and 16-bit integer, and 32-bit ones around the halfway points of bf16 and f16 at large magnitudes:
    each rounded once, to nearest even."""
    import torch

    tdt = {cutlass.Int8: torch.int8, cutlass.Int16: torch.int16, cutlass.Int32: torch.int32}[src]
    if src is cutlass.Int32:
        base = torch.tensor([(1 << 24) + 1, (1 << 25) + 3, (1 << 30) + (1 << 22) + 1, -(1 << 27) - (1 << 19) - 1])
        vals = (base[:, None] + torch.arange(-512, 512)[None, :]).reshape(-1).to(tdt)
    else:
        info = torch.iinfo(tdt)
        vals = torch.arange(info.min, info.max + 1).to(tdt)
    cols = -(-vals.numel() // 8 // 128) * 128
    x = torch.zeros(cols * 8, dtype=tdt)
    x[:vals.numel()] = vals
    x = x.reshape(cols, 8).cuda()
    out = torch.full((cols, 8), float("nan"), device="cuda")
    _convert(src, dst)(from_dlpack(x.T), cutlass.Float32(1.0), from_dlpack(out.T))
    digits, largest = (8, 3.3895313892515355e38) if dst is cutlass.BFloat16 else (11, 65504.0)
    want = _rounded(x.cpu().numpy(), digits, largest)
    np.testing.assert_array_equal(out.cpu().numpy(), want.astype(np.float32))
