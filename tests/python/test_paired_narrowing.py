"""An f32 TensorSSA converted to a 16-bit float rounds two lanes at a time (tensor_ssa._narrowed_in_pairs): one
paired rounding per two elements that leaves both halves in one 32-bit register, so that a fragment then read as
words (a matrix operand, as attention reads its probabilities P = softmax(S) after converting them) takes no
16-bit unpacking and repacking. Rounded one element at a time, each element took a conversion of its own (on the
slow conversion pipe, beside the softmax's exponentials) and two of them were packed into a word afterwards."""
import re

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, sass_opcodes, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

N = 16


def _compiled(dtype):
    """Per thread: N f32 loaded, converted to dtype into a fragment, the fragment's words handed one by one to an
    operation that takes a 32-bit register (a shuffle, standing for a matrix operand) and written out."""

    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        acc = cute.make_rmem_tensor(cute.make_layout(N), cutlass.Float32)
        cute.autovec_copy(x[None, tidx], acc)
        p = cute.make_fragment_like(acc, dtype)
        p.store(acc.load().to(dtype))
        words = cute.recast_tensor(p, cutlass.Int32)
        for i in cutlass.range_constexpr(N // 2):
            out[i, tidx] = cute.arch.shuffle_sync(words[i], 0)

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        kern(x, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_80"):
        return cute.compile(host, from_dlpack(np.zeros((32, N), np.float32).T),
                            from_dlpack(np.zeros((32, N // 2), np.int32).T))


@pytest.mark.parametrize("dtype,name", [(cutlass.BFloat16, "bf16"), (cutlass.Float16, "f16")])
def test_conversion_to_16_bit_floats_rounds_pairs_into_words(dtype, name, fresh_compilations):
    c = _compiled(dtype)
    ptx = c.ptx
    # the loaded elements in order: element e is the e-th register of the vector loads
    loaded = [r for group in re.findall(r"ld\.global(?:\.nc)?\.v4\.(?:b|f|u)32\s+\{([^}]*)\}", ptx)
              for r in re.findall(r"%r\d+", group)]
    assert len(loaded) == N, ptx
    element = {r: e for e, r in enumerate(loaded)}
    pairs = re.findall(rf"cvt\.rn\.{name}x2\.f32\s+(%r\d+),\s*(%r\d+),\s*(%r\d+);", ptx)
    assert len(pairs) == N // 2, "one paired rounding per two elements"
    assert not re.search(rf"cvt\.rn\.{name}\.f32\s", ptx), "an element rounded alone"
    assert not re.search(r"\b(cvt\.u32\.u16|prmt|mov\.b32\s+%r\d+,\s*\{)", ptx), "halves packed into words afterwards"
    # word k of the fragment holds element 2k in its low half and 2k+1 in its high half (the first source of the
    # paired rounding is the high half)
    word_of = {d: (element[hi], element[lo]) for d, hi, lo in pairs}
    handed_on = re.findall(r"shfl\.sync\.idx\.b32\s+%r\d+,\s*(%r\d+),", ptx)
    assert [word_of[r] for r in handed_on] == [(2 * k + 1, 2 * k) for k in range(N // 2)]
    ops = sass_opcodes(c.cubin)
    assert not [op for op in ops if op.startswith(("F2F.", "PRMT"))], "conversions one by one, or repacking"
    assert sum(op.startswith("F2FP") for op in ops) == N // 2
