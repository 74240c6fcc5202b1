"""warpweave.cute: CuTe's layouts, tensors, atoms and kernels in Python (CuTe DSL's module layout).

``import warpweave.cute as cute`` gives CuTe DSL's names.
"""
import importlib

from .layout import *  # noqa: F401,F403
from .layout import __all__ as _layout_all
from .._dsl.atoms.copy import (  # noqa: F401
    CopyAtom, TiledCopy, ThrCopy, make_copy_atom, make_tiled_copy, make_tiled_copy_A, make_tiled_copy_B,
    make_tiled_copy_C, make_tiled_copy_D, make_tiled_copy_S, make_tiled_copy_tv, make_tiled_copy_C_atom,
    make_cotiled_copy,
)
from .._dsl.atoms.element_copy import autovec_copy, basic_copy, basic_copy_if, copy, prefetch  # noqa: F401
from .._dsl.atoms.mma import MmaAtom, ThrMma, TiledMma, gemm, make_mma_atom, make_tiled_mma, mma_atom_call  # noqa: F401
from .._dsl.call.jit import JitCompiledFunction, compile, jit, kernel  # noqa: F401,A004
from .._dsl.device.smem import struct  # noqa: F401
from .._dsl.values.tensor import (  # noqa: F401
    Pointer, Tensor, TensorSSA, domain_offset, elem_less, full, full_like, local_tile, make_fragment,
    make_fragment_like, make_identity_tensor, make_rmem_tensor, make_tensor, recast_ptr, size_in_bytes, zeros_like,
)
from .._dsl.device.arch import print_tensor, printf  # noqa: F401
from .._dsl.device.extern_call import cute_extern as extern  # noqa: F401
from .._dsl.values.tensor import (  # noqa: F401
    local_partition, make_rmem_tensor_like, recast_tensor, where,
)
from .._dsl.device.reduction import ReductionOp, all_, any_  # noqa: F401
from .._dsl.values.assume import assume  # noqa: F401
from .._dsl.values.numeric import NumericMeta, as_numeric  # noqa: F401
from .layout_image_mask import make_layout_image_mask  # noqa: F401
from .tuple_modes import append_ones, dice, prepend_ones  # noqa: F401
from .leading_dim import leading_dim  # noqa: F401
from .._dsl.device.device_pointer import make_ptr  # noqa: F401
from .._dsl.device.fast_divmod import FastDivmodDivisor, fast_divmod_create_divisor  # noqa: F401
from .._dsl.values.numeric import NUMERIC_EXPORTS as _numeric_exports
from .._dsl.values import numeric as _numeric
from . import math  # noqa: F401
# CuTe DSL programs also call the transcendental functions at cute's top level (cute.exp, cute.rsqrt, cute.erf, ...):
# the same functions as cute.math's.
from .math import (  # noqa: F401
    acos, acosh, asin, asinh, atan, atan2, atanh, cbrt, cos, cosh, erf, erfc, exp, exp2, expm1, log, log1p, log2,
    log10, rsqrt, sin, sinh, sqrt, tan, tanh,
)
_TOP_LEVEL_MATH = ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "cos", "cosh", "erf", "erfc",
                   "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "rsqrt", "sin", "sinh", "sqrt", "tan",
                   "tanh"]

globals().update({_n: getattr(_numeric, _n) for _n in _numeric_exports})  # cute.Int32 as well as cutlass.Int32
from . import arch, nvgpu, runtime  # noqa: F401
from . import export_entries as _export_entries  # noqa: F401 - attaches export_to_c and --enable-tvm-ffi


def __getattr__(name):
    # cute.testing (benchmarking, autotuning: statistics, logging, threads) is imported when first named
    if name in ("testing", "typing", "tensor", "experimental", "core", "atom"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from .. import profile  # noqa: F401 - cute.profile.region(...): warpweave.profile
from .._dsl.base.compile_options import (  # noqa: F401
    EnableAssertions, EnableTVMFFI, GenerateLineInfo, GPUArch, KeepCUBIN, KeepPTX, KeepSASS, OptLevel, PtxasOptions,
)
from .._dsl.values.runtime import AddressSpace, sym_int, sym_int32, sym_int64  # noqa: F401

# Annotation types, as in CuTe DSL: a parameter annotated with one takes Python numbers as compile-time values
# (values/layout_annotations.py).
from .._dsl.values.layout_annotations import Coord, IntTuple, Shape, Stride, Tile, Tiler, XTuple  # noqa: F401,E501

__all__ = list(_layout_all) + [
    "CopyAtom", "TiledCopy", "ThrCopy", "copy", "prefetch", "autovec_copy", "basic_copy", "basic_copy_if", "make_copy_atom", "make_tiled_copy",
    "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_S", "make_tiled_copy_D",
    "make_tiled_copy_tv", "make_tiled_copy_C_atom", "make_cotiled_copy", "MmaAtom", "TiledMma", "ThrMma", "gemm", "make_mma_atom", "make_tiled_mma", "mma_atom_call",
    "JitCompiledFunction", "compile", "jit", "kernel", "struct", "Pointer", "Tensor", "TensorSSA", "domain_offset",
    "elem_less", "full", "full_like", "local_tile", "make_fragment", "make_fragment_like", "make_identity_tensor",
    "make_rmem_tensor", "make_tensor", "recast_ptr", "size_in_bytes", "zeros_like", "printf", "arch", "nvgpu",
    "runtime", "testing", "dice", "leading_dim", "append_ones", "prepend_ones", "make_ptr", "all_", "any_", "Shape", "Coord", "IntTuple", "Stride", "Tile", "EnableAssertions", "EnableTVMFFI", "GenerateLineInfo",
    "GPUArch", "KeepCUBIN", "KeepPTX", "KeepSASS", "OptLevel", "PtxasOptions", "AddressSpace", "sym_int", "sym_int32", "sym_int64", "local_partition",
    "make_rmem_tensor_like", "print_tensor", "recast_tensor", "where", "ReductionOp", "assume", "make_layout_image_mask",
    "math", "NumericMeta", "as_numeric", "extern", "XTuple", "Tiler", "FastDivmodDivisor", "fast_divmod_create_divisor"] + list(_numeric_exports) + _TOP_LEVEL_MATH

