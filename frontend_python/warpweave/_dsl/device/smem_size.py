"""The running kernel's dynamic shared memory as a whole: cute.arch.dynamic_smem_size, the bytes it was launched with
(the %dynamic_smem_size special register, read through NVVM's intrinsic), e.g. to check a launch's smem= against
what the kernel's layout needs; and cute.arch.get_dyn_smem, a pointer to its first byte, for kernels that lay out
the launch's smem= bytes themselves (it is where SmemAllocator's first allocation begins, as in CuTe DSL); and
cute.arch.alloc_smem, a fresh allocation of elements, carved as SmemAllocator's are (after every earlier one)."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLValueError, user_location
from ..values.numeric import Int32, dtype as dtype_of
from ..values.tensor import SMEM, Pointer
from .smem import BASE_ALIGN, allocate_elements, base_pointer


def dynamic_smem_size(*, loc=None, ip=None):
    v = trace.builder().op1("llvm.call_intrinsic", [], "i32",
                            'intrin = "llvm.nvvm.read.ptx.sreg.dynamic_smem_size", op_bundle_sizes = array<i32>, '
                            "operandSegmentSizes = array<i32: 0, 0>")
    return Int32.from_ir(v)


def get_dyn_smem(element_type, alignment: int | None = None, *, loc=None, ip=None) -> Pointer:
    """A pointer to elements of element_type at the start of the kernel's dynamic shared memory, aligned to
    `alignment` bytes (the start is BASE_ALIGN-aligned, so no offset is needed up to that)."""
    align = BASE_ALIGN if alignment is None else alignment
    if not isinstance(align, int) or align <= 0 or align & (align - 1) or align > BASE_ALIGN:
        raise DSLValueError(f"get_dyn_smem: alignment is a power of two up to {BASE_ALIGN} bytes, got {alignment!r}",
                            user_location(2))
    return Pointer(base_pointer(), dtype_of(element_type), SMEM, align, 0)


def alloc_smem(element_type, size_in_elems: int, alignment: int | None = None, *, loc=None, ip=None) -> Pointer:
    """A pointer to size_in_elems fresh elements of element_type in the kernel's shared memory, aligned to
    `alignment` bytes (by default the element's own alignment). The size is static: the launch reserves it."""
    if isinstance(size_in_elems, bool) or not isinstance(size_in_elems, int) or size_in_elems <= 0:
        raise DSLValueError(f"alloc_smem: size_in_elems is a positive static number of elements, got "
                            f"{size_in_elems!r}", user_location(2))
    if alignment is not None and (isinstance(alignment, bool) or not isinstance(alignment, int)
                                  or alignment <= 0 or alignment & (alignment - 1) or alignment > BASE_ALIGN):
        raise DSLValueError(f"alloc_smem: alignment is a power of two up to {BASE_ALIGN} bytes, got {alignment!r}",
                            user_location(2))
    return allocate_elements(dtype_of(element_type), size_in_elems, alignment or 1)
