"""Helpers for host tensors of 8-bit floats, which DLPack cannot describe: torch holds them as uint8 and the
kernel's tensor carries the fp8 element type."""
from __future__ import annotations

from .._dsl.values import numeric as _n
from .._dsl.values.runtime import from_dlpack


def is_fp8_dtype(dtype) -> bool:
    t = _n.dtype(dtype)
    return bool(t.is_float and t.width == 8)


def create_cute_tensor_for_fp8(torch_tensor, dtype, leading_dim: int, source_f32_tensor=None,
                               assumed_align: int = 16):
    """A cute.runtime tensor over torch_tensor with a dynamic layout (leading_dim kept static). For an fp8
    `dtype`, torch_tensor is the uint8 storage: it is filled with source_f32_tensor's values as `dtype` (when
    given) and the tensor's element type is `dtype`; so it is for a type of the storage's width that torch cannot
    hold itself (TFloat32 over float32 storage)."""
    from ..torch import convert_cute_tensor

    t = from_dlpack(torch_tensor, assumed_align=assumed_align).mark_layout_dynamic(leading_dim=leading_dim)
    if is_fp8_dtype(dtype):
        if source_f32_tensor is not None:
            return convert_cute_tensor(source_f32_tensor, t, dtype)
        t.element_type = _n.dtype(dtype)
    elif dtype is not None and _n.dtype(dtype) is not t.element_type and _n.dtype(dtype).width == t.element_type.width:
        # a type torch has no name for, held in its storage type (TFloat32 in float32): the kernel sees `dtype`
        t.element_type = _n.dtype(dtype)
    return t
