"""TensorSSA elementwise operations broadcast as CuTe DSL's do: the operand of lower rank is aligned to the left
(trailing modes of extent 1: a per-row value (8,) against a tile (8, 2)), then modes of extent 1 repeat; shapes
that do not align so ((4, 3) against (3,)) are refused."""
import pytest

import warpweave as cutlass
from warpweave._dsl.base.errors import DSLValueError
from warpweave._dsl.values.tensor_ssa import TensorSSA


def ssa(values, shape):
    return TensorSSA([cutlass.Float32(v) for v in values], shape, cutlass.Float32)


def numbers(t):
    return [v.value for v in t.values]


def test_a_lower_rank_operand_is_aligned_to_the_left():
    tile = ssa(range(16), (8, 2))            # value (i, j) at i + 8 j
    rows = ssa([100 * i for i in range(8)], (8,))
    for z, sign in ((tile - rows, 1), (rows - tile, -1)):
        assert z.shape == (8, 2)
        assert numbers(z) == [sign * ((i + 8 * j) - 100 * i) for j in range(2) for i in range(8)]
    assert numbers(rows.broadcast_to((8, 2))) == [100 * i for _ in range(2) for i in range(8)]


def test_modes_of_extent_one_repeat_and_misaligned_shapes_are_refused():
    a = ssa(range(12), (4, 3))
    col = ssa([1, 2, 3, 4], (4, 1))
    assert numbers(a + col) == [(i + 4 * j) + (i + 1) for j in range(3) for i in range(4)]
    with pytest.raises(DSLValueError):
        a - ssa([1, 2, 3], (3,))   # (3,) aligns with mode 0, of extent 4
