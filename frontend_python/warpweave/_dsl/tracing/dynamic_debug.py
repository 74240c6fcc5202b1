"""CuTe DSL's `set_dynamic_debug`: while tracing, each dynamic region (a runtime `for`, `if` or `while` in a
kernel) prints what it carries (each variable's IR types, an object's as the tree of its fields), to the nesting
depth asked for. What a region carries is what a loop must give back with the same structure, so this is the
picture to compare when a loop is refused for changing it."""
from __future__ import annotations

from ..base import trace
from ..values.value_tree import format_tree

_SETTINGS = {"on": False, "max_depth": None}


def set_dynamic_debug(enable: bool = True, max_depth: int | None = None) -> None:
    """Prints what each dynamic region carries while kernels are traced (enable=False stops it); max_depth=0 only
    the outermost regions, 1 those and the regions directly in them, None all."""
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0):
        raise ValueError(f"set_dynamic_debug: max_depth is None or an int >= 0, got {max_depth!r}")
    _SETTINGS["on"], _SETTINGS["max_depth"] = bool(enable), max_depth


def enter() -> int:
    """A dynamic region opens: its nesting depth (0 for the outermost of the kernel)."""
    st = trace.current()
    depth = st.__dict__.get("dynamic_depth", 0)
    st.dynamic_depth = depth + 1
    return depth


def leave(depth: int, lineno: int, carried) -> None:
    """A dynamic region closes; carried: (name, value before the region) of what it carried."""
    trace.current().dynamic_depth = depth
    limit = _SETTINGS["max_depth"]
    if not _SETTINGS["on"] or limit is not None and depth > limit:
        return
    pad = "  " * depth
    print(f"{pad}[dynamic region at line {lineno}, depth {depth}] carries "
          f"{', '.join(name for name, _ in carried) or 'nothing'}")
    for name, value in carried:
        print("\n".join(f"{pad}  {line}" for line in f"{name}: {format_tree(value)}".splitlines()))


__all__ = ["enter", "leave", "set_dynamic_debug"]
