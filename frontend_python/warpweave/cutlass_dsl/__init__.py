"""`cutlass.cutlass_dsl`: the names CuTe DSL's extensions import from it: @dsl_user_op, `T` (MLIR types by short
name), the numeric types, which make numbers of IR values (`Int32(v)`) and give theirs (`x.ir_value()`), the
IR-values protocol (`extract_mlir_values`, `new_from_mlir_values`, `get_mlir_types`), control flow in functional
form (`if_generate`, `while_generate` / `yield_out`, `and_`, `or_`, `not_`), `BaseDSL` (also `CuTeDSL`), the running
DSL, `Arch`, `JitCompiledFunction` (what cute.compile returns), and `target_version` (as `cutlass.target_version`: QuACK's nvfp4 helpers import it from here)."""
import importlib
from .._dsl.base.errors import DSLCudaRuntimeError, DSLRuntimeError  # noqa: F401 - CuTe DSL programs import both
from .._dsl.base.constexpr import Constexpr
from .._dsl.base.markers import dsl_user_op
from .._dsl.call.compiled_function import JitCompiledFunction
from .._dsl.device.math import max, min  # noqa: A004
from .._dsl.tracing.control_flow import const_expr
from .._dsl.tracing.functional import and_, for_generate, if_generate, not_, or_, while_generate, yield_out
from .._dsl.values.value_tree import extract_mlir_values, get_mlir_types, new_from_mlir_values
from .._dsl.values.numeric import (BFloat16, Boolean, Float, Float16, Float32, Float64, Int8, Int16, Int32, Int64,
                                   Integer, Numeric, NumericMeta, TFloat32, Uint8, Uint16, Uint32, Uint64)
from .._mlir.extras import types as T
from ..base_dsl import BaseDSL

CuTeDSL = BaseDSL  # CuTe DSL's name of its DSL class, whose _get_dsl() libraries reach through

__all__ = ["Arch", "BFloat16", "BaseDSL", "Boolean", "Constexpr", "CuTeDSL", "DSLCudaRuntimeError", "Float", "Float16", "Float32", "Float64", "Int8",
           "Int16", "Int32", "Int64", "Integer", "JitCompiledFunction", "Numeric", "NumericMeta", "T", "TFloat32", "Uint8", "Uint16",
           "Uint32", "Uint64", "and_", "const_expr", "dsl_user_op", "extract_mlir_values", "get_mlir_types",
           "for_generate", "if_generate", "max", "min", "new_from_mlir_values", "not_", "or_", "while_generate", "yield_out"]


def __getattr__(name):
    if name == "Arch":  # made of the loaded backends' targets: loading them waits until it is asked for
        return importlib.import_module("warpweave.base_dsl.arch").Arch
    if name == "target_version":  # needs ctypes, which importing this module does not load
        return importlib.import_module("warpweave._dsl.base.cuda_version").target_version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
