"""cute.make_layout_image_mask: the bit mask of the offsets one mode of a layout reaches from a coordinate.

A cluster's CTAs are laid out by a layout from their (m, n, ...) place to their rank; the CTAs that share a place
in every mode but one are the bits of this mask (a multicast copy's destination set, CuTe's
create_tma_multicast_mask). The mode's own sublayout must be static (its image is the mask's pattern); the
coordinate of the other modes may be dynamic (it shifts the pattern).
"""
from __future__ import annotations

from .. import _core
from .._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from .._dsl.values import numeric

MASK_BITS = 16


def make_layout_image_mask(lay, coord, mode: int, *, loc=None, ip=None):
    """Int16 with bit lay(c) set for every coordinate c that equals `coord` in every top-level mode but `mode`
    (which takes all its values): the pattern of lay[mode]'s image, shifted by the offset of `coord` with its
    mode-`mode` coordinate at 0."""
    if not isinstance(lay, _core.Layout):
        raise DSLTypeError(f"make_layout_image_mask: expected a Layout, got {type(lay).__name__}", user_location(2))
    rank = lay.rank if isinstance(lay.shape, tuple) else 1
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode < rank:
        raise DSLValueError(f"make_layout_image_mask: mode {mode!r} is not a mode of {lay} (rank {rank})",
                            user_location(2))
    crd = tuple(coord) if isinstance(coord, (tuple, list)) else (coord,)
    if len(crd) != rank:
        raise DSLValueError(f"make_layout_image_mask: the coordinate {coord!r} has {len(crd)} modes, {lay} has "
                            f"{rank}", user_location(2))
    sub = lay[mode] if rank > 1 else lay
    if not sub.is_static():
        raise DSLValueError(f"make_layout_image_mask: mode {mode} of {lay} must be static (its image is the mask)",
                            user_location(2))
    pattern = 0
    for i in range(sub.size()):
        off = sub(i)
        if not isinstance(off, int) or not 0 <= off < MASK_BITS:
            raise DSLValueError(f"make_layout_image_mask: mode {mode} of {lay} reaches offset {off}, outside the "
                                f"{MASK_BITS}-bit mask", user_location(2))
        pattern |= 1 << off
    base = lay(crd[:mode] + (0,) + crd[mode + 1:]) if rank > 1 else 0
    if isinstance(base, int):
        if not 0 <= base or (pattern << base) >> MASK_BITS:
            raise DSLValueError(f"make_layout_image_mask: the coordinate {coord!r} of {lay} shifts the mask past "
                                f"{MASK_BITS} bits", user_location(2))
        return numeric.Int16(pattern << base)
    return numeric.Int16(numeric.Int32(pattern) << numeric.Int32(base))
