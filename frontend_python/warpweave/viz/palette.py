"""Colours of the pictures: one per thread, and a grey ramp for a layout's values.

The 32 threads of a warp get 32 hues, consecutive lanes 146 degrees apart (13 steps of 360/32), so that the
neighbours a picture puts side by side differ most; the warps after the first take the same hues lighter or less
saturated (4 lightness levels, then 8 saturation levels), so the first 1024 threads have 1024 different colours
and a warp reads as one family of shades. All are light enough for black text.
"""
from __future__ import annotations

import colorsys
import functools

_HUES = 32
_HUE_STEP = 13  # coprime to 32: lane l takes hue slot 13 l mod 32
_LIGHTNESS = (0.72, 0.84, 0.64, 0.78)
_SATURATION = (0.85, 0.55, 0.95, 0.40, 0.70, 0.30, 0.62, 0.48)


def _hex(r: float, g: float, b: float) -> str:
    return "#{:02x}{:02x}{:02x}".format(*(round(255 * x) for x in (r, g, b)))


@functools.lru_cache(maxsize=4096)
def thread_color(thread: int) -> str:
    """The fill of every cell that `thread` holds, as #rrggbb."""
    if thread < 0:
        raise ValueError(f"thread_color: a thread index is not negative, got {thread}")
    hue = ((thread % _HUES) * _HUE_STEP % _HUES) / _HUES
    light = _LIGHTNESS[(thread // _HUES) % len(_LIGHTNESS)]
    sat = _SATURATION[(thread // (_HUES * len(_LIGHTNESS))) % len(_SATURATION)]
    return _hex(*colorsys.hls_to_rgb(hue, light, sat))


# A layout's cells in eight greys by value (CuTe's pictures colour them so too): equal values look alike, and
# runs of consecutive values show as a ramp.
_GREYS = tuple(_hex(g, g, g) for g in (1.0, 0.93, 0.86, 0.79, 0.72, 0.79, 0.86, 0.93))


def value_color(value) -> str:
    """The fill of a layout cell holding `value` (an int offset; other values, e.g. coordinates, are white)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _GREYS[value % len(_GREYS)]
    return _GREYS[0]


EMPTY = "#ffffff"   # a tile element no thread holds
SHARED = "#e4ecf4"  # an element every thread holds (an operand read whole by all the threads)
