"""cute.core: CuTe DSL programs import the core functions and types from here as well
(`from cutlass.cute.core import make_ptr, AddressSpace`); each name is warpweave.cute's own object."""
from __future__ import annotations

from .. import cute as _cute
from .._dsl.values.coordinates import norm_coord

__all__ = [n for n in _cute.__all__ if not n.startswith("_") and hasattr(_cute, n) and
           not isinstance(getattr(_cute, n), type(_cute))]  # the functions and types, not the submodules
globals().update({n: getattr(_cute, n) for n in __all__})


def _pack(x):
    """CuTe DSL packs a Python tuple into its IR shape, stride, coordinate or tile value; here the layout algebra
    takes the tuple itself, with DSL integers read as their values."""
    return norm_coord(x)


# CuTe DSL's names for that packing, which its public examples call (cute.core._pack_shape((128, 64))).
_pack_shape = _pack_stride = _pack_coord = _pack_tile = _pack_int_tuple = _pack
