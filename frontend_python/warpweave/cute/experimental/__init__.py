"""`cutlass.cute.experimental`: CuTe DSL's extension API, kernels written over whole tiles and partitions.

The architecture-neutral part is here: `kernel`, `jit`, `compile`, `allocate`, `partition`, `copy`,
`partition_and_copy`, `dot` (a kernel's global-memory tensor arguments arrive bounded, bounded.py, so its copies
predicate themselves). The operations of one architecture (tensor memory, TMA, the pipelines between them,
`OperationTypeEnum`) are the loaded backends' names `cute_ext.<name>` (warpweave.ext.register_python_name); a
name none offers is an AttributeError naming it. `iket`, CuTe DSL's in-kernel event tracing: its markers
(iket_events.py) leave no code in a kernel compiled outside the IKET profiler, on every target; its other names
are the backends' `iket.<name>`."""
import sys

from ..._dsl.atoms.atoms import namespace
from ..._dsl.call.workspace import AllocationRequirement, QueryDeviceWorkspaceFunc
from . import iket_events
from .bounded import BoundedTensor
from .kernels import claim_parameter, compile, current_kernel, jit, kernel  # noqa: A004
from .ops import allocate, copy, dot, partition, partition_and_copy, register_allocator

iket = namespace(__name__ + ".iket", "iket", {n: getattr(iket_events, n) for n in iket_events.__all__})
sys.modules[iket.__name__] = iket
# host_runtime: the compiled functions' auxiliary functions (a kernel's device workspace), then the backends' names
host_runtime = namespace(__name__ + ".host_runtime", "cute_ext.host_runtime",
                         {"QueryDeviceWorkspaceFunc": QueryDeviceWorkspaceFunc,
                          "AllocationRequirement": AllocationRequirement})
sys.modules[host_runtime.__name__] = host_runtime
_backend_names = namespace(__name__, "cute_ext")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_backend_names, name)


__all__ = ["iket", "host_runtime", "kernel", "jit", "compile", "allocate", "partition", "copy",
           "partition_and_copy", "dot", "BoundedTensor", "register_allocator", "claim_parameter", "current_kernel"]
