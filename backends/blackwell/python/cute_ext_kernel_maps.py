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


def _map_in_workspace(atom):
    """This copy site's place in the workspace, holding the atom's map for the tensor it was made for, visible to
    the calling warp's TMA copies."""
    slot = ext.device_workspace(MAP_BYTES, 64)
    ext.when(cute.arch.elect_one(), lambda: (tensormap_update.copy_tensormap(atom, slot),
                                             tensormap_update.fence_tma_desc_release()))
    cute.arch.sync_warp()
    tensormap_update.fence_tma_desc_acquire(slot)
    return slot


def make_atom(op, gmem, smem_layout):
    """The TMA atom (and its coordinate tensor) copying the whole tile gmem (a tensor the kernel made, static
    shape) to or from shared memory laid out as smem_layout (the tile's shape, or an operand's MMA layout viewed
    as the tile)."""
    tile = tuple(cute.size(s) for s in (gmem.shape if isinstance(gmem.shape, tuple) else (gmem.shape,)))
    if not all(isinstance(s, int) for s in tile):
        raise ext.user_error(f"the tile a TMA copy moves has a static shape, got {gmem.shape}", ext.DSLValueError)
    return hopper_tma.make_tiled_tma_atom(op, gmem, smem_layout, tile)


def copy_tile(atom, coords, smem, smem_layout, load: bool, **kw):
    """The copy of make_atom's tile, its map written into this site's place in the workspace first."""
    slot = _map_in_workspace(atom)
    rank = cute.rank(smem_layout.outer if hasattr(smem_layout, "outer") else smem_layout)
    view = cute.group_modes(cute.make_tensor(smem.iterator, smem_layout), 0, rank)
    coords = cute.group_modes(coords, 0, rank)
    if load:
        cute.copy(atom, coords, view, tma_desc_ptr=slot, **kw)
    else:
        cute.copy(atom, view, coords, tma_desc_ptr=slot, **kw)
