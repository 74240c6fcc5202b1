"""Launch settings checked where the user wrote them: at the `launch(...)` line while compiling (extents, shared
memory and clusters against the limits the target's backend publishes in its manifest), and at the call of the
compiled function for extents known only then (a grid computed from the arguments).

The CUDA programming model's own limits (grid x up to 2^31-1, y and z up to 65535; block x and y up to 1024, z up
to 64) hold on every target; what differs per generation (threads per block, shared memory per block, whether
and how large thread block clusters may be) comes from the backend: Target.max_threads_per_block,
smem_capacity_bytes and max_cluster_size in manifest.proto. A limit a backend does not publish is not checked.
"""
from __future__ import annotations

import warnings

from ..base.errors import DSLTypeError, DSLValueError, user_location
from .plugins import registry

GRID_LIMITS = (2**31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)


def target_limits(target: dict) -> dict:
    """The launch limits of the target being compiled for, from its backend's manifest ({} if unknown)."""
    name = target.get("name") if target else None
    info = registry.target_named(name) if name else None
    if info is None:
        return {}
    backend = registry.backends.get(info.backend)
    if backend is None:
        registry.load([info.backend])  # backends load lazily: this one's manifest holds the limits
        backend = registry.backends.get(info.backend)
    if backend is None:
        return {}
    for t in backend.manifest.get("targets", []):
        if t.get("name") == name:
            return {"name": name, "max_threads_per_block": int(t.get("max_threads_per_block", 0) or 0),
                    "smem_capacity_bytes": int(t.get("smem_capacity_bytes", 0) or 0),
                    "max_cluster_size": int(t.get("max_cluster_size", 0) or 0), "backend": backend.name}
    return {}


def _extent_type_error(what, v):
    return DSLTypeError(f"launch(): {what} extents are integers (Python ints or integer expressions of the "
                        f"arguments), got {v!r} ({type(v).__name__})", user_location(3))


def check_raw_extents(values, what):
    """Refuses what is no integer before the extents are read (a float, a string, a bool)."""
    if values is None:
        return
    seq = values if isinstance(values, (list, tuple)) else [values]
    for v in seq:
        if isinstance(v, (bool, float, str, bytes)) or v is None:
            raise _extent_type_error(what, v)


def check_launch(target: dict, kernel: str, grid, block, cluster, smem, carved: int = 0) -> None:
    """Checks a launch's static settings; dynamic ones are checked at each call (check_call_grid)."""
    limits = target_limits(target)
    tname = limits.get("name") or (target or {}).get("name", "?")
    where = f"launch of {kernel}"

    def bad(msg):
        return DSLValueError(f"{where}: {msg}", user_location(3))

    for what, dims, lim in (("grid", grid, GRID_LIMITS), ("block", block, BLOCK_LIMITS)):
        for axis, (v, top) in enumerate(zip(dims, lim)):
            if isinstance(v, bool):
                raise _extent_type_error(what, v)
            if isinstance(v, int) and not 1 <= v <= top:
                raise bad(f"{what} extent {'xyz'[axis]} is {v}; it must be from 1 to {top}")
    if all(isinstance(v, int) for v in block):
        threads = block[0] * block[1] * block[2]
        top = limits.get("max_threads_per_block") or 0
        if top and threads > top:
            raise bad(f"block {tuple(block)} has {threads} threads, more than the {top} a block may have on {tname}")
    if cluster is not None and any(isinstance(v, bool) for v in cluster):
        raise _extent_type_error("cluster", next(v for v in cluster if isinstance(v, bool)))
    if cluster is not None:
        # An extent of the arguments (`cluster=(n, 1, 1)` with n an Int32 argument, as CuTe DSL allows) is checked
        # at each call (check_call_cluster); here what is known while tracing.
        top = limits.get("max_cluster_size") or 0
        dynamic = any(not isinstance(v, int) for v in cluster)
        if dynamic and top == 1:
            raise bad(f"cluster {tuple(cluster)}: {tname} has no thread block clusters (its backend publishes "
                      "max_cluster_size 1); leave cluster= out")
        for axis, v in enumerate(cluster):
            if isinstance(v, int) and v < 1:
                raise bad(f"cluster extent {'xyz'[axis]} is {v}; it must be at least 1")
        if not dynamic:
            size = cluster[0] * cluster[1] * cluster[2]
            if size > 1 and top == 1:
                raise bad(f"cluster {tuple(cluster)}: {tname} has no thread block clusters (its backend publishes "
                          "max_cluster_size 1); leave cluster= out")
            if top and size > top:
                raise bad(f"cluster {tuple(cluster)} has {size} blocks, more than the {top} a cluster may have on "
                          f"{tname}")
        for axis, (g, c) in enumerate(zip(grid, cluster)):
            if isinstance(g, int) and isinstance(c, int) and g % c:
                raise bad(f"grid extent {'xyz'[axis]} ({g}) is not a multiple of the cluster's ({c})")
    if isinstance(smem, bool) or isinstance(smem, (float, str, bytes)):
        raise DSLTypeError(f"{where}: smem is a number of bytes (an integer), got {smem!r}", user_location(3))
    if isinstance(smem, int):
        if smem < 0:
            raise bad(f"smem={smem}: shared memory is a number of bytes, at least 0")
        top = limits.get("smem_capacity_bytes") or 0
        total = max(smem, carved)
        if top and total > top:
            raise bad(f"{total} bytes of shared memory per block, more than the {top} {tname} offers")


def check_call_grid(kernel: str, grid) -> bool:
    """At a call: whether to launch a grid computed from the arguments. A negative or oversized extent is an
    error; an empty grid (an extent of 0, e.g. an empty problem) launches nothing, with a warning."""
    for axis, (v, top) in enumerate(zip(grid, GRID_LIMITS)):
        if v < 0 or v > top:
            raise DSLValueError(f"launch of {kernel}: the grid evaluates to {tuple(grid)} for these arguments; "
                                f"extent {'xyz'[axis]} must be from 1 to {top}", user_location(2))
    if any(v == 0 for v in grid):
        warnings.warn(f"launch of {kernel}: the grid evaluates to {tuple(grid)} for these arguments, so nothing "
                      "is launched", RuntimeWarning, stacklevel=3)
        return False
    return True


def check_call_cluster(kernel: str, grid, cluster, top: int, where) -> None:
    """At a call: a cluster computed from the arguments, against what check_launch checks of a known one (top:
    the target's max_cluster_size, 0 where unknown)."""
    for axis, v in enumerate(cluster):
        if v < 1:
            raise DSLValueError(f"launch of {kernel}: the cluster evaluates to {tuple(cluster)} for these arguments; "
                                f"extent {'xyz'[axis]} must be at least 1", where)
    size = cluster[0] * cluster[1] * cluster[2]
    if top and size > top:
        raise DSLValueError(f"launch of {kernel}: the cluster evaluates to {tuple(cluster)} for these arguments, "
                            f"{size} blocks, more than the {top} a cluster may have", where)
    for axis, (g, c) in enumerate(zip(grid, cluster)):
        if g % c:
            raise DSLValueError(f"launch of {kernel}: grid extent {'xyz'[axis]} ({g}) is not a multiple of the "
                                f"cluster's ({c}) for these arguments", where)
