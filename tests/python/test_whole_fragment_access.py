"""A register fragment read or written whole (an MMA accumulator) is one array load or store in the module instead of
an address and an access per element (pointer._whole_run): fewer ops to trace, parse and lower, the same code after
SROA. Narrow element types, partial spans and dynamic offsets keep the per-element (or 32-bit) accesses."""
import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values import pointer as T
from warpweave.cute.runtime import make_fake_tensor

N = 16


def _kernel(dtype, offsets_read, offsets_write):
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        frag = cute.make_rmem_tensor((N,), dtype)
        for i in cutlass.range_constexpr(N):
            frag[i] = gA[tidx * N + i]
        vals = T.load_scalars(frag.iterator, list(offsets_read))
        T.store_scalars(frag.iterator, list(offsets_write), [v + v for v in vals[:len(offsets_write)]])
        for i in cutlass.range_constexpr(N):
            gB[tidx * N + i] = frag[i]

    @cute.jit
    def run(mA: cute.Tensor, mB: cute.Tensor):
        k(mA, mB).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return run


def _compile(dtype, offsets_read, offsets_write, whole_min=None):
    saved = T._WHOLE_MIN, os.environ.get("WARPWEAVE_ARCH"), os.environ.get("WARPWEAVE_DISABLE_CACHE")
    if whole_min is not None:
        T._WHOLE_MIN = whole_min
    os.environ["WARPWEAVE_ARCH"] = "sm_90a"
    os.environ["WARPWEAVE_DISABLE_CACHE"] = "1"   # both forms compiled here, not one found in the cache
    try:
        ts = [make_fake_tensor(dtype, (32 * N,)) for _ in range(2)]
        return cute.compile(_kernel(dtype, offsets_read, offsets_write), *ts)
    finally:
        T._WHOLE_MIN = saved[0]
        for k, v in zip(("WARPWEAVE_ARCH", "WARPWEAVE_DISABLE_CACHE"), saved[1:]):
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _ptx_body(c):
    ptx = c.info.get("ptx") or ""
    # Register numbering and the kernel's mangled name aside, the instructions must be the same.
    return [re.sub(r"%[a-z]+\d+", "%r", l.strip()) for l in ptx.splitlines() if l.strip() and not l.startswith("//")]


@pytest.mark.parametrize("dtype", [cutlass.Float32, cutlass.Int32])
def test_whole_fragment_is_one_array_access_and_the_same_code(dtype):
    perm = [5, 3, 0, 1, 2, 4, 6, 7, 15, 14, 13, 12, 11, 10, 9, 8]   # a permutation: one store covers it
    whole = _compile(dtype, range(N), perm)
    et = dtype.ir_type
    assert len(re.findall(rf'"llvm.load"\([^)]*\)[^\n]*-> \(!llvm.array<{N} x {et}>\)', whole.ir)) == 1
    assert len(re.findall(rf'"llvm.store"\(%\d+, %\d+\)[^\n]*: \(!llvm.array<{N} x {et}>', whole.ir)) == 1
    per_element = _compile(dtype, range(N), perm, whole_min=10 ** 9)
    assert not re.search(r'"llvm.(load|store)"[^\n]*!llvm.array<', per_element.ir)
    assert len(whole.ir) < len(per_element.ir)
    assert _ptx_body(whole) == _ptx_body(per_element)
    assert whole.cubin == per_element.cubin


def test_what_stays_per_element():
    # 16-bit values go 32 bits at a time (a register holds two), a partial span cannot be stored whole, fewer than
    # _WHOLE_MIN values are not worth an array.
    array_access = r'"llvm.(load|store)"[^\n]*: \([^)]*!llvm.array<|"llvm.load"[^\n]*-> \(!llvm.array<'
    half = _compile(cutlass.Float16, range(N), range(N))
    assert not re.search(array_access, half.ir)
    partial = _compile(cutlass.Float32, range(N), [0, 2, 4, 6, 8, 10, 12, 14])
    assert len(re.findall(r'"llvm.load"\([^)]*\)[^\n]*-> \(!llvm.array<16 x f32>\)', partial.ir)) == 1
    assert not re.search(r'"llvm.store"\(%\d+, %\d+\)[^\n]*: \(!llvm.array<', partial.ir)
    few = _compile(cutlass.Float32, range(4), range(4))
    assert not re.search(array_access, few.ir)
