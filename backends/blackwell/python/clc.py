"""Cluster launch control in the DSL: reading the response of a try_cancel.

The manifest's primitives arch.clc_try_cancel and arch.clc_try_cancel_multicast (response, mbar) are called as
they are; a try_cancel writes 16 opaque bytes into shared memory and completes 16 transaction bytes on the mbarrier.
Decoding them needs four results of two types (whether a cluster was canceled, and the first CTA id of that
cluster), which the manifest's generic primitive function would give one type, so arch.clc_query_cancel is this
function over the same entry: (Boolean is_canceled, Int32 x, Int32 y, Int32 z).

CuTe DSL's own names for the pair are here too: arch.issue_clc_query (mbar, response, multicast=) issues the
request, and arch.clc_response (response) decodes it as four Int32s (x, y, z, valid).
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext


def _shared_address(ptr, what):
    ptr = getattr(ptr, "iterator", ptr)
    if getattr(ptr, "memspace", None) != "smem":
        raise ext.user_error(f"clc_query_cancel: {what} must be a shared-memory pointer (the 16-byte response a "
                             f"try_cancel wrote), got {ptr!r}", ext.DSLTypeError)
    b = ext.builder()
    return b.op1("llvm.ptrtoint", [ptr.address(0)], "i32")


def clc_query_cancel(response, *, loc=None, ip=None):
    """(is_canceled, x, y, z) of the try_cancel response at `response` (16 bytes of shared memory, read once the
    response's mbarrier phase has completed): whether a cluster's launch was canceled, and the block index of its
    first CTA (undefined when it was not)."""
    addr = _shared_address(response, "response")
    backend, entry = ext.select_instruction("arch.clc_query_cancel", {}, {"response"})
    out = ext.emit_instruction(ext.builder(), backend, entry, {"response": [addr]})
    return (cutlass.Boolean.from_ir(out["is_canceled"][0]), cutlass.Int32.from_ir(out["x"][0]),
            cutlass.Int32.from_ir(out["y"][0]), cutlass.Int32.from_ir(out["z"][0]))


def clc_response(result_addr, *, loc=None, ip=None):
    """(x, y, z, valid) of the try_cancel response at result_addr, as Int32s (valid is 1 where a cluster's launch
    was canceled, and x, y, z are then the block index of its first CTA)."""
    canceled, x, y, z = clc_query_cancel(result_addr)
    return x, y, z, cutlass.Int32(canceled)


def issue_clc_query(mbar_ptr, clc_response_ptr, multicast: bool = True, *, loc=None, ip=None):
    """Asks to cancel a cluster's launch; the response lands at clc_response_ptr (with multicast, at that offset in
    every CTA of the cluster) and completes 16 bytes on mbar_ptr's barrier. One lane issues it (the caller elects)."""
    if not isinstance(multicast, bool):
        raise ext.user_error(f"issue_clc_query: multicast is a Python bool, got {multicast!r}", ext.DSLTypeError)
    request = cute.arch.clc_try_cancel_multicast if multicast else cute.arch.clc_try_cancel
    request(clc_response_ptr, mbar_ptr)
