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


class _GridConstantMarker:
    """What `GridConstant[T]` carries in its typing.Annotated: the parameter is passed by value in the kernel's
    parameter space and read in place (its address is what instructions such as tensor-map copies take)."""

    def __repr__(self):
        return "GridConstant"


GRID_CONSTANT = _GridConstantMarker()


class GridConstant:
    """CuTe DSL's `cutlass.GridConstant[T]`: the annotation of a kernel parameter of type T (a TMA tensor map)
    that the kernel reads in place from its parameters. It is `typing.Annotated[T, GRID_CONSTANT]`, so tools that
    read annotations see T."""

    def __class_getitem__(cls, item):
        return typing.Annotated[item, GRID_CONSTANT]


def is_grid_constant(annotation) -> bool:
    """Whether a parameter's annotation is GridConstant[...] (or its text under `from __future__ import
    annotations`)."""
    if isinstance(annotation, str):
        return annotation.split("[")[0].split(".")[-1] == "GridConstant"
    return any(m is GRID_CONSTANT for m in getattr(annotation, "__metadata__", ()))


def annotated_type(annotation):
    """T of GridConstant[T] (typing.Annotated), else the annotation itself."""
    return getattr(annotation, "__origin__", annotation) if is_grid_constant(annotation) else annotation
