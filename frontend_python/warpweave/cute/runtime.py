"""cute.runtime: host-side tensors, pointers and streams for @cute.jit functions: from_dlpack, make_ptr, and,
for compiling without memory or a GPU, make_fake_tensor, make_fake_compact_tensor and make_fake_stream."""
from .._dsl.runtime import (AddressSpace, FakeStream, RuntimePointer, RuntimeTensor, SymbolicInt,  # noqa: F401
                            from_dlpack, make_fake_compact_tensor, make_fake_stream, make_fake_tensor, make_ptr,
                            sym_int, sym_int32, sym_int64)

__all__ = ["AddressSpace", "FakeStream", "RuntimePointer", "RuntimeTensor", "SymbolicInt", "from_dlpack",
           "make_fake_compact_tensor", "make_fake_stream", "make_fake_tensor", "make_ptr", "sym_int", "sym_int32",
           "sym_int64"]
