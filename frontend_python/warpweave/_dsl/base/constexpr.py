"""cutlass.Constexpr: the annotation of a parameter whose value is compiled in. Both the jit function's call
path and the kernels' launches read it, so it lives below them."""
from __future__ import annotations


class Constexpr:
    """Annotation of a parameter whose value is part of the compiled code (a compile-time constant)."""

    def __class_getitem__(cls, item):
        return cls


def is_constexpr(annotation) -> bool:
    """Whether a parameter's annotation (the class, or its text under `from __future__ import annotations`) is
    Constexpr or Constexpr[...]."""
    return annotation is Constexpr or (isinstance(annotation, str) and annotation.split(".")[-1].startswith("Constexpr"))
