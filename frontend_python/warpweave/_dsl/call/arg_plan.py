"""Argument plans: which kind each argument of a @cute.jit function is (KINDS, asked in order), how its compile is
keyed, and the stand-ins a trace runs with (tensors become layouts over a placeholder pointer, runtime integers
become symbols of the layout algebra). What each kind does is its class's (arg_kind.py, arg_tensor.py,
arg_values.py); adding a kind is adding a class there and its place in KINDS."""
from __future__ import annotations

import inspect

from ..base import trace
from ..base.constexpr import Constexpr, is_constexpr  # noqa: F401 - Constexpr is public here too
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.layout_annotations import compiles_numbers_in
from ..values.numeric import Numeric, SymInt
from ..values.runtime import RuntimePointer, RuntimeTensor, is_torch_tensor, runtime_view
from ..values.tensor import Tensor
from .arg_kind import ArgPlan  # noqa: F401 - the plan's base, public here
from .arg_protocol import JitArgumentArg
from .arg_dataclass import DataclassArg
from .arg_tensor import PointerArg, TensorArg, TreeArg
from .arg_values import ConstArg, ConstexprArg, EventArg, IntArg, ScalarArg, StreamArg, annotated_numeric, \
    check_annotated
from .workspace import WorkspaceArg

# The kinds in the order they are asked whether they take an argument (the first that does, does): a Constexpr
# annotation before anything, memory before numbers (an object of CuTe DSL's JitArgument protocol after tensors
# and pointers, a dataclass of runtime values after that protocol), an integer before other numbers, a
# compile-time value last.
KINDS = (ConstexprArg, TensorArg, TreeArg, PointerArg, JitArgumentArg, DataclassArg, StreamArg, EventArg, IntArg,
         ScalarArg, ConstArg)
# A function's device workspace is a parameter of its exported wrapper (call/workspace.py), not an argument kind.
_BY_NAME = {k.kind: k for k in KINDS + (WorkspaceArg,)}


def kind_of(value, annotation) -> type:
    """The plan class of an argument of this value and annotation."""
    for k in KINDS:
        if k.takes(value, annotation):
            return k
    return ConstArg


def kind_named(name: str) -> type:
    """The plan class of a kind's name (as the function cache stores it); KeyError for an unknown one."""
    return _BY_NAME[name]


TreeArg.kind_of = staticmethod(kind_of)  # the kinds of a list's or tuple's elements
TreeArg.kind_named = staticmethod(kind_named)


def _is_tensor_annotation(annotation) -> bool:
    return annotation is Tensor or (isinstance(annotation, str) and annotation.split(".")[-1] == "Tensor")


def _refuse_unusable(name, value, annotation):
    """Arguments that cannot be what they are used as, refused at the user's line with what to write instead."""
    if is_constexpr(annotation):
        if isinstance(value, (RuntimeTensor, RuntimePointer)) or is_torch_tensor(value) or isinstance(value, SymInt) \
                or isinstance(value, Numeric) and not value.is_static:
            raise DSLTypeError(f"argument '{name}' is cutlass.Constexpr, so its value must be known when compiling, "
                               f"but it is a runtime {type(value).__name__}; pass a Python value, or drop the "
                               "Constexpr annotation to make it a runtime argument", user_location(3))
        return
    array_like = type(value).__module__.split(".")[0] in ("numpy", "cupy") or \
        (hasattr(value, "__dlpack__") and not is_torch_tensor(value) and not isinstance(value, RuntimeTensor))
    if array_like and runtime_view(value) is None:
        raise DSLTypeError(f"argument '{name}' is a {type(value).__module__}.{type(value).__name__}; pass it as a "
                           "tensor with warpweave.cute.runtime.from_dlpack(...)", user_location(3))
    # None is a compile-time absence (CuTe DSL's programs pass an optional workspace so), not a tensor to refuse
    if _is_tensor_annotation(annotation) and value is not None and runtime_view(value) is None and \
            not isinstance(value, Tensor):
        raise DSLTypeError(f"argument '{name}' is annotated cute.Tensor but is a {type(value).__name__}",
                           user_location(3))
    if isinstance(value, (list, tuple)):
        _refuse_container(name, value, annotation)
    check_annotated(name, value, annotation)
    rt = runtime_view(value)
    if rt is not None and any(s == 0 for s, dyn in zip(rt.shape, rt.dynamic_shape) if not dyn):
        raise DSLValueError(f"argument '{name}' is a tensor of shape {tuple(rt.shape)}, with an extent of 0 known "
                            "when compiling; a kernel over no elements has nothing to do: skip the call, or mark the "
                            "extent dynamic (mark_layout_dynamic) so that it is read at each call", user_location(3))


def _refuse_container(name, value, annotation):
    """A list or tuple where the annotation says a number, or a list where it says a layout algebra type (a number
    or a tuple of them): refused, as CuTe DSL refuses an argument its annotation does not describe."""
    text = annotation.split(".")[-1] if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    number = annotated_numeric(annotation) is not None or annotation in (int, float, bool) or \
        isinstance(annotation, str) and text in ("int", "float", "bool")
    if number:
        raise DSLTypeError(f"argument '{name}' is annotated {text}, a number, but is a {type(value).__name__}; "
                           "annotate it as a tuple (or leave it unannotated)", user_location(4))
    if isinstance(value, list) and compiles_numbers_in(annotation):
        raise DSLTypeError(f"argument '{name}' is annotated with a layout algebra type, which takes a number or a "
                           "tuple of them, but is a list; pass a tuple", user_location(4))


def check_arguments(fn_name: str, signature: inspect.Signature, args, kwargs) -> None:
    """The arguments of a compile, checked before anything else reads them (the cache key included): their
    number, and each against what it is used as; mistakes raise at the user's line."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise DSLTypeError(f"{fn_name}(): {e}", user_location(2)) from None
    bound.apply_defaults()
    for name, value in bound.arguments.items():
        _refuse_unusable(name, value, signature.parameters[name].annotation)


def make_host_arg(st: trace.TraceState, index, name: str, value, annotation):
    """(host stand-in, plan) for one jit argument."""
    _refuse_unusable(name, value, annotation)
    return kind_of(value, annotation).stand_in(st, index, name, value, annotation, make_host_arg)


def spec_key(signature: inspect.Signature, args, kwargs):
    """What selects one compiled specialisation among a jit function's compilations."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    key = []
    for name, value in bound.arguments.items():
        ann = signature.parameters[name].annotation
        key.append(kind_of(value, ann).spec_key(value, ann))
    return tuple(key)


def arguments_key(signature: inspect.Signature, args, kwargs, stable) -> list:
    """spec_key's view of each argument as it is the same in another process, compile-time values keyed by value
    (stable) rather than by address."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    out = []
    for name, value in bound.arguments.items():
        ann = signature.parameters[name].annotation
        out.append(kind_of(value, ann).cache_key(value, ann, stable))
    return out
