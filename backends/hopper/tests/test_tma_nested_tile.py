"""TMA with a tile that names its extent along each sub-mode of a mode: FlashAttention's packed GQA, where the
query rows of the heads that share a KV head are one mode ((heads, rows), d) and the tile takes
(heads per KV head, rows per tile) of it. The tensor map has a dimension per sub-mode, the box spans the tile's
extent along each in the order the tile counts its rows (colexicographically), and the tile coordinates a
local_tile of the same tile gives name the heads and rows. A tile whose shape does not match the mode's is
refused at the user's line."""
from __future__ import annotations

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

H, S, D = 4, 256, 64
TILE = ((2, 64), 64)   # two heads of 64 rows: 128 rows of the tile
ROWS = 128


def _smem():
    return cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((ROWS, D), stride=(D, 1)))


def _gmem(t):
    # element (head h, row s, column d) at s * H * D + h * D + d
    return cute.make_tensor(t.iterator, cute.make_layout(((H, S), D), stride=((D, H * D), 1)))


def _program(seen, tile_coord, tile=TILE, check=None):
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
        g = cute.local_tile(tensor, tile, (None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, ROWS * D * 2)
            cute.copy(atom, tg[(None, tile_coord, 0)], ts, tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        for kk in cutlass.range_constexpr(D):
            out[tidx, kk] = s[tidx, kk]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), _gmem(x), _smem(), tile)
        seen.append(atom)
        k(atom, tensor, out).launch(grid=(1, 1, 1), block=(ROWS, 1, 1))

    return host


def _compile(seen, tile_coord=(1, 2), **kw):
    with target("sm_90a"):
        return cute.compile(_program(seen, tile_coord, **kw), from_dlpack(np.zeros(H * S * D, np.uint16)),
                            from_dlpack(np.zeros((ROWS, D), np.uint16)))


def test_the_tensor_map_has_a_dimension_per_sub_mode_and_the_box_the_tiles_extent_along_each():
    seen = []
    c = _compile(seen)
    atom = seen[0]
    a = atom.tma_desc.attrs
    assert list(atom.dims) == [2, 0, 1] and int(a["rank"]) == 3
    assert [int(a[f"extent{i}"]) for i in range(3)] == [D, H, S]
    assert [int(a[f"gstride{i}"]) for i in range(3)] == [1, D, H * D]
    # columns fastest, then the two heads, then the rows: shared-memory row t is head t % 2, row t // 2
    assert tuple(atom.box) == (D, 2, 64) and len(atom.boxes) == 1
    load = next(line for line in c.ptx.splitlines() if "cp.async.bulk.tensor" in line)
    assert "bulk.tensor.3d" in load
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
    coords = [int(regs.get(x, x)) for x in re.search(r"\[%rd\d+, \{([^}]*)\}\]", load).group(1).split(", ")]
    # tile (1, 2) of mode 0: heads 2 and 3, rows 128 to 191
    assert coords == [0, 2, 128]


def test_a_tile_that_names_more_sub_modes_than_the_mode_has_is_refused_at_the_users_line():
    with pytest.raises(DSLValueError, match="extent per sub-mode") as e:
        _compile([], tile=(64, (2, 32)))
    assert e.value.location[0] == __file__


@requires_gpu
@pytest.mark.parametrize("tile_coord", [(0, 0), (1, 2), (1, 3)])
def test_a_nested_tile_loads_its_heads_rows_on_the_gpu(tile_coord):
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90 or later")
    x = torch.randn(S, H, D, device="cuda").to(torch.bfloat16)
    out = torch.full((ROWS, D), float("nan"), dtype=torch.bfloat16, device="cuda")
    _program([], tile_coord)(from_dlpack(x.view(-1)), from_dlpack(out))
    torch.cuda.synchronize()
    hi, si = tile_coord
    t = torch.arange(ROWS, device="cuda")
    want = x[si * 64 + t // 2, hi * 2 + t % 2, :]
    assert torch.equal(out, want)
