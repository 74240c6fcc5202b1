"""The settings of a kernel launch: `kernel(...).launch(grid=..., block=..., ...)` or, the same as one object,
`launch(config=LaunchConfig(...))`.

| keyword | meaning |
| --- | --- |
| grid, block | extents (1 to 3), integers or expressions of the jit function's arguments |
| smem (shared_memory) | dynamic shared memory in bytes (at least what the kernel's allocators carved) |
| stream | the stream (None: the jit function's stream argument if any, else the default stream) |
| cluster | thread block cluster shape (sm_90+) |
| max_number_threads | the most threads a block of the kernel has (1 to 3 extents known while tracing): the compiler's register budget; the launch's block may not exceed it |
| min_blocks_per_mp | the compiler keeps the kernel's resources low enough for this many resident blocks per SM |
| use_pdl | programmatic dependent launch: may start before the previous kernel in the stream ends (True, False, or a Boolean of the jit function's arguments: then set at each call from its value) |
| cooperative | a cooperative launch (the whole grid co-resident; like use_pdl, a Boolean of the arguments is read at each call) |
| fallback_cluster | with cluster: `cluster` is the preferred shape, this the one used where it cannot be scheduled |
| smem_merge_branch_allocs | the two branches of each runtime `if` in the kernel carve shared memory from the same offset (the caller promises that only one runs and nothing carved in one is used after it), so the kernel needs the larger branch's, not the sum |
| launch_completion_event (+ _flags) | an event (a jit argument) the driver records once every block has started |
| programmatic_event (+ _flags, _trigger_at_block_start) | an event recorded once every block has triggered its dependents (cute.arch.griddepcontrol_launch_dependents), or at block start |
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .errors import DSLTypeError, DSLValueError, user_location


@dataclass
class LaunchConfig:
    grid: Any = None
    block: Any = None
    smem: Any = 0
    stream: Any = None
    cluster: Any = None
    min_blocks_per_mp: int | None = None
    max_number_threads: Any = None
    use_pdl: Any = False
    cooperative: Any = False
    fallback_cluster: Any = None
    smem_merge_branch_allocs: bool = False
    launch_completion_event: Any = None
    launch_completion_event_flags: int = 0
    programmatic_event: Any = None
    programmatic_event_flags: int = 0
    programmatic_event_trigger_at_block_start: int = 0


KEYWORDS = tuple(f.name for f in fields(LaunchConfig)) + ("shared_memory", "config")


def launch_config(kwargs: dict) -> LaunchConfig:
    """The LaunchConfig of launch(...)'s keywords; an unknown keyword is a TypeError naming it."""
    unknown = [k for k in kwargs if k not in KEYWORDS]
    if unknown:
        raise DSLTypeError(f"launch() got an unexpected keyword argument {unknown[0]!r} (its keywords: "
                           f"{', '.join(KEYWORDS)})", user_location(3))
    config = kwargs.pop("config", None)
    if config is not None:
        if not isinstance(config, LaunchConfig):
            raise DSLTypeError(f"launch(config=...) takes a LaunchConfig, got {type(config).__name__}",
                               user_location(3))
        if kwargs:
            raise DSLTypeError(f"launch(config=...) takes no other keywords (got {', '.join(kwargs)})",
                               user_location(3))
        c = LaunchConfig(**{f.name: getattr(config, f.name) for f in fields(LaunchConfig)})
    else:
        shared = kwargs.pop("shared_memory", None)
        c = LaunchConfig(**kwargs)
        if shared is not None:
            c.smem = shared
    if c.grid is None or c.block is None:
        raise DSLTypeError("launch() needs grid= and block=", user_location(3))
    if c.min_blocks_per_mp is not None and (not isinstance(c.min_blocks_per_mp, int) or isinstance(
            c.min_blocks_per_mp, bool) or c.min_blocks_per_mp < 1):
        raise DSLValueError(f"launch(min_blocks_per_mp=...) is a positive integer known while tracing, got "
                            f"{c.min_blocks_per_mp!r}", user_location(3))
    m = c.max_number_threads
    if m is not None:
        m = list(m) if isinstance(m, (list, tuple)) else [m]
        if not 1 <= len(m) <= 3 or any(not isinstance(x, int) or isinstance(x, bool) or x < 1 for x in m):
            raise DSLValueError(f"launch(max_number_threads=...) is 1 to 3 positive integers known while tracing, got "
                                f"{c.max_number_threads!r}", user_location(3))
        c.max_number_threads = tuple(m + [1] * (3 - len(m)))
    # use_pdl and cooperative may also be Booleans known only at each call: the host layer (kernel_trace.py) reads them.
    for name in ("smem_merge_branch_allocs",):
        if not isinstance(getattr(c, name), bool):
            raise DSLTypeError(f"launch({name}=...) is True or False, got {getattr(c, name)!r}", user_location(3))
    for name in ("launch_completion_event_flags", "programmatic_event_flags",
                 "programmatic_event_trigger_at_block_start"):
        v = getattr(c, name)
        if isinstance(v, bool):
            setattr(c, name, int(v))
        elif not isinstance(v, int):
            raise DSLTypeError(f"launch({name}=...) is an integer known while tracing, got {v!r}", user_location(3))
    if c.fallback_cluster is not None and c.cluster is None:
        raise DSLValueError("launch(fallback_cluster=...) needs cluster= (the preferred cluster shape)",
                            user_location(3))
    return c
