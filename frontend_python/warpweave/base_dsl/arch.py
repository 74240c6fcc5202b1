"""`cutlass.base_dsl.arch`: `Arch`, the GPU targets by name in a comparable order."""
from .._dsl.registry.arch_enum import Arch

__all__ = ["Arch"]
