"""cute.runtime: host-side tensors, pointers and streams for @cute.jit functions: from_dlpack, make_ptr, and,
for compiling without memory or a GPU, make_fake_tensor, make_fake_compact_tensor and make_fake_stream;
load_module for functions exported with export_to_c, and find_runtime_libraries, the libraries to link an exported
object into a shared library with."""
from .._dsl.values.runtime import (  # noqa: F401
    AddressSpace, FakeStream, RuntimePointer, RuntimeTensor, SymbolicInt, from_dlpack, make_fake_compact_tensor,
    make_fake_stream, make_fake_tensor, make_ptr, sym_int, sym_int32, sym_int64,
)

Pointer = RuntimePointer  # what make_ptr returns: the annotation of a pointer argument (CuTe DSL's runtime Pointer)


def __getattr__(name):
    # load_module (exported_module: ctypes, subprocess, tempfile) is imported when first named, not with cute
    if name in ("load_module", "find_runtime_libraries"):
        from .._dsl.export import exported_module

        return getattr(exported_module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AddressSpace", "FakeStream", "RuntimePointer", "RuntimeTensor", "SymbolicInt", "from_dlpack",
           "find_runtime_libraries", "load_module", "Pointer", "make_fake_compact_tensor", "make_fake_stream", "make_fake_tensor", "make_ptr", "sym_int", "sym_int32",
           "sym_int64"]
