"""A dynamic persistent tile scheduler (CuTe DSL's utils.ClcDynamicPersistentTileScheduler): the grid holds one
cluster per cluster of output tiles, and a running cluster takes over the work of clusters that have not started
yet by cancelling their launch (cluster launch control), so that clusters that finish early do more tiles and a
GPU partly taken by other work still balances the load.

    params = utils.ClcDynamicPersistentTileSchedulerParams((tiles_m, tiles_n, L), (cm, cn, 1))  # swizzle 1, along M
    grid = utils.ClcDynamicPersistentTileScheduler.get_grid_shape(params)     # (tiles_m, tiles_n, L), rounded up
    ...                                                                       # to whole clusters
    # in the kernel; response: 16 bytes of shared memory, a PipelineClcFetchAsync `clc` around it
    sched = utils.ClcDynamicPersistentTileScheduler.create(params, cute.arch.block_idx(), cute.arch.grid_dim(),
                                                          response)
    work = sched.initial_work_tile_info()          # this CTA's own tile: its block index
    # the scheduler warp of the cluster's first CTA:     every warp that walks the tiles:
    #   clc.producer_acquire(p)                          clc.consumer_wait(c)
    #   sched.advance_to_next_work(clc.producer_get_barrier(p))   work = sched.get_current_work()
    #                                                    clc.consumer_release(c)

The walk: a CTA's first tile is its block index (x -> M, y -> N, z -> L, in CTA tiles); every next one is the block
index of the same CTA of a canceled cluster, i.e. the canceled cluster's first CTA id plus this CTA's place in its
cluster (in a kernel, %cluster_ctaid: a launch cluster that also spans z works too). When no cluster is left to cancel, the response says so and the tile is not valid: the loops end. Tiles are
handed out in the order the hardware would have launched the canceled clusters, so unlike the static scheduler
there is no swizzle or raster order to choose.

What is architecture-specific lives in the backend: the cancel request (arch.clc_try_cancel, its multicast form for
a cluster of several CTAs, issued by one elected lane) and the decoding of the response (arch.clc_query_cancel).
The rest is integer arithmetic on the launch indices and works on Python integers too, so the first tile and the
decoding of a response can be checked outside a kernel.
"""
from __future__ import annotations

from .. import cute
from .._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from .._dsl.tracing.branches import when
from .._dsl.values.numeric import Int32
from .static_persistent_tile_scheduler import WorkTileInfo
from .tile_scheduler_values import ceil_div, is_dynamic, static_int


class ClcDynamicPersistentTileSchedulerParams:
    """The problem in CTA tiles (tiles_m, tiles_n, L) and the cluster shape (cm, cn, 1). The tile counts may be
    run-time values (from a tensor's dynamic shape); the cluster is static."""

    def __init__(self, problem_shape_ntile_mnl, cluster_shape_mnk, swizzle_size: int = 1,
                 raster_along_m: bool = True, *, loc=None, ip=None):
        # The walk follows the order the hardware hands out canceled clusters: a swizzle or an N-first raster would
        # remap block indices to tiles, which this scheduler does not do (yet); refused rather than ignored.
        if static_int(swizzle_size) != 1 or raster_along_m is not True:
            raise DSLValueError(f"ClcDynamicPersistentTileSchedulerParams: only swizzle_size=1 and raster_along_m="
                                f"True are supported here (tiles follow the block index), got swizzle_size="
                                f"{swizzle_size!r}, raster_along_m={raster_along_m!r}", user_location(2))
        shape = tuple(problem_shape_ntile_mnl) if isinstance(problem_shape_ntile_mnl, (tuple, list)) else None
        if shape is None or len(shape) != 3:
            raise DSLValueError(f"ClcDynamicPersistentTileSchedulerParams: problem_shape_ntile_mnl is (tiles_m, "
                                f"tiles_n, L), got {problem_shape_ntile_mnl!r}", user_location(2))
        cluster = tuple(cluster_shape_mnk) if isinstance(cluster_shape_mnk, (tuple, list)) else None
        if cluster is None or len(cluster) not in (2, 3) or any(static_int(c) is None for c in cluster):
            raise DSLValueError(f"ClcDynamicPersistentTileSchedulerParams: cluster_shape_mnk is (cm, cn, 1) of "
                                f"static integers, got {cluster_shape_mnk!r}", user_location(2))
        cluster = tuple(static_int(c) for c in cluster) + ((1,) if len(cluster) == 2 else ())
        if cluster[0] < 1 or cluster[1] < 1 or cluster[2] != 1 or cluster[0] * cluster[1] > 16:
            raise DSLValueError(f"ClcDynamicPersistentTileSchedulerParams: the cluster is (cm, cn, 1) of at most 16 "
                                f"CTAs, got {cluster}", user_location(2))
        for what, v in zip("mnl", shape):
            s = static_int(v)
            if s is None and not is_dynamic(v):
                raise DSLTypeError(f"ClcDynamicPersistentTileSchedulerParams: the tile count along {what} must be an "
                                   f"integer, got {v!r}", user_location(2))
            if s is not None and s < 0:
                raise DSLValueError(f"ClcDynamicPersistentTileSchedulerParams: negative tile count {s} along {what}",
                                    user_location(2))
        self.problem_shape_ntile_mnl = tuple(static_int(v) if static_int(v) is not None else v for v in shape)
        self.cluster_shape_mnk = cluster
        tm, tn, tl = self.problem_shape_ntile_mnl
        # The problem in clusters (the last cluster along a mode may hang over the problem's edge).
        self.problem_shape_ncluster_mnl = (ceil_div(tm, cluster[0]), ceil_div(tn, cluster[1]), tl)

    @property
    def cluster_size(self) -> int:
        return self.cluster_shape_mnk[0] * self.cluster_shape_mnk[1]

    def get_grid_shape(self, *, loc=None, ip=None):
        return ClcDynamicPersistentTileScheduler.get_grid_shape(self)

    def __repr__(self):
        return (f"ClcDynamicPersistentTileSchedulerParams(tiles {self.problem_shape_ntile_mnl}, cluster "
                f"{self.cluster_shape_mnk})")


class ClcDynamicPersistentTileScheduler:
    """One CTA's walk through the tiles its cluster is given (see the module's docstring)."""

    def __init__(self, params, block_idx, cta_coord, response, dynamic: bool):
        self.params = params
        self._block_idx = block_idx
        self._cta_m, self._cta_n, self._cta_l = cta_coord
        self._response = response
        self._dynamic = dynamic
        self._executed = self._int(0)
        bx, by, bz = block_idx
        cl_m, cl_n, tl = params.problem_shape_ncluster_mnl
        cm, cn, _ = params.cluster_shape_mnk
        # A launched CTA's cluster is in the problem when the grid is get_grid_shape's; a larger grid's extra
        # clusters get no work.
        valid = (bx < cl_m * cm) & (by < cl_n * cn) & (bz < tl) if dynamic else (
            bx < cl_m * cm and by < cl_n * cn and bz < tl)
        self._work = WorkTileInfo((bx, by, bz), valid)

    # --- host side ----------------------------------------------------------------------------------------------
    @staticmethod
    def get_grid_shape(params: ClcDynamicPersistentTileSchedulerParams, *, loc=None, ip=None):
        """The launch grid: one CTA per output tile, each mode rounded up to whole clusters (x: M, y: N, z: L)."""
        if not isinstance(params, ClcDynamicPersistentTileSchedulerParams):
            raise DSLTypeError(f"ClcDynamicPersistentTileScheduler.get_grid_shape: expected "
                               f"ClcDynamicPersistentTileSchedulerParams, got {params!r}", user_location(2))
        cm, cn, _ = params.cluster_shape_mnk
        m, n, l = params.problem_shape_ncluster_mnl
        return (m * cm, n * cn, l)

    # --- device side --------------------------------------------------------------------------------------------
    @staticmethod
    def create(params: ClcDynamicPersistentTileSchedulerParams, block_idx, grid_dim, clc_response_ptr=None, *,
               loc=None, ip=None):
        """This CTA's scheduler, from its block index and the grid's shape (cute.arch.block_idx(),
        cute.arch.grid_dim()) of a launch with get_grid_shape's grid, and the 16 bytes of shared memory the
        responses land in (at the same offset in every CTA of the cluster)."""
        if not isinstance(params, ClcDynamicPersistentTileSchedulerParams):
            raise DSLTypeError(f"ClcDynamicPersistentTileScheduler.create: expected "
                               f"ClcDynamicPersistentTileSchedulerParams, got {params!r}", user_location(2))
        try:
            bx, by, bz = block_idx
            tuple(grid_dim)
        except (TypeError, ValueError):
            raise DSLTypeError("ClcDynamicPersistentTileScheduler.create: block_idx and grid_dim are (x, y, z) "
                               "triples", user_location(2)) from None
        if clc_response_ptr is not None and getattr(getattr(clc_response_ptr, "iterator", clc_response_ptr),
                                                    "memspace", None) != "smem":
            raise DSLTypeError(f"ClcDynamicPersistentTileScheduler.create: clc_response_ptr is a pointer to the "
                               f"16-byte response in shared memory, got {clc_response_ptr!r}", user_location(2))
        cm, cn, _ = params.cluster_shape_mnk
        dynamic = any(is_dynamic(v) for v in (bx, by, bz)) or any(
            is_dynamic(v) for v in params.problem_shape_ntile_mnl)
        conv = Int32 if dynamic else (lambda v: v)
        bx, by, bz = conv(bx), conv(by), conv(bz)
        if dynamic:
            # In a kernel, the CTA's place in its cluster as the hardware has it (%cluster_ctaid): the launch's
            # cluster may also span z (e.g. CTAs of one tile splitting K), which the parameters' cluster does not.
            cta = tuple(cute.arch.block_idx_in_cluster(dim=d) for d in "xyz")
        else:
            cta = (bx % cm, by % cn, 0)
        return ClcDynamicPersistentTileScheduler(params, (bx, by, bz), cta, clc_response_ptr, dynamic)

    def _int(self, v):
        if self._dynamic:
            return Int32(v)
        return v

    def initial_work_tile_info(self, *, loc=None, ip=None) -> WorkTileInfo:
        return self._work

    def work_tile_from_response(self, is_canceled, first_x, first_y, first_z):
        """The work tile of this CTA given a response (whether a cluster was canceled, and its first CTA id): the
        same CTA of the canceled cluster; not valid when none was canceled."""
        return ((first_x + self._cta_m, first_y + self._cta_n, first_z + self._cta_l), is_canceled)

    def _require_response(self, what, response=None):
        if response is not None:
            return response
        if self._response is None:
            raise DSLValueError(f"ClcDynamicPersistentTileScheduler.{what}: the scheduler was created without "
                                "clc_response_ptr (the shared memory the responses land in)", user_location(3))
        return self._response

    def advance_to_next_work(self, mbarrier_addr=None, *, response=None, loc=None, ip=None):
        """The scheduler warp of the cluster's first CTA asks to cancel a cluster that has not started: one elected
        lane issues the request, whose response lands in every CTA's response buffer and completes 16 bytes on the
        full barrier mbarrier_addr (PipelineClcFetchAsync.producer_get_barrier) there. response: the buffer of
        this request's pipeline stage, where the responses have one buffer a stage (default: the scheduler's)."""
        response = self._require_response("advance_to_next_work", response)
        if mbarrier_addr is None:
            raise DSLValueError("ClcDynamicPersistentTileScheduler.advance_to_next_work: give the barrier the "
                                "response completes (PipelineClcFetchAsync.producer_get_barrier(state)); the "
                                "other warps read the next tile with get_current_work after consumer_wait",
                                user_location(2))
        request = (cute.arch.clc_try_cancel_multicast if self.params.cluster_size > 1
                   else cute.arch.clc_try_cancel)
        when(cute.arch.elect_one(), lambda: request(response, mbarrier_addr))

    def get_current_work(self, *, response=None, loc=None, ip=None) -> WorkTileInfo:
        """The tile of the response that has landed in this CTA (call after the pipeline's consumer_wait); response:
        the stage's buffer, where there is one a stage."""
        response = self._require_response("get_current_work", response)
        canceled, x, y, z = cute.arch.clc_query_cancel(response)
        tile, valid = self.work_tile_from_response(canceled, x, y, z)
        self._work._ww_carry_set([*tile, valid])
        self._executed = self._executed + 1
        return self._work

    @property
    def num_tiles_executed(self):
        """How many responses this CTA has read (the tiles it finished, in a loop that reads one per tile)."""
        return self._executed

    # Carried through dynamic control flow: the count and the work tile.
    def _ww_carry_get(self):
        return [self._executed, *self._work._ww_carry_get()]

    def _ww_carry_set(self, values):
        self._executed = values[0]
        self._work._ww_carry_set(list(values[1:]))

    def __repr__(self):
        return f"ClcDynamicPersistentTileScheduler({self.params}, work={self._work})"
