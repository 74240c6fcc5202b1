"""The mistakes a picture reports: at the user's line, as every DSL error is (invariant 7)."""
from __future__ import annotations

from .._dsl.base.errors import DSLTypeError, DSLValueError, user_location

# Pictures larger than this many cells are refused unless the caller asks for more (max_cells=): a 256x256 tile
# is 65536 cells, several megabytes of SVG, more than a notebook displays usefully.
DEFAULT_MAX_CELLS = 65536


def fail_value(message: str) -> None:
    raise DSLValueError(f"warpweave.viz: {message}", user_location(2))


def fail_type(message: str) -> None:
    raise DSLTypeError(f"warpweave.viz: {message}", user_location(2))


def check_cells(what: str, cells: int, max_cells: int) -> None:
    if cells > max_cells:
        raise DSLValueError(f"warpweave.viz: the picture of {what} has {cells} cells, more than max_cells="
                            f"{max_cells}; draw a smaller tile (e.g. cute.slice_ or cute.zipped_divide one tile "
                            "out) or pass a larger max_cells", user_location(2))
