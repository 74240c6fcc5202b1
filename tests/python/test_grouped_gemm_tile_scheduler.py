"""utils.GroupedGemmTileSchedulerHelper / create_initial_search_state / StaticPersistentGroupTileScheduler: the
clusters of G problems walked as one list. On Python integers (outside a kernel): every CTA tile of every group is
the work of exactly one (cluster index, place in the cluster), in order of groups, whatever the cluster shape, and
a search resumes from where the last one stopped; in a kernel the search is a loop over the problem sizes read from
memory, carried through the persistent loop."""
import itertools
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

PROBLEMS = [(200, 130, 64, 1), (64, 64, 128, 1), (1, 300, 32, 1), (129, 1, 16, 1)]


def cluster_count(problems, cluster_tile):
    return sum(-(-m // cluster_tile[0]) * -(-n // cluster_tile[1]) for m, n, _, _ in problems)


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_every_cta_tile_of_every_group_is_visited_once_in_group_order(cluster):
    cta_tile = (64, 32, 32)
    cluster_tile = (cta_tile[0] * cluster[0], cta_tile[1] * cluster[1], cta_tile[2])
    total = cluster_count(PROBLEMS, cluster_tile)
    params = utils.PersistentTileSchedulerParams((cluster[0], cluster[1], total), (*cluster, 1))
    helper = utils.GroupedGemmTileSchedulerHelper(len(PROBLEMS), params, cluster_tile,
                                                  utils.create_initial_search_state())
    seen, groups = [], []
    for z in range(total):
        for cm, cn in itertools.product(range(cluster[0]), range(cluster[1])):
            r = helper.delinearize_z((cm, cn, z), PROBLEMS)
            m, n, k, _ = PROBLEMS[r.group_idx]
            assert (r.problem_shape_m, r.problem_shape_n, r.problem_shape_k) == (m, n, k)
            assert r.cta_tile_count_k == -(-k // cta_tile[2])
            seen.append((r.group_idx, r.cta_tile_idx_m, r.cta_tile_idx_n))
            groups.append(r.group_idx)
    assert groups == sorted(groups)                       # the search only moves forward
    want = [(g, tm, tn) for g, (m, n, _, _) in enumerate(PROBLEMS)
            for tm in range(-(-m // cluster_tile[0]) * cluster[0])
            for tn in range(-(-n // cluster_tile[1]) * cluster[1])]
    assert sorted(seen) == sorted(want)                   # each CTA tile (clusters may hang over the edge) once


def test_a_search_resumes_where_it_stopped():
    params = utils.PersistentTileSchedulerParams((1, 1, 100), (1, 1, 1))
    helper = utils.GroupedGemmTileSchedulerHelper(len(PROBLEMS), params, (64, 64, 32),
                                                  utils.create_initial_search_state())
    helper.delinearize_z((0, 0, 13), PROBLEMS)         # group 0 has 4 x 3 clusters, group 1 one
    assert helper.search_state.start_group_idx == 2
    assert helper.search_state.tile_count_prev_group == 4 * 3 + 1


def test_the_helper_checks_its_cluster_tile():
    params = utils.PersistentTileSchedulerParams((1, 1, 10), (1, 1, 1))
    with pytest.raises(ValueError, match="cluster_tile_shape_mnk"):
        utils.GroupedGemmTileSchedulerHelper(2, params, (64, 0, 32), utils.create_initial_search_state())


def make_host(cluster_tile, total):
    @cute.kernel
    def k(sizes: cute.Tensor, out: cute.Tensor):
        bid = cute.arch.block_idx()
        params = utils.PersistentTileSchedulerParams((1, 1, total), (1, 1, 1))
        sched = utils.StaticPersistentGroupTileScheduler.create(
            params, bid, cute.arch.grid_dim(), cluster_tile, utils.create_initial_search_state(),
            len(PROBLEMS), sizes)
        work = sched.initial_work_tile_info()
        while work.is_valid_tile:
            z = work.tile_idx[2]
            r = work.group_search_result
            out[z, 0] = r.group_idx
            out[z, 1] = r.cta_tile_idx_m
            out[z, 2] = r.cta_tile_idx_n
            out[z, 3] = r.cta_tile_count_k
            sched.advance_to_next_work()
            work = sched.get_current_work()

    @cute.jit
    def host(sizes: cute.Tensor, out: cute.Tensor):
        k(sizes, out).launch(grid=(1, 1, 3), block=(1, 1, 1))

    return host


def test_the_scheduler_compiles_its_search_into_a_loop():
    cluster_tile = (64, 64, 32)
    total = cluster_count(PROBLEMS, cluster_tile)
    sizes = from_dlpack(np.array(PROBLEMS, dtype=np.int32))
    with target("sm_90a"):
        ptx = cute.compile(make_host(cluster_tile, total), sizes, from_dlpack(np.zeros((total, 4), np.int32))).info[
            "ptx"]
    assert ptx.count("ld.global") >= 2                    # the problem sizes are read in the kernel


@requires_gpu
def test_the_scheduler_walks_the_groups_on_the_gpu():
    import torch

    cluster_tile = (64, 64, 32)
    total = cluster_count(PROBLEMS, cluster_tile)
    sizes = torch.tensor(PROBLEMS, dtype=torch.int32, device="cuda")
    out = torch.full((total, 4), -1, dtype=torch.int32, device="cuda")
    make_host(cluster_tile, total)(from_dlpack(sizes), from_dlpack(out))
    torch.cuda.synchronize()
    params = utils.PersistentTileSchedulerParams((1, 1, total), (1, 1, 1))
    helper = utils.GroupedGemmTileSchedulerHelper(len(PROBLEMS), params, cluster_tile,
                                                  utils.create_initial_search_state())
    for z in range(total):
        r = helper.delinearize_z((0, 0, z), PROBLEMS)
        assert out[z].tolist() == [r.group_idx, r.cta_tile_idx_m, r.cta_tile_idx_n, r.cta_tile_count_k]


# --- a program's own scheduler wrapping utils.StaticPersistentTileScheduler (CuTe DSL's Hopper grouped GEMM) --------
# Its protocol extracts the wrapped scheduler's values; the persistent while loop must carry them, or every trip
# would see the first tile's successor and the loop would never end.

class _ProgramScheduler:
    def __init__(self, sched):
        self._sched = sched

    def __extract_mlir_values__(self):
        from warpweave.cutlass_dsl import extract_mlir_values
        return extract_mlir_values(self._sched)

    def __new_from_mlir_values__(self, values):
        from warpweave.cutlass_dsl import new_from_mlir_values
        return _ProgramScheduler(new_from_mlir_values(self._sched, values))

    def advance_to_next_work(self):
        self._sched.advance_to_next_work()

    def get_current_work(self):
        return self._sched.get_current_work()


@cute.kernel
def _walk_tiles(out: cute.Tensor):
    params = utils.PersistentTileSchedulerParams((1, 1, 7), (1, 1, 1))
    sched = _ProgramScheduler(utils.StaticPersistentTileScheduler.create(params, cute.arch.block_idx(),
                                                                        cute.arch.grid_dim()))
    work = sched.get_current_work()
    while work.is_valid_tile:
        out[work.tile_idx[2]] = cutlass.Float32(1.0)
        sched.advance_to_next_work()
        work = sched.get_current_work()
    out[31] = cutlass.Float32(sched._sched.num_tiles_executed)


@cute.jit
def _walk_tiles_host(out: cute.Tensor):
    _walk_tiles(out).launch(grid=(1, 1, 2), block=(1, 1, 1))


def test_a_programs_scheduler_wrapping_the_library_one_walks_on_in_its_loop():
    from warpweave.cutlass_dsl import extract_mlir_values  # noqa: F401 - the protocol the wrapper uses
    with target("sm_90a"):
        c = cute.compile(_walk_tiles_host, from_dlpack(np.zeros(32, np.float32)))
    # the count of tiles stored after the loop is the loop's result (a register), not the one advance it traced
    assert re.search(r"st\.global\.(?:b32|f32) \t\[%rd\d+\+124\], %(?:r|f)\d+;", c.ptx), c.ptx


@requires_gpu
def test_a_programs_scheduler_wrapping_the_library_one_visits_every_tile():
    import torch
    out = torch.zeros(32, device="cuda")
    cute.compile(_walk_tiles_host, from_dlpack(out))(from_dlpack(out))
    torch.cuda.synchronize()
    assert out[:7].tolist() == [1.0] * 7 and out[7:31].sum().item() == 0
