"""`cutlass.base_dsl.ffi`: external device functions (`extern`, `BitCode`), as CuTe DSL's libraries declare their
device APIs (`@extern(source=BitCode("lib.bc"))`): _dsl/device/extern_call.py."""
from .._dsl.device.extern_call import (FFI, BitCode, ExternCallHandler, default_name_mangler, extern,  # noqa: F401
                                       mangle)

__all__ = ["extern", "FFI", "BitCode", "mangle"]
