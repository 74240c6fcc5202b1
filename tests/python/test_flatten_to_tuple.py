"""cute.flatten_to_tuple: the leaves of a nested tuple (shape, stride, coordinate) as one flat tuple, depth first,
dynamic leaves kept as they are; anything that is not a tuple is the one-element tuple of itself (a layout is a leaf:
cute.flatten is what flattens a layout's modes). Libraries zip a flattened coordinate with a flattened stride."""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import target


def test_nested_static_tuples_flatten_depth_first():
    assert cute.flatten_to_tuple(((1, 2), (3, (4,)))) == (1, 2, 3, 4)
    assert cute.flatten_to_tuple(((), 1)) == (1,)
    assert cute.flatten_to_tuple(()) == ()


def test_a_non_tuple_is_a_tuple_of_itself():
    assert cute.flatten_to_tuple(5) == (5,)
    lay = cute.make_layout((2, (3, 4)))
    (only,) = cute.flatten_to_tuple(lay)
    assert only is lay


seen = {}


@cute.jit
def flatten_dynamic(n: cutlass.Int32):
    lay = cute.make_layout((2, (3, n)))
    shape, stride = cute.flatten_to_tuple(lay.shape), cute.flatten_to_tuple(lay.stride)
    seen["shape"], seen["stride"] = shape, stride
    # a flat coordinate dotted with the flat stride is the layout's offset of that coordinate
    coord = (1, 2, 3)
    seen["offset"] = sum(c * s for c, s in zip(coord, stride))


def test_dynamic_leaves_stay_leaves_in_a_traced_function():
    with target("sm_80"):
        cute.compile(flatten_dynamic, 4)
    shape, stride = seen["shape"], seen["stride"]
    assert len(shape) == 3 and shape[:2] == (2, 3) and not isinstance(shape[2], int)
    assert stride == (1, 2, 6)
    assert seen["offset"] == 1 * 1 + 2 * 2 + 3 * 6
