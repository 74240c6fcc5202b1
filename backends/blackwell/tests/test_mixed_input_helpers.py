"""warpweave.utils.mixed_input_helpers (this backend's mixed_input.py and utils.mixed_input_common) against what
a mixed-input GEMM asks of them, stated here independently of the code:
- a scale covers scale_granularity_m x scale_granularity_k elements of A: the scale layouts, indexed by A's
  element coordinates, give element (m, k, l) the dense index of its block (M-major: blocks along M first);
- a shared-memory stage of scales covers one CTA tile of A, no byte twice, and the stages follow each other;
- the contiguous grouped GEMM's search finds, for each tile index of the searched mode, the group whose tiles
  hold it and where the tile starts, as enumerating each group's tiles does; past the last tile, no group;
- the checks of a problem accept and refuse what their rules say.
"""
from __future__ import annotations

import itertools
import random

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.nvgpu import cpasync, tcgen05
from warpweave.ext import DSLTypeError, DSLValueError


def mih():
    import warpweave.utils.mixed_input_helpers as m

    return m


def block_index(m, k, l, M, K, gm, gk, m_major):
    nm, nk = -(-M // gm), -(-K // gk)
    bm, bk = m // gm, k // gk
    return (bm + bk * nm if m_major else bm * nk + bk) + l * nm * nk


@pytest.mark.parametrize("M,K,L,gm,gk,major", [(64, 256, 2, 1, 128, "MN"), (48, 96, 1, 1, 32, "K"),
                                               (32, 64, 3, 8, 16, "MN"), (40, 128, 1, 4, 128, "K")])
def test_gmem_scale_layout_indexes_each_element_by_its_block(M, K, L, gm, gk, major):
    mode = tcgen05.OperandMajorMode.MN if major == "MN" else tcgen05.OperandMajorMode.K
    lay = mih().get_gmem_layout_scale((M, K, L), gm, gk, mode)
    for m, k, l in itertools.product(range(M), range(K), range(L)):
        assert lay((m, k, l)) == block_index(m, k, l, M, K, gm, gk, major == "MN"), (m, k, l)


@pytest.mark.parametrize("tiler,two_cta,gm,gk,major,stages", [((128, 128, 128), False, 1, 128, "MN", 3),
                                                              ((256, 128, 64), True, 1, 256, "K", 2),
                                                              ((128, 64, 128), False, 1, 64, "MN", 4)])
def test_smem_scale_layout_covers_a_cta_tile_per_stage(tiler, two_cta, gm, gk, major, stages):
    mode = tcgen05.OperandMajorMode.MN if major == "MN" else tcgen05.OperandMajorMode.K
    tile, one, staged = mih().get_smem_layout_scale(tiler, two_cta, gm, gk, mode, cutlass.BFloat16, stages)
    tm, tk = tiler[0] // (2 if two_cta else 1), tiler[2]
    assert tile == (tm, tk)
    bm, bk = min(gm, tm), min(gk, tk)
    per_stage = -(-tm // bm) * -(-tk // bk)
    outer = one.outer
    assert cute.size(outer) == tm * tk and cute.cosize(outer) == per_stage
    for m, k in itertools.product(range(tm), range(tk)):
        assert outer((m, k)) == block_index(m, k, 0, tm, tk, bm, bk, major == "MN"), (m, k)
    assert cute.size_in_bytes(cutlass.BFloat16, one) >= 128
    for s in range(stages):   # stage s is the per-stage layout moved by s stages
        for m, k in ((0, 0), (tm - 1, tk - 1), (tm // 2, 0)):
            assert staged.outer((m, k, s)) == outer((m, k)) + s * per_stage


def test_smem_scale_layout_refuses_a_stage_tma_cannot_load():
    # 64 rows of one 2-byte scale each: 128 bytes is the least a TMA load moves; 32 rows are too few
    with pytest.raises(DSLValueError, match="128"):
        mih().get_smem_layout_scale((64, 64, 64), True, 1, 64, tcgen05.OperandMajorMode.MN, cutlass.BFloat16, 2)


def brute_force_tiles(cumsum, tile):
    """(group, start, end of the group) of each tile of the searched mode, in order."""
    out = []
    for g in range(len(cumsum) - 1):
        lo, hi = cumsum[g], cumsum[g + 1]
        out += [(g, start, hi) for start in range(lo, hi, tile)]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_contiguous_group_search_finds_each_tiles_group(seed):
    rnd = random.Random(seed)
    groups = rnd.randint(1, 7)
    sizes = [rnd.choice([0, 1, 64, 127, 128, 129, 300]) for _ in range(groups)]
    cumsum = [0]
    for s in sizes:
        cumsum.append(cumsum[-1] + s)
    tile = rnd.choice([64, 128])
    want = brute_force_tiles(cumsum, tile)
    state = mih().ContiguousGGSearchState(*(0 for _ in range(6)))
    idx = 0
    while True:   # the walk a scheduler makes: indices only grow, some skipped
        state = mih().contiguous_group_search((128, tile, 64), groups, idx, state, cumsum, 1)
        if idx >= len(want):
            assert state.cur_group_idx == groups + 1   # past the last tile: no group
            break
        g, start, end = want[idx]
        assert (state.cur_group_idx - 1, state.cur_start, state.cur_boundary) == (g, start, end), idx
        idx += rnd.choice([1, 1, 2, 3])


def test_contiguous_group_search_refuses_a_foreign_state():
    with pytest.raises(DSLTypeError, match="create_initial_contiguous_group_search_state"):
        mih().contiguous_group_search((128, 128, 64), 2, 0, (0, 0), [0, 1, 2], 1)


def test_transform_source_and_tma_ops():
    m = mih()
    assert m.get_transform_a_source(tcgen05.OperandMajorMode.K) == tcgen05.OperandSource.TMEM
    assert m.get_transform_a_source(tcgen05.OperandMajorMode.MN) == tcgen05.OperandSource.SMEM
    # only B is loaded for the CTA pair of a 2-CTA MMA; multicast when the cluster shares the operand
    assert m.get_tma_atom_kind(True, True, True) == cpasync.CopyBulkTensorTileG2SMulticastOp(tcgen05.CtaGroup.TWO)
    assert m.get_tma_atom_kind(False, True, False) == cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)
    assert m.get_tma_atom_kind(False, False, True) == cpasync.CopyBulkTensorTileG2SOp(tcgen05.CtaGroup.ONE)


def test_problem_checks():
    m = mih()
    assert m.is_valid_scale_granularity(0, 0, cutlass.Int8, 256, 128)
    assert not m.is_valid_scale_granularity(1, 128, cutlass.Int8, 256, 128)     # 8-bit A has no scales
    assert m.is_valid_scale_granularity(1, 256, cutlass.Int4, 512, 128)
    assert not m.is_valid_scale_granularity(1, 64, cutlass.Int4, 512, 128)      # a tile would straddle two scales
    assert not m.is_valid_scale_granularity(2, 256, cutlass.Int4, 512, 128)
    assert m.is_valid_mma_tiler_and_cluster_shape((256, 128, 64), (2, 1), True)
    assert not m.is_valid_mma_tiler_and_cluster_shape((256, 128, 64), (1, 1), True)
    assert not m.is_valid_mma_tiler_and_cluster_shape((96, 128, 64), (1, 1), False)
    args = (cutlass.Int4, cutlass.BFloat16, cutlass.BFloat16, cutlass.BFloat16, "m", "k", "n", (128, 128, 128), False,
            (1, 1), 1, 128)
    assert m.is_valid_tensor_alignment(128, 128, 256, *args)
    assert not m.is_valid_tensor_alignment(100, 128, 256, *args)   # 100 int4 along M: not whole 16-byte rows
    assert m.is_shuffle_a("k", 256, cutlass.Int4, cutlass.BFloat16, 128)
    assert not m.is_shuffle_a("m", 256, cutlass.Int4, cutlass.BFloat16, 128)
    assert [m.get_divisibility(n) for n in (1, 6, 96, 1024)] == [1, 2, 32, 128]


def test_transform_modes_and_a_refused_shuffle():
    m = mih()
    assert {x.name for x in m.TransformMode} == {"ConvertOnly", "ConvertScale"}
    with pytest.raises(DSLValueError, match="shuffle"):
        m.cvt_tensor_a(None, cutlass.BFloat16, True)


@pytest.mark.parametrize("gm,gk,tile_k,major", [(1, 128, 128, "MN"), (1, 64, 128, "MN"), (1, 128, 128, "K"),
                                                (2, 256, 128, "MN")])
def test_tma_of_a_scale_tensor_reads_its_leaves(gm, gk, tile_k, major):
    # make_tiled_tma_atom_A of a tensor indexed by A's elements whose modes have stride-0 parts (one scale per
    # block) builds its atom over the modes' leaves: the same memory function, a tile that takes one of each
    # repeated leaf, and a shared-memory image that gives each element of the tile the stage's offset
    from warpweave.backends.blackwell import tma as btma
    M, K, L, tile_m = 256, 512, 2, 128
    m_major = major == "MN"
    mode = tcgen05.OperandMajorMode.MN if m_major else tcgen05.OperandMajorMode.K
    g_layout = mih().get_gmem_layout_scale((M, K, L), gm, gk, mode)
    ptr = cute.make_ptr(cutlass.BFloat16, 0x10000, cute.AddressSpace.gmem, assumed_align=16)
    gmem = cute.make_tensor(ptr, g_layout)
    _, one, _ = mih().get_smem_layout_scale((tile_m, 128, tile_k), False, gm, gk, mode, cutlass.BFloat16, 2)
    flat, smem, tile = btma._by_leaves(gmem, one, (tile_m, tile_k), "A")

    def leaves(m, k, l):
        return (m % gm, m // gm, k % gk, k // gk, l)

    for m, k, l in itertools.product(range(0, M, 7), range(0, K, 5), range(L)):
        assert flat.layout(leaves(m, k, l)) == g_layout((m, k, l)), (m, k, l)
    bm, bk = min(gm, tile_m), min(gk, tile_k)
    assert tile == (1, tile_m // bm, 1, tile_k // bk, 1)
    for m, k in itertools.product(range(tile_m), range(tile_k)):
        _, m1, _, k1, _ = leaves(m, k, 0)
        assert smem.outer((0, m1, 0, k1, 0)) == one.outer((m, k)), (m, k)
