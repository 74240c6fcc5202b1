"""A compiled function's device workspace (device/workspace.py): how much a call needs, and the trailing argument
that passes it.

When a kernel of the function asked for workspace while traced, the compiled function takes one more argument
than the jit function: a global-memory buffer (a tensor, e.g. from_dlpack of a torch uint8 tensor, or any object
with a data pointer) of at least the size QueryDeviceWorkspaceFunc answers for the same arguments, 64-byte
aligned. It is the kernels' scratch memory during the call: the same buffer serves the call's launches one after
another (they run in stream order), and its contents need not be initialised."""
from __future__ import annotations

from typing import NamedTuple

from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..device.workspace import ALIGN, ARGUMENT
from .arg_kind import ArgPlan, CArg, ExportOnlyHandle


class AllocationRequirement(NamedTuple):
    """The device memory a call needs: size_in_bytes, aligned to alignment bytes."""
    size_in_bytes: int
    alignment: int


class QueryDeviceWorkspaceFunc:
    """compiled.get_aux_func(QueryDeviceWorkspaceFunc, kernel=k): a function of the compiled function's own
    arguments (without the workspace) answering the AllocationRequirement of the workspace a call with them passes
    (of kernel k's launches alone when given; zero bytes when none asked for any)."""

    def __init__(self, compiled, kernel=None):
        self.compiled = compiled
        self.function = None if kernel is None else _function_name(kernel)
        if self.function is not None and not any(getattr(l, "function", None) == self.function
                                                 for l in compiled.launches):
            raise DSLValueError(f"QueryDeviceWorkspaceFunc: the compiled function launches no kernel "
                                f"{self.function}", user_location(3))

    def __call__(self, *args, **kwargs) -> AllocationRequirement:
        return AllocationRequirement(needed_bytes(self.compiled.launch_grids(args, kwargs), self.function), ALIGN)

    def __repr__(self):
        return f"QueryDeviceWorkspaceFunc({self.compiled!r}{', kernel ' + self.function if self.function else ''})"


AUX_FUNCTIONS = (QueryDeviceWorkspaceFunc,)


def aux_function(compiled, kind, **kwargs):
    """compiled.get_aux_func(kind, ...): the auxiliary function `kind` of the compiled function."""
    if kind not in AUX_FUNCTIONS:
        raise DSLTypeError(f"get_aux_func: the auxiliary functions are {', '.join(k.__name__ for k in AUX_FUNCTIONS)}"
                           f", got {kind!r}", user_location(3))
    return kind(compiled, **kwargs)


def _function_name(kernel) -> str:
    k = getattr(kernel, "kernel", kernel)   # a @kernel method bound to its object
    fn = getattr(k, "fn", None)
    if fn is None:
        raise DSLTypeError(f"QueryDeviceWorkspaceFunc: kernel= is a @cute.kernel (or @cute.experimental.kernel) "
                           f"function, got {kernel!r}", user_location(4))
    return f"{fn.__module__}.{fn.__qualname__}"


def takes_workspace(compiled) -> bool:
    return any(getattr(l, "workspace", 0) for l in compiled.launches)


def needed_bytes(launch_grids, function=None) -> int:
    """The workspace a call needs, of its (launch, grid) pairs: its largest launch's (the launches run one after
    another on the buffer), each launch's per-CTA bytes times its CTAs."""
    out = 0
    for l, grid in launch_grids:
        if function is None or getattr(l, "function", None) == function:
            out = max(out, getattr(l, "workspace", 0) * int(grid[0]) * int(grid[1]) * int(grid[2]))
    return out


def split(compiled, args):
    """(the jit function's arguments, the workspace) of a call's positional arguments."""
    own = len(compiled.jit_function.signature.parameters) - len(compiled.bound_self)
    if len(args) <= own:
        raise DSLValueError("the compiled function's kernels use a device workspace: pass it as the last argument "
                            "(its size from get_aux_func(QueryDeviceWorkspaceFunc))", user_location(3))
    return args[:-1], args[-1]


def address(workspace, depth: int = 4):
    """The workspace argument as a host argument computes from it (its address), checked to be a buffer aligned
    as the kernels address it."""
    address = getattr(workspace, "data_ptr", None)
    if callable(address):   # a torch tensor passed as it is
        address = address()
    if not isinstance(address, int):
        raise DSLTypeError(f"the device workspace is a global-memory buffer (a tensor), got {workspace!r}",
                           user_location(depth))
    if address % ALIGN:
        raise DSLValueError(f"the device workspace must be {ALIGN}-byte aligned, its address is {address:#x}",
                            user_location(depth))
    return _Workspace(address)


def check_size(workspace, needed: int, depth: int = 4) -> None:
    """Refuses a workspace of fewer than `needed` bytes (one whose size it does not tell passes)."""
    size = _bytes_of(workspace)
    if size is not None and size < needed:
        raise DSLValueError(f"the device workspace has {size} bytes, the call needs {needed} "
                            "(get_aux_func(QueryDeviceWorkspaceFunc))", user_location(depth))


class _Workspace:
    def __init__(self, address: int):
        self.data_ptr = address


def _bytes_of(workspace):
    shape = getattr(workspace, "shape", None)
    dtype = getattr(workspace, "element_type", None)
    if shape is None:
        return None
    n = 1
    for s in shape:
        n *= int(s)
    width = getattr(dtype, "width", None)
    if width is None:
        size = getattr(workspace, "element_size", None)
        return n * size() if callable(size) else None
    return n * width // 8


class WorkspaceArg(ExportOnlyHandle, ArgPlan):
    """The workspace as a parameter of the exported C wrapper (export/export_c.py): the buffer's device address,
    after the jit function's arguments, as the compiled function takes it. No argument of a jit function is of this
    kind: it is added where the kernels asked for workspace."""

    kind = "workspace"

    def c_parameter(self, a, prefix):
        return f"void *{a.name}"

    def c_checks(self, a, symbols):
        # The wrapper cannot see the buffer's size: <prefix>_Workspace_Size answers the bytes a call needs.
        return [f"  if ({a.name} == NULL || (uintptr_t){a.name} % {ALIGN} != 0) return ww_fail(WW_INVALID_VALUE, "
                f'"{a.name}: the device workspace is a {ALIGN}-byte aligned device buffer");']

    def c_address(self, a):
        return a.name

    def tvm_refusal(self, a) -> str:
        return "the kernels use a device workspace"

    @classmethod
    def ctypes_value(cls, meta, x, function, ctypes):
        return address(x, 5).data_ptr   # at the caller of ExportedFunction.__call__ (or convert)


def c_argument(compiled, taken) -> CArg:
    """The exported wrapper's workspace parameter: named `workspace`, or `device_workspace` where an argument of the
    function has that name already (`taken`: the C and Python names of the others)."""
    name = "workspace" if "workspace" not in taken else "device_workspace"
    return CArg(WorkspaceArg(ARGUMENT, name, ("workspace",)), name, "void *")


__all__ = ["AllocationRequirement", "QueryDeviceWorkspaceFunc", "ARGUMENT"]
