"""`cutlass.base_dsl.tvm_ffi_builder`: `spec`, the parameters of a TVM FFI entry (what the caller passes for each
argument of a function compiled with options="--enable-tvm-ffi"), which a library's argument converter returns."""
from ..._dsl.export import tvm_ffi_spec as spec

__all__ = ["spec"]
