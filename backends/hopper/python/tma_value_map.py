"""TMA load atoms made from an explicit CTA value map (CuTe DSL's cute_nvgpu.atom_make_non_exec_tiled_tma_load) and
the trait that turns one into a cute.CopyAtom (cpasync.CopyBulkTensorTileG2SNonExecTrait).

make_tiled_tma_atom derives the tile a load copies from a tiler; a program that lays its tile out itself (a paged
KV cache: each copy brings one page's rows, at a page index read from a page table at run time) gives instead the
CTA value map, a layout from the CTA's values to coordinates of the global tensor (an identity layout of the tensor
composed and divided down to one copy's tile). The atom is, like make_tiled_tma_atom's, not executable by itself:
its tensor map is encoded per call and each cute.copy names its mbarrier (tma_bar_ptr=) and its coordinates (a
slice of the atom's TMA tensor, at whatever runtime index the program computes).

Here a value map must take the tile's values along the tensor's first modes in order, each mode as one compact run
from coordinate 0 (stride 1@i, then the run's length@i ...): those are the boxes TMA copies; the shared-memory
layout is of that tile's shape, as for make_tiled_tma_atom.
"""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext

from . import tma

NAME = "cute_nvgpu.atom_make_non_exec_tiled_tma_load"


def _leaves(shape, stride):
    if isinstance(shape, tuple):
        return [leaf for sh, st in zip(shape, stride) for leaf in _leaves(sh, st)]
    return [(shape, stride)]


def tile_of_value_map(cta_v_map) -> tuple:
    """The tile (extent per global mode, modes 0..k-1) whose coordinates cta_v_map enumerates; an error at the
    user's line for a map TMA cannot copy as boxes of the tensor (a permuted, strided or non-coordinate map)."""
    if not (hasattr(cta_v_map, "shape") and hasattr(cta_v_map, "stride")):
        raise ext.user_error(f"{NAME}: cta_v_map must be a layout from the CTA's values to coordinates of the "
                             f"global tensor (e.g. cute.make_identity_layout(shape) composed with a tile), got "
                             f"{cta_v_map!r}", ext.DSLTypeError)
    extents: list[int] = []
    for size, stride in _leaves(cta_v_map.shape, cta_v_map.stride):
        if not isinstance(size, int):
            raise ext.user_error(f"{NAME}: the value map {cta_v_map} must be static", ext.DSLValueError)
        if size == 1:
            continue
        mode, scale = getattr(stride, "mode", None), getattr(stride, "value", None)
        if isinstance(mode, (list, tuple)):   # a path into the coordinate: only flat tensor modes here
            mode = mode[0] if len(mode) == 1 else None
        if not isinstance(mode, int) or not isinstance(scale, int):
            raise ext.user_error(f"{NAME}: the value map {cta_v_map} maps values to coordinates of the tensor "
                                 f"(strides like 1@0, 1@1); {stride!r} is not one", ext.DSLValueError)
        if mode == len(extents) - 1 and scale == extents[-1]:
            extents[-1] *= size        # the run of this mode continues
        elif mode == len(extents) and scale == 1:
            extents.append(size)       # the next mode starts at coordinate 0
        else:
            raise ext.user_error(f"{NAME}: the value map {cta_v_map} must take the tensor's modes in order, each "
                                 f"as one run from coordinate 0 (stride {stride!r} of an extent {size} breaks that)",
                                 ext.DSLValueError)
    if not extents:
        raise ext.user_error(f"{NAME}: the value map {cta_v_map} has a single value; a TMA box has at least 16 "
                             "bytes", ext.DSLValueError)
    return tuple(extents)


def smem_of_tile(smem_layout, tile: tuple):
    """smem_layout (a layout of the CTA's values, the value map's domain, however its modes are grouped) as a layout
    of the tile's coordinates: the map takes value c0 + e0 * c1 + ... to coordinate (c0, c1, ...), swizzle kept."""
    outer = getattr(smem_layout, "outer", smem_layout)
    n = 1
    for e in tile:
        n *= e
    if cute.size(outer) != n:
        raise ext.user_error(f"{NAME}: the shared-memory layout {smem_layout} holds {cute.size(outer)} values, "
                             f"the value map's tile {tile} {n}", ext.DSLValueError)
    strides, run = [], 1
    for e in tile:
        strides.append(run)
        run *= e
    by_coord = cute.composition(outer, cute.make_layout(tile, stride=tuple(strides)))
    if hasattr(smem_layout, "outer"):
        return cute.make_composed_layout(smem_layout.inner, smem_layout.offset, by_coord)
    return by_coord


def make_non_exec_tiled_tma_load(gmem_tensor, smem_layout, cta_v_map, op, num_multicast: int = 1, *, loc=None,
                                 ip=None):
    """(TMA atom, TMA tensor): loads of the tile cta_v_map enumerates of gmem_tensor into smem_layout (that tile's
    shared-memory layout, one copy's worth)."""
    name = getattr(op, "python_name", "")
    if not name.startswith("cpasync.CopyBulkTensorTileG2S"):
        raise ext.user_error(f"{NAME}: the op is a TMA load (CopyBulkTensorTileG2SOp or "
                             f"CopyBulkTensorTileG2SMulticastOp), got {op!r}", ext.DSLTypeError)
    if not hasattr(gmem_tensor, "iterator") or getattr(gmem_tensor, "memspace", None) not in ("gmem", "generic"):
        raise ext.user_error(f"{NAME}: the first operand is the global tensor the atom loads from, got "
                             f"{gmem_tensor!r}", ext.DSLTypeError)
    if not (hasattr(smem_layout, "shape") and (hasattr(smem_layout, "stride") or hasattr(smem_layout, "outer"))):
        raise ext.user_error(f"{NAME}: the second operand is the tile's shared-memory layout, got {smem_layout!r}",
                             ext.DSLTypeError)
    tile = tile_of_value_map(cta_v_map)
    info = tma.make_tiled_tma_atom(op, gmem_tensor, smem_of_tile(smem_layout, tile), tile, num_multicast)
    return info.atom, info.tma_tensor


class CopyBulkTensorTileG2SNonExecTrait:
    """The trait of a TMA load atom (cute.CopyAtom(op, trait) is the atom, for the op it was made with)."""

    def __init__(self, atom):
        if not isinstance(atom, tma.TmaCopyAtom) or not atom.is_load:
            raise ext.user_error(f"CopyBulkTensorTileG2SNonExecTrait: expected the TMA load atom of "
                                 f"{NAME}, got {atom!r}", ext.DSLTypeError)
        self.atom = atom

    def __ww_copy_atom__(self, op):
        if op != self.atom.op:
            raise ext.user_error(f"cute.CopyAtom: the trait's atom was made for {self.atom.op!r}, not {op!r}",
                                 ext.DSLValueError)
        return self.atom

    def __repr__(self):
        return f"CopyBulkTensorTileG2SNonExecTrait({self.atom!r})"
