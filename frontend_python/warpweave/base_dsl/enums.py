"""`cutlass.base_dsl.enums`: `Arch` (as `base_dsl.arch` gives it) and the memory spaces."""
from .._dsl.values.runtime import AddressSpace
from .arch import Arch

__all__ = ["AddressSpace", "Arch"]
