"""Which lanes the four warps of a warpgroup reach in a tensor-memory copy tiled over a tile (make_tmem_copy).

Warp w of a warpgroup reaches lanes 32 (w % 4) .. 32 (w % 4) + 31. A tile of 128 lanes gives each warp its own
32; a tile of fewer lanes (64: the accumulator of one CTA of a two-CTA M = 128 MMA) is reached by the first
lanes / 32 warps, and the others repeat them (a warp mode of stride 0), as CuTe DSL's make_tmem_copy tiles it:
warps 2 and 3 then copy the coordinates of warps 0 and 1."""
from __future__ import annotations

import warpweave.cute as cute

from .tmem_layouts import LANE, LANES

WARPS = LANES // 32


def warp_mode(tile_layout, per: int):
    """(shape, stride) of the warp mode of a tiled copy's threads over tile_layout (a static layout whose offsets
    count elements, per to a 32-bit column)."""
    lane_step = LANE * per
    lanes = (cute.cosize(tile_layout) - 1) // lane_step + 1   # the lanes the tile reaches
    reached = min(WARPS, max(1, -(-lanes // 32)))
    if reached == WARPS or WARPS % reached:
        return WARPS, 32 * lane_step
    return (reached, WARPS // reached), (32 * lane_step, 0)
