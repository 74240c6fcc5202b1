"""cute.experimental's Blackwell operations (CuTe DSL's extension API): tensor memory, TMA loads and stores that a
kernel makes for its own arguments, and the pipelines between TMA, the tcgen05 MMAs and the epilogue.

A kernel of this API names no TMA atom: tma_load(src, dst, mbar) takes a view of a kernel argument (a bounded
tensor, cute.experimental.bounded) and the shared-memory tensor it fills, and makes the atom while the kernel is
traced, its tensor map a per-call parameter slot of that argument (cute.experimental.claim_parameter). Because the
bytes a stage's loads bring are known only at the loads, each load expects its own bytes on the stage's barrier
and the producer's commit is the one arrival (TMAToUMMAPipeline); the MMAs' commits release the stages as in
warpweave.pipeline.PipelineTmaUmma. Tensor memory is allocated where `allocate` is called (every thread of the
CTA meets there) and given back at the kernel body's end.
"""
from __future__ import annotations

import enum

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext, pipeline
from warpweave.backends.hopper import tma as hopper_tma
from warpweave.cute import experimental as cute_ext

from . import cute_ext_kernel_maps as kernel_maps
from . import tma as bw_tma
from . import tmem
from .tcgen05_mma import CtaGroup, Field


class OperationTypeEnum(enum.Enum):
    """The operations on either side of an experimental pipeline (CuTe DSL's names)."""
    SM90_TMA_LOAD = "SM90_TMA_LOAD"
    SM90_TMA_LOAD_MULTICAST = "SM90_TMA_LOAD_MULTICAST"
    SM90_TMA_STORE = "SM90_TMA_STORE"
    SM100_TMA_LOAD_2SM = "SM100_TMA_LOAD_2SM"
    SM100_TMA_LOAD_2SM_MULTICAST = "SM100_TMA_LOAD_2SM_MULTICAST"
    SM100_MMA_1SM_SS = "SM100_MMA_1SM_SS"
    SM100_MMA_2SM_SS = "SM100_MMA_2SM_SS"
    SM100_COPY_T2R = "SM100_COPY_T2R"

    @property
    def cta_group(self) -> int:
        return 2 if "2SM" in self.value else 1

    @property
    def multicast(self) -> bool:
        return self.value.endswith("MULTICAST")


def _operation(x, what: str, kinds: tuple) -> OperationTypeEnum:
    if not isinstance(x, OperationTypeEnum) or not x.value.startswith(kinds):
        raise ext.user_error(f"{what}: expected an OperationTypeEnum of {', '.join(kinds)}, got {x!r}",
                             ext.DSLTypeError)
    return x


# --- tensor memory ----------------------------------------------------------------------------------------------

def make_tmem_layout_acc(tiled_mma, mnk_tiler, num_stages: int):
    """The layout of `num_stages` accumulators of tiled_mma's (M, N) tile in tensor memory: (MMA, MMA_M, MMA_N,
    stage), as the MMA's C fragment lays them out."""
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ext.user_error(f"make_tmem_layout_acc: num_stages must be a positive int, got {num_stages!r}",
                             ext.DSLValueError)
    shape = tiled_mma.partition_shape_C(tuple(mnk_tiler[:2]))
    return tiled_mma.make_fragment_C(cute.append(shape, num_stages)).layout


class _CtaBarrier:
    """Every thread of the CTA (they all reach `allocate`)."""

    def arrive_and_wait(self):
        cute.arch.barrier()


def allocate_tmem(dtype, layout, alignment, *, is2cta: bool = False):
    """cute.experimental.allocate in tensor memory: the columns the layout reaches (a power of two of at least 32),
    allocated by warp 0 (with is2cta, by the CTA pair), its address shared through shared memory; freed at the
    kernel body's end, after every thread of the CTA (and, with is2cta, the peer) is done with it."""
    ctx = cute_ext.current_kernel()
    columns = tmem.get_num_tmem_alloc_cols(layout)
    word = cute_ext.allocate(cutlass.Int32, cute.AddressSpace.smem, cute.make_layout(1), alignment=4)
    mbar = None
    if is2cta:
        mbar = cute_ext.allocate(cutlass.Int64, cute.AddressSpace.smem, cute.make_layout(1), alignment=8).iterator
    allocator = tmem.TmemAllocator(word.iterator, _CtaBarrier(), 0, bool(is2cta), 0, mbar)
    allocator.allocate(columns)
    allocator.wait_for_alloc()
    ptr = allocator.retrieve_ptr(dtype)

    def free():
        tmem.fence_before_thread_sync()
        cute.arch.barrier()
        allocator.free(ptr, columns)

    ctx.at_end.append(free)
    return cute.make_tensor(ptr, layout)


cute_ext.register_allocator(cute.AddressSpace.tmem, allocate_tmem)


def make_t2r_rmem_layout(tiled_copy_t2r, gmem_epi_tiles, thread_idx):
    """The registers one thread receives from one epilogue tile's tensor-memory load: the thread's part of the
    first tile of gmem_epi_tiles ((EPI_M, EPI_N, tiles...), e.g. cute.flat_divide(tile, epi_tile)), compact."""
    part = tiled_copy_t2r.get_slice(thread_idx).partition_D(getattr(gmem_epi_tiles, "tensor", gmem_epi_tiles))
    rank = cute.rank(part)
    if rank < 3:
        raise ext.user_error(f"make_t2r_rmem_layout: expected (EPI_M, EPI_N, tiles...) epilogue tiles, got a "
                             f"partition of shape {part.shape}", ext.DSLValueError)
    first = part[(None, None, None) + (0,) * (rank - 3)]
    return cute.make_layout(first.shape)


# --- TMA for a kernel's own arguments ---------------------------------------------------------------------------

class OperandMap:
    """Which CTA loads which part of an MMA operand (get_cta_v_map_ab): shared memory holds the operand's MMA
    layout, ((MN atom, K atom), rest MN, rest K), that a load fills as the plain (MN, K) tile."""

    def __init__(self, operand: str, tiler, tiled_mma, tensor=None):
        self.tensor = tensor    # the whole operand the loaded tiles are of
        self.operand = operand
        self.tiler = tiler
        self.tiled_mma = tiled_mma

    def smem_view(self, layout):
        plain = bw_tma.plain_stage_layout(layout)
        if hasattr(layout, "inner"):  # a stage's swizzle offset stays (view() left it a fraction of its span)
            return cute.make_composed_layout(layout.inner, layout.offset, plain.outer)
        return plain


class TileMap:
    """A plain tile (get_cta_v_map_c): shared memory holds it as the global tile, mode for mode."""

    def __init__(self, tile, tensor=None):
        self.tensor = tensor    # the whole tensor the copied tiles are of
        self.tile = tile

    def smem_view(self, layout):
        return layout


def get_cta_v_map_ab(tensor, mnk_tiler, tiled_mma, operand: str):
    # A scale-factor operand's shared memory is in the MMA's layout as its operand's is
    # (blockscaled_layout.make_smem_layout_sfa/sfb): the same view serves
    if operand not in ("A", "B", "SFA", "SFB"):
        raise ext.user_error(f"get_cta_v_map_ab: the operand is \"A\", \"B\", \"SFA\" or \"SFB\", got {operand!r}",
                             ext.DSLValueError)
    if not isinstance(tensor, cute_ext.BoundedTensor) and not kernel_maps.is_kernel_tensor(tensor):
        raise ext.user_error("get_cta_v_map_ab: expected a global-memory argument of the @cute.experimental.kernel "
                             "or a tensor the kernel made", ext.DSLTypeError)
    return OperandMap(operand, tuple(mnk_tiler), tiled_mma, tensor)


def get_cta_v_map_c(tensor, epi_tile):
    if not isinstance(tensor, cute_ext.BoundedTensor) and not kernel_maps.is_kernel_tensor(tensor):
        raise ext.user_error("get_cta_v_map_c: expected a global-memory argument of the @cute.experimental.kernel "
                             "or a tensor the kernel made", ext.DSLTypeError)
    return TileMap(epi_tile, tensor)


def _static_shape(t, what):
    shape = t.shape if isinstance(t.shape, tuple) else (t.shape,)
    sizes = tuple(cute.size(s) for s in shape)
    if not all(isinstance(s, int) for s in sizes):
        raise ext.user_error(f"{what}: the tile must have a static shape, got {t.shape}", ext.DSLValueError)
    return sizes


def _atom(op, gmem, smem_layout, tile, num_multicast=1):
    """The TMA atom moving `tile` of the bounded tensor gmem's argument, its tensor map a slot of that argument."""
    def descriptor(producer, attrs):
        return cute_ext.claim_parameter(gmem, producer, attrs)

    atom, _ = hopper_tma.make_tiled_tma_atom(op, gmem.source, smem_layout, tile, num_multicast,
                                             descriptor=descriptor)
    return atom


def _check_pair(src, dst, what, gmem_first: bool):
    g, s = (src, dst) if gmem_first else (dst, src)
    if not isinstance(g, cute_ext.BoundedTensor) and not kernel_maps.is_kernel_tensor(g):
        raise ext.user_error(f"{what}: the global-memory side must be a view of a @cute.experimental.kernel's "
                             f"argument or a tensor the kernel made, got {type(g).__name__}", ext.DSLTypeError)
    if getattr(s, "memspace", None) != "smem":
        raise ext.user_error(f"{what}: the other side must be a shared-memory tensor, got {s!r}", ext.DSLTypeError)
    return g, s


def _tile_copy(atom, gmem, smem, smem_layout, load: bool, share=None, **kw):
    """One TMA copy of the whole tile; share=(this CTA's coordinate, CTAs) when the CTAs along a cluster mode each
    load their share of the rows and multicast it to all of them."""
    rank = cute.rank(smem_layout.outer if hasattr(smem_layout, "outer") else smem_layout)
    coords = cute.group_modes(gmem.coordinates, 0, rank)
    view = cute.group_modes(cute.make_tensor(smem.iterator, smem_layout), 0, rank)
    if share is not None:
        view, coords = hopper_tma.tma_partition(atom, share[0], cute.make_layout(share[1]), view, coords)
    if load:
        cute.copy(atom, coords, view, **kw)
    else:
        cute.copy(atom, view, coords, **kw)


def _load(src, dst, mbar, cta_v_map, op_type, num_multicast, mask, what, expect_tx=True, share=None):
    gmem, smem = _check_pair(src, dst, what, True)
    stage_barrier = mbar
    mbar = ext.address_of(mbar, f"{what}'s mbarrier")
    op_type = _operation(op_type or OperationTypeEnum.SM90_TMA_LOAD, what, ("SM90_TMA_LOAD", "SM100_TMA_LOAD"))
    group = op_type.cta_group
    cpasync = cute.nvgpu.cpasync
    ctas = CtaGroup.TWO if group == 2 else CtaGroup.ONE
    op = cpasync.CopyBulkTensorTileG2SMulticastOp(ctas) if num_multicast > 1 else cpasync.CopyBulkTensorTileG2SOp(ctas)
    layout = (cta_v_map or TileMap(None)).smem_view(ext.full_layout(smem))
    coords = None
    if kernel_maps.is_kernel_tensor(gmem):
        if num_multicast > 1 or group == 2:
            raise ext.user_error(f"{what}: a tensor the kernel made is loaded by one CTA (no multicast, no CTA "
                                 "pair)", ext.DSLValueError)
        atom, coords = kernel_maps.make_atom(op, gmem, layout, getattr(cta_v_map, "tensor", None), what)
    else:
        atom = _atom(op, gmem, layout, _static_shape(gmem, what), num_multicast)
    if group == 2:
        bw_tma.as_pair_atom(atom)
    if expect_tx:
        # The stage's barrier expects this load's bytes (both CTAs' with a pair: the peer's loads complete on the
        # leader's barrier); the producer's commit is its one arrival.
        leader = cute.arch.block_rank_in_cluster() % 2 == 0 if group == 2 else cutlass.Boolean(True)
        nbytes = atom.smem_bytes * group
        ext.when(leader & cute.arch.elect_one(), lambda: cute.arch.mbarrier_expect_tx(mbar, cutlass.Int32(nbytes)))
    kw = {"tma_bar_ptr": mbar}
    if mask is not None:
        kw["mcast_mask"] = mask
    if coords is not None:
        whole = getattr(cta_v_map, "tensor", None)   # the map's tensor (make_atom's), when it is one the kernel made
        kernel_maps.copy_tile(atom, coords, smem, layout, True, tma_bar_ptr_source=stage_barrier,
                              whole=whole if kernel_maps.is_kernel_tensor(whole) else None, **kw)
        return
    _tile_copy(atom, gmem, smem, layout, True, share, **kw)


def tma_load(src, dst, mbar, *, cta_v_map=None, tma_operation_type=None, update_expect_tx=True):
    """Loads src (a tile of a kernel argument) into dst (shared memory, a stage of an MMA operand's buffer with
    cta_v_map=get_cta_v_map_ab(...), else of src's shape) with TMA, completing on mbar (get_mbarrier). The barrier
    expects the load's bytes unless update_expect_tx=False (a pipeline whose acquire expects a stage's bytes)."""
    _load(src, dst, mbar, cta_v_map, tma_operation_type, 1, None, "tma_load", update_expect_tx)


def tma_load_multicast(src, dst, mbar, *, vmnk_layout, cta_v_map=None, tma_operation_type=None, multicast_mode=1,
                       update_expect_tx=True):
    """tma_load shared by the CTAs of the cluster along mode multicast_mode of vmnk_layout (the cluster's (V, M, N,
    K) layout): each loads its share of the tile into every one of them."""
    n = cute.size(vmnk_layout, mode=[multicast_mode])
    if n == 1:  # a mode of one CTA shares nothing: the load is this CTA's own (a plain TMA load)
        _load(src, dst, mbar, cta_v_map, tma_operation_type, 1, None, "tma_load_multicast", update_expect_tx)
        return
    coord = _vmnk_coord(vmnk_layout)
    mask = cute.nvgpu.cpasync.create_tma_multicast_mask(vmnk_layout, coord, multicast_mode)
    _load(src, dst, mbar, cta_v_map, tma_operation_type, n, mask, "tma_load_multicast", update_expect_tx,
          share=(coord[multicast_mode], n))


def _vmnk_coord(vmnk_layout):
    rank = cute.arch.block_rank_in_cluster()
    return vmnk_layout.get_flat_coord(rank) if hasattr(vmnk_layout, "get_flat_coord") else \
        cute.idx2crd(rank, vmnk_layout.shape)


def tma_store(src, dst, *, cta_v_map=None):
    """Stores src (shared memory) into dst (a tile of a kernel argument) with TMA, as one bulk group of the
    issuing thread (TMAStorePipeline waits for them)."""
    gmem, smem = _check_pair(dst, src, "tma_store", True)
    layout = (cta_v_map or TileMap(None)).smem_view(ext.full_layout(smem))
    if kernel_maps.is_kernel_tensor(gmem):
        atom, coords = kernel_maps.make_atom(cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), gmem, layout,
                                             getattr(cta_v_map, "tensor", None), "tma_store")
        kernel_maps.copy_tile(atom, coords, smem, layout, False)
        return
    atom = _atom(cute.nvgpu.cpasync.CopyBulkTensorTileS2GOp(), gmem, layout, _static_shape(gmem, "tma_store"))
    _tile_copy(atom, gmem, smem, layout, False)


# --- pipelines ---------------------------------------------------------------------------------------------------

class StageToken:
    """A stage a side of a pipeline holds: its barrier (get_mbarrier) and index."""

    def __init__(self, barrier, index):
        self.barrier = barrier
        self.index = index


def get_mbarrier(token):
    if not isinstance(token, StageToken):
        raise ext.user_error(f"get_mbarrier: expected the stage token of producer_acquire_and_get_stage, got "
                             f"{token!r}", ext.DSLTypeError)
    return token.barrier


def pipeline_advance_iterator(raw_pipeline, state):
    """The state after `state` in raw_pipeline's ring (state itself is left as it is)."""
    nxt = state.clone()
    nxt.advance()
    return nxt


class _TwoSided:
    """A raw pipeline with its producer's and consumer's places, carried through dynamic loops in place."""

    def __init__(self, raw, num_stages):
        self.raw_pipeline = raw
        self.num_stages = num_stages
        self.producer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, num_stages)
        self.consumer_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, num_stages)

    def _ww_carry_get(self):
        return self.producer_state._ww_carry_get() + self.consumer_state._ww_carry_get()

    def _ww_carry_set(self, values):
        self.producer_state._ww_carry_set(values[:3])
        self.consumer_state._ww_carry_set(values[3:])

    def producer_acquire_and_get_stage(self):
        s = self.producer_state
        self.raw_pipeline.producer_acquire(s)
        barrier = self.raw_pipeline.producer_get_barrier(s)
        kernel_maps.note_stage(barrier, s.index, self.num_stages)
        return StageToken(barrier, s.index), s.index

    def producer_commit(self):
        self.raw_pipeline.producer_commit(self.producer_state)

    def producer_commit_and_advance(self):
        self.producer_commit()
        self.producer_state.advance()

    def consumer_wait_and_get_stage(self):
        s = self.consumer_state
        self.raw_pipeline.consumer_wait(s)
        return StageToken(self.raw_pipeline.sync_object_full.get_barrier(s.index), s.index), s.index

    def consumer_release_and_advance(self):
        self.raw_pipeline.consumer_release(self.consumer_state)
        self.consumer_state.advance()


class _LoadsExpectTheirBytes(pipeline.PipelineTmaUmma):
    """PipelineTmaUmma whose loads expect their own bytes (tma_load): acquiring a stage only waits until it is
    empty, and the leader's commit is the stage's one arrival. (tx_count is then never read.)"""

    def producer_acquire(self, state, try_acquire_token=None, *, loc=None, ip=None):
        self._wait_unless(self.sync_object_empty, state, try_acquire_token)

    def producer_commit(self, state, *, loc=None, ip=None):
        bar = self.sync_object_full.get_barrier(state.index)
        ext.when(self.is_leader_cta & cute.arch.elect_one(), lambda: cute.arch.mbarrier_arrive(bar))


def _cluster_modes(cluster_layout_vmnk):
    if cluster_layout_vmnk is None:
        return 1, 1, 1
    return tuple(cute.size(cluster_layout_vmnk, mode=[i]) for i in range(3))


class TMAToUMMAPipeline(_TwoSided):
    @classmethod
    def create(cls, *, num_stages: int, mma_operation_type, tma_operation_type=None, cluster_layout_vmnk=None,
               mcast=(0, 0)):
        """Stages that TMA loads fill and the MMAs (of mma_operation_type) read; the cluster's (V, M, N, K)
        layout when the CTAs cooperate."""
        mma = _operation(mma_operation_type, "TMAToUMMAPipeline.create", ("SM100_MMA",))
        v, m, n = _cluster_modes(cluster_layout_vmnk)
        if mma.cta_group != v:
            raise ext.user_error(f"TMAToUMMAPipeline.create: {mma.name} spans {mma.cta_group} CTA(s), the cluster "
                                 f"layout's V mode {v}", ext.DSLValueError)
        commits = (m + n - 1) if any(mcast) else 1   # MMAs whose commits release a stage this CTA's loads wrote
        raw = _LoadsExpectTheirBytes.create(
            num_stages=num_stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, commits), tx_count=1,
            cta_layout_vmnk=cluster_layout_vmnk, mcast_mode_mn=mcast)
        return cls(raw, num_stages)

    @classmethod
    def create_with_mask(cls, *, num_stages: int, mma_operation_type, tma_operation_type=None,
                         cluster_layout_vmnk=None):
        """create() for loads multicast over the cluster: A along N, B along M (the MMAs' commits release the
        stage in every CTA that received it)."""
        return cls.create(num_stages=num_stages, mma_operation_type=mma_operation_type,
                          tma_operation_type=tma_operation_type, cluster_layout_vmnk=cluster_layout_vmnk,
                          mcast=(1, 1))


class UMMAtoAsyncPipeline(_TwoSided):
    @classmethod
    def create(cls, *, num_stages: int, mma_operation_type, consumer, consumer_arv_count: int,
               cluster_layout_vmnk=None):
        """Accumulator stages the MMAs fill and consumer_arv_count threads (of both CTAs of a pair) read."""
        mma = _operation(mma_operation_type, "UMMAtoAsyncPipeline.create", ("SM100_MMA",))
        _operation(consumer, "UMMAtoAsyncPipeline.create", ("SM100_COPY",))
        if consumer_arv_count % mma.cta_group:
            raise ext.user_error(f"UMMAtoAsyncPipeline.create: {consumer_arv_count} consumer threads do not split "
                                 f"over the {mma.cta_group} CTAs of {mma.name}", ext.DSLValueError)
        raw = pipeline.PipelineUmmaAsync.create(
            num_stages=num_stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 1),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, consumer_arv_count // mma.cta_group),
            cta_layout_vmnk=cluster_layout_vmnk)
        return cls(raw, num_stages)


class TMAStorePipeline:
    """Shared-memory stages that arv_count threads write and warp tma_warp_id stores with TMA: acquire_sync (the
    stage's earlier store has read it), get_index, commit_sync (the writes are visible to TMA), release_advance,
    tail (every store has read its stage)."""

    def __init__(self, stages: int, arv_count: int, barrier_id: int, tma_warp_id: int):
        self.raw = pipeline.PipelineTmaStore.create(
            num_stages=stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, arv_count))
        self.barrier = pipeline.NamedBarrier(barrier_id=barrier_id, num_threads=arv_count)
        self.stages = stages
        self.tma_warp_id = tma_warp_id
        self.index = cutlass.Int32(0)

    def _ww_carry_get(self):
        return [self.index]

    def _ww_carry_set(self, values):
        (self.index,) = values

    def _is_tma_warp(self):
        return cute.arch.make_warp_uniform(cute.arch.warp_idx()) == self.tma_warp_id

    def acquire_sync(self):
        ext.when(self._is_tma_warp(), lambda: self.raw.producer_acquire())
        self.barrier.arrive_and_wait()

    def get_index(self):
        return self.index

    def commit_sync(self):
        tmem.fence_view_async_shared()
        self.barrier.arrive_and_wait()

    def release_advance(self):
        ext.when(self._is_tma_warp(), lambda: self.raw.producer_commit())
        nxt = self.index + 1
        self.index = ext.select(nxt == self.stages, cutlass.Int32(0), nxt)

    def tail(self):
        ext.when(self._is_tma_warp(), lambda: self.raw.producer_tail())


def dot_block_scaled(mma_atom, a, sfa, b, sfb, acc):
    """acc += (a scaled by sfa) * (b scaled by sfb) with one block-scaled tcgen05 MMA atom: cute.experimental.dot
    with the atom's scale-factor fields at sfa's and sfb's places in tensor memory (the k-block's slices of the
    make_tmem_layout_sfa/sfb tensors)."""
    for name, t in (("sfa", sfa), ("sfb", sfb)):
        if getattr(t, "memspace", None) != "tmem":
            raise ext.user_error(f"dot_block_scaled: {name} is a tensor in tensor memory (copied there from shared "
                                 f"memory with tcgen05.Cp4x32x128bOp), got {t!r}", ext.DSLTypeError)
    mma_atom.set(Field.SFA, sfa.iterator)
    mma_atom.set(Field.SFB, sfb.iterator)
    cute_ext.dot(mma_atom, a, b, acc)


NAMES = ("OperationTypeEnum", "dot_block_scaled", "make_tmem_layout_acc", "make_t2r_rmem_layout", "get_cta_v_map_ab",
         "get_cta_v_map_c", "tma_load", "tma_load_multicast", "tma_store", "get_mbarrier", "pipeline_advance_iterator",
         "TMAToUMMAPipeline", "UMMAtoAsyncPipeline", "TMAStorePipeline")
for _name in NAMES:
    ext.register_python_name(f"cute_ext.{_name}", globals()[_name])
