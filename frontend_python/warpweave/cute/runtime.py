"""cute.runtime: host-side tensors for @cute.jit functions."""
from .._dsl.runtime import RuntimeTensor, from_dlpack, make_fake_tensor  # noqa: F401
