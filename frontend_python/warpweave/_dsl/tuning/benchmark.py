"""Timing compiled functions on the GPU (cute.testing.benchmark): CUDA events around each call, rotating through
workspaces so that the inputs are not served from the L2 cache."""
from __future__ import annotations

import math
import statistics
from typing import Callable

from ..base.errors import DSLValueError, user_location
from ..values.host_inputs import stream_handle
from ..registry import compile_only
from ..registry.device_properties import HardwareInfo


class JitArguments:
    """The arguments of one call of a compiled function (for workspace rotation in benchmark)."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.scope = []

    def add_to_scope(self, objects):
        """Keeps `objects` alive as long as these arguments (the tensors that pointers among them point into)."""
        self.scope.extend(objects)


def get_workspace_count(one_workspace_bytes: int, warmup_iterations: int, iterations: int) -> int:
    """How many distinct workspaces a benchmark rotates through so that each call's inputs are not in the L2
    cache: enough to exceed the current device's L2 twice over, at most one per call."""
    if one_workspace_bytes <= 0:
        raise DSLValueError(f"get_workspace_count: one_workspace_bytes must be positive, got {one_workspace_bytes}",
                            user_location(2))
    l2 = HardwareInfo().get_l2_cache_size_in_bytes()
    need = math.ceil(2 * l2 / one_workspace_bytes) + 1
    return max(1, min(need, warmup_iterations + iterations))


def benchmark(callable_: Callable, *, workspace_generator: Callable | None = None, workspace_count: int = 1,
              warmup_iterations: int = 10, iterations: int = 100, stream=None, use_cuda_graphs: bool = False,
              kernel_arguments: JitArguments | None = None) -> float:
    """Median time of one call in microseconds, measured with CUDA events (on `stream`, default torch's current
    one), rotating workspaces so that inputs are not all served from the L2 cache. kernel_arguments gives one
    fixed set of arguments instead of a workspace_generator. In a compile-only run the callable is called once (its
    launches are not made) and nothing is timed: NaN."""
    if workspace_generator is not None and kernel_arguments is not None:
        raise DSLValueError("benchmark: give workspace_generator or kernel_arguments, not both", user_location(2))
    if use_cuda_graphs:
        raise DSLValueError("benchmark(use_cuda_graphs=True): CUDA graph capture is not supported", user_location(2))
    if compile_only.current() is not None:
        # One call, so that the launches it would make are reached (and recorded as not made); nothing is timed.
        w = kernel_arguments or (workspace_generator() if workspace_generator is not None else JitArguments())
        callable_(*w.args, **w.kwargs)
        print("[warpweave run] compile-only: benchmark not run")
        return float("nan")
    import torch

    if workspace_generator is not None:
        workspaces = [workspace_generator() for _ in range(max(1, workspace_count))]
    else:
        workspaces = [kernel_arguments or JitArguments()]
    torch_stream = None
    if stream is not None:
        torch_stream = torch.cuda.ExternalStream(stream_handle(stream))
    for i in range(warmup_iterations):
        w = workspaces[i % len(workspaces)]
        callable_(*w.args, **w.kwargs)
    torch.cuda.synchronize()
    times = []
    for i in range(iterations):
        w = workspaces[i % len(workspaces)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(torch_stream)
        callable_(*w.args, **w.kwargs)
        end.record(torch_stream)
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)
