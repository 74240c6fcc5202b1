"""TMA loads that unpack 4- and 6-bit values into byte containers of shared memory: which targets do it (their
manifest entry lists the tensor maps, Target.tma_unpacking), which loads do, and the strides their tensor maps take
(tma.py and tma_export.py use them)."""
from __future__ import annotations

from warpweave import ext

# The unpacking tensor maps the loads use, by the width of the values: each run of 16 elements fills 16 bytes, one
# element a byte, the form tcgen05.mma's kind::mxf8f6f4 and sm_120's ldmatrix .b4x16_p64 / .b6x16_p32 read 4- and
# 6-bit operands in; (CUtensorMapDataType name as the manifest lists it, its value). Global memory holds the values
# densely, element i at bits [w i, w i + w) of its row.
UNPACKING_TENSOR_MAPS = {4: ("16U4_ALIGN16B", 14), 6: ("16U6_ALIGN16B", 15)}


def unpacked_codes(target=None) -> dict:
    """{bits: tensor-map data type} of the unpacking loads `target` (default: the current one) has: those of
    UNPACKING_TENSOR_MAPS its backend's manifest lists in the target's tma_unpacking ({} where it lists none)."""
    target = target or ext.current_target()
    entries = ext.backend(target.backend).manifest.get("targets", [])
    listed = next((t.get("tma_unpacking", []) for t in entries if t.get("name") == target.name), [])
    return {bits: code for bits, (name, code) in UNPACKING_TENSOR_MAPS.items() if name in listed}


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
