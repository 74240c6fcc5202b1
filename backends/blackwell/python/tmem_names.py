"""cute.arch's tensor-memory names of CuTe DSL 4.8.1 that select among tmem.py's operations or answer a question
about an architecture: fence_view_async_tmem_op (the load or store wait by a kind) and
is_tmem_allocation_exclusive."""
from __future__ import annotations

from warpweave import ext

from . import tmem


def fence_view_async_tmem_op(kind, *, loc=None, ip=None):
    """fence_view_async_tmem_load() for kind "load", fence_view_async_tmem_store() for "store": this thread's
    tensor-memory loads (stores) have completed, so their registers may be read (a later MMA reads them)."""
    if kind == "load":
        return tmem.fence_view_async_tmem_load()
    if kind == "store":
        return tmem.fence_view_async_tmem_store()
    raise ext.user_error(f"cute.arch.fence_view_async_tmem_op: kind is 'load' or 'store', got {kind!r}")


# The architectures whose tensor memory has columns beyond the 512 of a shared allocation, usable only by a CTA that
# allocates all of it: CuTe DSL 4.8.1 names the plain sm_107 alone (none of warpweave's targets).
_EXCLUSIVE_ABOVE_512 = ("sm_107",)


def is_tmem_allocation_exclusive(num_columns, arch) -> bool:
    """Whether allocating num_columns columns of tensor memory needs the whole of it, allocated exclusively: on an
    architecture with more than 512 columns, for more than 512."""
    if isinstance(num_columns, bool) or not isinstance(num_columns, int):
        raise ext.user_error(f"cute.arch.is_tmem_allocation_exclusive: num_columns is a Python int, got "
                             f"{num_columns!r}", ext.DSLTypeError)
    name = getattr(arch, "name", arch)
    return name in _EXCLUSIVE_ABOVE_512 and num_columns > 512


NAMES = {f.__name__: f for f in (fence_view_async_tmem_op, is_tmem_allocation_exclusive)}
