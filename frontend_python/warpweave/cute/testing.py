"""cute.testing: timing compiled functions on the GPU."""
from __future__ import annotations

import statistics
from typing import Callable


class JitArguments:
    """The arguments of one call of a compiled function (for workspace rotation in benchmark)."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs


def benchmark(callable_: Callable, *, workspace_generator: Callable | None = None, workspace_count: int = 1,
              warmup_iterations: int = 10, iterations: int = 100, stream=None, use_cuda_graphs: bool = False) -> float:
    """Median time of one call in microseconds, measured with CUDA events, rotating workspaces so that inputs are
    not all served from the L2 cache."""
    import torch

    workspaces = [workspace_generator() for _ in range(workspace_count)] if workspace_generator else [JitArguments()]
    for i in range(warmup_iterations):
        w = workspaces[i % len(workspaces)]
        callable_(*w.args, **w.kwargs)
    torch.cuda.synchronize()
    times = []
    for i in range(iterations):
        w = workspaces[i % len(workspaces)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        callable_(*w.args, **w.kwargs)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)
