"""cute.experimental's TMA copies of tensors a kernel makes itself (cute.make_tensor over a pointer it read from
memory: a pointer-array GEMM's A, B and D of each batch), which no host-built tensor map can describe.

Such a copy's tensor map is made in the kernel: its template (the TMA atom's static choices: data type, rank,
box, swizzle) is a parameter the host encodes (hopper tma_in_kernel), and each copy site has its own 128 bytes
in the call's device workspace per CTA (warpweave.ext.device_workspace; the compiled function then takes the
workspace as its last argument). At each copy, one thread of the issuing warp writes the template completed with
the tensor's address, extents and strides into that place, releases it to the tensormap proxy, and the warp
acquires it before the copy names it (tma_desc_ptr=). The map is the copied tile itself (its shape and strides):
a tile of a tensor made in the kernel is only a view, so the tile is what the kernel asks for.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.hopper import tensormap_update
from warpweave.backends.hopper import tma as hopper_tma
from warpweave.cute import experimental as cute_ext

MAP_BYTES = tensormap_update.TENSORMAP_BYTES


def is_kernel_tensor(t) -> bool:
    """A global-memory tensor the kernel made (not a view of one of its arguments)."""
    if isinstance(t, cute_ext.BoundedTensor):
        return False
    it = getattr(t, "iterator", None)
    return getattr(it, "memspace", None) == "gmem" and getattr(it, "host", None) is None


def note_stage(barrier, index, stages: int):
    """The pipeline stage whose barrier `barrier` is (a producer's acquire): a load completing on it has its map
    in the stage's own place, written only once the stage's earlier load has completed (its consumer released it)."""
    ctx = cute_ext.current_kernel()
    if not hasattr(ctx, "stage_barriers"):
        ctx.stage_barriers = {}
    ctx.stage_barriers[id(barrier)] = (barrier, index, stages)


def _stage_of(barrier):
    ctx = cute_ext.current_kernel()
    got = getattr(ctx, "stage_barriers", {}).get(id(barrier))
    return (got[1], got[2]) if got is not None and got[0] is barrier else None


def _static_layout(t) -> bool:
    shape, stride = _flat(t)
    return all(isinstance(x, int) for x in shape + stride)


def _stage_tags(stages: int):
    """The address each stage's map of a load site was last written for (shared memory, zero at the kernel's
    entry: no map yet). Another thread's late zero only costs a rewrite."""
    with ext.at_kernel_entry():
        tags = cute_ext.allocate(cutlass.Int64, cute.AddressSpace.smem, cute.make_layout(stages), alignment=8)
        for i in range(stages):
            tags[i] = cutlass.Int64(0)
    return tags


def _map_in_workspace(atom, load: bool, mbar=None, tensor=None):
    """This copy site's place in the workspace, holding the atom's map for the tensor it was made for, visible to
    the calling warp's TMA copies. A map is rewritten only when no copy that used it may still read it: a load's
    place is its pipeline stage's (one per stage; the stage is free again only after its load completed), a
    store's is rewritten after this thread's earlier bulk copies have completed. A load's map of a tensor of
    static layout is rewritten only when the stage's map is of another address (the tensor of a batch is loaded
    tile after tile through the same maps)."""
    stage = _stage_of(mbar) if load else None
    if load and stage is None:
        raise ext.user_error("tma_load of a tensor the kernel made: its barrier is a pipeline stage's "
                             "(get_mbarrier of producer_acquire_and_get_stage), whose stage keeps the load's "
                             "tensor map", ext.DSLValueError)
    changed = tag = address = None
    if stage is not None:
        index, stages = stage
        slot = ext.device_workspace(MAP_BYTES * stages, 64) + cutlass.Int32(index) * MAP_BYTES
        if tensor is not None and _static_layout(tensor):
            tag = _stage_tags(stages).iterator + cutlass.Int32(index)
            address = tensor.iterator.toint()
            changed = tag.load() != address
            cute.arch.sync_warp()   # every lane has read the tag before it is set
    else:
        slot = ext.device_workspace(MAP_BYTES, 64)

    def write():
        if not load:
            cute.arch.cp_async_bulk_wait_group(0, read=False)
        tensormap_update.copy_tensormap(atom, slot)
        tensormap_update.fence_tma_desc_release()
        if tag is not None:
            tag.store(address)

    if changed is None:
        ext.when(cute.arch.elect_one(), write)
        cute.arch.sync_warp()
        tensormap_update.fence_tma_desc_acquire(slot)
    else:
        ext.when(changed & cute.arch.elect_one(), write)
        cute.arch.sync_warp()
        ext.when(changed, lambda: tensormap_update.fence_tma_desc_acquire(slot))
    return slot


def _flat(t):
    shape, stride = cute.flatten(t.shape), cute.flatten(t.stride)
    shape = shape if isinstance(shape, tuple) else (shape,)
    stride = stride if isinstance(stride, tuple) else (stride,)
    return shape, stride


def _origin(whole, tile, what):
    """The coordinates in `whole` (its modes, flattened) of the first element of `tile`, a view of it: the
    elements between their pointers, decomposed by whole's strides (a layout whose modes do not overlap)."""
    shape, stride = _flat(whole)
    if not all(isinstance(x, int) for x in shape + stride):
        raise ext.user_error(f"{what}: the tensor the kernel made has a static layout, got {whole.layout}",
                             ext.DSLValueError)
    order = sorted(range(len(shape)), key=lambda i: stride[i])
    span = 0
    for i in order:
        if shape[i] > 1 and stride[i] < span:
            raise ext.user_error(f"{what}: the modes of the tensor the kernel made overlap ({whole.layout}); its "
                                 "tiles' places in it are not unique", ext.DSLValueError)
        if shape[i] > 1:
            span = stride[i] * shape[i]
    ebits = whole.element_type.width
    offset = (tile.iterator.toint() - whole.iterator.toint()) * 8 // ebits
    coords = [None] * len(shape)
    for i in reversed(order):
        coords[i] = offset // stride[i] if shape[i] > 1 else cutlass.Int64(0)
        offset = offset - coords[i] * stride[i]
    return coords


def make_atom(op, gmem, smem_layout, whole=None, what="tma_load"):
    """The TMA atom and the coordinates of the tile gmem (a tensor the kernel made, of static shape) for its copy
    to or from shared memory laid out as smem_layout (the tile's shape, or an operand's MMA layout viewed as it).
    With `whole` (the tensor the tile is of, a cta_v_map's), the map is of the whole tensor and the tile is a box
    at its place in it, so that a tile past the tensor's end is clipped (zeros loaded, nothing stored beyond); a
    tile of its leading modes, as zipped_divide makes them. Without, the map is of the tile itself."""
    tile = tuple(cute.size(s) for s in (gmem.shape if isinstance(gmem.shape, tuple) else (gmem.shape,)))
    if not all(isinstance(s, int) for s in tile):
        raise ext.user_error(f"{what}: the tile a TMA copy moves has a static shape, got {gmem.shape}",
                             ext.DSLValueError)
    if whole is None or not is_kernel_tensor(whole):
        return hopper_tma.make_tiled_tma_atom(op, gmem, smem_layout, tile)
    origin = _origin(whole, gmem, what)
    if len(origin) < len(tile):
        raise ext.user_error(f"{what}: the tile has {len(tile)} modes, the tensor it is of {len(origin)}",
                             ext.DSLValueError)
    if cute.rank(whole) != len(_flat(whole)[0]):
        raise ext.user_error(f"{what}: the tensor the kernel made has flat modes, got shape {whole.shape}",
                             ext.DSLValueError)
    atom, coords = hopper_tma.make_tiled_tma_atom(op, whole, smem_layout, tile)
    at = tuple(cutlass.Int32(origin[i] // tile[i]) for i in range(len(tile))) + \
        tuple(cutlass.Int32(c) for c in origin[len(tile):])
    return atom, cute.zipped_divide(coords, tile)[(None,) * len(tile), at]


def copy_tile(atom, coords, smem, smem_layout, load: bool, **kw):
    """The copy of make_atom's tile, its map written into this site's place in the workspace first."""
    slot = _map_in_workspace(atom, load, kw.pop("tma_bar_ptr_source", None), kw.pop("whole", None))
    rank = cute.rank(smem_layout.outer if hasattr(smem_layout, "outer") else smem_layout)
    view = cute.group_modes(cute.make_tensor(smem.iterator, smem_layout), 0, rank)
    coords = cute.group_modes(coords, 0, rank)
    if load:
        cute.copy(atom, coords, view, tma_desc_ptr=slot, **kw)
    else:
        cute.copy(atom, view, coords, tma_desc_ptr=slot, **kw)
