"""`cutlass.cute.tensor`: the tensor classes by the names CuTe DSL's module gives them (`_Tensor`, the memory-backed
tensor; `TensorSSA`, a tensor's loaded value) and the layout algebra the module re-exports. Libraries patch methods
onto these classes (QuACK's `t[:, ...]` indexing and `t.to(dtype)`), so they are the very classes kernels' tensors
are, not copies."""
from .._dsl.values.tensor import (Tensor, TensorSSA, full, full_like, make_fragment, make_fragment_like,  # noqa: F401
                                  make_identity_tensor, make_rmem_tensor, make_rmem_tensor_like, make_tensor,
                                  recast_tensor, zeros_like)
from .layout import *  # noqa: F401,F403

_Tensor = Tensor

__all__ = ["Tensor", "TensorSSA", "full", "full_like", "make_fragment", "make_fragment_like", "make_identity_tensor",
           "make_rmem_tensor", "make_rmem_tensor_like", "make_tensor", "recast_tensor", "zeros_like"]
