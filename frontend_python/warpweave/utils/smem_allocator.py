"""`cutlass.utils.smem_allocator`: the module CuTe DSL keeps its shared-memory allocator in; programs import
SmemAllocator (and the capacity of the target) by that path. Both are the objects of warpweave.utils."""
from .._dsl.device.smem import SmemAllocator  # noqa: F401
from .hardware_info import get_smem_capacity_in_bytes  # noqa: F401

__all__ = ["SmemAllocator", "get_smem_capacity_in_bytes"]
