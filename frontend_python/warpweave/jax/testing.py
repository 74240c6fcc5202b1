"""cutlass.jax.testing: arrays for trying cutlass_call."""
import jax
import jax.numpy as jnp

from .._dsl.base.errors import DSLTypeError, user_location


def create_tensor(shape, dtype=jnp.float32, key=None):
    """An array of `shape` and `dtype` with random values from `key` (default jax.random.key(0)): standard normal
    floats, small integers (-8..8), or random booleans."""
    key = jax.random.key(0) if key is None else key
    dtype = jnp.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.floating):
        return jax.random.normal(key, shape, jnp.float32).astype(dtype)
    if jnp.issubdtype(dtype, jnp.integer):
        lo = 0 if jnp.issubdtype(dtype, jnp.unsignedinteger) else -8
        return jax.random.randint(key, shape, lo, 9).astype(dtype)
    if dtype == jnp.bool_:
        return jax.random.bernoulli(key, 0.5, shape)
    raise DSLTypeError(f"create_tensor: no random values for the dtype {dtype}", user_location())


__all__ = ["create_tensor"]
