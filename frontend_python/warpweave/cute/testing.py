"""cute.testing (also warpweave.testing): assertions in kernels (assert_), timing compiled functions on the GPU,
workspaces that defeat the L2 cache, autotuning (autotune_jit, tune: _dsl/tuning/autotune.py), element-type
conversion of device tensors, and the error a kernel's configuration check raises."""
from __future__ import annotations

import math

from .._dsl.device.assertions import assert_  # noqa: F401 - public here
from .._dsl.tuning.autotune import autotune_jit, tune  # noqa: F401 - public here
from .._dsl.tuning.candidate_search import CandidateWarning  # noqa: F401 - public here
from .._dsl.tuning.benchmark import JitArguments, benchmark, get_workspace_count  # noqa: F401 - public here
from . import convert_kernel


class CantImplementError(Exception):
    """A kernel cannot be built for the requested configuration (raised by its can_implement-style checks)."""


def convert(src, dst):
    """dst = src converted elementwise to dst's element type, on the GPU (tensors of the same shape, e.g. from
    cute.runtime.from_dlpack)."""
    return convert_kernel.run(src, dst)


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
    std = getattr(args, "normal_std", 1.0)
    if not (isinstance(std, (int, float)) and math.isfinite(std) and std > 0):
        parser.error(f"--normal_std must be a positive number, got {std}")
    if not math.isfinite(getattr(args, "normal_mean", 0.0)):
        parser.error(f"--normal_mean must be finite, got {args.normal_mean}")
    ab = getattr(args, "ab_dtype", None)
    if getattr(args, "init_normal", False) and ab is not None and getattr(ab, "is_integer", False) and \
            not getattr(args, "_ww_init_supports_int_dtypes", False):
        parser.error(f"--init_normal needs floating-point inputs, --ab_dtype is {ab.__name__}")
