"""A tensor whose swizzle came with its pointer (SmemAllocator.allocate_tensor(swizzle=), make_tensor of a swizzled
pointer) is, as in CuTe DSL, a tensor of its layout's strides whose iterator is the swizzled pointer at its origin:
- t.stride is its layout's, a tensor of a composed layout has none;
- make_tensor(t[...slice].iterator, L) addresses, for every coordinate, the element t's slice does where L is the
  slice's layout (the program of mixed_input_fmha_prefill_d512 regroups a stage of P so);
- recast_ptr(t.iterator, other) swizzles t's origin address by the other swizzle;
- size_in_bytes of a layout composed with the identity swizzle counts the outer layout's bytes.
Checked while tracing for sm_80, against the definition of a swizzled address."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target
from test_swizzled_pointer import absolute as address, swizzled

SEEN = {}
SW = cute.make_swizzle(3, 4, 3)                  # byte swizzle: 16-byte chunks of 128-byte rows
STAGED = cute.make_layout((8, 64, 2), stride=(64, 1, 512))


@cute.kernel
def origin_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    smem.allocate_array(cutlass.Float16, 136)    # the next buffer starts off the swizzle's span
    t = smem.allocate_tensor(cutlass.Float16, STAGED, 1024, SW)
    SEEN["t"] = t
    SEEN["stride"] = t.stride
    stage = t[None, None, 1]
    SEEN["stage"] = stage
    SEEN["regrouped"] = cute.make_tensor(stage.iterator, cute.make_layout(((8, 8), 8), stride=((64, 1), 8)))
    SEEN["recast"] = cute.make_tensor(cute.recast_ptr(t.iterator, cute.make_swizzle(2, 4, 3), dtype=cutlass.Float16),
                                      cute.make_layout((8, 64), stride=(64, 1)))
    plain = smem.allocate_tensor(cutlass.Float16, cute.make_layout((8, 64), stride=(64, 1)), 1024)
    composed = cute.make_tensor(plain.iterator, cute.make_composed_layout(SW, 0, cute.make_layout((8, 64),
                                                                                                  stride=(64, 1))))
    SEEN["composed"] = composed
    gOut[0] = cutlass.Float16(0.0)


@cute.jit
def trace_origin(out):
    origin_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


@pytest.fixture(scope="module")
def traced():
    with target("sm_80"):
        cute.compile(trace_origin, from_dlpack(np.zeros(4, dtype=np.float16)))
    return SEEN


def test_the_tensor_has_its_layouts_strides(traced):
    assert traced["stride"] == (64, 1, 512)
    # a swizzle composed with the layout permutes addresses, as one in the pointer does: the layout's strides
    # (a shared buffer's get_tensor(layout, swizzle=) is such a tensor, and MLA decode reads its strides)
    assert traced["composed"].stride == (64, 1)


def test_a_tensor_of_the_slices_iterator_addresses_the_slices_elements(traced):
    t, stage, regrouped = traced["t"], traced["stage"], traced["regrouped"]
    base = t.iterator.offset
    for m in range(8):
        for k in range(64):
            want = swizzled(SW, base + STAGED((m, k, 1)), 2)
            assert address(stage, (m, k)) == want
            assert address(regrouped, ((m, k % 8), k // 8)) == want, (m, k)


def test_recast_ptr_swizzles_the_origin_anew(traced):
    t, r = traced["t"], traced["recast"]
    sw2 = cute.make_swizzle(2, 4, 3)
    for m in range(8):
        for k in range(64):
            assert address(r, (m, k)) == swizzled(sw2, t.iterator.offset + m * 64 + k, 2)


def test_size_in_bytes_of_the_identity_swizzle_is_the_outer_layouts():
    outer = cute.make_layout(((1, 32), (64, 1)), stride=((0, 1), (0, 32)))   # 32 scales, one per row
    composed = cute.make_composed_layout(cute.make_swizzle(0, 4, 3), 0, outer)
    assert cute.size_in_bytes(cutlass.BFloat16, composed) == cute.size_in_bytes(cutlass.BFloat16, outer) == 64


def test_filter_zeros_of_a_swizzled_layout_drops_the_repeated_coordinates():
    # a partition of swizzled scales (stride 0 where a scale repeats): the filtered layout addresses, for each
    # coordinate it keeps, the element the unfiltered one does there
    outer = cute.make_layout((4, (2, 8)), stride=(0, (1, 64)))
    composed = cute.make_composed_layout(SW, 0, outer)
    kept = cute.filter_zeros(composed)
    assert kept.outer.shape == (1, (2, 8)) and str(kept.inner) == str(composed.inner)
    for j in range(2):
        for i in range(8):
            assert kept((0, (j, i))) == composed((3, (j, i)))
