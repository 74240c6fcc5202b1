"""cute.testing (also warpweave.testing): timing compiled functions on the GPU, workspaces that defeat the L2
cache, autotuning (autotune_jit, tune: _dsl/tuning/autotune.py), element-type conversion of device tensors, and the error
a kernel's configuration check raises."""
from __future__ import annotations

import math
import statistics
from typing import Callable

from .._dsl.tuning.autotune import CandidateWarning, autotune_jit, tune  # noqa: F401 - public here
from .._dsl.base.errors import DSLValueError, user_location


class CantImplementError(Exception):
    """A kernel cannot be built for the requested configuration (raised by its can_implement-style checks)."""


class JitArguments:
    """The arguments of one call of a compiled function (for workspace rotation in benchmark)."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs


def get_workspace_count(one_workspace_bytes: int, warmup_iterations: int, iterations: int) -> int:
    """How many distinct workspaces a benchmark rotates through so that each call's inputs are not in the L2
    cache: enough to exceed the current device's L2 twice over, at most one per call."""
    from ..utils.hardware_info import HardwareInfo

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
    from .._dsl.registry import compile_only

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
        from .._dsl.values.host_inputs import stream_handle as _stream_handle

        torch_stream = torch.cuda.ExternalStream(_stream_handle(stream))
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



def convert(src, dst):
    """dst = src converted elementwise to dst's element type, on the GPU (tensors of the same shape, e.g. from
    cute.runtime.from_dlpack)."""
    from . import _convert_kernel

    return _convert_kernel.run(src, dst)


# --- the command-line options of a program's tensor initialisation ----------------------------------------------------

def add_tensor_init_args(parser, supports_int_dtypes: bool = False):
    """Adds --init_normal (fill the inputs from a normal distribution instead of small random integers),
    --normal_mean and --normal_std to an argparse parser; supports_int_dtypes: the program also takes integer
    input types (which it initialises with random integers whatever --init_normal says)."""
    parser.add_argument("--init_normal", action="store_true",
                        help="initialise the input tensors from a normal distribution (floating-point inputs)")
    parser.add_argument("--normal_mean", type=float, default=0.0, help="mean of --init_normal's distribution")
    parser.add_argument("--normal_std", type=float, default=1.0,
                        help="standard deviation of --init_normal's distribution (positive)")
    parser.set_defaults(_ww_init_supports_int_dtypes=bool(supports_int_dtypes))
    return parser


def validate_tensor_init_args(args, parser) -> None:
    """parser.error (exit status 2) for options add_tensor_init_args added that cannot be honoured: a standard
    deviation that is not positive, or --init_normal with an integer input type where the program takes none."""
    import math

    std = getattr(args, "normal_std", 1.0)
    if not (isinstance(std, (int, float)) and math.isfinite(std) and std > 0):
        parser.error(f"--normal_std must be a positive number, got {std}")
    if not math.isfinite(getattr(args, "normal_mean", 0.0)):
        parser.error(f"--normal_mean must be finite, got {args.normal_mean}")
    ab = getattr(args, "ab_dtype", None)
    if getattr(args, "init_normal", False) and ab is not None and getattr(ab, "is_integer", False) and \
            not getattr(args, "_ww_init_supports_int_dtypes", False):
        parser.error(f"--init_normal needs floating-point inputs, --ab_dtype is {ab.__name__}")
