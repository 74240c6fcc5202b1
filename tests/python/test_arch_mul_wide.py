"""cute.arch.mul_wide: the whole product of two 16- or 32-bit integers of one type, in the type of twice their
width (QuACK's stochastic rounding splits a 32x32 product into its halves with it)."""
import re

import numpy as np
import struct

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from host_stand_in import stand_in  # noqa: F401 (a fixture)
from dsl_helpers import requires_gpu, target

# operand type: (result type, the multiply's PTX). A 16-bit operand already sits in a 32-bit register, which the
# compiler multiplies as it is (one 32-bit multiply, the same IMAD in SASS as the 16-bit widening form).
CASES = {
    cutlass.Uint32: (cutlass.Uint64, r"mul\.wide\.u32"), cutlass.Int32: (cutlass.Int64, r"mul\.wide\.s32"),
    cutlass.Uint16: (cutlass.Uint32, r"mul\.(wide\.u16|lo\.[su]32)"),
    cutlass.Int16: (cutlass.Int32, r"mul\.(wide\.s16|lo\.[su]32)"),
}


def _kernel(body):
    @cute.kernel
    def k(g: cute.Tensor, a: cutlass.Uint32, b: cutlass.Uint32):
        body(g, a, b)

    @cute.jit
    def h(x: cute.Tensor, a: cutlass.Uint32, b: cutlass.Uint32):
        k(x, a, b).launch(grid=[1, 1, 1], block=[1, 1, 1])

    return h


def _store_halves(dtype, seen):
    def body(g, a, b):
        p = cute.arch.mul_wide(dtype(a), dtype(b))
        seen[dtype] = type(p)
        w = dtype.width * 2
        g[0] = cutlass.Uint32(p >> (w // 2)) if w == 64 else cutlass.Uint32(p) >> 16
        g[1] = cutlass.Uint32(p) if w == 64 else cutlass.Uint32(p) & 0xFFFF
    return body


@pytest.mark.parametrize("dtype", list(CASES), ids=lambda t: t.__name__)
def test_mul_wide_doubles_the_width_and_is_one_widening_multiply(dtype):
    seen = {}
    with target("sm_90a"):
        ptx = cute.compile(_kernel(_store_halves(dtype, seen)), from_dlpack(np.zeros(4, np.uint32)), 1, 2).info["ptx"]
    wide, instruction = CASES[dtype]
    assert seen[dtype] is wide
    assert len(re.findall(r"\bmul\.", ptx)) == 1 and re.search(instruction, ptx)
    assert not re.search(r"mul\.\w+\.[su]64", ptx)  # never a 64-bit multiply


@pytest.mark.parametrize("args", ["mixed signedness", "mixed widths", "python int", "64-bit"])
def test_mul_wide_refuses_other_operands_at_the_users_line(args):
    make = {"mixed signedness": lambda a, b: (cutlass.Int32(a), b),
            "mixed widths": lambda a, b: (cutlass.Uint16(a), b),
            "python int": lambda a, b: (a, 3),
            "64-bit": lambda a, b: (cutlass.Uint64(a), cutlass.Uint64(b))}[args]

    def body(g, a, b):
        x, y = make(a, b)
        g[0] = cutlass.Uint32(cute.arch.mul_wide(x, y))  # the user's line

    line = body.__code__.co_firstlineno + 2
    with target("sm_90a"), pytest.raises(TypeError, match="mul_wide multiplies two values of one type") as info:
        cute.compile(_kernel(body), from_dlpack(np.zeros(4, np.uint32)), 1, 2)
    assert f"test_arch_mul_wide.py:{line}" in str(info.value)


@requires_gpu
@pytest.mark.parametrize("dtype", list(CASES), ids=lambda t: t.__name__)
def test_mul_wide_values_on_the_gpu(dtype):
    import torch

    rng = np.random.default_rng(7)
    bits = dtype.width
    signed = dtype.signed
    out = torch.zeros(2, dtype=torch.int32, device="cuda")
    fn = cute.compile(_kernel(_store_halves(dtype, {})), from_dlpack(out), 1, 2)
    for a, b in [(2**bits - 1, 2**bits - 1), (2**(bits - 1), 3), (0, 5)] + \
            [tuple(int(v) for v in rng.integers(0, 2**bits, 2)) for _ in range(4)]:
        fn(from_dlpack(out), a, b)
        torch.cuda.synchronize()
        hi, lo = (int(v) & 0xFFFFFFFF for v in out.cpu().numpy())

        def value(x):  # the operand as the type reads the low `bits` bits
            x &= 2**bits - 1
            return x - 2**bits if signed and x >= 2**(bits - 1) else x

        want = (value(a) * value(b)) & (2**(2 * bits) - 1)
        assert (hi << bits) | lo == want, (a, b, hi, lo)


def test_an_unsigned_argument_above_the_signed_range_is_packed_as_its_bits(stand_in):
    """A Uint32 argument of 2**32 - 1 (which the GPU test passes) reaches the kernel's parameter as its 32 bits, on
    the Python path and the native one alike."""
    with target("sm_90a"):
        fn = stand_in(cute.compile(_kernel(_store_halves(cutlass.Uint32, {})), from_dlpack(np.zeros(4, np.uint32)),
                                   1, 2))
    g = from_dlpack(np.zeros(4, np.uint32))
    for _ in range(3):  # the first calls take the Python path, later ones may be native
        fn(g, 2**32 - 1, 2**31)
    for name, grid, params, path in stand_in.launched:
        assert params[-8:] == struct.pack("=II", 2**32 - 1, 2**31), (path, params)
