"""cute.leading_dim(shape, stride): CuTe DSL's answers (an index, a path for a nested mode, None), static and with
runtime values, and a shape without the unit stride's mode refused at the caller's line."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import line_in, target

# (shape, stride, answer): each checked against CuTe DSL 4.8.1
CASES = [
    (4, 1, 0), (4, 2, None), (1, 1, None), ((4, 8), 1, 0), ((1, 8), 1, None),
    ((4, 8), (1, 4), 0), ((4, 8), (8, 1), 1), ((4, 8), (1, 1), 0), ((1, 8), (1, 1), 1), ((4, 8), (2, 8), None),
    ((4, 8), (0, 1), 1), ((1, 1), (1, 1), None), ((), (), None), ((4, 8), (), None),
    ((4, 8, 2), (2, 8, 1), 2), ((4, 8), (2,), None), ((4, 8), (2, 1, 5), 1),
    (((2, 2), 8), ((1, 2), 4), (0, 0)), (((2, 2), 8), ((4, 1), 8), (0, 1)), (((2, 2), 8), ((2, 8), 1), 1),
    ((2, (2, 8)), (16, (8, 1)), (1, 1)), (((2, (2, 3)), 8), ((4, (2, 1)), 8), (0, 1, 1)),
    (((1, 2), 8), ((1, 1), 2), (0, 1)), (((2, (1, 3)), 8), ((4, (1, 2)), 8), None),
    ((4, (2, 8)), (1, (4, 8)), 0), (((4,),), ((1,),), (0, 0)), ((4,), ((1, 2),), (0, 0)),
    # an integer extent stands for what lies below it
    (4, ((2, 1), 4), (0, 1)), (4, (((2, 1), 3), 4), (0, 0, 1)),
    # only a static 1 is unit: -1, 1.0 and True compare as numbers
    ((4, 8), (-1, 4), None), ((4, 8), (1.0, 2), 0), ((4, 8), (True, 4), 0), ((0, 8), (1, 1), 0),
]


@pytest.mark.parametrize("shape,stride,answer", CASES)
def test_static_answers(shape, stride, answer):
    got = cute.leading_dim(shape, stride)
    assert got == answer and type(got) is type(answer)


def test_dsl_numbers_and_bases_are_not_unit():
    assert cute.leading_dim((4, 8), (cutlass.Int32(1), 4)) is None   # a DSL number is never a static 1
    assert cute.leading_dim((cutlass.Int32(1), 8), (1, 1)) == 0
    assert cute.leading_dim((4, 8), (cute.ScaledBasis(1, 0), 1)) == 1


def test_a_layouts_shape_and_stride():
    L = cute.make_layout(((2, 4), 8), stride=((8, 1), 2))
    assert cute.leading_dim(L.shape, L.stride) == (0, 1)


@pytest.mark.parametrize("shape,stride", [((4, 8), ((2, 1), 4)), (4, (2, 1)), ((), 1), ((4, 8), (2, 3, 1))])
def test_unit_stride_outside_the_shape_is_refused_at_the_callers_line(shape, stride):
    with pytest.raises(ValueError, match="leading_dim: the stride .* unit stride at mode") as e:
        cute.leading_dim(shape, stride)  # refused here
    assert e.value.location == (__file__, line_in(__file__, "cute.leading_dim(shape, stride)  # refused here"))


RESULTS = []


@cute.jit
def dynamic_modes(n: cutlass.Int32, s: cutlass.Int32):
    RESULTS.append(cute.leading_dim((n, 8), (1, n)))            # a runtime extent is not 1
    RESULTS.append(cute.leading_dim((4, 8), (s, 1)))            # a runtime stride is not 1
    RESULTS.append(cute.leading_dim((1, n), (s, 1)))
    RESULTS.append(cute.leading_dim((4, 8), (s, 4)))
    RESULTS.append(cute.leading_dim(((n, 2), 8), ((1, s), 4)))
    L = cute.make_layout((n, 8))
    RESULTS.append(cute.leading_dim(L.shape, L.stride))
    L = cute.make_layout((n, 8), stride=(8, 1))
    RESULTS.append(cute.leading_dim(L.shape, L.stride))


def test_runtime_values_as_cute_dsl_reads_them():
    RESULTS.clear()
    with target("sm_80"):
        cute.compile(dynamic_modes, cutlass.Int32(3), cutlass.Int32(1))
    assert RESULTS == [0, 1, 1, None, (0, 0), 0, 1]
