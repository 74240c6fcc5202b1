"""Host arguments: kernel parameters that a backend computes on the host at each call, such as a TMA tensor map.

A backend's Python registers a producer by name (warpweave.ext.register_host_argument): a function of one tensor
argument of the jit function (its address, shape and strides at the call) and static attributes, returning the
parameter's bytes. While tracing, warpweave.ext.host_argument(name, tensor, **attrs) makes a stand-in; a kernel
launched with it receives a grid-constant parameter of that size (a pointer to it inside the kernel), and each
call of the compiled function asks the producer again, memoised on the tensor's address, shape and strides, so
that one compilation serves every shape of a dynamic layout. An attribute may be a runtime integer of the host
side (an extent or stride of an argument, or an expression of them): each call gives the producer its value.

A producer may also give its C form (export_c), with which an exported function (export.py) and a TVM FFI call
compute the parameter in C at each call: export_c(tensor, dst, **attrs) -> (declarations, statements), where
`tensor` is an export_c.CTensor (C expressions of the call's tensor: data, shape(k), stride(k)) and the statements
write the `size` bytes at `dst` (an `unsigned char *`). They may call driver functions they declare (with
WW_DRIVER_ENTRY before the declaration) and fail with `return ww_fail(WW_INVALID_VALUE, "...")` or
`return ww_driver(result, "call")`. A runtime attribute reaches the C form as a string: its C expression (int64_t)
over the wrapper's values. Without a C form, such a function cannot be exported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..registry.backend_python import ensure_loaded
from ..values.numeric import Numeric, SymInt
from ..values.tensor import Pointer, Tensor

MEMO_ENTRIES = 64


@dataclass
class Producer:
    name: str
    fn: Callable
    size: int
    align: int
    export_c: Callable | None = None  # (CTensor, dst, **attrs) -> (C declarations, C statements)


_producers: dict[str, Producer] = {}


def register(name: str, fn: Callable, *, size: int, align: int = 8, export_c: Callable | None = None) -> None:
    if export_c is not None and not callable(export_c):
        raise TypeError(f"host argument {name!r}: export_c is a callable giving the parameter's C form")
    if not name or not callable(fn):
        raise TypeError("register_host_argument(name, producer, size=...): a name and a callable are required")
    if not (0 < size <= 4096) or align not in (1, 2, 4, 8, 16, 32, 64, 128) or size % align:
        raise ValueError(f"host argument {name!r}: size {size} must be in 1..4096 and a multiple of align {align} "
                         "(a power of two up to 128)")
    _producers[name] = Producer(name, fn, size, align, export_c)


def producer(name: str) -> Producer:
    p = _producers.get(name)
    if p is None:
        ensure_loaded()  # a backend's package registers its producers when mounted
        p = _producers.get(name)
    if p is None:
        raise DSLValueError(f"no loaded backend produces the host argument {name!r} (known: "
                            f"{', '.join(sorted(_producers)) or 'none'})", user_location(4))
    return p


@dataclass(eq=False)
class HostArgument:
    """The host-side stand-in of a per-call parameter (made while tracing a @cute.jit function)."""
    id: int
    producer: Producer
    tensor_index: int           # the jit argument (a tensor) it is computed from
    attrs: dict
    memo: dict = field(default_factory=dict)
    dynamic: dict = field(default_factory=dict)  # attribute -> runtime integer (SymInt), evaluated per call

    @property
    def size(self) -> int:
        return self.producer.size

    @property
    def symbols(self) -> list:
        """The ids of the host symbols its runtime attributes are computed from."""
        return sorted({s for v in self.dynamic.values() for s in _core.symbols_of(v)})

    def value(self, tensor, env: dict | None = None) -> bytes:
        """The parameter's bytes for the call's tensor (a RuntimeTensor; a RuntimePointer where the tensor was made
        over a pointer argument) and host symbols (env: id -> value)."""
        dyn = tuple((k, int(_core.evaluate(v, env or {}))) for k, v in self.dynamic.items())
        # a pointer argument (a tensor made over it in the jit function) is its address alone
        address = tensor.data_ptr if hasattr(tensor, "data_ptr") else tensor.address
        key = (address, tuple(getattr(tensor, "shape", ())), tuple(getattr(tensor, "stride", ())), dyn)
        out = self.memo.get(key)
        if out is None:
            out = bytes(self.producer.fn(tensor, **self.attrs, **dict(dyn)))
            if len(out) != self.size:
                raise DSLValueError(f"host argument {self.producer.name!r}: the producer returned {len(out)} bytes, "
                                    f"not {self.size}", None)
            if len(self.memo) >= MEMO_ENTRIES:
                self.memo.clear()
            self.memo[key] = out
        return out

    def __repr__(self):
        return f"HostArgument({self.producer.name}, of argument {self.tensor_index})"


def kernel_parameter(name: str, attrs: dict, min_align: int = 1) -> "DeviceHostArgument":
    """Inside a kernel: host argument `name` of static attributes alone (the parameter does not depend on any
    tensor's address, shape or strides; a tensor map's template, say), added to the kernel's parameters as its
    tracing asks for it and computed at each call like any host argument. The producer is given, nominally, the
    call's most aligned tensor argument of the kernel (a host argument is computed from one), which must be
    aligned to min_align bytes. The same request in one kernel is the same parameter."""
    st = trace.current_or_none()
    k = st.kernel if st is not None else None
    if k is None or k.add_parameter is None:
        raise DSLTypeError(f"host argument {name!r} of static attributes is made inside a kernel",
                           user_location(3))
    p = producer(name)
    key = (name, tuple(sorted((a, repr(v)) for a, v in attrs.items())))
    d = k.late_parameters.get(key)
    if d is not None:
        return d
    index, ptr = max(k.tensor_arguments, key=lambda a: a[1].base_align, default=(None, None))
    if ptr is None or ptr.base_align < min_align:
        raise DSLValueError(f"host argument {name!r}: the kernel takes no global-memory tensor argument of the "
                            f"@cute.jit function aligned to {min_align} bytes (assumed_align) to compute it at "
                            "each call of", user_location(3))
    for a, v in attrs.items():
        if isinstance(v, Numeric) and not v.is_static:
            raise DSLTypeError(f"host argument {name!r}: attribute {a} is a runtime value; a parameter a kernel asks "
                               "for has static attributes only", user_location(3))
    static = {a: (v.value if isinstance(v, Numeric) else v) for a, v in attrs.items()}
    h = HostArgument(len(st.host_arguments) + 1, p, index, static)
    st.host_arguments[h.id] = h
    d = DeviceHostArgument(h, k.add_parameter(h))
    k.late_parameters[key] = d
    return d


@dataclass(eq=False)
class DeviceHostArgument:
    """A host argument inside a kernel: `address` is the IR value of a generic pointer to its bytes."""
    host: HostArgument
    address: int


def make(name: str, tensor, attrs: dict) -> HostArgument:
    st = trace.current_or_none()
    if st is None or st.kernel is not None:
        raise DSLTypeError(f"host argument {name!r} is made in @cute.jit host code, not inside a kernel",
                           user_location(3))
    it = getattr(tensor, "iterator", None)
    if not isinstance(tensor, Tensor) or not isinstance(it, Pointer) or it.host is None:
        raise DSLTypeError(f"host argument {name!r} is computed from a tensor argument of the @cute.jit function, "
                           f"got {tensor!r}", user_location(3))
    p = producer(name)
    static, dynamic = {}, {}
    for k, v in attrs.items():
        if isinstance(v, Numeric) and isinstance(v._v, SymInt) and not v.is_static:
            v = v._v
        if isinstance(v, Numeric) and not v.is_static:
            raise DSLTypeError(f"host argument {name!r}: attribute {k} is a runtime {type(v).__name__}; only runtime "
                               "integers of the host side (extents, strides and expressions of them) are evaluated "
                               "at each call", user_location(3))
        if isinstance(v, Numeric):
            v = v.value
        if isinstance(v, SymInt) and not isinstance(v, int):
            dynamic[k] = v
        else:
            static[k] = v
    h = HostArgument(len(st.host_arguments) + 1, p, it.host, static, dynamic=dynamic)
    st.host_arguments[h.id] = h
    return h
