"""A shared-memory tensor whose swizzle lives in its pointer (SmemAllocator.allocate_tensor(swizzle=), a struct
field's get_tensor(outer, swizzle=), make_tensor of a swizzled pointer) shows the program what CuTe DSL shows:
- its .layout is the plain outer layout (and a slice's or a regrouping's layout is that of the outer layout), the
  swizzle is the iterator's (iterator.type.swizzle_type, of byte addresses, as CuTe DSL gives it);
- its elements stay where they were: element c is at the byte swizzle of (origin + layout(c));
- make_tensor(t.iterator, t.layout) addresses the same elements as t, for t and its views; the iterator recast
  without its swizzle (recast_ptr(t.iterator, dtype=)) points at t's origin, unswizzled;
- a layout the program composes with a swizzle itself (over a plain pointer) stays its .layout.
Checked while tracing for sm_80 against the definition of a swizzled address (full_layout gives what the
tensor's own operations address with)."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target
from test_swizzled_pointer import absolute as address, swizzled as swizzled_by
from warpweave import ext

SW = cute.make_swizzle(3, 4, 3)                  # byte swizzle: 16-byte chunks of 128-byte rows
STAGED = cute.make_layout((8, 64, 2), stride=(64, 1, 512))
SEEN = {}


@cute.struct
class Storage:
    pad: cute.struct.MemRange[cutlass.Float16, 136]
    a: cute.struct.Align[cute.struct.MemRange[cutlass.Float16, 1024], 1024]


@cute.kernel
def trace_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    storage = smem.allocate(Storage)
    made_from = smem.allocate_tensor(cutlass.Float16, STAGED, 16)
    sources = {
        "allocate_tensor": smem.allocate_tensor(cutlass.Float16, STAGED, 1024, swizzle=SW),
        "get_tensor": storage.a.get_tensor(STAGED, swizzle=SW),
        "make_tensor": cute.make_tensor(cute.recast_ptr(made_from.iterator, SW, dtype=cutlass.Float16), STAGED),
    }
    for name, t in sources.items():
        views = {"whole": t, "stage": t[None, None, 1], "row": t[3, None, 0],
                 "grouped": cute.group_modes(t, 0, 2), "tile": cute.local_tile(t[None, None, 1], (4, 16), (1, 2))}
        for vname, v in views.items():
            unswizzled = cute.make_tensor(cute.recast_ptr(v.iterator, dtype=cutlass.Float16), v.layout)
            SEEN[(name, vname)] = (v, cute.make_tensor(v.iterator, v.layout), unswizzled,
                                   v.iterator.type.swizzle_type, v.iterator.alignment, str(v))
    plain = smem.allocate_tensor(cutlass.Float16, cute.make_layout((8, 64), stride=(64, 1)), 1024)
    composed = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    SEEN["composed"] = (cute.make_tensor(plain.iterator, composed), composed)
    SEEN["allocated_composed"] = (smem.allocate_tensor(cutlass.Float16, composed, 1024), composed)
    gOut[0] = cutlass.Float16(0.0)


@pytest.fixture(scope="module")
def traced():
    @cute.jit
    def trace_it(out):
        trace_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        cute.compile(trace_it, from_dlpack(np.zeros(4, dtype=np.float16)))
    return SEEN


def swizzled(element_address):
    return swizzled_by(SW, element_address, 2)


# (view, its outer layout as the slice or regrouping of STAGED, the coordinate in STAGED of its element c)
VIEWS = {
    "whole": (STAGED, lambda c: c),
    "stage": (cute.slice_(STAGED, (None, None, 1)), lambda c: (c[0], c[1], 1)),
    "row": (cute.slice_(STAGED, (3, None, 0)), lambda c: (3, c[0] if isinstance(c, tuple) else c, 0)),
    "grouped": (cute.group_modes(STAGED, 0, 2), lambda c: (c[0][0], c[0][1], c[1])),
    "tile": (cute.make_layout((4, 16), stride=(64, 1)), lambda c: (4 + c[0], 32 + c[1], 1)),
}


def coords(shape):
    if isinstance(shape, tuple):
        out = [()]
        for s in shape:
            out = [o + (c,) for o in out for c in coords(s)]
        return out
    return list(range(shape))


@pytest.mark.parametrize("source", ["allocate_tensor", "get_tensor", "make_tensor"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_the_layout_is_the_outer_layout_and_the_elements_stay(traced, source, view):
    t, again, unswizzled, swizzle_type, alignment, text = traced[(source, view)]
    outer, in_staged = VIEWS[view]
    assert isinstance(t.layout, cute.Layout) and not isinstance(t.layout, cute.ComposedLayout)
    assert str(t.layout) == str(outer)
    assert (swizzle_type.num_bits, swizzle_type.num_base, swizzle_type.num_shift) == (3, 4, 3)
    assert "S<3,4,3>" in text and str(outer) in text
    base = traced[(source, "whole")][0]
    origin = address(base, (0, 0, 0))
    start = origin + STAGED(in_staged(coords(outer.shape)[0]))
    assert alignment >= 2 and start * 2 % alignment == 0     # the origin's, not the buffer's
    for c in coords(outer.shape):
        want = swizzled(origin + STAGED(in_staged(c)))
        assert address(t, c) == want, (c, address(t, c), want)
        assert address(again, c) == want, c
        # recast_ptr drops the swizzle and keeps the origin (QuACK's position-independent partitions build on it)
        assert address(unswizzled, c) == origin + STAGED(in_staged(c)), c


def test_a_swizzle_the_program_composes_stays_in_the_layout(traced):
    for name in ("composed", "allocated_composed"):
        t, composed = traced[name]
        assert isinstance(t.layout, cute.ComposedLayout), name
        assert str(t.layout) == str(composed)
        assert t.iterator.type.swizzle_type.num_bits == 0


@cute.kernel
def carry_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    smem = cutlass.utils.SmemAllocator()
    t = smem.allocate_tensor(cutlass.Float16, STAGED, 1024, swizzle=SW)
    s = t[None, None, 0]
    SEEN["before_loop"] = s
    for _ in cutlass.range(n):
        s = t[None, None, 1]
    SEEN["after_loop"] = s
    gOut[0] = s[0, 0]


def test_a_tensor_carried_through_a_dynamic_loop_stays_swizzled():
    """Carried through a loop, the tensor is its pointer (run-time values) and the layout that addresses it: that
    layout keeps the swizzle, and the program still sees the outer layout with the swizzle in the pointer."""
    @cute.jit
    def carry(out, n: cutlass.Int32):
        carry_kernel(out, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        cute.compile(carry, from_dlpack(np.zeros(4, dtype=np.float16)), 3)
    before, after = ext.full_layout(SEEN["before_loop"]), ext.full_layout(SEEN["after_loop"])
    assert isinstance(before, cute.ComposedLayout) and str(after) == str(before)
    shown = SEEN["after_loop"]
    assert str(shown.layout) == str(cute.slice_(STAGED, (None, None, 1)))
    assert shown.iterator.type.swizzle_type.num_bits == 3
