"""The kernel of cute.testing.convert: one thread per element, in the order of each tensor's own layout."""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute

from .._dsl.base.errors import DSLValueError, user_location
from .._dsl.values.runtime import RuntimeTensor, from_dlpack

_THREADS = 128


@cute.kernel
def _convert_elements(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * _THREADS + tidx
    if i < n:
        dst[i] = src[i].to(dst.element_type)


@cute.jit
def _convert(src: cute.Tensor, dst: cute.Tensor, n: cutlass.Int32):
    _convert_elements(src, dst, n).launch(grid=[(n + _THREADS - 1) // _THREADS, 1, 1], block=[_THREADS, 1, 1])


def run(src, dst):
    s = src if isinstance(src, RuntimeTensor) else from_dlpack(src)
    d = dst if isinstance(dst, RuntimeTensor) else from_dlpack(dst)
    if tuple(s.shape) != tuple(d.shape):
        raise DSLValueError(f"convert: the shapes differ ({s.shape} vs {d.shape})", user_location(3))
    n = 1
    for e in s.shape:
        n *= e
    _convert(s.mark_layout_dynamic(), d.mark_layout_dynamic(), cutlass.Int32(n))
    return dst
