"""TMA tiles of three non-unit modes (QuACK's scale-factor window: (256 16-bit units of a chunk, chunks along K,
chunks along N)): where the shared-memory image of the tile is the dense row-major one, the box spans the three
modes, in the order the modes step through shared memory."""
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
from test_tma_merged_modes import load_tile_on_the_gpu

CHUNK, KC, NC = 256, 8, 6        # units a chunk; chunks along K and along N of the tensor
TILE = (CHUNK, 2, 3)             # a tile: 2 K chunks of 3 N chunks


def _program(seen, smem_layout, tile_coord, num_multicast=1):
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Int16, smem_layout, byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, TILE, (0, None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 3),
                                       cute.group_modes(g, 0, 3))
        cute.copy(atom, tg[(None,) + tile_coord], ts, tma_bar_ptr=bar)

    @cute.jit
    def host(x: cute.Tensor):
        t = cute.make_tensor(x.iterator, cute.make_layout((CHUNK, KC, NC)))
        op = cpasync.CopyBulkTensorTileG2SMulticastOp() if num_multicast > 1 else cpasync.CopyBulkTensorTileG2SOp()
        atom, tensor = cpasync.make_tiled_tma_atom(op, t, smem_layout, TILE, num_multicast=num_multicast)
        seen.append(atom)
        k(atom, tensor).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def _loads(c):
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
    out = []
    for line in c.ptx.splitlines():
        if "cp.async.bulk.tensor" in line:
            out.append([int(regs.get(x, x)) for x in re.search(r"\{([^}]*)\}\]", line).group(1).split(", ")])
    return out


def test_a_dense_tile_of_three_modes_is_one_box():
    seen = []
    with target("sm_90a"):
        c = cute.compile(_program(seen, cute.make_layout(TILE), (1, 1)),
                         from_dlpack(np.zeros(CHUNK * KC * NC, np.int16)))
    atom = seen[0]
    assert atom.box == (CHUNK, 2, 3) and len(atom.boxes) == 1
    # tile (1, 1): K chunk 2, N chunk 3
    assert _loads(c) == [[0, 2, 3]]


def test_modes_stored_in_another_order_are_one_box_in_that_order():
    # the N chunks first in shared memory, then K: the tensor map takes N before K, and the tile is one box
    seen = []
    smem = cute.make_layout(TILE, stride=(1, CHUNK * 3, CHUNK))
    with target("sm_90a"):
        c = cute.compile(_program(seen, smem, (0, 1)), from_dlpack(np.zeros(CHUNK * KC * NC, np.int16)))
    atom = seen[0]
    assert atom.box == (CHUNK, 3, 2) and len(atom.boxes) == 1
    # tile (0, 1): N chunk 3, K chunk 0, in the map's order (chunk, N, K)
    assert _loads(c) == [[0, 3, 0]]


def test_a_multicast_share_of_a_box_along_two_modes_is_refused_at_the_users_line():
    with target("sm_90a"), pytest.raises(DSLValueError, match="cannot share boxes") as e:
        cute.compile(_program([], cute.make_layout(TILE), (0, 0), num_multicast=2),
                     from_dlpack(np.zeros(CHUNK * KC * NC, np.int16)))
    assert e.value.location[0] == __file__


def _gpu_program(smem_layout, tile_coord):
    size = CHUNK * TILE[1] * TILE[2]

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = load_tile_on_the_gpu(atom, tensor, cutlass.Int16, smem_layout, TILE, tile_coord, size * 2)
        for j in cutlass.range_constexpr(size // 128):
            out[tidx + 128 * j] = s[tidx + 128 * j]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        t = cute.make_tensor(x.iterator, cute.make_layout((CHUNK, KC, NC)))
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, smem_layout, TILE)
        k(atom, tensor, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


_LAYOUTS = [cute.make_layout(TILE), cute.make_layout(TILE, stride=(1, CHUNK * 3, CHUNK))]


def test_the_gpu_program_compiles():
    with target("sm_90a"):
        for smem in _LAYOUTS:
            cute.compile(_gpu_program(smem, (1, 1)), from_dlpack(np.zeros(CHUNK * KC * NC, np.int16)),
                         from_dlpack(np.zeros(CHUNK * 6, np.int16)))


@requires_gpu
@pytest.mark.parametrize("which", [0, 1])
def test_a_three_mode_tile_loads_its_elements_on_the_gpu(which):
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90 or later")
    x = torch.arange(CHUNK * KC * NC, dtype=torch.int32, device="cuda").to(torch.int16)
    out = torch.zeros(CHUNK * 6, dtype=torch.int16, device="cuda")
    _gpu_program(_LAYOUTS[which], (1, 1))(from_dlpack(x), from_dlpack(out))
    torch.cuda.synchronize()
    # out[i]: element i of the tile in the colexicographic order of its modes, whatever its shared-memory place
    want = x.view(NC, KC, CHUNK)[3:6, 2:4, :].reshape(-1)
    assert torch.equal(out, want)
