"""cute.local_tile of a swizzled shared-memory tensor (a composed layout, as smem.allocate_tensor(dtype, outer,
align, swizzle) gives one): the tile's element c is the tensor's element at the tile's coordinates, swizzle
included, as CuTe divides a composed layout's outer layout. Checked while tracing against the tensor itself."""
import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

SEEN = {}
OUTER = cute.make_layout((32, 64), stride=(64, 1))
SW = cute.make_swizzle(3, 4, 3)
TILE = (8, 32)


@cute.kernel
def trace_kernel(gOut: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    smem.allocate_array(cutlass.Float16, 136)                 # the buffer is not aligned to the swizzle's span
    s = smem.allocate_tensor(cutlass.Float16, OUTER, 16, SW)
    SEEN["tensor"] = s
    SEEN["tiles"] = cute.local_tile(s, TILE, (1, None))          # row tile 1, every column tile
    SEEN["one"] = cute.local_tile(s, TILE, (3, 1))
    gOut[0] = cutlass.Float16(0.0)


@cute.jit
def trace_it(out):
    trace_kernel(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def absolute(t, c):
    return t.iterator.offset + ext.full_layout(t)(c)


def test_tiles_of_a_swizzled_tensor_are_its_elements():
    with target("sm_80"):
        cute.compile(trace_it, from_dlpack(np.zeros(4, dtype=np.float16)))
    s, tiles, one = SEEN["tensor"], SEEN["tiles"], SEEN["one"]
    assert s.layout == OUTER and isinstance(ext.full_layout(s), cute.ComposedLayout)
    assert cute.size(tiles, mode=[2]) == 64 // TILE[1]
    moved = 0
    for j in range(64 // TILE[1]):
        for m in range(TILE[0]):
            for k in range(TILE[1]):
                want = absolute(s, (TILE[0] + m, TILE[1] * j + k))
                assert absolute(tiles, (m, k, j)) == want, (m, k, j)
                moved += want != (s.iterator.offset + OUTER((TILE[0] + m, TILE[1] * j + k)))
    assert moved, "the swizzle must move some elements for the test to tell"
    for m in range(TILE[0]):
        for k in range(TILE[1]):
            assert absolute(one, (m, k)) == absolute(s, (3 * TILE[0] + m, TILE[1] + k))
