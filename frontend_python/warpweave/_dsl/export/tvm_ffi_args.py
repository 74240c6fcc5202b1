"""Which parameter of the TVM FFI entry each argument of a compiled function is (tvm_ffi_spec.py), as CuTe DSL
libraries reach it (`cutlass.cute._tvm_ffi_args_spec_converter`): `_convert_single_arg(arg, arg_name, arg_type, ctx)`
for one argument, called again for each element of a tuple, and the tables of the numbers a scalar may be.

The entry follows whatever `_convert_single_arg` returns, and it is looked up on this module at each build, so a
library that replaces it (QuACK marks its NamedTuples' Constexpr fields ConstNone: its callers pass None there)
changes the calls of what it compiles from then on. A parameter it returns must agree with how the argument was
traced: a value compiled in cannot become a runtime parameter, nor a traced runtime value compiled in.
"""
from __future__ import annotations

import dataclasses
import typing

from ..base.constexpr import is_constexpr
from ..base.errors import DSLTypeError, user_location
from ..values.numeric import (BFloat16, Boolean, Float16, Float32, Float64, Int8, Int16, Int32, Int64, Uint8, Uint16,
                              Uint32, Uint64)
from ..values.value_tree import argument_annotations, argument_fields
from . import tvm_ffi_spec as spec

# The DSL number types a scalar argument may have, and their TVM FFI dtype (a library adds its own types to both)
NumericToTVMFFIDtype = {Boolean: "bool", Int8: "int8", Int16: "int16", Int32: "int32", Int64: "int64",
                        Uint8: "uint8", Uint16: "uint16", Uint32: "uint32", Uint64: "uint64", Float16: "float16",
                        BFloat16: "bfloat16", Float32: "float32", Float64: "float64"}
AcceptableNumericTypesForScalar = list(NumericToTVMFFIDtype)


class ConvertContext:
    """What the converter knows of an argument beside its value and annotation: how it was traced (`plan`, an
    argument plan of call/), and how deep in a tuple it is."""

    def __init__(self, plan, depth: int = 0):
        self.plan = plan
        self.depth = depth

    def element(self, k: int) -> "ConvertContext":
        children = getattr(self.plan, "children", None)
        return ConvertContext(children[k] if children is not None and k < len(children) else None, self.depth + 1)


def _field_types(arg) -> list:
    """The annotations of a NamedTuple's fields (none for a plain tuple or list)."""
    if not hasattr(type(arg), "_fields"):
        return [None] * len(arg)
    try:
        hints = typing.get_type_hints(type(arg), include_extras=True)
    except Exception:  # an annotation naming what its module cannot resolve: the raw ones
        hints = getattr(type(arg), "__annotations__", {})
    return [hints.get(f) for f in type(arg)._fields]


def _convert_single_arg(arg, arg_name, arg_type, ctx):
    """The parameter of one argument (or tuple element) of value `arg`, annotated `arg_type`, traced as ctx.plan."""
    if arg_type is not None and is_constexpr(arg_type):
        return spec.ConstNone(arg_name) if ctx.depth else spec.Absent(arg_name)
    kind = getattr(ctx.plan, "kind", None)
    if kind == "dataclass":
        # a dataclass of runtime values: a tuple of the fields its __init__ takes, as the call passes it
        # (tvm_ffi_call.wrap makes the caller's object that tuple); a field annotated cutlass.Constexpr is compiled
        # in as its value, which the call checks
        params = []
        for k, (n, t) in enumerate(zip(argument_fields(arg), argument_annotations(arg))):
            x = getattr(arg, n)
            params.append(spec.Const(f"{arg_name}.{n}", x) if t is not None and is_constexpr(t) and x is not None
                          else _convert_single_arg(x, f"{arg_name}.{n}", t, ctx.element(k)))
        return spec.Tuple(arg_name, params, dataclass=type(arg).__name__)
    # a tuple is passed whole, also one compiled in (an empty one, or of compile-time values only): the caller
    # passes it in its place, as a library's call of every declared parameter does
    if kind == "tree" or (kind in (None, "const") and isinstance(arg, (tuple, list))):
        types = _field_types(arg)
        names = type(arg)._fields if hasattr(type(arg), "_fields") else [str(k) for k in range(len(arg))]
        return spec.Tuple(arg_name, [_convert_single_arg(x, f"{arg_name}.{n}", t, ctx.element(k))
                                     for k, (x, n, t) in enumerate(zip(arg, names, types))])
    if kind == "tensor":
        # a view whose modes are its source's dimensions in another order (cutlass.jax) says which
        return spec.Tensor(arg_name, ctx.plan.spec[1], len(ctx.plan.spec[2]), getattr(arg, "dlpack_dims", None))
    if kind == "pointer":
        return spec.Pointer(arg_name)
    if kind == "stream":
        return spec.EnvStream(arg_name) if ctx.plan.tvm_env_stream else spec.Stream(arg_name)
    if kind in ("int", "scalar"):
        t = ctx.plan.dtype
        if t not in AcceptableNumericTypesForScalar:
            raise DSLTypeError(f"--enable-tvm-ffi: argument '{arg_name}' is a {t.__name__}, which a TVM FFI scalar "
                               f"cannot be (AcceptableNumericTypesForScalar)", user_location(4))
        return spec.Scalar(arg_name, NumericToTVMFFIDtype.get(t, t.__name__))
    if kind == "constexpr":
        return spec.ConstNone(arg_name) if ctx.depth else spec.Absent(arg_name)
    if arg is None:
        return spec.ConstNone(arg_name)
    if dataclasses.is_dataclass(arg) and not isinstance(arg, type):
        # a dataclass of compile-time values only (a configuration object, e.g. a mask) keeps its place in the
        # call, as CuTe DSL's callers pass it there; compiled in, it is not read
        return spec.Const(arg_name, arg)
    # another compile-time value: left out of the call at the top (an enumeration, a Python number), in its place
    # inside a tuple, which is passed whole
    return spec.Const(arg_name, arg) if ctx.depth else spec.Absent(arg_name)


def argument_params(compiled, values) -> list:
    """The entry's parameters of a compiled function traced with these argument values (one per plan)."""
    sig = compiled.jit_function.signature
    names = list(sig.parameters)
    out = []
    for plan in compiled.plans:
        ann = sig.parameters[names[plan.index]].annotation if plan.index < len(names) else None
        ann = None if ann is sig.empty else ann
        value = values[plan.index] if plan.index < len(values) else None
        if plan.index == 0 and getattr(compiled, "bound_self", None):  # a method's object: compiled in, not passed
            out.append(spec.Absent(plan.name))
            continue
        # a call by the module's global name: a library's replacement of it applies (in the recursion too)
        out.append(_convert_single_arg(value, plan.name, ann, ConvertContext(plan)))
    return out


__all__ = ["AcceptableNumericTypesForScalar", "ConvertContext", "NumericToTVMFFIDtype", "argument_params"]
