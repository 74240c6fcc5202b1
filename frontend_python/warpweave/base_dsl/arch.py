"""`cutlass.base_dsl.arch`: `Arch`, the GPU architectures of the loaded backends (registry/arch_enum.py)."""
from .._dsl.registry.arch_enum import arch_enum

Arch = arch_enum()

__all__ = ["Arch"]
