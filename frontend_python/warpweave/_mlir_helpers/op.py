"""`cutlass._mlir_helpers.op`: `dsl_user_op`, the decorator of functions that write IR (taking `loc=` / `ip=`), and
which source files are the DSL's own (`_is_framework_frame`): their frames are skipped when an operation is given
the user's location. Libraries written for CuTe DSL read and reset the folders it names (`_DSL_PACKAGE_ROOT(S)`,
set at the first question) to tell the DSL's functions from their own."""
import functools
import os

from .._dsl.base.errors import library_dirs
from .._dsl.base.markers import dsl_user_op

__all__ = ["dsl_user_op"]

_DSL_PACKAGE_ROOT = ""
_DSL_PACKAGE_ROOTS = None


@functools.lru_cache(maxsize=4096)
def _is_framework_frame(filename: str) -> bool:
    """Whether `filename` lies in the DSL's own folders (the package, its backends' and pipelines' Python)."""
    global _DSL_PACKAGE_ROOT, _DSL_PACKAGE_ROOTS
    if _DSL_PACKAGE_ROOTS is None:
        roots = tuple(d.rstrip(os.sep) for d in library_dirs())
        _DSL_PACKAGE_ROOT, _DSL_PACKAGE_ROOTS = roots[0], roots
    if not filename:
        return False
    path = os.path.abspath(filename)
    return any(path == r or path.startswith(r + os.sep) for r in _DSL_PACKAGE_ROOTS)
