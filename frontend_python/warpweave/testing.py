"""warpweave.testing (CuTe DSL's cutlass.testing): the same helpers as warpweave.cute.testing."""
from .cute.testing import (  # noqa: F401
    CandidateWarning, CantImplementError, JitArguments, autotune_jit, benchmark, convert, get_workspace_count, tune,
    add_tensor_init_args, validate_tensor_init_args,
)

__all__ = ["CandidateWarning", "CantImplementError", "JitArguments", "autotune_jit", "benchmark", "convert",
           "get_workspace_count", "tune", "add_tensor_init_args", "validate_tensor_init_args"]
