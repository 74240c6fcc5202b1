"""cutlass.jax: CuTe DSL functions inside JAX programs. cutlass_call makes a @cute.jit function an operation of a
jax.jit computation (warpweave/_dsl/jax_call/cutlass_call.py says how); TensorSpec says how each array is seen.
Importing it imports jax; `import warpweave` does not."""
import importlib.util

if importlib.util.find_spec("jax") is None:
    raise ImportError("cutlass.jax needs JAX: pip install jax (warpweave's [jax] extra adds jax-tvm-ffi, which runs "
                      "cutlass_call's kernels)", name="jax")

from .. import cute as _cute  # noqa: F401,E402 - attaches --enable-tvm-ffi, which cutlass_call compiles with
from .._dsl.jax_call.cutlass_call import CutlassCall, cutlass_call, get_export_disabled_safety_checks  # noqa: E402
from .._dsl.jax_call.tensor_spec import TensorSpec, cutlass_to_jax_dtype, jax_to_cutlass_dtype  # noqa: E402
from . import testing  # noqa: F401,E402

__all__ = ["CutlassCall", "TensorSpec", "cutlass_call", "cutlass_to_jax_dtype", "get_export_disabled_safety_checks",
           "jax_to_cutlass_dtype", "testing"]
