"""cutlass.Constexpr: the annotation of a parameter whose value is compiled in. Both the jit function's call
path and the kernels' launches read it, so it lives below them."""
from __future__ import annotations

import typing

_T = typing.TypeVar("_T")


class Constexpr(typing.Generic[_T]):
    """Annotation of a parameter whose value is part of the compiled code (a compile-time constant). Constexpr[int]
    is a typing alias whose origin is Constexpr (typing.get_origin), as libraries test it."""


def is_constexpr(annotation) -> bool:
    """Whether a parameter's annotation (the class, Constexpr[...], or its text under `from __future__ import
    annotations`) is Constexpr."""
    return annotation is Constexpr or typing.get_origin(annotation) is Constexpr or \
        (isinstance(annotation, str) and annotation.split(".")[-1].startswith("Constexpr"))
