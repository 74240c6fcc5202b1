"""A static persistent tile scheduler (CuTe DSL's utils.StaticPersistentTileScheduler): a grid of persistent
clusters walks the output tiles of a GEMM-like problem, each cluster starting at its own index and striding by the
number of clusters launched, so every output tile is visited by exactly one cluster.

    params = utils.PersistentTileSchedulerParams((tiles_m, tiles_n, L), (cm, cn, 1), swizzle_size=1,
                                                 raster_along_m=True)
    grid = utils.StaticPersistentTileScheduler.get_grid_shape(params, max_active_clusters)   # (cm, cn, clusters)
    ...
    # in the kernel
    sched = utils.StaticPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim())
    work = sched.initial_work_tile_info()
    while work.is_valid_tile:
        m, n, l = work.tile_idx            # this CTA's output tile, in tiles
        ...
        sched.advance_to_next_work()
        work = sched.get_current_work()

The order of the walk (a cluster's linear work index -> its cluster coordinate (m, n, l) in the problem):
batches of L outermost; inside a batch, bands of `swizzle_size` clusters across the minor mode (N when rastering
along M, M otherwise), walked band after band; inside a band, the major mode steps once every `width` indices and
the minor one fastest, so consecutive clusters share the operand of their band's columns (rows) and reuse each
tile of the other operand `swizzle_size` times while it is in L2. The last band of a batch may be narrower than
`swizzle_size`; it is walked the same way over its own width, so no index names a cluster outside the problem.
A CTA's tile is its cluster's coordinate times the cluster shape plus its place in the cluster; when the problem
is not a multiple of the cluster shape, the CTAs of the last clusters that fall outside it are given their
(out-of-range) tiles all the same, as the cluster's CTAs work in step (TMA loads of them read zeros, stores write
nothing).

Nothing here is specific to a GPU generation: the scheduler is integer arithmetic on the launch indices. It works
on Python integers as well as on kernel values, so its walk can be checked outside a kernel. In a dynamic loop, the
WorkTileInfo a scheduler returns is the scheduler's own object, updated in place (initial_work_tile_info,
get_current_work), so that `work = sched.get_current_work()` inside a run-time loop is carried with the scheduler.
"""
from __future__ import annotations

import copy

from .._dsl.base import trace
from .._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from .._dsl.device.fast_divmod import FastDivmodDivisor
from .._dsl.device.math import max as dsl_max
from .._dsl.values.numeric import Boolean, Int32, Numeric
from .tile_scheduler_values import ceil_div, index_div, is_dynamic, smaller, static_int


class PersistentTileSchedulerParams:
    """The problem in CTA tiles (tiles_m, tiles_n, L), the cluster shape (cm, cn, 1), the swizzle (in clusters) and
    the raster order: what a StaticPersistentTileScheduler needs. The tile counts may be run-time values (from a
    tensor's dynamic shape); the rest is static."""

    def __init__(self, problem_shape_ntile_mnl, cluster_shape_mnk, swizzle_size: int = 1,
                 raster_along_m: bool = True, *, loc=None, ip=None):
        shape = tuple(problem_shape_ntile_mnl) if isinstance(problem_shape_ntile_mnl, (tuple, list)) else None
        if shape is None or len(shape) != 3:
            raise DSLValueError(f"PersistentTileSchedulerParams: problem_shape_ntile_mnl is (tiles_m, tiles_n, L), "
                                f"got {problem_shape_ntile_mnl!r}", user_location(2))
        cluster = tuple(cluster_shape_mnk) if isinstance(cluster_shape_mnk, (tuple, list)) else None
        if cluster is None or len(cluster) not in (2, 3) or any(static_int(c) is None for c in cluster):
            raise DSLValueError(f"PersistentTileSchedulerParams: cluster_shape_mnk is (cm, cn, 1) of static "
                                f"integers, got {cluster_shape_mnk!r}", user_location(2))
        cluster = tuple(static_int(c) for c in cluster) + ((1,) if len(cluster) == 2 else ())
        if cluster[0] < 1 or cluster[1] < 1 or cluster[2] != 1:
            raise DSLValueError(f"PersistentTileSchedulerParams: the cluster is (cm >= 1, cn >= 1, 1), got {cluster}",
                                user_location(2))
        swz = static_int(swizzle_size)
        if swz is None or swz < 1:
            raise DSLValueError(f"PersistentTileSchedulerParams: swizzle_size is a static integer >= 1, got "
                                f"{swizzle_size!r}", user_location(2))
        if not isinstance(raster_along_m, bool):
            raise DSLTypeError(f"PersistentTileSchedulerParams: raster_along_m is a Python bool, got "
                               f"{raster_along_m!r}", user_location(2))
        for what, v in zip("mnl", shape):
            s = static_int(v)
            if s is None and not is_dynamic(v):
                raise DSLTypeError(f"PersistentTileSchedulerParams: the tile count along {what} must be an integer, "
                                   f"got {v!r}", user_location(2))
            if s is not None and s < 0:
                raise DSLValueError(f"PersistentTileSchedulerParams: negative tile count {s} along {what}",
                                    user_location(2))
        self.problem_shape_ntile_mnl = tuple(static_int(v) if static_int(v) is not None else v for v in shape)
        self.cluster_shape_mnk = cluster
        self.swizzle_size = swz
        self.raster_along_m = raster_along_m
        tm, tn, tl = self.problem_shape_ntile_mnl
        # The problem in clusters (the last cluster along a mode may hang over the problem's edge).
        self.problem_shape_ncluster_mnl = (ceil_div(tm, cluster[0]), ceil_div(tn, cluster[1]), tl)
        self._divisors = self._fast_divisors()

    def _fast_divisors(self):
        """The run-time divisors of cluster_coord's walk, each as a FastDivmodDivisor made where the params are
        (the host program, at each call): the kernel then divides a work index with a multiply-high and a shift on
        values the same for the whole launch, which stay in uniform registers, instead of a division per tile
        (a reciprocal in vector registers: 4-7 registers above CuTe DSL's, whose params carry such divisors too).
        None where nothing is divided at run time, or the params are made in a kernel (making a divisor there
        costs a 64-bit division of its own)."""
        if not trace.on_host():
            return None
        cm_count, cn_count, _ = self.problem_shape_ncluster_mnl
        major = cm_count if self.raster_along_m else cn_count
        band = major if self.swizzle_size == 1 else self.swizzle_size * major
        out = {}
        for name, d in (("per_batch", cm_count * cn_count), ("band", band)):
            if is_dynamic(d):
                # an empty problem (a count of 0) has no valid work index to divide: 1 keeps the divisor valid
                out[name] = FastDivmodDivisor(dsl_max(d, 1))
        return out or None

    def _div(self, x, d, name):
        fast = (self._divisors or {}).get(name)
        return index_div(x, d) if fast is None or not is_dynamic(x) else x // fast

    @property
    def num_clusters(self):
        """Clusters of work in the whole problem (a run-time value when the tile counts are)."""
        m, n, l = self.problem_shape_ncluster_mnl
        return m * n * l

    def get_grid_shape(self, max_active_clusters: int):
        return StaticPersistentTileScheduler.get_grid_shape(self, max_active_clusters)

    def cluster_coord(self, linear):
        """The (m, n, l) coordinate, in clusters, of the cluster with linear work index `linear` (valid below
        num_clusters)."""
        cm_count, cn_count, _ = self.problem_shape_ncluster_mnl
        per_batch = cm_count * cn_count
        l = self._div(linear, per_batch, "per_batch")
        r = linear - l * per_batch
        major, minor = (cm_count, cn_count) if self.raster_along_m else (cn_count, cm_count)
        s = self.swizzle_size
        if s == 1:
            minor_i = self._div(r, major, "band")
            major_i = r - minor_i * major
        else:
            band = self._div(r, s * major, "band")
            within = r - band * (s * major)
            width = smaller(s, minor - band * s)       # the last band may be narrower
            major_i = index_div(within, width)
            minor_i = band * s + (within - major_i * width)
        return (major_i, minor_i, l) if self.raster_along_m else (minor_i, major_i, l)

    def __repr__(self):
        return (f"PersistentTileSchedulerParams(tiles {self.problem_shape_ntile_mnl}, cluster "
                f"{self.cluster_shape_mnk}, swizzle {self.swizzle_size}, "
                f"raster along {'m' if self.raster_along_m else 'n'})")


def _leaves(t):
    return [x for c in t for x in _leaves(c)] if isinstance(t, tuple) else [t]


def _refill(t, it):
    return tuple(_refill(c, it) for c in t) if isinstance(t, tuple) else next(it)


class WorkTileInfo:
    """A CTA's output tile (tile_idx = (m, n, l), in tiles) and whether it is work (is_valid_tile)."""

    def __init__(self, tile_idx, is_valid_tile):
        self._tile_idx = tuple(tile_idx)
        self._is_valid_tile = is_valid_tile

    @property
    def tile_idx(self):
        return self._tile_idx

    @property
    def is_valid_tile(self):
        return self._is_valid_tile

    # Carried through dynamic control flow: each coordinate (nested ones too, as a library's scheduler gives
    # (m, 0, (b, h)); a static one becomes an Int32 there) and the validity (a Python bool, as a non-persistent
    # scheduler gives for its one tile, becomes a Boolean there).
    def _ww_carry_get(self):
        valid = self._is_valid_tile
        return ([v if isinstance(v, Numeric) else Int32(v) for v in _leaves(self._tile_idx)] +
                [valid if isinstance(valid, Numeric) else Boolean(valid)])

    def _ww_carry_set(self, values):
        *idx, self._is_valid_tile = values
        it = iter(idx)
        self._tile_idx = _refill(self._tile_idx, it) if len(idx) == len(_leaves(self._tile_idx)) else tuple(idx)

    def __repr__(self):
        return f"WorkTileInfo(tile_idx={self._tile_idx}, is_valid_tile={self._is_valid_tile})"


class StaticPersistentTileScheduler:
    """The walk of one CTA through its cluster's work tiles (see the module's docstring)."""

    def __init__(self, params: PersistentTileSchedulerParams, start, stride, cta_coord_mn, dynamic: bool):
        self.params = params
        self._stride = stride
        self._cta_m, self._cta_n = cta_coord_mn
        self._dynamic = dynamic
        self._linear = start
        self._executed = self._int(0)
        self._work = WorkTileInfo((self._int(0),) * 3, self._bool(False))
        self._update()

    # --- host side ----------------------------------------------------------------------------------------------
    @staticmethod
    def get_grid_shape(params: PersistentTileSchedulerParams, max_active_clusters: int, *, loc=None, ip=None):
        """The launch grid (cm, cn, persistent clusters): as many clusters as there is work, at most
        max_active_clusters, and at least one. When the amount of work is only known at run time, so is the
        count: a small problem launches no clusters that would find no work."""
        if not isinstance(params, PersistentTileSchedulerParams):
            raise DSLTypeError(f"get_grid_shape: expected PersistentTileSchedulerParams, got {params!r}",
                               user_location(2))
        mac = static_int(max_active_clusters)
        if mac is None or mac < 1:
            raise DSLValueError(f"get_grid_shape: max_active_clusters is a static integer >= 1, got "
                                f"{max_active_clusters!r}", user_location(2))
        cm, cn, _ = params.cluster_shape_mnk
        total = params.num_clusters
        known = static_int(total)
        clusters = max(1, min(known, mac)) if known is not None else dsl_max(smaller(total, mac), 1)
        return (cm, cn, clusters)

    # --- device side --------------------------------------------------------------------------------------------
    @staticmethod
    def create(params: PersistentTileSchedulerParams, block_idx, grid_dim, *, loc=None, ip=None):
        """This CTA's scheduler, from its block index and the grid's shape (cute.arch.block_idx(),
        cute.arch.grid_dim()) of a launch with get_grid_shape's grid."""
        if not isinstance(params, PersistentTileSchedulerParams):
            raise DSLTypeError(f"StaticPersistentTileScheduler.create: expected PersistentTileSchedulerParams, got "
                               f"{params!r}", user_location(2))
        try:
            bx, by, bz = block_idx
            _, _, gz = grid_dim
        except (TypeError, ValueError):
            raise DSLTypeError("StaticPersistentTileScheduler.create: block_idx and grid_dim are (x, y, z) "
                               "triples", user_location(2)) from None
        cm, cn, _ = params.cluster_shape_mnk
        dynamic = any(is_dynamic(v) for v in (bx, by, bz, gz)) or any(
            is_dynamic(v) for v in params.problem_shape_ntile_mnl)
        conv = Int32 if dynamic else (lambda v: v)
        # The grid is (cm, cn, clusters): x and y place the CTA in its cluster, z is the cluster's first work.
        cta = (conv(bx) % cm if cm > 1 else conv(0), conv(by) % cn if cn > 1 else conv(0))
        return StaticPersistentTileScheduler(params, conv(bz), conv(gz), cta, dynamic)

    def _int(self, v):
        if self._dynamic:
            return Int32(v)
        return v

    def _bool(self, v):
        if self._dynamic:
            return Boolean(v)
        return bool(v)

    def _update(self):
        p = self.params
        valid = self._linear < p.num_clusters
        if isinstance(valid, bool) and not valid:
            # Past the end (on Python integers): no coordinate, and none of a problem without tiles to divide by.
            self._work._ww_carry_set([self._int(0)] * 3 + [False])
            return
        cl_m, cl_n, l = p.cluster_coord(self._linear)
        cm, cn, _ = p.cluster_shape_mnk
        tile = (cl_m * cm + self._cta_m, cl_n * cn + self._cta_n, l)
        self._work._ww_carry_set([self._int(t) for t in tile] + [self._bool(valid) if not self._dynamic else valid])

    def initial_work_tile_info(self, *, loc=None, ip=None) -> WorkTileInfo:
        return self._work

    def get_current_work(self, *, loc=None, ip=None) -> WorkTileInfo:
        return self._work

    def advance_to_next_work(self, advance_count: int = 1, *, loc=None, ip=None):
        """Moves to this cluster's next work tile (advance_count strides ahead)."""
        self._linear = self._linear + self._stride * advance_count
        self._executed = self._executed + 1
        self._update()

    @property
    def num_tiles_executed(self):
        """How many times this scheduler advanced (the tiles this CTA has finished, in a loop that advances once
        per tile)."""
        return self._executed

    # Carried through dynamic control flow: its position, its count and its work tile.
    def _ww_carry_get(self):
        return [self._linear, self._executed, *self._work._ww_carry_get()]

    def _ww_carry_set(self, values):
        self._linear, self._executed = values[0], values[1]
        self._work._ww_carry_set(list(values[2:]))

    # CuTe DSL's IR-values protocol, of the same values: a program's own scheduler that wraps this one (a grouped
    # GEMM's) is carried through its run-time loop by them, and walks on from trip to trip.
    def __extract_mlir_values__(self):
        return [_numeric(v).ir_value() for v in self._ww_carry_get()]

    def __new_from_mlir_values__(self, values):
        out = copy.copy(self)
        out._work = copy.copy(self._work)
        out._dynamic = True  # its position is a run-time value now
        out._ww_carry_set([type(_numeric(v))(x) for v, x in zip(self._ww_carry_get(), values)])
        return out

    def __repr__(self):
        return f"StaticPersistentTileScheduler({self.params}, linear={self._linear}, work={self._work})"


def _numeric(v):
    """A carried value as a DSL number: Python's bools and ints (a static walk's) as Boolean and Int32."""
    if isinstance(v, Numeric):
        return v
    return Boolean(v) if isinstance(v, bool) else Int32(v)


class StaticPersistentRuntimeTileScheduler(StaticPersistentTileScheduler):
    """A persistent walk whose extent the kernel finds out itself (CuTe DSL's StaticPersistentRuntimeTileScheduler):
    a grouped GEMM whose group sizes live in device memory. The linear work index walks the clusters of the
    problem's `inner_mode` (0: M, 1: N) fastest and the other mode without bound, so each work tile is valid and
    the kernel stops when its own search runs out of groups; the batch coordinate is 0."""

    def __init__(self, params, start, stride, cta_coord_mn, dynamic: bool, inner_mode: int = 1):
        self.inner_mode = inner_mode
        super().__init__(params, start, stride, cta_coord_mn, dynamic)

    @staticmethod
    def create(params: PersistentTileSchedulerParams, block_idx, grid_dim, inner_mode: int = 1, *, loc=None,
               ip=None):
        """This CTA's scheduler (see StaticPersistentTileScheduler.create); inner_mode: the mode walked fastest."""
        if inner_mode not in (0, 1):
            raise DSLValueError(f"StaticPersistentRuntimeTileScheduler.create: inner_mode is 0 (M) or 1 (N), got "
                                f"{inner_mode!r}", user_location(2))
        base = StaticPersistentTileScheduler.create(params, block_idx, grid_dim)
        return StaticPersistentRuntimeTileScheduler(params, base._linear, base._stride, (base._cta_m, base._cta_n),
                                                    base._dynamic, inner_mode)

    def _update(self):
        p = self.params
        cm_count, cn_count, _ = p.problem_shape_ncluster_mnl
        inner = cn_count if self.inner_mode == 1 else cm_count
        outer_i = index_div(self._linear, inner)
        inner_i = self._linear - outer_i * inner
        cl_m, cl_n = (outer_i, inner_i) if self.inner_mode == 1 else (inner_i, outer_i)
        cm, cn, _ = p.cluster_shape_mnk
        tile = (cl_m * cm + self._cta_m, cl_n * cn + self._cta_n, 0)
        self._work._ww_carry_set([self._int(t) for t in tile] + [self._bool(True)])
