"""`cutlass.cute._tvm_ffi_args_spec_converter`: the converter from a compiled function's arguments to its TVM FFI
entry's parameters (`_convert_single_arg`, `NumericToTVMFFIDtype`, `AcceptableNumericTypesForScalar`). This name is
the export layer's module itself, so that what a library replaces or extends here is what the entry is built from."""
import sys

from .._dsl.export import tvm_ffi_args

sys.modules[__name__] = tvm_ffi_args
