"""warpweave.testing (CuTe DSL's cutlass.testing): the same helpers as warpweave.cute.testing."""
from .cute.testing import (CantImplementError, JitArguments, benchmark, convert,  # noqa: F401
                           get_workspace_count)

__all__ = ["CantImplementError", "JitArguments", "benchmark", "convert", "get_workspace_count"]
