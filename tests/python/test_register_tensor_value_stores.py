"""A TensorSSA stored into a kernel's register tensor goes in as the registers hold it (Tensor._stores_as_registers):
16-bit values a 32-bit register at a time. Stored one element at a time, a register's two halves stay apart for
LLVM: converted from f32 they are two conversions, and an instruction that reads the register whole (an MMA's A
operand, read after the values are made) gets it put back together by shifts and ors where it reads it. Among a
wgmma sequence those shifts made the assembler wait for each wgmma before the next (CuTe DSL's Hopper attention
example: its P x V product from the converted softmax ran one wgmma at a time)."""
import re

import numpy as np
from dsl_helpers import fresh_compilations, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

N = 16


def _program(layout):
    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        acc = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float32)
        for i in cutlass.range_constexpr(N):
            acc[i] = x[tidx * N + i]
        frag = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float16)
        # the accumulator's order over the fragment's storage, as an MMA's C layout seen as its A layout
        view = cute.make_tensor(frag.iterator, layout)
        view.store(acc.load().to(cutlass.Float16))
        words = cute.recast_tensor(frag, cutlass.Int32)
        # read in another block (a loop's body, as an MMA reads its operand after a barrier wait): there LLVM
        # cannot fold a repacking into the conversions
        for k in cutlass.range(n):
            for i in cutlass.range_constexpr(N // 2):
                out[tidx * (N // 2) + i] = words[i] ^ k

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        kern(x, out, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def _ptx(layout):
    with target("sm_80"):
        c = cute.compile(_program(layout), from_dlpack(np.zeros(32 * N, np.float32)),
                         from_dlpack(np.zeros(32 * N // 2, np.int32)), cutlass.Int32(2))
    return [line.strip() for line in c.ptx.splitlines()]


def _check(body):
    paired = [line for line in body if re.match(r"cvt\.rn\.f16x2\.f32\b", line)]
    single = [line for line in body if re.match(r"cvt\.rn\.f16\.f32\b", line)]
    # a register put together from halves: a shift by 16 and an or, a byte permute, a widened half, a vector move
    repack = [line for line in body if re.match(r"(prmt|or|cvt\.u32\.u16|cvt\.u16\.u32|bfi)\b", line)
              or re.match(r"shl\.b32\s+%r\d+, %r\d+, 16;", line) or re.match(r"mov\.b32\s+%r\d+, \{", line)]
    assert len(paired) == N // 2 and not single, (paired, single)
    assert not repack, repack[:8]


def test_register_tensor_store_keeps_words_whole(fresh_compilations):
    _check(_ptx(cute.make_layout(N)))


def test_register_tensor_store_in_another_order_keeps_words_whole(fresh_compilations):
    """A layout that visits the storage out of order (pairs consecutive, the pairs permuted) still pairs them."""
    _check(_ptx(cute.make_layout((2, 2, N // 4), stride=(1, N // 2, 2))))
