"""TMA of tensors stored in dense blocks (tma_blocked.py): the scale-factor tensors of block-scaled GEMMs, whose
((32, 4), rest) x ((16, 4), rest) element coordinates index 512-byte chunks, a factor repeated over 16 elements."""
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

M, K, VEC = 256, 512, 16
KC = K // (4 * VEC)                       # chunks along K


def _gmem_sf_layout():
    # chunks K-fastest, then M (blockscaled_layout.tile_atom_to_shape_SF's order)
    return cute.make_layout((((32, 4), M // 128), ((VEC, 4), KC), 1),
                            stride=(((16, 4), 512 * KC), ((0, 1), 512), 512 * KC * (M // 128)))


def _smem_sf_layout():
    # one stage of a 128 x 128 tile: two chunks along K
    return cute.make_layout((((32, 4), 1), ((VEC, 4), 2)), stride=(((16, 4), 512), ((0, 1), 512)))


def _program(seen, smem_layout_fn, tile=(128, 128), internal=cutlass.Int16):
    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        smem = utils.SmemAllocator()
        layout = smem_layout_fn()
        s = smem.allocate_tensor(cutlass.Float8E4M3FN, layout, byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, tile, (None, None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        cute.copy(atom, cute.filter_zeros(tg)[(None, 1, 3, 0)], cute.filter_zeros(ts), tma_bar_ptr=bar)

    @cute.jit
    def host(sf: cute.Tensor):
        t = cute.make_tensor(sf.iterator, _gmem_sf_layout())
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, smem_layout_fn(), tile,
                                                   internal_type=internal)
        seen.append(atom)
        k(atom, tensor).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


@pytest.mark.parametrize("arch", ["sm_90a", "sm_120a"])
def test_a_tile_of_chunks_is_one_box_at_block_coordinates(arch):
    seen = []
    with target(arch):
        c = cute.compile(_program(seen, _smem_sf_layout), from_dlpack(np.zeros(M * K // VEC, np.uint8)))
    atom = seen[0]
    # dimensions: a chunk (256 16-bit units), the M blocks, the K blocks, L; one box of the tile's 1 x 2 chunks
    assert atom.box == (256, 1, 2, 1)
    attrs = {**atom.tma_desc.attrs, **{k: str(v) for k, v in atom.tma_desc.dynamic.items()}}
    assert (attrs["data_type"], attrs["rank"], attrs["dim0"], attrs["box1"], attrs["box2"]) == ("u16", 4, 256, 1, 2)
    # M blocks stride 512 * KC bytes, K blocks 512 (static here: the layout is)
    assert (int(attrs["stride1"]), int(attrs["stride2"])) == (512 * KC, 512)
    loads = [line for line in c.ptx.splitlines() if "cp.async.bulk.tensor" in line]
    assert len(loads) == 1 and "cp.async.bulk.tensor.4d" in loads[0], loads
    # tile (1, 3): M block 1, K blocks from 3 * 128 / 64 = 6
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
    coords = re.search(r"\{([^}]*)\}\]", loads[0]).group(1).split(", ")
    assert [int(regs.get(x, x)) for x in coords] == [0, 1, 6, 0], loads[0]


def test_blocks_not_dense_in_shared_memory_are_refused_at_the_users_line():
    def scattered():
        return cute.make_layout((((32, 4), 1), ((VEC, 4), 2)), stride=(((16, 4), 512), ((0, 1), 1024)))

    with target("sm_90a"), pytest.raises(DSLValueError, match="does not hold the tile's blocks") as e:
        cute.compile(_program([], scattered), from_dlpack(np.zeros(M * K // VEC, np.uint8)))
    assert e.value.location[0] == __file__


def test_a_tile_of_part_of_a_block_is_refused():
    with target("sm_90a"), pytest.raises(DSLValueError, match="not made of whole blocks"):
        cute.compile(_program([], _smem_sf_layout, tile=(64, 128)), from_dlpack(np.zeros(M * K // VEC, np.uint8)))


def _retarget_program(other_layout):
    """A kernel that rewrites the blocked atom's map, copied to a workspace, for a tensor of other_layout (made
    inside the kernel from a pointer, as a grouped GEMM makes each group's scale factors)."""
    @cute.kernel
    def k(atom: cute.CopyAtom, sf: cute.Tensor, ws: cute.Tensor, m_blocks: cutlass.Int32):
        mgr = utils.TensorMapManager(utils.TensorMapUpdateMode.GMEM, 128)
        gptr = mgr.get_tensormap_ptr(ws.iterator)
        mgr.init_tensormap_from_atom(atom, gptr, 0)
        mgr.fence_tensormap_initialization()
        other = cute.make_tensor(sf.iterator + 4096, other_layout(m_blocks))
        mgr.update_tensormap((other,), (atom,), (gptr,), 0, (None,))
        mgr.fence_tensormap_update(gptr)

    @cute.jit
    def host(sf: cute.Tensor, ws: cute.Tensor, m_blocks: cutlass.Int32):
        t = cute.make_tensor(sf.iterator, _gmem_sf_layout())
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, _smem_sf_layout(), (128, 128),
                                              internal_type=cutlass.Int16)
        k(atom, sf, ws, m_blocks).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def test_a_blocked_map_is_retargeted_to_another_tensor_of_the_same_blocks():
    # each dimension after the block: its extent (the M blocks a run-time value, K's 3 blocks, L = 2) and its byte
    # stride; the block itself (dimension 0) stays as it is
    kc2 = 3

    def other(m_blocks):
        return cute.make_layout((((32, 4), m_blocks), ((VEC, 4), kc2), 2),
                                stride=(((16, 4), 512 * kc2), ((0, 1), 512), 512 * kc2 * m_blocks))

    with target("sm_90a"):
        ptx = cute.compile(_retarget_program(other), from_dlpack(np.zeros(M * K // VEC, np.uint8)),
                           from_dlpack(np.zeros(16, np.int64)), cutlass.Int32(5)).info["ptx"]
    edits = [l.strip() for l in ptx.splitlines() if "tensormap.replace" in l]
    fields = sorted(re.search(r"tile\.(\w+)", e).group(1) + (re.search(r"\], (\d+),", e).group(1)
                                                          if "global_address" not in e else "") for e in edits)
    assert fields == ["global_address", "global_dim1", "global_dim2", "global_dim3", "global_stride0",
                      "global_stride1", "global_stride2"]
    value = {re.search(r"tile\.(\w+)", e).group(1) + (re.search(r"\], (\d+),", e).group(1) if "address" not in e
                                                       else ""): e.rstrip(";").split(", ")[-1] for e in edits}
    # constants where the layout has them: K's 3 blocks, L = 2, the K blocks' 512-byte step
    consts = dict(re.findall(r"mov\.u32\s+(%r\d+), (\d+);", ptx)) | dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", ptx))
    consts64 = dict(re.findall(r"mov\.(?:u|b)64\s+(%rd\d+), (\d+);", ptx))
    look = lambda v: int(consts.get(v, consts64.get(v, v))) if re.fullmatch(r"%?\w+", v) and \
        (v in consts or v in consts64 or v.isdigit()) else v  # noqa: E731
    assert look(value["global_dim2"]) == kc2 and look(value["global_dim3"]) == 2
    assert look(value["global_stride1"]) == 512


def test_a_blocked_map_refuses_a_tensor_of_other_blocks_at_the_users_line():
    def other(m_blocks):  # 8-row blocks: not the atom's
        return cute.make_layout((((8, 4), m_blocks), ((VEC, 4), 3), 1),
                                stride=(((16, 4), 128 * 3), ((0, 1), 128), 512))

    with target("sm_90a"), pytest.raises(DSLValueError, match="blocks are") as e:
        cute.compile(_retarget_program(other), from_dlpack(np.zeros(M * K // VEC, np.uint8)),
                     from_dlpack(np.zeros(16, np.int64)), cutlass.Int32(5))
    assert "test_tma_blocked.py" in str(e.value)


def _smem_four_chunks():
    # one stage of a 128 x 256 tile: four chunks along K
    return cute.make_layout((((32, 4), 1), ((VEC, 4), 4)), stride=(((16, 4), 512), ((0, 1), 512)))


def _multicast_program(seen, cta):
    """CTA `cta` of a multicast pair loading tile (1, 1) of the scale factors: its share of the chunks, into the
    same place of both CTAs' shared memory."""
    tile = (128, 256)

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float8E4M3FN, _smem_four_chunks(), byte_alignment=1024)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, tile, (None, None, None))
        ts, tg = cpasync.tma_partition(atom, cta, cute.make_layout(2), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        seen.append((s.iterator.offset, cute.filter_zeros(ts).iterator.offset))
        cute.copy(atom, cute.filter_zeros(tg)[(None, 1, 1, 0)], cute.filter_zeros(ts), tma_bar_ptr=bar,
                  mcast_mask=3)

    @cute.jit
    def host(sf: cute.Tensor):
        t = cute.make_tensor(sf.iterator, _gmem_sf_layout())
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t,
                                                   _smem_four_chunks(), tile, 2, internal_type=cutlass.Int16)
        seen.append(atom)
        k(atom, tensor).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    return host


def test_multicast_ctas_share_the_tiles_chunks_exactly():
    """Each of the two CTAs loads a run of whole chunks (the slower mode's, K here) at its own K-block coordinate
    and shared-memory offset; together their boxes are the tile's four chunks, each once."""
    got = {}
    for cta in (0, 1):
        seen = []
        with target("sm_90a"):
            c = cute.compile(_multicast_program(seen, cta), from_dlpack(np.zeros(M * K // VEC, np.uint8)))
        atom, (base, start) = seen[0], seen[1]
        assert atom.box == (256, 1, 2, 1)                     # a chunk, 1 M block, half of the 4 K blocks, L
        loads = [line for line in c.ptx.splitlines() if "cp.async.bulk.tensor" in line]
        assert len(loads) == 1 and "multicast::cluster" in loads[0], loads
        regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", c.ptx))
        coords = re.search(r"\[%rd\d+, \{([^}]*)\}\]", loads[0]).group(1).split(", ")
        block_m, block_k = (int(regs.get(x, x)) for x in coords[1:3])
        got[cta] = (block_m, block_k, start - base)
    # tile (1, 1): M block 1; K blocks 4..7, two a CTA; CTA 1's two chunks 1024 bytes into the stage
    assert got == {0: (1, 4, 0), 1: (1, 6, 1024)}
    chunks = {(m, k + i) for m, k, _ in got.values() for i in range(2)}
    assert chunks == {(1, 4), (1, 5), (1, 6), (1, 7)}


def test_multicast_of_an_odd_share_is_refused_at_the_users_line():
    def program():
        @cute.jit
        def host(sf: cute.Tensor):
            t = cute.make_tensor(sf.iterator, _gmem_sf_layout())
            cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t, _smem_four_chunks(),
                                        (128, 256), 8, internal_type=cutlass.Int16)
        return host

    with target("sm_90a"), pytest.raises(DSLValueError, match="cannot share a tile") as e:
        cute.compile(program(), from_dlpack(np.zeros(M * K // VEC, np.uint8)))
    assert e.value.location[0] == __file__


def _multicast_gpu_program():
    """A cluster of two CTAs loading tile (1, 1) of the scale factors with the multicast atom, each its share into
    both; each CTA writes the bytes its shared memory received to out[rank]."""
    tile, nbytes = (128, 256), 128 * 256 // VEC

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        rank = cute.arch.block_rank_in_cluster()
        smem = utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        s = smem.allocate_tensor(cutlass.Float8E4M3FN, _smem_four_chunks(), byte_alignment=1024)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        # both CTAs' barriers are ready before either multicasts
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        g = cute.local_tile(tensor, tile, (None, None, None))
        ts, tg = cpasync.tma_partition(atom, rank, cute.make_layout(2), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(atom, cute.filter_zeros(tg)[(None, 1, 1, 0)], cute.filter_zeros(ts), tma_bar_ptr=bar,
                      mcast_mask=3)
        cute.arch.mbarrier_wait(bar, 0)
        raw = cute.make_tensor(cute.recast_ptr(s.iterator, dtype=cutlass.Uint8), cute.make_layout(nbytes))
        for i in cutlass.range_constexpr(nbytes // 128):
            out[rank * nbytes + i * 128 + tidx] = raw[i * 128 + tidx]
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

    @cute.jit
    def host(sf: cute.Tensor, out: cute.Tensor):
        t = cute.make_tensor(sf.iterator, _gmem_sf_layout())
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), t,
                                                   _smem_four_chunks(), tile, 2, internal_type=cutlass.Int16)
        k(atom, tensor, out).launch(grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1))

    return host


@requires_gpu
def test_multicast_shares_fill_both_ctas_with_the_tile_on_the_gpu():
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("TMA multicast needs sm_90 or later")
    sf = torch.randint(0, 256, (M * K // VEC,), dtype=torch.uint8, device="cuda")
    out = torch.zeros(2 * 2048, dtype=torch.uint8, device="cuda")
    _multicast_gpu_program()(from_dlpack(sf), from_dlpack(out))
    torch.cuda.synchronize()
    # tile (1, 1): M block 1, K blocks 4..7, each 512 bytes, one after another in shared memory, in both CTAs
    want = torch.cat([sf[(KC + 4 + j) * 512:(KC + 5 + j) * 512] for j in range(4)])
    assert torch.equal(out[:2048], want) and torch.equal(out[2048:], want)
