"""The launch plan of a compiled function: each recorded kernel launch, its parameters and how they are packed
(grid, block and shared memory are expressions of the arguments' symbols, evaluated at each call)."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from ... import _core


@dataclass
class Param:
    kind: str       # "ptr" (jit argument index), "sym" (symbol id), "scalar" (jit argument index)
    source: int
    ir_type: str
    fmt: str        # struct format of the value


@dataclass
class Launch:
    kernel: str
    params: list
    grid: tuple
    block: tuple
    cluster: tuple | None
    smem: Any
    stream: Any
    max_dynamic_smem: int = 0
    predicates: list = field(default_factory=list)  # derived symbols that must all hold (a host `if`'s branch)

    def __post_init__(self):
        static = lambda d: all(isinstance(x, int) for x in d)  # noqa: E731
        self.static_grid = list(self.grid) if static(self.grid) and all(g > 0 for g in self.grid) else None
        self.static_block = list(self.block) if static(self.block) else None


SCALAR_FMT = {"i8": "b", "i16": "h", "i32": "i", "i64": "q", "f16": "e", "f32": "f", "f64": "d", "bf16": "H"}
# A Boolean parameter is a byte whose low bit the kernel reads (kernel_trace.py): packed as struct's bool, 0 or 1
# for any value (an int 2 or a float 0.5 is true, not a byte of low bit 0), on every path that packs it.
BOOL_FMT = "?"


def packer(params):
    """A struct packing the parameters in C layout (each aligned to its size), and each one's offset."""
    fmt, offsets, size = "=", [], 0
    for p in params:
        n = struct.calcsize("=" + p.fmt)
        pad = (-size) % n
        fmt += "x" * pad + p.fmt
        size += pad
        offsets.append(size)
        size += n
    return struct.Struct(fmt), offsets


class DimExpr:
    """A launch dimension read back from the JIT cache (function_cache.py): Python source over the symbols'
    values s<id>, as _core.python_expr writes it."""

    def __init__(self, src: str):
        self.src = src
        self._code = compile(src, "<warpweave launch dimension>", "eval")

    def evaluate(self, env) -> int:
        return int(eval(self._code, {"__builtins__": {}, "min": min, "max": max}, {f"s{k}": v for k, v in env.items()}))


def eval_dim(x, env):
    if isinstance(x, int):
        return x
    if isinstance(x, DimExpr):
        return x.evaluate(env)
    return int(_core.evaluate(x, env))


def dim_source(x) -> str:
    """Python source of a launch dimension over variables s<symbol id> (the generated fast call uses it)."""
    if isinstance(x, int):
        return str(x)
    if isinstance(x, DimExpr):
        return x.src
    return _core.python_expr(x, "s")


# CUDA's portable limit of a thread block cluster: a larger one (16 blocks on Hopper and Blackwell, as their backends
# publish in max_cluster_size) needs its kernel's opt-in, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.
PORTABLE_CLUSTER_BLOCKS = 8
NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14


def has_dynamic_cluster(launch) -> bool:
    """Whether the launch's cluster is computed from the arguments at each call."""
    return bool(launch.cluster) and any(not isinstance(v, int) for v in launch.cluster)


def needs_nonportable_cluster(launch) -> bool:
    """Whether the launch's cluster is larger than CUDA's portable limit (its kernel must opt in before it), or
    may be: a cluster computed at each call where the target allows larger ones."""
    c = launch.cluster
    if has_dynamic_cluster(launch):
        return getattr(launch, "max_cluster_size", 0) > PORTABLE_CLUSTER_BLOCKS
    return bool(c) and c[0] * c[1] * c[2] > PORTABLE_CLUSTER_BLOCKS


def needs_launch_options(launch) -> bool:
    """Whether a launch needs driver launch attributes beyond a cluster (cooperative, programmatic dependent
    launch, a preferred cluster, events): the generated Python fast path passes none; the native path and
    exported C pass them."""
    return bool(getattr(launch, "cooperative", False) or getattr(launch, "pdl", False)
                or getattr(launch, "preferred_cluster", None) or getattr(launch, "launch_completion_event", None)
                or getattr(launch, "programmatic_event", None))


def needs_other_launch_options(launch) -> bool:
    """Whether a launch needs launch attributes beyond a cluster, cooperative and programmatic dependent launch
    (a preferred cluster, events)."""
    return bool(getattr(launch, "preferred_cluster", None) or getattr(launch, "launch_completion_event", None)
                or getattr(launch, "programmatic_event", None))


def launch_flag(launch, name: str, env) -> bool:
    """The launch's cooperative or pdl for a call: fixed when traced, or the value at this call of the derived
    symbol <name>_symbol (a Boolean argument of the jit function given to launch(...))."""
    sid = getattr(launch, name + "_symbol", None)
    return bool(env[sid]) if sid is not None else bool(getattr(launch, name, False))
