"""TMA of an operand whose tiled mode is two interleaved halves (the [gate; up] weights of a gated MLP viewed as
one operand, QuACK's concat layout: mode n is (2, n / 2):(n / 2 * s, s), row 2i of the first half, row 2i + 1 of
the second): the mode's sub-modes are dimensions of the tensor map of their own, the box spans them in the order
the tile steps through shared memory, and every element of the tile comes from the global element its
coordinate names. A tile that cannot be split over such a mode is refused at the user's line."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack
from warpweave._dsl.base.errors import DSLValueError
from dsl_helpers import requires_gpu, target

N, K, L = 512, 256, 2
TILE = (128, 64)
HALF = N // 2


def _gmem():
    # (n, k, l), k contiguous, n interleaved over the two halves
    return cute.make_layout(((2, HALF), K, L), stride=((HALF * K, K), 1, N * K))


def _element(n, k, l):
    return (n % 2) * HALF * K + (n // 2) * K + k + l * N * K


# shared-memory tiles (unswizzled part): K-major rows of 64 bf16 (128 bytes); a tile of 128 along K, two blocks
# of such rows one after the other (two boxes); the rows of each half together, one half after the other (the
# map's dimensions then take the halves' rows before the halves)
ROWS = ((128, 64), ((128, 64), (64, 1)))
TWO_BLOCKS = ((128, 128), ((128, (64, 2)), (64, (1, 128 * 64))))
HALVES_APART = ((128, 64), (((2, 64), 64), ((64 * 64, 64), 1)))


def _outer(form=ROWS):
    return cute.make_layout(form[1][0], stride=form[1][1])


def _smem(form=ROWS):
    # the 128-byte swizzle TMA applies
    return cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, _outer(form))


def _program(seen, tile, tile_coord=(1, 2, 1), gmem=_gmem, form=ROWS):
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.BFloat16, _smem(form), byte_alignment=1024)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, form[0], (None, None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        cute.copy(atom, tg[(None,) + tile_coord], ts, tma_bar_ptr=bar)

    @cute.jit
    def host(x: cute.Tensor):
        t = cute.make_tensor(x.iterator, gmem())
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, _smem(form), tile(form[0], t))
        seen.append(atom)
        k(atom, tensor).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def _compile(seen, tile, **kw):
    with target("sm_90a"):
        return cute.compile(_program(seen, tile, **kw), from_dlpack(np.zeros(N * K * L, np.uint16)))


def _attrs(atom):
    return {**atom.tma_desc.attrs, **{k: str(v) for k, v in atom.tma_desc.dynamic.items()}}


TILES = {"shape": lambda shape, t: shape,
         # as QuACK's epilogue gives it: the identity layout of the tensor's (nested) coordinates, tiled
         "identity": lambda shape, t: cute.composition(cute.make_identity_layout(t.shape), shape)}


@pytest.mark.parametrize("tile", sorted(TILES))
def test_the_tensor_map_has_a_dimension_per_half_and_the_box_spans_both(tile):
    seen = []
    _compile(seen, TILES[tile])
    atom = seen[0]
    a = _attrs(atom)
    rank = int(a["rank"])
    # flat modes: n0 (which half), n1 (row in the half), k, l; k is contiguous, then the tile's steps in shared
    # memory: one row (n0), two rows (n1)
    assert list(atom.dims) == [2, 0, 1, 3] and rank == 4
    assert [int(a[f"extent{i}"]) for i in range(rank)] == [K, 2, HALF, L]
    assert [int(a[f"gstride{i}"]) for i in range(rank)] == [1, HALF * K, K, N * K]
    assert tuple(atom.box) == (64, 2, 64, 1) and len(atom.boxes) == 1


@pytest.mark.parametrize("form", [ROWS, TWO_BLOCKS, HALVES_APART], ids=["rows", "two_blocks", "halves_apart"])
def test_every_element_of_the_tile_comes_from_its_coordinate(form):
    """Replays each box as the tensor map describes it (dimension 0 fastest in shared memory): the unswizzled
    shared-memory offset of tile element (t, k) holds global element (origin + t, k) for every (t, k), once."""
    seen = []
    _compile(seen, TILES["shape"], form=form)
    atom = seen[0]
    a = _attrs(atom)
    rank = len(atom.dims)
    gstride = [int(a[f"gstride{i}"]) for i in range(rank)]
    outer, tile = _outer(form), form[0]
    assert len(atom.boxes) == tile[1] // 64
    assert list(atom.dims) == ([2, 1, 0, 3] if form is HALVES_APART else [2, 0, 1, 3])
    for j, kb, l in ((0, 0, 0), (1, 1, 1), (3, 1, 0)):
        origin = atom._flat_origin((j * tile[0], kb * tile[1], l))
        filled = {}
        for coord_off, smem_off in atom.boxes:
            for p in itertools.product(*(range(b) for b in reversed(atom.box))):
                p = p[::-1]                                  # dimension 0 fastest
                at_smem = smem_off + sum(x * int(np.prod(atom.box[:i])) for i, x in enumerate(p))
                g = sum((origin[m] + coord_off[m] + x) * gstride[i] for i, (m, x) in enumerate(zip(atom.dims, p)))
                assert at_smem not in filled
                filled[at_smem] = g
        assert len(filled) == tile[0] * tile[1]
        for t in range(tile[0]):
            for k in range(tile[1]):
                assert filled[outer((t, k))] == _element(j * tile[0] + t, kb * tile[1] + k, l), (t, k)


def test_a_copy_names_the_tiles_row_in_each_half():
    c = _compile([], TILES["shape"], tile_coord=(3, 2, 1))
    loads = [line for line in c.ptx.splitlines() if "cp.async.bulk.tensor" in line]
    assert len(loads) == 1
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
    coords = [int(regs.get(x, x)) for x in re.search(r"\[%rd\d+, \{([^}]*)\}\]", loads[0]).group(1).split(", ")]
    # k, half, row in the half, batch: tile 3 along n starts at row 3 * 128 = half 0, row 192 of each half
    assert coords == [2 * TILE[1], 0, 3 * TILE[0] // 2, 1]


def test_a_tile_that_does_not_split_over_the_halves_is_refused_at_the_users_line():
    # three interleaved parts: a tile of 128 rows takes no whole number of each
    def gmem():
        return cute.make_layout(((3, 170), K, L), stride=((170 * K, K), 1, 510 * K))

    with pytest.raises(DSLValueError, match="not one run of memory") as e:
        _compile([], TILES["shape"], gmem=gmem)
    assert e.value.location[0] == __file__


def _gpu_program(tile_coord):
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.BFloat16, _smem(), byte_alignment=1024)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        g = cute.local_tile(tensor, TILE, (None, None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, TILE[0] * TILE[1] * 2)
            cute.copy(atom, tg[(None,) + tile_coord], ts, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for kk in cutlass.range_constexpr(TILE[1]):
            out[tidx, kk] = s[tidx, kk]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        t = cute.make_tensor(x.iterator, _gmem())
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, _smem(), TILE)
        k(atom, tensor, out).launch(grid=(1, 1, 1), block=(TILE[0], 1, 1))

    return host


@requires_gpu
@pytest.mark.parametrize("tile_coord", [(0, 0, 0), (3, 2, 1)])
def test_an_interleaved_tile_loads_its_rows_on_the_gpu(tile_coord):
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90 or later")
    x = torch.randn(N * K * L, device="cuda").to(torch.bfloat16)
    out = torch.zeros(TILE, dtype=torch.bfloat16, device="cuda")
    _gpu_program(tile_coord)(from_dlpack(x), from_dlpack(out))
    torch.cuda.synchronize()
    j, kb, l = tile_coord
    rows = torch.arange(j * TILE[0], (j + 1) * TILE[0], device="cuda")
    index = ((rows % 2) * HALF * K + (rows // 2) * K)[:, None] + torch.arange(kb * TILE[1], (kb + 1) * TILE[1],
                                                                                device="cuda")[None, :] + l * N * K
    assert torch.equal(out, x[index])
