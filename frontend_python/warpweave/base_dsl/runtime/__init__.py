"""`cutlass.base_dsl.runtime`: `cuda`, CuTe DSL's helpers over the CUDA driver bindings (cuda-bindings), and
`jit_arg_adapters`, the registry of JIT argument adapters."""
from . import cuda, jit_arg_adapters

__all__ = ["cuda", "jit_arg_adapters"]
