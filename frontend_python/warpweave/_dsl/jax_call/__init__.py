"""cutlass.jax: @cute.jit functions called as operations of JAX programs (cutlass_call), the tensors JAX arrays
are seen as (TensorSpec), and the element types of both. The only layer that imports jax; it stands above the call
path and the TVM FFI export that it is built on."""
