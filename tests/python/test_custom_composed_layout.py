"""cute.make_composed_layout with a Python function as its inner transformation: R(c) = inner(offset + outer(c))."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


def test_function_of_the_offset_coordinate():
    def inner(c):
        x, y = c
        return x * 10, y + 1

    L = cute.make_composed_layout(inner, (1, 0), cute.make_identity_layout((8, 4)))
    for i in range(32):
        x, y = i % 8, i // 8
        assert L(i) == ((x + 1) * 10, y + 1)
    assert L((3, 2)) == (40, 3)
    assert L.shape == (8, 4) and cute.size(L.outer) == 32
    assert str(L) == "inner o (1, 0) o (8,4):(1@0,1@1)"


def test_layouts_and_swizzles_still_make_core_composed_layouts():
    L = cute.make_composed_layout(cute.make_swizzle(2, 0, 3), 0, cute.make_layout((8, 8), stride=(8, 1)))
    assert isinstance(L, cute.ComposedLayout)
    with pytest.raises(TypeError, match="outer must be a layout"):
        cute.make_composed_layout(lambda c: c, 0, (8, 4))


@cute.jit
def gather_print(index: cute.Tensor, n: cutlass.Constexpr):
    def inner(c):
        return index[c]

    g = cute.make_composed_layout(inner, 0, cute.make_layout(n))
    for i in cutlass.range_constexpr(n):
        cute.printf("%d -> %d", i, g(i))


def test_gather_through_an_index_tensor_reads_each_call(capsys, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    for seed in range(2):
        index = np.random.default_rng(seed).integers(0, 1000, 12).astype(np.int32)
        gather_print(from_dlpack(index), 12)
        lines = capsys.readouterr().out.splitlines()[-12:]
        assert lines == [f"{i} -> {index[i]}" for i in range(12)]
