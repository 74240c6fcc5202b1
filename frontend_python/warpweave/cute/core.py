"""cute.core: CuTe DSL programs import the core functions and types from here as well
(`from cutlass.cute.core import make_ptr, AddressSpace`); each name is warpweave.cute's own object."""
from __future__ import annotations

from .. import cute as _cute

__all__ = [n for n in _cute.__all__ if not n.startswith("_") and hasattr(_cute, n) and
           not isinstance(getattr(_cute, n), type(_cute))]  # the functions and types, not the submodules
globals().update({n: getattr(_cute, n) for n in __all__})
