"""`cutlass.cute.experimental`: CuTe DSL's extension API, kernels written over whole tiles and partitions
(`kernel`, `jit`, `compile`, `allocate`, `partition`, `copy`, `partition_and_copy`, `dot`), and `iket`, its in-kernel
event tracing. A kernel's global-memory tensor arguments arrive bounded (bounded.py), so its copies predicate
themselves. The architecture's operations (tensor memory, TMA, the pipelines between them) come from the loaded
backends; `iket`'s names too (`iket.<name>` in their manifests and Python packages); a name none offers is an
AttributeError naming it."""
import sys

from ..._dsl.atoms.atoms import namespace
from .bounded import BoundedTensor
from .kernels import compile, jit, kernel  # noqa: A004
from .ops import allocate, copy, dot, partition, partition_and_copy, register_allocator

iket = namespace(__name__ + ".iket", "iket")
sys.modules[iket.__name__] = iket

__all__ = ["iket", "kernel", "jit", "compile", "allocate", "partition", "copy", "partition_and_copy", "dot",
           "BoundedTensor", "register_allocator"]
