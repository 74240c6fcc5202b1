"""utils.StaticPersistentTileScheduler and PersistentTileSchedulerParams (CuTe DSL's names).

On Python integers (the scheduler's own code, every CTA of the launch simulated): every output tile is visited
exactly once across all CTAs of the grid get_grid_shape gives, for many problem, cluster, swizzle, raster and
grid shapes; the CTAs of a cluster walk in step; tiles outside the problem are given only to the CTAs of clusters
that hang over its edge; the raster order and swizzle are the ones documented. In a kernel: the scheduler is
carried through a run-time while loop (work = sched.get_current_work() inside it) and compiles; on the GPU, a
kernel counts its visits of each tile with atomics (every count must be 1).
"""
import itertools
import random
from collections import Counter

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target
from host_stand_in import stand_in  # noqa: F401 (a fixture)


def walk(tiles_mnl, cluster_mn, swizzle, along_m, max_active):
    """Every CTA's sequence of (tile, iteration) on Python integers; returns the grid and {cta: [tiles]}."""
    params = utils.PersistentTileSchedulerParams(tiles_mnl, (*cluster_mn, 1), swizzle_size=swizzle,
                                                 raster_along_m=along_m)
    grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active)
    seen = {}
    for bx, by, bz in itertools.product(*(range(g) for g in grid)):
        sched = utils.StaticPersistentTileScheduler.create(params, (bx, by, bz), grid)
        work = sched.initial_work_tile_info()
        mine = []
        while work.is_valid_tile:
            mine.append(work.tile_idx)
            assert sched.num_tiles_executed == len(mine) - 1
            sched.advance_to_next_work()
            work = sched.get_current_work()
        seen[(bx, by, bz)] = mine
    return grid, seen


def check_exactly_once(tiles_mnl, cluster_mn, swizzle, along_m, max_active):
    tm, tn, tl = tiles_mnl
    cm, cn = cluster_mn
    grid, seen = walk(tiles_mnl, cluster_mn, swizzle, along_m, max_active)
    assert grid[:2] == (cm, cn) and 1 <= grid[2] <= max_active
    count = Counter(t for tiles in seen.values() for t in tiles)
    inside = {(m, n, l) for m in range(tm) for n in range(tn) for l in range(tl)}
    for t in inside:
        assert count[t] == 1, (t, count[t], tiles_mnl, cluster_mn, swizzle, along_m, max_active)
    # Outside the problem: only where the clusters hang over its edge, each such tile once.
    outside = set(count) - inside
    for m, n, l in outside:
        assert count[(m, n, l)] == 1
        assert 0 <= l < tl and 0 <= m < -(-tm // cm) * cm and 0 <= n < -(-tn // cn) * cn
        assert m >= tm or n >= tn
    # The CTAs of one cluster walk in step: the same number of tiles, their cluster coordinates equal.
    for bz in range(grid[2]):
        walks = [seen[(x, y, bz)] for x in range(cm) for y in range(cn)]
        assert len({len(w) for w in walks}) == 1
        for x, y in itertools.product(range(cm), range(cn)):
            for (m, n, l), (m0, n0, l0) in zip(seen[(x, y, bz)], seen[(0, 0, bz)]):
                assert (m - x, n - y, l) == (m0, n0, l0) and m % cm == x and n % cn == y
    # Work is spread evenly: the busiest cluster has at most one tile more than the least busy.
    per_cluster = [len(seen[(0, 0, bz)]) for bz in range(grid[2])]
    assert max(per_cluster) - min(per_cluster) <= 1


@pytest.mark.parametrize("cluster_mn", [(1, 1), (2, 1), (1, 2), (2, 2), (4, 1), (1, 4)])
@pytest.mark.parametrize("swizzle", [1, 2, 3, 8])
@pytest.mark.parametrize("along_m", [True, False])
def test_every_tile_exactly_once(cluster_mn, swizzle, along_m):
    rng = random.Random(hash((cluster_mn, swizzle, along_m)) & 0xFFFF)
    shapes = [(1, 1, 1), (7, 5, 1), (8, 8, 2), (13, 1, 3), (1, 17, 1), (5, 9, 2), (32, 16, 1)]
    shapes += [(rng.randint(1, 20), rng.randint(1, 20), rng.randint(1, 3)) for _ in range(4)]
    for shape in shapes:
        for max_active in (1, 3, 7, 132, 10000):
            check_exactly_once(shape, cluster_mn, swizzle, along_m, max_active)


def test_empty_problem_has_no_work():
    grid, seen = walk((0, 5, 1), (1, 1), 1, True, 8)
    assert all(not w for w in seen.values())
    assert grid == (1, 1, 1)


def test_raster_order_and_swizzle():
    # Along M, no swizzle: consecutive clusters walk down M, then the next column of N.
    p = utils.PersistentTileSchedulerParams((4, 3, 2), (1, 1, 1))
    assert [p.cluster_coord(i) for i in range(6)] == [(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0), (0, 1, 0),
                                                      (1, 1, 0)]
    assert p.cluster_coord(12) == (0, 0, 1)                      # batches outermost
    # Along N: the roles swap.
    p = utils.PersistentTileSchedulerParams((4, 3, 1), (1, 1, 1), raster_along_m=False)
    assert [p.cluster_coord(i) for i in range(4)] == [(0, 0, 0), (0, 1, 0), (0, 2, 0), (1, 0, 0)]
    # Swizzle 2 along M over 5 columns: bands of two columns (the last one of one), each walked row by row.
    p = utils.PersistentTileSchedulerParams((3, 5, 1), (1, 1, 1), swizzle_size=2)
    order = [p.cluster_coord(i)[:2] for i in range(15)]
    assert order[:6] == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert order[12:] == [(0, 4), (1, 4), (2, 4)]
    # In clusters: a 2x1 cluster over 5 tiles of M makes 3 clusters along M.
    p = utils.PersistentTileSchedulerParams((5, 2, 1), (2, 1, 1))
    assert p.problem_shape_ncluster_mnl == (3, 2, 1) and p.num_clusters == 6


def test_grid_shape():
    p = utils.PersistentTileSchedulerParams((10, 10, 1), (2, 1, 1))
    assert utils.StaticPersistentTileScheduler.get_grid_shape(p, 132) == (2, 1, 50)
    assert p.get_grid_shape(16) == (2, 1, 16)


def test_bad_parameters_are_refused():
    with pytest.raises(Exception, match="swizzle_size"):
        utils.PersistentTileSchedulerParams((4, 4, 1), (1, 1, 1), swizzle_size=0)
    with pytest.raises(Exception, match="cluster_shape_mnk"):
        utils.PersistentTileSchedulerParams((4, 4, 1), (1,))
    with pytest.raises(Exception, match=r"\(tiles_m, tiles_n, L\)"):
        utils.PersistentTileSchedulerParams((4, 4), (1, 1, 1))
    with pytest.raises(Exception, match="max_active_clusters"):
        utils.StaticPersistentTileScheduler.get_grid_shape(utils.PersistentTileSchedulerParams((4, 4, 1), (1, 1)), 0)


# --- in a kernel --------------------------------------------------------------------------------------------------

TILE = (16, 8)


@cute.kernel
def count_visits(gCount: cute.Tensor, params: utils.PersistentTileSchedulerParams):
    tidx, _, _ = cute.arch.thread_idx()
    sched = utils.StaticPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim())
    work = sched.initial_work_tile_info()
    while work.is_valid_tile:
        m, n, l = work.tile_idx
        if tidx == 0:
            if m < cute.size(gCount, mode=[0]):
                if n < cute.size(gCount, mode=[1]):
                    cute.arch.atomic_add(gCount.iterator + (m + n * cute.size(gCount, mode=[0]) + l *
                                                            cute.size(gCount, mode=[0]) * cute.size(gCount, mode=[1])),
                                         cutlass.Int32(1 + 1000 * sched.num_tiles_executed))
        sched.advance_to_next_work()
        work = sched.get_current_work()


def make_launcher(cluster_mn, swizzle, along_m, max_active):
    @cute.jit
    def launch(mC: cute.Tensor, gCount: cute.Tensor):
        tiles = cute.ceil_div(mC.shape, (*TILE, 1))
        params = utils.PersistentTileSchedulerParams(tiles, (*cluster_mn, 1), swizzle_size=swizzle,
                                                     raster_along_m=along_m)
        grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active)
        count_visits(gCount, params).launch(grid=grid, block=[32, 1, 1], cluster=[*cluster_mn, 1])

    return launch


def _tensors(shape, tiles, device=None):
    import torch

    c = torch.zeros(shape, dtype=torch.float16, device=device)
    count = torch.zeros(tiles[::-1], dtype=torch.int32, device=device).permute(2, 1, 0)
    return c, count


def test_scheduler_loop_compiles_with_dynamic_shapes():
    from warpweave.cute.runtime import make_fake_tensor

    launch = make_launcher((2, 1), 2, True, 8)
    mC = make_fake_tensor(cutlass.Float16, (100, 60, 2), (1, 100, 6000)).mark_layout_dynamic(leading_dim=0)
    cnt = make_fake_tensor(cutlass.Int32, (7, 8, 2), (1, 7, 56)).mark_layout_dynamic(leading_dim=0)
    with target("sm_90a"):
        compiled = cute.compile(launch, mC, cnt)
    ptx = compiled.info["ptx"]
    assert "atom.global.add" in ptx or "red.global.add" in ptx
    assert "%nctaid.z" in ptx and "%ctaid.z" in ptx


@pytest.mark.parametrize("shape,cluster_mn,max_active", [((100, 60, 2), (2, 1), 8), ((20, 9, 1), (2, 1), 8),
                                                         ((16, 8, 1), (1, 1), 132), ((300, 200, 1), (1, 2), 16)])
def test_grid_of_run_time_shapes_holds_no_clusters_without_work(stand_in, shape, cluster_mn, max_active):
    # With the tile counts known only at run time, each call launches min(work, max_active_clusters) clusters
    # (at least one), on the native path and the Python one alike: a small problem starts no idle CTAs.
    launch = make_launcher(cluster_mn, 1, True, max_active)
    tiles = tuple(-(-s // t) for s, t in zip(shape, (*TILE, 1)))
    c = np.zeros(shape[::-1], np.float16).transpose(2, 1, 0)
    count = np.zeros(tiles[::-1], np.int32).transpose(2, 1, 0)
    # (a count of one tile has strides (1, 1, 1): its leading dimension is named, as CuTe DSL asks)
    args = (from_dlpack(c).mark_layout_dynamic(), from_dlpack(count).mark_layout_dynamic(leading_dim=0))
    with target("sm_90a"):
        compiled = stand_in(cute.compile(launch, *args))
    clusters = (-(-tiles[0] // cluster_mn[0])) * (-(-tiles[1] // cluster_mn[1])) * tiles[2]
    want = (*cluster_mn, max(1, min(clusters, max_active)))
    compiled(*args)  # the first call takes the Python path and builds the native one
    assert [tuple(l[1]) for l in compiled.prepare(*args)] == [want]
    native = compiled._native.packed(*args)
    assert native is not None, "the native path left the call to Python"
    assert [tuple(g) for g, _, _ in native] == [want]


@pytest.mark.parametrize("swizzle", [1, 2])
def test_scheduler_walk_divides_unsigned(swizzle):
    # The linear work index and the extents are never negative: the walk's quotients are unsigned divisions. A
    # signed floor division (a divide plus sign corrections) in each role's tile loop took the registers that made
    # a warp-specialised GEMM's epilogue role spill its work index to local memory.
    import re

    from warpweave.cute.runtime import make_fake_tensor

    launch = make_launcher((1, 1), swizzle, True, 8)
    mC = make_fake_tensor(cutlass.Float16, (100, 60, 2), (1, 100, 6000)).mark_layout_dynamic(leading_dim=0)
    cnt = make_fake_tensor(cutlass.Int32, (7, 8, 2), (1, 7, 56)).mark_layout_dynamic(leading_dim=0)
    with target("sm_90a"):
        ptx = cute.compile(launch, mC, cnt).info["ptx"]
    # unsigned: a division, or a host-made fast divisor's multiply (where the tile counts are run-time values)
    assert re.search(r"\b(div|rem)\.u32|\bmul\.(hi|wide)\.u32|\bmul\.lo\.[su]64", ptx)
    assert not re.search(r"\b(div|rem)\.s32", ptx), "a signed division in the scheduler's walk"


@requires_gpu
@pytest.mark.parametrize("cluster_mn,swizzle,along_m,max_active", [((1, 1), 1, True, 132), ((2, 1), 2, True, 5),
                                                                    ((1, 2), 3, False, 7), ((2, 2), 1, False, 16)])
def test_every_tile_visited_once_on_the_gpu(cluster_mn, swizzle, along_m, max_active):
    import torch

    shape = (200, 136, 3)
    tiles = tuple(-(-s // t) for s, t in zip(shape, (*TILE, 1)))
    c, count = _tensors(shape, tiles, "cuda")
    launch = make_launcher(cluster_mn, swizzle, along_m, max_active)
    mC = from_dlpack(c).mark_layout_dynamic()
    mCount = from_dlpack(count).mark_layout_dynamic()
    cute.compile(launch, mC, mCount)(mC, mCount)
    torch.cuda.synchronize()
    got = count.cpu().numpy()
    assert (got % 1000 == 1).all(), np.argwhere(got % 1000 != 1)[:5]
    # The iteration each tile was visited in (the count's thousands) matches the Python walk of the scheduler.
    _, seen = walk(tiles, cluster_mn, swizzle, along_m, max_active)
    for tiles_of_cta in seen.values():
        for it, (m, n, l) in enumerate(tiles_of_cta):
            if m < tiles[0] and n < tiles[1]:
                assert got[m, n, l] // 1000 == it


@pytest.mark.parametrize("inner_mode,cluster_mn", [(0, (1, 1)), (1, (1, 1)), (0, (2, 1)), (1, (1, 2))])
def test_runtime_scheduler_walks_clusters_inner_mode_first_without_end(inner_mode, cluster_mn):
    # (5, 4) CTA tiles in clusters of cluster_mn; a grid of 3 persistent clusters. Each cluster's k-th work is the
    # linear index bz + 3 k over clusters, the inner mode fastest and the other mode unbounded, always valid; a
    # CTA's tile is its cluster's times the cluster shape plus its place in it.
    params = utils.PersistentTileSchedulerParams((5, 4, 1), (*cluster_mn, 1))
    cm_count, cn_count = -(-5 // cluster_mn[0]), -(-4 // cluster_mn[1])
    inner = cm_count if inner_mode == 0 else cn_count
    grid = (cluster_mn[0], cluster_mn[1], 3)
    for bx, by, bz in itertools.product(*(range(g) for g in grid)):
        sched = utils.StaticPersistentRuntimeTileScheduler.create(params, (bx, by, bz), grid, inner_mode=inner_mode)
        work = sched.initial_work_tile_info()
        for k in range(12):
            linear = bz + 3 * k
            fast, slow = linear % inner, linear // inner
            cl_m, cl_n = (fast, slow) if inner_mode == 0 else (slow, fast)
            assert work.is_valid_tile
            assert tuple(work.tile_idx) == (cl_m * cluster_mn[0] + bx, cl_n * cluster_mn[1] + by, 0), (bz, k)
            sched.advance_to_next_work()
            work = sched.get_current_work()


def test_runtime_scheduler_refuses_another_inner_mode():
    params = utils.PersistentTileSchedulerParams((5, 4, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="inner_mode"):
        utils.StaticPersistentRuntimeTileScheduler.create(params, (0, 0, 0), (1, 1, 1), inner_mode=2)


def test_dynamic_walk_divides_by_the_host_made_divisors():
    """Tile counts known only at run time: the host program makes the walk's divisors (a multiplier and the divisor,
    one 64-bit parameter each), so the kernel divides a work index with a multiply-high and a shift, values the same
    for the whole launch, and has no division instruction (its reciprocal and fix-ups held vector registers across a
    persistent GEMM's tile loop)."""
    import re
    from warpweave.cute.runtime import make_fake_tensor

    launch = make_launcher((2, 1), 1, True, 8)
    mC = make_fake_tensor(cutlass.Float16, (100, 60, 2), (1, 100, 6000)).mark_layout_dynamic(leading_dim=0)
    cnt = make_fake_tensor(cutlass.Int32, (7, 8, 2), (1, 7, 56)).mark_layout_dynamic(leading_dim=0)
    with target("sm_90a"):
        ptx = cute.compile(launch, mC, cnt).info["ptx"]
    assert not re.search(r"\b(div|rem)\.[su]32\b", ptx), re.findall(r"\b(?:div|rem)\.[su]32\b.*", ptx)[:4]
    # the two divisors (clusters per batch, per band) are 64-bit parameters, their multipliers in the high halves
    params = re.findall(r"\.param \.u64 (\w+)", ptx)
    high = [p for p in params
            if re.search(r"ld\.param\.b64 \t(%rd\d+), \[" + p + r"\];\n(?:.*\n)*?\tshr\.u64 \t%rd\d+, \1, 32;", ptx)]
    assert len(high) == 2, params
