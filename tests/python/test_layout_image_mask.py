"""cute.make_layout_image_mask(layout, coord, mode): bit layout(c) is set for exactly the coordinates c that equal
`coord` outside mode `mode` (a multicast's destination CTAs). Checked against that definition by enumeration over
random layouts; with a runtime coordinate it compiles to a shift of the static pattern (values on a GPU)."""
import itertools

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def random_cluster_layout(rng):
    """A layout of rank 2 to 4 whose offsets stay below 16 (a cluster's CTA ranks), strides in any order."""
    while True:
        shape = tuple(rng.choice([1, 1, 2, 2, 4]) for _ in range(rng.randint(2, 4)))
        order = list(range(len(shape)))
        rng.shuffle(order)
        stride, cur = [0] * len(shape), 1
        for i in order:
            stride[i] = cur
            cur *= shape[i]
        lay = cute.make_layout(shape, stride=tuple(stride))
        if cute.cosize(lay) <= 16:
            return lay


def brute_force(lay, coord, mode):
    mask = 0
    for c in itertools.product(*(range(s) for s in lay.shape)):
        if all(c[j] == coord[j] for j in range(len(c)) if j != mode):
            mask |= 1 << lay(c)
    return mask


def test_mask_is_the_image_of_the_mode_through_the_coordinate(rng):
    for _ in range(200):
        lay = random_cluster_layout(rng)
        for coord in itertools.product(*(range(s) for s in lay.shape)):
            for mode in range(len(lay.shape)):
                got = cute.make_layout_image_mask(lay, coord, mode)
                assert isinstance(got, cutlass.Int16)
                assert got.value & 0xFFFF == brute_force(lay, coord, mode), (lay, coord, mode)


def test_cute_dsl_gemm_cluster_masks():
    # A 2x2 cluster, (m, n, k) -> rank m + 2n: A is multicast along N (mode 1), B along M (mode 0).
    cta = cute.make_layout((2, 2, 1))
    assert cute.make_layout_image_mask(cta, (1, 0, 0), 1).value == 0b1010
    assert cute.make_layout_image_mask(cta, (1, 1, 0), 0).value == 0b1100
    assert cute.make_layout_image_mask(cute.make_layout((4, 4)), (3, 3), 0).value & 0xFFFF == 0xF000


def test_bad_arguments_are_refused():
    cta = cute.make_layout((2, 2, 1))
    with pytest.raises(ValueError, match="not a mode"):
        cute.make_layout_image_mask(cta, (0, 0, 0), 3)
    with pytest.raises(ValueError, match="has 2 modes"):
        cute.make_layout_image_mask(cta, (0, 0), 0)
    with pytest.raises(ValueError, match="16-bit"):
        cute.make_layout_image_mask(cute.make_layout((32, 1)), (0, 0), 0)
    with pytest.raises(TypeError, match="expected a Layout"):
        cute.make_layout_image_mask((2, 2), (0, 0), 0)


CLUSTER = cute.make_layout((2, 4, 1), stride=(4, 1, 0))


@cute.kernel
def mask_kernel(gCoord: cute.Tensor, gOut: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    coord = (gCoord[tidx, 0], gCoord[tidx, 1], 0)
    gOut[tidx, 0] = cutlass.Int32(cute.make_layout_image_mask(CLUSTER, coord, 0))
    gOut[tidx, 1] = cutlass.Int32(cute.make_layout_image_mask(CLUSTER, coord, 1))


@cute.jit
def masks(coords, out):
    mask_kernel(coords, out).launch(grid=[1, 1, 1], block=[8, 1, 1])


def test_runtime_coordinate_shifts_the_static_pattern():
    z = np.zeros((8, 2), dtype=np.int32)
    with target("sm_80"):
        c = cute.compile(masks, from_dlpack(z), from_dlpack(z.copy()))
    assert "arith.shli" in c.ir and c.cubin[:4] == b"\x7fELF"


@requires_gpu
def test_runtime_coordinate_masks_on_the_gpu():
    import torch

    coords = torch.tensor([[m, n] for m in range(2) for n in range(4)], dtype=torch.int32, device="cuda")
    out = torch.zeros((8, 2), dtype=torch.int32, device="cuda")
    masks(from_dlpack(coords), from_dlpack(out))
    torch.cuda.synchronize()
    for i, (m, n) in enumerate(coords.tolist()):
        want = [brute_force(CLUSTER, (m, n, 0), mode) for mode in (0, 1)]
        assert [x & 0xFFFF for x in out[i].tolist()] == want
