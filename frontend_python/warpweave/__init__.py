"""warpweave: an open kernel-authoring stack for NVIDIA GPUs in the style of CuTe DSL.

``import warpweave as cutlass`` and ``import warpweave.cute as cute`` give CuTe DSL's names.
"""
import importlib
import os
import site
import sys

from . import _core
from ._version import __version__  # noqa: F401


def _tell_core_where_python_keeps_cuda_tools():
    """pip's CUDA wheels (nvJitLink, nvdisasm) live in this environment's site-packages; a venv's interpreter
    resolves to the base interpreter, so the core cannot find them from /proc/self/exe alone."""
    dirs = [os.path.join(sys.prefix, "bin")] + list(site.getsitepackages()) + [site.getusersitepackages()]
    _core.set_search_dirs([d for d in dirs if os.path.isdir(d)])


_tell_core_where_python_keeps_cuda_tools()

from ._dsl.tracing.control_flow import const_expr, dsl_range as range, range_constexpr  # noqa: E402,A001
from ._dsl.tracing.functional import for_generate, yield_out  # noqa: E402,F401
from ._dsl.base.errors import CompilationError, DSLError  # noqa: E402
from ._dsl.call.jit import Constexpr  # noqa: E402
from ._dsl.values.numeric import (  # noqa: E402
    BFloat16, Boolean, Float, Float8E4M3FN, Float8E5M2, Float16, Float32, Float64, Int8, Int16, Int32, Int64,
    Integer, Numeric, TFloat32, Uint8, Uint16, Uint32, Uint64, dtype,
)
from ._dsl.values.ir_vector import select_  # noqa: E402  (cutlass.select_(cond, a, b): cond ? a : b)
from ._dsl.values.numeric import (  # noqa: E402
    Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Float8E4M3, Float8E8M0FNU, Int4, Int128, Uint4,
)
from ._dsl.device.math import (
    max, min,
)  # noqa: E402,A004  (cutlass.max / cutlass.min: variadic, DSL and Python values)
from ._dsl.registry.target import Target, select_target as current_target  # noqa: E402
from . import cute, utils  # noqa: E402,F401
from ._dsl.base.markers import dsl_user_op, dynamic_expr  # noqa: E402,F401
from ._dsl.values.value_tree import extract_mlir_values, new_from_mlir_values  # noqa: E402,F401
from ._dsl.values.tensor import Pointer, Tensor  # noqa: E402,F401 - CuTe DSL names them here too
from ._dsl.values.runtime import AddressSpace  # noqa: E402,F401
from ._dsl.values.ir_vector import Vector  # noqa: E402,F401
from ._dsl.device.array import Array, inttoptr, make_array_view, print_nd_vector  # noqa: E402,F401
from ._dsl.base.constexpr import GridConstant  # noqa: E402,F401
from ._dsl.call.arg_adapters import JitArgAdapterRegistry, register_jit_arg_adapter  # noqa: E402,F401
from ._dsl.values.address_swizzle import Swizzle  # noqa: E402,F401
from ._dsl.values.packed_floats import Float4E2M1FNx2, Float6E2M3FNx4, Float6E3M2FNx4  # noqa: E402,F401
from ._dsl.values.ir_vector import full  # noqa: E402,F401 - cutlass.full is cutlass.vector.full
# What values do in upper layers is registered by these modules at their import (values/hooks.py): before any trace.
from ._dsl.device import math as _device_math, reduction as _reduction  # noqa: E402,F401
from ._dsl.host import host_branch as _host_branch, host_guards as _host_guards, host_loop as _host_loop  # noqa: E402,F401,E501
from ._dsl.host import host_ir as _host_ir, host_values as _host_values  # noqa: E402,F401
from ._dsl.values import symint_operators as _symint_operators  # noqa: E402,F401 - `n > 0`, `n ^ s` of an extent

# Submodules imported when first named (cutlass.torch does not import torch until it is used, ...).
_LAZY_SUBMODULES = ("base_dsl", "cuda", "cutlass_dsl", "experimental", "migrate", "pipeline", "runtime", "testing",
                    "torch", "vector")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "target_version":  # needs ctypes, which `import warpweave` does not load
        return importlib.import_module(f"{__name__}._dsl.base.cuda_version").target_version
    if name == "CUDA_VERSION":  # the toolchain's version (.major, .minor), asked of it when first named
        return importlib.import_module(f"{__name__}._dsl.base.cuda_version").cuda_version_object()
    if name == "Layout":  # CuTe DSL names the layout type here too (annotations: `layout: cutlass.Layout`)
        return cute.Layout
    raise AttributeError(f"module 'warpweave' has no attribute {name!r}")
from ._dsl.registry.backend_python import install_finder as _install_finder  # noqa: E402

_install_finder()  # backends' public module names (warpweave.utils.hopper_helpers, ...) import as modules

__all__ = ["cute", "utils", "current_target", "Target", "Constexpr", "range", "range_constexpr", "const_expr", "dtype", "Numeric", "Integer", "Float",
           "Boolean", "Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16", "Uint32", "Uint64", "Float16", "BFloat16",
           "TFloat32", "Float32", "Float64", "Float8E4M3FN", "Float8E5M2", "DSLError", "CompilationError",
           "Float4E2M1FN", "Float6E2M3FN", "Float6E3M2FN", "Float8E4M3", "Float8E8M0FNU", "Int4", "Uint4", "Int128", "max", "min",
           "select_"]
