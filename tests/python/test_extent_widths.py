"""The integer types of a tensor argument's extents, as CuTe DSL gives them: an extent is an Int32 (a fake
tensor's sym_int, or a buffer's extent below 2**31) even where the strides are 64-bit (sym_int64, or a buffer of
2**31 elements or more), and an Int64 where it is declared one (sym_int64) or does not fit 32 bits. Libraries
mix the two in dynamic ifs: QuACK's tile scheduler assigns a count of clusters, cute.size of an extent divided
by the tile, to an Int32 variable, which only an Int32 extent keeps."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor
from warpweave._dsl.registry import compile_only
from warpweave._dsl.values.runtime import RuntimeTensor

from dsl_helpers import target

SEEN = {}


@cute.kernel
def serpentine(mA: cute.Tensor, n: cutlass.Int32):
    rows = cute.size(mA, mode=[0])
    slow = n // 2  # a runtime Int32
    if n % 2 == 1:  # the tile scheduler's serpentine order: an Int32 variable takes a count from an extent
        slow = rows - 1 - slow
    SEEN["slow"] = type(slow)


@cute.jit
def widths(mA: cute.Tensor, n: cutlass.Int32):
    SEEN["size0"] = type(cute.size(mA, mode=[0]))
    SEEN["size"] = type(cute.size(mA))
    SEEN["extent0"] = type(cute.size(mA.shape[0]))
    SEEN["stride0"] = type(cute.size(mA.stride[0])) if not isinstance(mA.stride[0], int) else int
    serpentine(mA, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


def _compile(t):
    SEEN.clear()
    with target("sm_90a"), compile_only.compile_only():
        cute.compile(widths, t, cutlass.Int32(3))
    return dict(SEEN)


def test_sym_int_extents_stay_int32_beside_sym_int64_strides():
    # QuACK's fake operands: 32-bit extents, 64-bit strides
    t = make_fake_tensor(cutlass.BFloat16, (cute.sym_int(), cute.sym_int(), cute.sym_int()),
                         stride=(cute.sym_int64(divisibility=8), 1, cute.sym_int64(divisibility=8)))
    seen = _compile(t)
    assert seen["size0"] is cutlass.Int32 and seen["size"] is cutlass.Int32 and seen["extent0"] is cutlass.Int32
    assert seen["stride0"] is cutlass.Int64
    assert seen["slow"] is cutlass.Int32


def test_sym_int64_extent_is_int64():
    t = make_fake_tensor(cutlass.BFloat16, (cute.sym_int64(), 64), stride=(64, 1))
    with pytest.raises(TypeError, match="changes type from Int32 to Int64"):
        _compile(t)
    assert SEEN["size0"] is cutlass.Int64 and SEEN["size"] is cutlass.Int64


@pytest.mark.parametrize("rows", [8192, 1 << 20])
def test_buffer_extents_are_int32_whatever_the_stride_width(rows):
    # 8192 x 262144 half floats (4 GiB, QuACK's largest norm test) index with 64 bits; their extents are Int32
    cols = 262144
    t = RuntimeTensor(None, 0, (rows, cols), (cols, 1), cutlass.Float16, "fake", 16).mark_layout_dynamic()
    seen = _compile(t)
    assert seen["size0"] is cutlass.Int32 and seen["extent0"] is cutlass.Int32 and seen["slow"] is cutlass.Int32
    assert seen["stride0"] is cutlass.Int64


def test_extent_beyond_32_bits_is_int64():
    t = RuntimeTensor(None, 0, (1 << 31, 2), (2, 1), cutlass.Float16, "fake", 16).mark_layout_dynamic()
    with pytest.raises(TypeError, match="changes type from Int32 to Int64"):
        _compile(t)
    assert SEEN["size0"] is cutlass.Int64
