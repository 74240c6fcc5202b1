"""The export layer's entries into the call path, attached in the facade when warpweave.cute is imported: a compiled
function's export_to_c (export.py) and what cute.compile(..., options="--enable-tvm-ffi") returns
(tvm_ffi_call.py). The call layer holds their places without reaching up; each loads its module when first
used, as those run the C compiler (subprocess, tempfile), which `import warpweave` leaves unloaded."""
from __future__ import annotations

from .._dsl.call import jit
from .._dsl.call.compiled_function import JitCompiledFunction


def export_to_c(self, file_path=".", file_name=None, function_prefix=None):
    """Writes {file_path}/{file_name}.h and .o: this function for C and C++ programs (export.py)."""
    from .._dsl.export.export import export_to_c as export

    if file_name is None:
        file_name = self.jit_function.fn.__name__
    return export(self, file_path, file_name, function_prefix)


def tvm_ffi_function(compiled, values):
    """The compiled function called through TVM FFI (tvm_ffi_call.wrap), traced with these argument values."""
    from .._dsl.export.tvm_ffi_call import wrap

    return wrap(compiled, values)


JitCompiledFunction.export_to_c = export_to_c
jit.tvm_ffi_wrapper = tvm_ffi_function
