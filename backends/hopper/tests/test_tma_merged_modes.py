"""TMA of a tensor whose tiled mode has modes of its own that step through memory as one (a sequence of s scales
split into (8, s / 8) for 16-byte alignment, as the mixed-input FMHA's scale tensors are): the tensor map has one
dimension for the mode, the box covers the tile, and a copy's coordinate in the mode is the linear (colexicographic)
index of its hierarchical coordinate. A mode whose sub-modes are not one run of memory is a dimension per sub-mode
(test_tma_interleaved_modes.py); one the tile cannot be split over is refused."""
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

SEQ, BATCH, TILE = 1024, 4, 128


def _scales(split_stride=8):
    # (one scale a row, (8, SEQ / 8) rows, batch): the rows split in two sub-modes
    return cute.make_layout((1, (8, SEQ // 8), BATCH), stride=(1, (1, split_stride), SEQ * split_stride // 8))


def _program(seen, gmem_layout, tile_coord):
    smem_layout = cute.make_layout((1, TILE))

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.BFloat16, smem_layout, byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, (1, TILE), (0, None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        cute.copy(atom, tg[(None,) + tile_coord], ts, tma_bar_ptr=bar)

    @cute.jit
    def host(x: cute.Tensor):
        t = cute.make_tensor(x.iterator, gmem_layout)
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, smem_layout, (1, TILE))
        seen.append(atom)
        k(atom, tensor).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


@pytest.mark.parametrize("tile_coord", [(3, 2), (7, 0)])
def test_a_split_mode_is_one_tensor_map_dimension(tile_coord):
    seen = []
    with target("sm_90a"):
        c = cute.compile(_program(seen, _scales(), tile_coord), from_dlpack(np.zeros(SEQ * BATCH, np.uint16)))
    atom = seen[0]
    # the contiguous run is the rows' mode (beside the one-element mode 0), its box the tile's 128 rows
    assert atom.dims[0] == 1 and atom.box[0] == TILE
    attrs = {**atom.tma_desc.attrs, **{k: str(v) for k, v in atom.tma_desc.dynamic.items()}}
    assert int(attrs["extent0"]) == SEQ and int(attrs["gstride0"]) == 1
    loads = [line for line in c.ptx.splitlines() if "cp.async.bulk.tensor" in line]
    assert len(loads) == 1
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
    coords = [int(regs.get(x, x)) for x in re.search(r"\[%rd\d+, \{([^}]*)\}\]", loads[0]).group(1).split(", ")]
    # tensor-map dimensions: rows, the one-element mode, batch; the tile's first row at row 128 * j
    j, b = tile_coord
    assert len(coords) == 3 and coords[0] == TILE * j and coords[list(atom.dims).index(2)] == b


def test_a_split_mode_with_gaps_is_a_tensor_map_dimension_per_sub_mode():
    # runs of 8 rows, 16 apart: the tile's 128 rows are 8 of the first sub-mode by 16 of the second
    seen = []
    with target("sm_90a"):
        cute.compile(_program(seen, _scales(split_stride=16), (1, 0)), from_dlpack(np.zeros(2 * SEQ * BATCH,
                                                                                             np.uint16)))
    atom = seen[0]
    attrs = {**atom.tma_desc.attrs, **{k: str(v) for k, v in atom.tma_desc.dynamic.items()}}
    # tensor-map dimensions of the two sub-modes (flat modes 1 and 2)
    d = [list(atom.dims).index(1), list(atom.dims).index(2)]
    assert d[0] == 0 and [atom.box[i] for i in d] == [8, TILE // 8]
    assert [int(attrs[f"gstride{i}"]) for i in d] == [1, 16] and [int(attrs[f"extent{i}"]) for i in d] == [8, SEQ // 8]


def test_a_split_mode_the_tile_does_not_divide_is_refused_at_the_users_line():
    def scales():
        # runs of 24 rows: 128 rows are no whole number of runs, nor part of one
        return cute.make_layout((1, (24, SEQ // 24), BATCH), stride=(1, (1, 32), SEQ * 2))

    with target("sm_90a"), pytest.raises(DSLValueError, match="not one run of memory") as e:
        cute.compile(_program([], scales(), (1, 0)), from_dlpack(np.zeros(2 * SEQ * BATCH, np.uint16)))
    assert e.value.location[0] == __file__


def test_a_map_of_a_split_mode_is_retargeted_with_the_mode_as_one():
    """update_tma_descriptor of such an atom for another tensor of the same form: the rows' dimension gets the
    whole mode's extent (8 x its second sub-mode), as the atom's own map has it."""
    other_seq = 2048

    @cute.kernel
    def k(atom: cute.CopyAtom, x: cute.Tensor, ws: cute.Tensor):
        mgr = utils.TensorMapManager(utils.TensorMapUpdateMode.GMEM, 128)
        gptr = mgr.get_tensormap_ptr(ws.iterator)
        mgr.init_tensormap_from_atom(atom, gptr, 0)
        mgr.fence_tensormap_initialization()
        other = cute.make_tensor(x.iterator, cute.make_layout((1, (8, other_seq // 8), 2),
                                                              stride=(1, (1, 8), other_seq)))
        mgr.update_tensormap((other,), (atom,), (gptr,), 0, (None,))
        mgr.fence_tensormap_update(gptr)

    @cute.jit
    def host(x: cute.Tensor, ws: cute.Tensor):
        t = cute.make_tensor(x.iterator, _scales())
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, cute.make_layout((1, TILE)),
                                              (1, TILE))
        k(atom, x, ws).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(SEQ * BATCH, np.uint16)),
                           from_dlpack(np.zeros(16, np.int64))).info["ptx"]
    edits = [line.strip() for line in ptx.splitlines() if "tensormap.replace" in line and "global_dim" in line]
    consts = dict(re.findall(r"mov\.(?:u|b)32\s+(%r\d+), (\d+);", ptx))
    dims = {}
    for e in edits:
        ordinal = int(re.search(r"\], (\d+),", e).group(1))
        v = e.rstrip(";").split(", ")[-1]
        dims[ordinal] = int(consts.get(v, v))
    assert dims[0] == other_seq and sorted(dims) == [0, 1, 2] and 2 in dims.values()


@cute.jit
def load_tile_on_the_gpu(atom, tensor, dtype, smem_layout, tile, tile_coord, nbytes):
    """A shared-memory tensor of dtype and smem_layout holding tile (0, *tile_coord) of the TMA tensor `tensor`,
    loaded by warp 0 on an mbarrier every thread of the block waits on (a GPU test's one load)."""
    smem = utils.SmemAllocator()
    s = smem.allocate_tensor(dtype, smem_layout, byte_alignment=128)
    bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(tensor, tile, (0, None, None))
    ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, len(tile)),
                                   cute.group_modes(g, 0, len(tile)))
    if tidx < 32:
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
        cute.copy(atom, tg[(None,) + tile_coord], ts, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    return s


def _gpu_program(tile_coord):
    smem_layout = cute.make_layout((1, TILE))

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        s = load_tile_on_the_gpu(atom, tensor, cutlass.BFloat16, smem_layout, (1, TILE), tile_coord, TILE * 2)
        out[tidx] = s[0, tidx]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        t = cute.make_tensor(x.iterator, _scales())
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, smem_layout, (1, TILE))
        k(atom, tensor, out).launch(grid=(1, 1, 1), block=(TILE, 1, 1))

    return host


@requires_gpu
@pytest.mark.parametrize("tile_coord", [(3, 2), (7, 0)])
def test_a_split_mode_tile_loads_its_rows_on_the_gpu(tile_coord):
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA needs sm_90 or later")
    x = torch.randn(SEQ * BATCH, device="cuda").to(torch.bfloat16)
    out = torch.zeros(TILE, dtype=torch.bfloat16, device="cuda")
    _gpu_program(tile_coord)(from_dlpack(x), from_dlpack(out))
    torch.cuda.synchronize()
    j, b = tile_coord
    assert torch.equal(out, x[b * SEQ + TILE * j:b * SEQ + TILE * (j + 1)])
