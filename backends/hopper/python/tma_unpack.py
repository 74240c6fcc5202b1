"""TMA loads that unpack 4- and 6-bit values into byte containers of shared memory: which targets do it (their
backends declare it), which loads do, and the strides their tensor maps take (tma.py and tma_export.py use them)."""
from __future__ import annotations

from warpweave import ext

# Narrow types the copy engine unpacks into shared memory (sm_100a): each run of 16 elements fills 16 bytes, one
# element a byte (CUtensorMapDataType 16U4_ALIGN16B and 16U6_ALIGN16B), the form tcgen05.mma's kind::mxf8f6f4 reads
# its 4- and 6-bit operands in. Global memory holds them densely, element i at bits [w i, w i + w) of its row.
UNPACKED_CODES = {4: 14, 6: 15}


# The backends whose targets' copy engine unpacks 4- and 6-bit values into byte containers of shared memory (the
# tensor maps of UNPACKED_CODES), as their MMAs read such operands: each declares it when it loads.
_UNPACKING_BACKENDS: set = set()


def declare_unpacking(backend_name: str) -> None:
    """Backend `backend_name` declares that the copy engine of its targets unpacks 4- and 6-bit values (and that
    its MMAs read them so): loads of such a tensor with a byte internal_type (6-bit ones always) unpack there."""
    _UNPACKING_BACKENDS.add(backend_name)


def unpacks_on_target() -> bool:
    """Whether the current target's backend declared unpacking loads (declare_unpacking)."""
    return ext.current_target().backend in _UNPACKING_BACKENDS


def unpacked_bits(gmem_type, internal_type) -> int:
    """The bits of a global element TMA unpacks one a byte into shared memory (0 where it does not): a 6-bit type
    always (shared memory has no dense form of it), a 4-bit one loaded as an 8-bit internal_type (CuTe DSL's
    Uint8)."""
    w = getattr(gmem_type, "width", 0)
    if w == 6 or (w == 4 and internal_type is not None and internal_type.width == 8):
        return w
    return 0


def unpacked_stride(elements: int, gbits: int) -> int:
    """The byte stride of `elements` narrow elements of gbits each, as the tensor map takes it: in 16-byte steps, the
    nearest to the exact length when that is not whole bytes (a row pitch of 416 bytes seen as 554 6-bit elements,
    415.5 bytes), which must be within a byte of it."""
    exact = elements * gbits          # bits
    if exact % 8 == 0:
        return exact // 8
    s = (exact + 64) // 128 * 16
    if abs(s * 8 - exact) >= 8:
        raise ValueError(f"TMA descriptor: a stride of {elements} {gbits}-bit elements ({exact / 8} bytes) is not a "
                         "whole number of bytes, nor within a byte of a multiple of 16")
    return s
