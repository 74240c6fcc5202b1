"""Multicast TMA of blocked scale-factor tensors whose tile has fewer blocks than the multicast group has CTAs
(tma_blocked.py): each CTA loads an equal run of rows of the blocks' storage. Checked by replaying each CTA's box,
as the tensor map describes it, against the layouts: together the CTAs fill the tile's shared memory once, each
byte from the global byte the layouts put there."""
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

VEC = 16
BLOCK = ((32, 4), (VEC, 4))          # 128 rows x 4 factors, a factor repeated over VEC elements: 512 bytes
BLOCK_STRIDE = ((16, 4), (0, 1))


def _gmem(mb, kb, k_fastest=True):
    """Scale factors of mb x kb blocks, the K blocks adjacent (or the M blocks)."""
    sm, sk = (512 * kb, 512) if k_fastest else (512, 512 * mb)
    return (((32, 4), mb), ((VEC, 4), kb), 1), (((16, 4), sm), ((0, 1), sk), 512 * mb * kb)


def _smem(nm, nk):
    """One stage of a tile of nm x nk blocks, block after block along the mode with more of them."""
    sm, sk = (512 * nk, 512) if nk >= nm else (512, 512 * nm)
    return ((((32, 4), nm), ((VEC, 4), nk)), (((16, 4), sm), ((0, 1), sk)))


def _at(shape, stride, coord):
    """The offset of `coord` (one integer per mode, or per leaf) under a hierarchical layout."""
    if isinstance(shape, int):
        return coord * stride
    if isinstance(coord, int):          # a mode's integer spreads over its leaves, first fastest
        out = 0
        for s, d in zip(shape, stride):
            n = int(np.prod(s)) if isinstance(s, tuple) else s
            out += _at(s, d, coord % n)
            coord //= n
        return out
    return sum(_at(s, d, c) for s, d, c in zip(shape, stride, coord))


def _program(seen, gmem, smem, tile, n, cta, tile_coord):
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        alloc = utils.SmemAllocator()
        s = alloc.allocate_tensor(cutlass.Float8E4M3FN, cute.make_layout(smem[0], stride=smem[1]),
                                  byte_alignment=1024)
        bar = alloc.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, tile, (None, None, None))
        ts, tg = cpasync.tma_partition(atom, cta, cute.make_layout(n), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        seen.append(cute.filter_zeros(ts).iterator.offset - s.iterator.offset)
        cute.copy(atom, cute.filter_zeros(tg)[(None,) + tile_coord + (0,)], cute.filter_zeros(ts), tma_bar_ptr=bar,
                  mcast_mask=(1 << n) - 1)

    @cute.jit
    def host(sf: cute.Tensor):
        t = cute.make_tensor(sf.iterator, cute.make_layout(gmem[0], stride=gmem[1]))
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t,
                                                   cute.make_layout(smem[0], stride=smem[1]), tile, n,
                                                   internal_type=cutlass.Uint8)
        seen.append(atom)
        k(atom, tensor).launch(grid=(n, 1, 1), block=(32, 1, 1), cluster=(n, 1, 1))

    return host


def _ctas(gmem, smem, tile, n, tile_coord):
    """(atom, [(tensor-map coordinates, shared-memory byte offset) per CTA])."""
    nbytes = 512 * gmem[0][0][1] * gmem[0][1][1]
    out = []
    for cta in range(n):
        seen = []
        with target("sm_90a"):
            c = cute.compile(_program(seen, gmem, smem, tile, n, cta, tile_coord),
                             from_dlpack(np.zeros(nbytes, np.uint8)))
        loads = [line for line in c.ptx.splitlines() if "cp.async.bulk.tensor" in line]
        assert len(loads) == 1 and "multicast::cluster" in loads[0], loads
        regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
        coords = re.search(r"\[%rd\d+, \{([^}]*)\}\]", loads[0]).group(1).split(", ")
        out.append((tuple(int(regs.get(x, x)) for x in coords), seen[1]))
    return seen[0], out


def _replay(atom, ctas):
    """{shared-memory byte: global byte} of the CTAs' boxes, as the tensor map reads them (a byte twice fails)."""
    a = {**atom.tma_desc.attrs, **{k: v for k, v in atom.tma_desc.dynamic.items()}}
    rank, eb = int(a["rank"]), int(a["ebytes"])
    box = [int(a[f"box{d}"]) for d in range(rank)]
    step = [eb] + [int(a[f"stride{d}"]) for d in range(1, rank)]
    got = {}
    for coords, start in ctas:
        for lin, idx in enumerate(np.ndindex(*reversed(box))):
            idx = idx[::-1]
            for d in range(rank):
                assert coords[d] + idx[d] < int(a[f"dim{d}"]), "a box reaches past the tensor map"
            g = sum((c + i) * s for c, i, s in zip(coords, idx, step))
            for b in range(eb):
                key = start + lin * eb + b
                assert key not in got, f"shared-memory byte {key} loaded twice"
                got[key] = g + b
    return got


def _expected(gmem, smem, tile, tile_coord):
    """{shared-memory byte: global byte} of the tile as the two layouts place its elements."""
    want = {}
    for x in range(tile[0]):
        for y in range(0, tile[1], VEC):          # a factor repeats over VEC elements of K
            o = _at(smem[0], smem[1], (x, y))
            g = _at(gmem[0], gmem[1], (tile_coord[0] * tile[0] + x, tile_coord[1] * tile[1] + y, 0))
            assert want.setdefault(o, g) == g
    return want


CASES = {
    # CuTe DSL's sm_103a GEMM at its default cluster: 3 K blocks, 4 CTAs along N: 3 rows of 128 bytes each
    "1x3_over_4": (_gmem(2, 6), _smem(1, 3), (128, 192), 4, (1, 1), (64, 3, 1, 1)),
    "1x3_over_2": (_gmem(2, 6), _smem(1, 3), (128, 192), 2, (1, 1), (128, 3, 1, 1)),
    "1x1_over_4": (_gmem(2, 6), _smem(1, 1), (128, 64), 4, (1, 4), (64, 1, 1, 1)),
    # the M blocks adjacent in global memory: the rows run along M
    "3x1_over_4_m": (_gmem(6, 2, k_fastest=False), _smem(3, 1), (384, 64), 4, (1, 1), (64, 3, 1, 1)),
    # whole blocks divide: each CTA loads two of the four
    "1x4_over_2_whole": (_gmem(2, 8), _smem(1, 4), (128, 256), 2, (1, 1), (256, 1, 2, 1)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_ctas_boxes_fill_the_tile_once_from_where_the_layouts_say(case):
    gmem, smem, tile, n, tile_coord, box = CASES[case]
    atom, ctas = _ctas(gmem, smem, tile, n, tile_coord)
    assert atom.box == box
    got, want = _replay(atom, ctas), _expected(gmem, smem, tile, tile_coord)
    assert sorted(got) == list(range(len(want))) == sorted(want)
    assert got == want
    # each CTA's share is an equal part of the tile, the copy's byte count the whole tile
    assert sorted(start for _, start in ctas) == [r * len(want) // n for r in range(n)]
    assert atom.smem_bytes == len(want)


REFUSED = {
    "1x4_over_3": (_gmem(2, 8), _smem(1, 4), (128, 256), 3),
    # blocks along both modes: neither whole blocks nor one mode's rows divide among 4
    "2x3_over_4": (_gmem(2, 6), _smem(2, 3), (256, 192), 4),
    # the tile spans the M blocks, which are not adjacent in global memory (the K blocks are)
    "3x1_over_4_m_apart": (_gmem(6, 2), _smem(3, 1), (384, 64), 4),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_tile_the_ctas_cannot_share_is_refused_at_the_users_line(case):
    gmem, smem, tile, n = REFUSED[case]

    @cute.jit
    def host(sf: cute.Tensor):
        t = cute.make_tensor(sf.iterator, cute.make_layout(gmem[0], stride=gmem[1]))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t,
                                    cute.make_layout(smem[0], stride=smem[1]), tile, n, internal_type=cutlass.Uint8)

    with target("sm_90a"), pytest.raises(DSLValueError, match="cannot share a tile") as e:
        cute.compile(host, from_dlpack(np.zeros(512 * 64, np.uint8)))
    assert e.value.location[0] == __file__


def _gpu_program(gmem, smem, tile, n, tile_coord, nbytes):
    """A cluster of n CTAs loading one tile with the multicast atom, each its share into all; each CTA writes the
    bytes its shared memory received to out[rank]."""
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        rank = cute.arch.block_rank_in_cluster()
        alloc = utils.SmemAllocator()
        bar = alloc.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        s = alloc.allocate_tensor(cutlass.Float8E4M3FN, cute.make_layout(smem[0], stride=smem[1]),
                                  byte_alignment=1024)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        # every CTA's barrier is ready before any multicasts
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        g = cute.local_tile(tensor, tile, (None, None, None))
        ts, tg = cpasync.tma_partition(atom, rank, cute.make_layout(n), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(atom, cute.filter_zeros(tg)[(None,) + tile_coord + (0,)], cute.filter_zeros(ts),
                      tma_bar_ptr=bar, mcast_mask=(1 << n) - 1)
        cute.arch.mbarrier_wait(bar, 0)
        raw = cute.make_tensor(cute.recast_ptr(s.iterator, dtype=cutlass.Uint8), cute.make_layout(nbytes))
        for i in cutlass.range_constexpr(nbytes // 128):
            out[rank * nbytes + i * 128 + tidx] = raw[i * 128 + tidx]
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

    @cute.jit
    def host(sf: cute.Tensor, out: cute.Tensor):
        t = cute.make_tensor(sf.iterator, cute.make_layout(gmem[0], stride=gmem[1]))
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t,
                                                   cute.make_layout(smem[0], stride=smem[1]), tile, n,
                                                   internal_type=cutlass.Uint8)
        k(atom, tensor, out).launch(grid=(n, 1, 1), block=(128, 1, 1), cluster=(n, 1, 1))

    return host


@requires_gpu
@pytest.mark.parametrize("case", ["1x3_over_4", "3x1_over_4_m"])
def test_row_shares_fill_every_cta_with_the_tile_on_the_gpu(case):
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA multicast needs sm_90 or later")
    gmem, smem, tile, n, tile_coord, _ = CASES[case]
    want_map = _expected(gmem, smem, tile, tile_coord)
    nbytes = len(want_map)
    sf = torch.randint(0, 256, (512 * gmem[0][0][1] * gmem[0][1][1],), dtype=torch.uint8, device="cuda")
    out = torch.zeros(n * nbytes, dtype=torch.uint8, device="cuda")
    _gpu_program(gmem, smem, tile, n, tile_coord, nbytes)(from_dlpack(sf), from_dlpack(out))
    torch.cuda.synchronize()
    want = sf[torch.tensor([want_map[o] for o in range(nbytes)], device="cuda")]
    for r in range(n):
        assert torch.equal(out[r * nbytes:(r + 1) * nbytes], want), f"CTA {r}"


def _retarget(k_step):
    """The 1 x 3 over 4 atom's map rewritten in a kernel for a tensor of 5 x 3 blocks (made from a pointer, as a
    grouped GEMM makes each group's scale factors) whose K blocks are k_step elements apart: (PTX, atom)."""
    gmem, smem, tile, n, _, _ = CASES["1x3_over_4"]
    seen = []

    @cute.kernel
    def k(atom: cute.CopyAtom, sf: cute.Tensor, ws: cute.Tensor):
        mgr = utils.TensorMapManager(utils.TensorMapUpdateMode.GMEM, 128)
        gptr = mgr.get_tensormap_ptr(ws.iterator)
        mgr.init_tensormap_from_atom(atom, gptr, 0)
        mgr.fence_tensormap_initialization()
        other = cute.make_tensor(sf.iterator, cute.make_layout(
            (((32, 4), 5), ((VEC, 4), 3), 1), stride=(((16, 4), 3 * k_step), ((0, 1), k_step), 15 * k_step)))
        mgr.update_tensormap((other,), (atom,), (gptr,), 0, (None,))
        mgr.fence_tensormap_update(gptr)

    @cute.jit
    def host(sf: cute.Tensor, ws: cute.Tensor):
        t = cute.make_tensor(sf.iterator, cute.make_layout(gmem[0], stride=gmem[1]))
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t,
                                              cute.make_layout(smem[0], stride=smem[1]), tile, n,
                                              internal_type=cutlass.Uint8)
        seen.append(atom)
        k(atom, sf, ws).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"):
        c = cute.compile(host, from_dlpack(np.zeros(512 * 12, np.uint8)), from_dlpack(np.zeros(16, np.int64)))
    return c.info["ptx"], seen[0]


def test_a_row_shared_map_is_retargeted_with_its_rows():
    ptx, atom = _retarget(512)
    consts = dict(re.findall(r"mov\.(?:u|b)(?:32|64)\s+(%r\w+), (\d+);", ptx))
    value = {}
    for e in (line.strip().rstrip(";") for line in ptx.splitlines() if "tensormap.replace" in line):
        field = re.search(r"tile\.(\w+)", e).group(1)
        if "address" not in field:          # the address: a register of the pointer
            v = e.split(", ")[-1]
            value[field + re.search(r"\], (\d+),", e).group(1)] = int(consts.get(v, v))
    # the rows dimension: 4 rows of 128 bytes a block, 3 blocks; then the 5 M blocks, 1536 bytes apart
    assert atom.box == (64, 3, 1, 1)
    assert (value["global_dim1"], value["global_stride0"]) == (12, 128)
    assert (value["global_dim2"], value["global_stride1"]) == (5, 1536)


def test_a_row_shared_map_refuses_a_tensor_whose_blocks_are_apart():
    with pytest.raises(DSLValueError, match="follow each other") as e:
        _retarget(1024)
    assert e.value.location[0] == __file__
