"""Device workspaces: global memory a kernel's operations ask for while it is traced, which the caller allocates
(cute.experimental.host_runtime.QueryDeviceWorkspaceFunc says how much) and passes as the compiled function's
trailing argument.

An operation asks for `nbytes` per CTA (request()): e.g. the tensor maps a CTA rewrites for the tensors it makes
in the kernel, which TMA reads from global memory only. The workspace is one parameter of the kernel, its base
address (a host argument of the call's workspace argument). Requests are laid out one after another, each an
array over the grid's CTAs: request r of a kernel launched on G CTAs starts at sum over the earlier requests of
their bytes times G, and CTA c's part of it at c times its bytes. A CTA's parts are then its own whatever the
grid, so that the size a call needs is (sum of the requests' bytes) times the launch's CTAs, known only at the
call, and no request waits for the kernel's end to be placed.
"""
from __future__ import annotations

import struct

from ..atoms import host_arguments
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Int64, Uint8
from ..values.tensor import Pointer, ptr_type
from .arch import block_idx, grid_dim

PRODUCER = "kernel.workspace"
ARGUMENT = "workspace"       # the tensor_index of its host argument: the call's trailing workspace argument
ALIGN = 64                   # the workspace's alignment (a tensor map's in global memory)


def _address(workspace) -> bytes:
    address = workspace.data_ptr if hasattr(workspace, "data_ptr") else workspace.address
    return struct.pack("<Q", int(address))


def _address_c(buffer, dst, **_) -> tuple[str, str]:
    """The C form of the parameter in an exported wrapper: the address of its workspace parameter."""
    return "", f"        {{ void *v = {buffer.data}; memcpy({dst}, &v, sizeof v); }}"


host_arguments.register(PRODUCER, _address, size=8, align=8, export_c=_address_c)


def _parameter(k):
    """The kernel's workspace parameter (made at its first request): the IR value of its 8 bytes' address."""
    d = k.late_parameters.get((PRODUCER,))
    if d is None:
        st = trace.current()
        h = host_arguments.HostArgument(len(st.host_arguments) + 1, host_arguments.producer(PRODUCER), ARGUMENT, {})
        st.host_arguments[h.id] = h
        d = host_arguments.DeviceHostArgument(h, k.add_parameter(h))
        k.late_parameters[(PRODUCER,)] = d
    return d


def request(nbytes: int, align: int = ALIGN) -> Pointer:
    """Inside a kernel: a pointer (global memory, bytes) to this CTA's `nbytes` of the launch's workspace, aligned
    to `align` (a power of two up to the workspace's own 64 bytes). Each request is new memory."""
    st = trace.current_or_none()
    k = st.kernel if st is not None else None
    if k is None or k.add_parameter is None:
        raise DSLTypeError("a device workspace is asked for inside a kernel", user_location(3))
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 1:
        raise DSLValueError(f"a device workspace request is a positive number of bytes, got {nbytes!r}",
                            user_location(3))
    if not isinstance(align, int) or align < 1 or align & (align - 1) or align > ALIGN:
        raise DSLValueError(f"a device workspace request's alignment is a power of two up to {ALIGN}, got {align!r}",
                            user_location(3))
    nbytes = -(-nbytes // align) * align
    before = sum(k.workspace)   # per CTA, the earlier requests' bytes (each a multiple of its alignment)
    if before % align:
        before = -(-before // align) * align
        k.workspace[-1] += before - sum(k.workspace)
    k.workspace.append(nbytes)
    d = _parameter(k)
    b = trace.builder()
    base = Int64.from_ir(b.op1("llvm.load", [d.address], "i64", "alignment = 8 : i64"))
    bx, by, bz = block_idx()
    gx, gy, gz = grid_dim()
    cta = Int64(bx) + Int64(gx) * (Int64(by) + Int64(gy) * Int64(bz))
    ctas = Int64(gx) * Int64(gy) * Int64(gz)
    address = base + ctas * before + cta * nbytes
    return Pointer(b.op1("llvm.inttoptr", [address.ir()], ptr_type("gmem")), Uint8, "gmem", align, wide=True)


def per_cta_bytes(k) -> int:
    """The workspace bytes one CTA of kernel state k asked for."""
    return sum(k.workspace)
