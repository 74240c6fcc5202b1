"""`cutlass._mlir_helpers.op`: `dsl_user_op`, the decorator of functions that write IR (taking `loc=` / `ip=`), and
which source files are the DSL's own, whose frames are never the user's line of an op.

`_DSL_PACKAGE_ROOT` is the folder of the DSL's package and `_DSL_PACKAGE_ROOTS` every folder of DSL code (the
package, then the backends' Python packages and libraries registered with it); both are worked out at the first
`_is_framework_frame` question, which a program may ask again after resetting them ("" and None) and clearing its
cache. They are names CuTe DSL libraries read (QuACK's cache keys leave out functions defined there)."""
from __future__ import annotations

import functools
import os

from .._dsl.base.errors import library_dirs
from .._dsl.base.markers import dsl_user_op

_DSL_PACKAGE_ROOT = ""
_DSL_PACKAGE_ROOTS = None


def _roots() -> tuple:
    global _DSL_PACKAGE_ROOT, _DSL_PACKAGE_ROOTS
    if _DSL_PACKAGE_ROOTS is None:
        roots = library_dirs()
        _DSL_PACKAGE_ROOT = roots[0].rstrip(os.sep)
        _DSL_PACKAGE_ROOTS = tuple(r.rstrip(os.sep) for r in roots)
    return _DSL_PACKAGE_ROOTS


@functools.lru_cache(maxsize=4096)
def _is_framework_frame(filename: str) -> bool:
    """Whether code of file `filename` is the DSL's own (in one of `_DSL_PACKAGE_ROOTS`)."""
    path = os.path.abspath(filename) if filename else ""
    return any(path == r or path.startswith(r + os.sep) for r in _roots())


__all__ = ["dsl_user_op"]
