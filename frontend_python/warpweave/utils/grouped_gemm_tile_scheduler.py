"""The tile scheduling of a grouped GEMM (CuTe DSL's utils.GroupedGemmTileSchedulerHelper,
create_initial_search_state, StaticPersistentGroupTileScheduler): G problems (M_g, N_g, K_g, L_g), each cut into
cluster tiles of cluster_tile_shape_mnk, walked by a static persistent scheduler as one list of clusters: group 0's
cluster tiles first, then group 1's, and so on.

The persistent scheduler's problem is (cm, cn, total clusters) in CTA tiles, so a CTA's work tile is (its place in
the cluster along M, along N, the linear cluster index z). delinearize_z finds the group z falls in and the
cluster tile inside it (M fastest), and gives a GroupSearchResult: the group, this CTA's tile (m, n) in the
group's problem, the group's M, N, K and its count of K tiles. A CTA's z only grows, so the search resumes where the
last one ended (the search state: the group reached and the clusters of the groups before it).

Nothing here is specific to a GPU generation. The problem sizes are a (G, 4) tensor of Int32 in a kernel, or a
Python sequence of (M, N, K, L) outside one, where the walk can be checked on integers.
"""
from __future__ import annotations

import dataclasses

from .._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from .._dsl.tracing.functional import while_generate, yield_out
from .._dsl.values.numeric import Boolean, Int32, Numeric
from .static_persistent_tile_scheduler import PersistentTileSchedulerParams, StaticPersistentTileScheduler
from .tile_scheduler_values import ceil_div, is_dynamic, static_int


@dataclasses.dataclass
class GroupSearchState:
    """Where a search over the groups resumes: the group reached and the clusters of all groups before it."""
    start_group_idx: object
    tile_count_prev_group: object


def create_initial_search_state(*, loc=None, ip=None) -> GroupSearchState:
    """The search state before the first search: group 0, no clusters before it."""
    return GroupSearchState(Int32(0), Int32(0))


@dataclasses.dataclass
class GroupSearchResult:
    """The group of a work tile and this CTA's tile in it (in CTA tiles), with the group's problem extents and its
    count of K tiles."""
    group_idx: object
    cta_tile_idx_m: object
    cta_tile_idx_n: object
    problem_shape_m: object
    problem_shape_n: object
    problem_shape_k: object
    cta_tile_count_k: object


def _sizes_of(problem_sizes_mnkl, group):
    """(M, N, K) of `group`: from a (G, 4) tensor, or a Python sequence of (M, N, K, L)."""
    if hasattr(problem_sizes_mnkl, "layout"):
        return tuple(problem_sizes_mnkl[(group, i)] for i in range(3))
    return tuple(problem_sizes_mnkl[group][:3])


class GroupedGemmTileSchedulerHelper:
    """Maps a persistent scheduler's work tiles onto the groups (see the module's description)."""

    def __init__(self, group_count, tile_sched_params: PersistentTileSchedulerParams, cluster_tile_shape_mnk,
                 search_state: GroupSearchState, *, loc=None, ip=None):
        if not isinstance(tile_sched_params, PersistentTileSchedulerParams):
            raise DSLTypeError(f"GroupedGemmTileSchedulerHelper: expected PersistentTileSchedulerParams, got "
                               f"{tile_sched_params!r}", user_location(2))
        shape = tuple(cluster_tile_shape_mnk)
        if len(shape) != 3 or any(static_int(s) is None or static_int(s) < 1 for s in shape):
            raise DSLValueError(f"GroupedGemmTileSchedulerHelper: cluster_tile_shape_mnk is three static positive "
                                f"integers, got {cluster_tile_shape_mnk!r}", user_location(2))
        if not isinstance(search_state, GroupSearchState):
            raise DSLTypeError(f"GroupedGemmTileSchedulerHelper: search_state comes from "
                               f"create_initial_search_state(), got {search_state!r}", user_location(2))
        self.group_count = group_count
        self.params = tile_sched_params
        self.cluster_tile_shape_mnk = tuple(static_int(s) for s in shape)
        self.search_state = search_state

    def _cluster_count(self, sizes):
        m, n, _ = sizes
        return ceil_div(m, self.cluster_tile_shape_mnk[0]) * ceil_div(n, self.cluster_tile_shape_mnk[1])

    def delinearize_z(self, cta_tile_idx_mnl, problem_shape_mnkl, *, loc=None, ip=None) -> GroupSearchResult:
        """The group and tile of the work tile (this CTA's place in its cluster along M and N, the linear cluster
        index z); the search state moves to the group found."""
        cta_m, cta_n, z = tuple(cta_tile_idx_mnl)
        group, prev = self.search_state.start_group_idx, self.search_state.tile_count_prev_group
        last = self.group_count - 1
        if not any(is_dynamic(v) for v in (z, group, prev, last)) and not hasattr(problem_shape_mnkl, "layout"):
            z, group, prev, last = (static_int(v) for v in (z, group, prev, last))
            while group < last and z >= prev + self._cluster_count(_sizes_of(problem_shape_mnkl, group)):
                prev += self._cluster_count(_sizes_of(problem_shape_mnkl, group))
                group += 1
        else:
            z = Int32(z)

            def beyond(g, p):
                # z lies past group g (the last group takes whatever is left)
                return Boolean(g < last) & (z >= p + self._cluster_count(_sizes_of(problem_shape_mnkl, g)))

            loop = while_generate([Int32(group), Int32(prev)], beyond)
            with loop as (g, p):
                yield_out([g + 1, p + self._cluster_count(_sizes_of(problem_shape_mnkl, g))])
            group, prev = loop.results
        self.search_state = GroupSearchState(group, prev)
        m, n, k = _sizes_of(problem_shape_mnkl, group)
        ctm, ctn, ctk = self.cluster_tile_shape_mnk
        local = z - prev
        clusters_m = ceil_div(m, ctm)
        cluster_n = local // clusters_m
        cluster_m = local - cluster_n * clusters_m
        cm, cn, _ = self.params.cluster_shape_mnk
        return GroupSearchResult(group, cluster_m * cm + cta_m, cluster_n * cn + cta_n, m, n, k, ceil_div(k, ctk))

    # carried through dynamic control flow: the search state
    def _ww_carry_get(self):
        return [self.search_state.start_group_idx, self.search_state.tile_count_prev_group]

    def _ww_carry_set(self, values):
        self.search_state = GroupSearchState(*values)

    def __extract_mlir_values__(self):
        return [Int32(v).ir_value() for v in self._ww_carry_get()]

    def __new_from_mlir_values__(self, values):
        out = GroupedGemmTileSchedulerHelper.__new__(GroupedGemmTileSchedulerHelper)
        out.__dict__.update(self.__dict__)
        out.search_state = GroupSearchState(Int32(values[0]), Int32(values[1]))
        return out


@dataclasses.dataclass
class GroupedWorkTileInfo:
    """A CTA's work: whether it is work, its tile of the persistent walk (place in the cluster, cluster index) and
    the group's tile it stands for."""
    is_valid_tile: object
    tile_idx: tuple
    group_search_result: GroupSearchResult


class StaticPersistentGroupTileScheduler:
    """A static persistent scheduler over the clusters of all groups, each work tile delinearized into its group's
    tile (see the module's description). create() takes the persistent scheduler's params over (cm, cn, total
    clusters), the launch indices, the cluster tile, a search state, the group count and the (G, 4) problem
    sizes."""

    def __init__(self, tile_sched: StaticPersistentTileScheduler, helper: GroupedGemmTileSchedulerHelper,
                 problem_sizes_mnkl):
        self._sched = tile_sched
        self._helper = helper
        self._sizes = problem_sizes_mnkl

    @staticmethod
    def create(tile_sched_params, block_idx, grid_dim, cluster_tile_shape_mnk, search_state, group_count,
               problem_sizes_mnkl, *, loc=None, ip=None) -> "StaticPersistentGroupTileScheduler":
        sched = StaticPersistentTileScheduler.create(tile_sched_params, block_idx, grid_dim)
        helper = GroupedGemmTileSchedulerHelper(group_count, tile_sched_params, cluster_tile_shape_mnk, search_state)
        return StaticPersistentGroupTileScheduler(sched, helper, problem_sizes_mnkl)

    @staticmethod
    def get_grid_shape(tile_sched_params, max_active_clusters, *, loc=None, ip=None):
        return StaticPersistentTileScheduler.get_grid_shape(tile_sched_params, max_active_clusters)

    def get_current_work(self, *, loc=None, ip=None) -> GroupedWorkTileInfo:
        """This CTA's work tile and its group's tile. Past the end of the walk the group search is made for cluster
        0 (every group search ends there), so it stays within the groups; the result is then not work."""
        work = self._sched.get_current_work()
        m, n, z = work.tile_idx
        valid = work.is_valid_tile
        if isinstance(valid, bool):
            z_safe = z if valid else 0
        else:
            z_safe = Int32(z) * Int32(valid.to(Int32) if isinstance(valid, Numeric) else valid)
        gsr = self._helper.delinearize_z((m, n, z_safe), self._sizes)
        return GroupedWorkTileInfo(valid, (m, n, z), gsr)

    initial_work_tile_info = get_current_work

    def advance_to_next_work(self, advance_count: int = 1, *, loc=None, ip=None):
        self._sched.advance_to_next_work(advance_count)

    @property
    def num_tiles_executed(self):
        return self._sched.num_tiles_executed

    # carried through dynamic control flow: the walk's position and the search state
    def _ww_carry_get(self):
        return self._sched._ww_carry_get() + self._helper._ww_carry_get()

    def _ww_carry_set(self, values):
        n = len(self._sched._ww_carry_get())
        self._sched._ww_carry_set(list(values[:n]))
        self._helper._ww_carry_set(list(values[n:]))
