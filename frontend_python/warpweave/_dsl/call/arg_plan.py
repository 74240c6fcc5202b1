"""Argument plans: how each argument of a @cute.jit function is stood in for while tracing (tensors become
layouts over a placeholder pointer, runtime integers become symbols of the layout algebra) and read again at each
call of the compiled function."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Boolean, Float32, HostRef, Int32, Int64, Numeric, SymInt
from ..values.runtime import FakeStream, RuntimePointer, RuntimeTensor, is_torch_tensor, runtime_view
from ..values.tensor import GMEM, Pointer, Tensor


class Constexpr:
    """Annotation of a parameter whose value is part of the compiled code (a compile-time constant)."""

    def __class_getitem__(cls, item):
        return cls


def _is_constexpr(annotation) -> bool:
    return annotation is Constexpr or (isinstance(annotation, str) and annotation.split(".")[-1].startswith("Constexpr"))



class HostStream:
    """The stream argument of a jit function (its handle is read at each call)."""

    def __init__(self, arg_index):
        self.arg_index = arg_index


def stream_handle(x) -> int:
    """The CUstream handle of a stream argument: None (the default stream), an int, a torch stream, a
    cuda.bindings CUstream (int() of it), or anything with cuda_stream / ptr / handle."""
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    if isinstance(x, FakeStream):
        raise DSLValueError("a fake stream (make_fake_stream) can be compiled for but not launched on: pass a "
                            "real stream to the compiled function", user_location(3))
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(x, attr, None)
        if v is not None:
            return int(v)
    try:
        return int(x)
    except (TypeError, ValueError):
        raise DSLTypeError(f"cannot use a {type(x).__name__} as a CUDA stream", user_location(3)) from None


def _is_stream(x) -> bool:
    name = type(x).__name__
    return isinstance(x, FakeStream) or name in ("Stream", "ExternalStream", "CUstream") and not isinstance(
        x, (int, float))


@dataclass
class ArgPlan:
    """How one argument of a jit function is read at each call."""
    kind: str                 # "tensor", "int", "scalar", "stream", "const"
    index: int
    name: str
    spec: Any
    dtype: Any = None
    symbols: list = field(default_factory=list)  # (symbol id, "shape"/"stride", mode) for tensors; id for ints


def _is_tensor_annotation(annotation) -> bool:
    return annotation is Tensor or (isinstance(annotation, str) and annotation.split(".")[-1] == "Tensor")


def _refuse_unusable(name, value, annotation):
    """Arguments that cannot be what they are used as, refused at the user's line with what to write instead."""
    if _is_constexpr(annotation):
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
    if _is_tensor_annotation(annotation) and runtime_view(value) is None and not isinstance(value, Tensor):
        raise DSLTypeError(f"argument '{name}' is annotated cute.Tensor but is a {type(value).__name__}",
                           user_location(3))
    rt = runtime_view(value)
    if rt is not None and any(s == 0 for s, dyn in zip(rt.shape, rt.dynamic_shape) if not dyn):
        raise DSLValueError(f"argument '{name}' is a tensor of shape {tuple(rt.shape)}, with an extent of 0 known "
                            "when compiling; a kernel over no elements has nothing to do: skip the call, or mark the "
                            "extent dynamic (mark_layout_dynamic) so that it is read at each call", user_location(3))


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


def _make_host_arg(st: trace.TraceState, index: int, name: str, value, annotation):
    """(host stand-in, ArgPlan) for one jit argument."""
    _refuse_unusable(name, value, annotation)
    if _is_constexpr(annotation):
        plan = ArgPlan("const", index, name, ("const", _const_key(value)))
        plan.constexpr, plan.const_value = True, value  # a call of the compiled function may leave it out
        return value, plan
    rt = runtime_view(value)
    if rt is not None:
        plan = ArgPlan("tensor", index, name, rt.spec(), rt.element_type)
        shape, stride = [], []
        cosize = 1 + sum((s - 1) * abs(d) for s, d in zip(rt.shape, rt.stride))
        wide = cosize >= (1 << 31) if rt.index_bits is None else rt.index_bits == 64
        if wide and rt.use_32bit_stride:
            raise DSLValueError(f"argument '{name}': use_32bit_stride=True, but the tensor spans {cosize} elements, "
                                "more than 32-bit strides can index", user_location(3))
        bits = 64 if wide else 32
        for k, (s, dyn) in enumerate(zip(rt.shape, rt.dynamic_shape)):
            if dyn:
                div = plan.spec[2][k][1]
                sym = st.new_host_symbol(index, ("shape", k), bits, div, f"{name}.shape[{k}]")
                plan.symbols.append((int(_sym_id(sym)), "shape", k))
                if rt.device != "fake":
                    st.host_values[int(_sym_id(sym))] = s
                shape.append(sym)
            else:
                shape.append(s)
        for k, (d, dyn) in enumerate(zip(rt.stride, rt.dynamic_stride)):
            if dyn:
                div = plan.spec[3][k][1]
                sym = st.new_host_symbol(index, ("stride", k), bits, div, f"{name}.stride[{k}]")
                plan.symbols.append((int(_sym_id(sym)), "stride", k))
                if rt.device != "fake":
                    st.host_values[int(_sym_id(sym))] = d
                stride.append(sym)
            else:
                stride.append(d)
        layout = _core.make_layout(tuple(shape), stride=tuple(stride)) if shape else _core.make_layout(1)
        ptr = Pointer(None, rt.element_type, GMEM, rt.assumed_align, host=index, wide=wide)
        return Tensor(ptr, layout, rt.element_type), plan
    if isinstance(value, (list, tuple)) and _holds_runtime_values(value):
        # A list or tuple of tensors (and numbers): each element is an argument of its own, keyed (index, k).
        hosts, children = [], []
        for k, x in enumerate(value):
            h, p = _make_host_arg(st, (index, k) if isinstance(index, int) else index + (k,), f"{name}[{k}]", x,
                                  inspect.Parameter.empty)
            hosts.append(h)
            children.append(p)
        plan = ArgPlan("tree", index, name, ("tree", type(value).__name__, tuple(c.spec for c in children)))
        plan.children = children
        return (tuple(hosts) if isinstance(value, tuple) else hosts), plan
    if isinstance(value, RuntimePointer):
        ptr = Pointer(None, value.element_type, GMEM, value.assumed_align, host=index, wide=True)
        return ptr, ArgPlan("pointer", index, name, value.spec(), value.element_type)
    if _is_stream(value) or annotation is not inspect.Parameter.empty and getattr(annotation, "__name__", "") == "CUstream":
        return HostStream(index), ArgPlan("stream", index, name, ("stream",))
    if isinstance(value, bool) or isinstance(value, Boolean):
        return Boolean._wrap(HostRef(index, name)), ArgPlan("scalar", index, name, ("scalar", "Boolean"), Boolean)
    if isinstance(value, Numeric):
        t = type(value)
        if t.is_integer and t.width in (32, 64):
            sym = st.new_host_symbol(index, ("value",), t.width, 1, name)
            if value.is_static:
                st.host_values[int(_sym_id(sym))] = int(value.value)
            return t._wrap(sym), ArgPlan("int", index, name, ("int", t.__name__), t, [int(_sym_id(sym))])
        return t._wrap(HostRef(index, name)), ArgPlan("scalar", index, name, ("scalar", t.__name__), t)
    if isinstance(value, int):
        t = Int32 if -(1 << 31) <= value < (1 << 31) else Int64
        sym = st.new_host_symbol(index, ("value",), t.width, 1, name)
        st.host_values[int(_sym_id(sym))] = value
        return t._wrap(sym), ArgPlan("int", index, name, ("int", t.__name__), t, [int(_sym_id(sym))])
    if isinstance(value, float):
        return Float32._wrap(HostRef(index, name)), ArgPlan("scalar", index, name, ("scalar", "Float32"), Float32)
    # Layouts, tuples, atoms and other Python objects are compile-time values.
    return value, ArgPlan("const", index, name, ("const", _const_key(value)))


def _holds_runtime_values(value) -> bool:
    return any(isinstance(x, (RuntimeTensor, RuntimePointer)) or is_torch_tensor(x) or
               isinstance(x, (list, tuple)) and _holds_runtime_values(x) for x in value)


def _sym_id(sym: SymInt) -> int:
    ids = _core.symbols_of(sym)
    return ids[0]


def _const_key(value):
    try:
        hash(value)
        return (type(value).__qualname__, value)
    except TypeError:
        return (type(value).__qualname__, id(value))



def spec_key(signature: inspect.Signature, args, kwargs):
    """What selects one compiled specialisation among a jit function's compilations."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    key = []
    for name, value in bound.arguments.items():
        ann = signature.parameters[name].annotation
        if _is_constexpr(ann):
            key.append(_const_key(value))
            continue
        rt = runtime_view(value)
        if rt is not None:
            key.append(rt.spec())
        elif isinstance(value, RuntimePointer):
            key.append(value.spec())
        elif isinstance(value, (list, tuple)) and _holds_runtime_values(value):
            key.append(_tree_key(value))
        elif isinstance(value, (bool, int, float, Numeric)) or _is_stream(value):
            key.append(type(value).__name__)
        else:
            key.append(_const_key(value))
    return tuple(key)


def _tree_key(value):
    out = []
    for x in value:
        rt = runtime_view(x)
        if rt is not None:
            out.append(rt.spec())
        elif isinstance(x, RuntimePointer):
            out.append(x.spec())
        elif isinstance(x, (list, tuple)) and _holds_runtime_values(x):
            out.append(_tree_key(x))
        elif isinstance(x, (bool, int, float, Numeric)):
            out.append(type(x).__name__)
        else:
            out.append(_const_key(x))
    return (type(value).__name__, tuple(out))
