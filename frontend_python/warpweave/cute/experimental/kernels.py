"""@cute.experimental.kernel, .jit and .compile: CuTe DSL's extension API declares kernels as @cute.kernel does;
what differs is what a kernel sees and what its operations may ask of its launch.

- Its global-memory tensor arguments arrive bounded (bounded.py), so that its copies predicate themselves.
- Each such argument brings parameter slots: per-call host arguments (host_arguments.py) computed from it that the
  kernel's operations fill while the kernel is traced (a tensor map whose box only the kernel's shared-memory
  layout decides). The kernel's parameters are fixed before its body is traced, so each slot is a parameter of
  SLOT_BYTES from the start; a slot no operation fills is passed as zeros.
- Operations may leave work for the body's end (`at_end`: tensor memory given back after its last use).
"""
from __future__ import annotations

from ..._dsl.atoms import host_arguments
from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ..._dsl.call.jit import compile, jit  # noqa: F401,A004 - the same host functions and compile
from ..._dsl.host.kernel_trace import KernelFunction
from ..._dsl.values.pointer import GMEM, Pointer
from ..._dsl.values.tensor import Tensor
from .bounded import BoundedTensor, bound_argument

SLOT = "cute_ext.parameter_slot"
SLOT_BYTES = 128        # a tensor map's size, the largest per-call parameter the backends make
SLOT_ALIGN = 64
SLOTS_PER_ARGUMENT = 2  # a load's and a store's tensor map, or two loads of different boxes


def _unfilled(tensor, **attrs) -> bytes:
    return bytes(SLOT_BYTES)


def _unfilled_c(tensor, dst, **attrs):
    """The C form of an unfilled slot (an exported function, a TVM FFI call): zeros."""
    return "", f"for (int ww_k = 0; ww_k < {SLOT_BYTES}; ++ww_k) ({dst})[ww_k] = 0;"


host_arguments.register(SLOT, _unfilled, size=SLOT_BYTES, align=SLOT_ALIGN, export_c=_unfilled_c)


class ParameterSlots:
    """The slots of a launch's arguments: (argument index, (slot, ...)) pairs, host or kernel side."""

    def __init__(self, per_argument: tuple):
        self.per_argument = per_argument


class KernelContext:
    """One @cute.experimental.kernel being traced: the actions its operations left for the body's end."""

    def __init__(self):
        self.at_end: list = []


_active: list[KernelContext] = []


def current_kernel() -> KernelContext:
    if not _active:
        raise DSLTypeError("this cute.experimental operation works inside a @cute.experimental.kernel",
                           user_location(2))
    return _active[-1]


def _slotted(x) -> bool:
    it = getattr(x, "iterator", None)
    return isinstance(x, Tensor) and isinstance(it, Pointer) and it.memspace == GMEM and it.host is not None


class BoundedKernel(KernelFunction):
    """A @cute.experimental.kernel: a @cute.kernel whose global-memory tensor arguments are bounded tensors."""

    def __call__(self, *args, **kwargs):
        launch = KernelFunction.__call__(self, *args, **kwargs)
        slots = tuple((i, tuple(host_arguments.make(SLOT, a, {}) for _ in range(SLOTS_PER_ARGUMENT)))
                      for i, a in enumerate(args) if _slotted(a))
        launch.args = tuple(args) + (ParameterSlots(slots),)
        return launch

    @property
    def rewritten(self):
        body = KernelFunction.rewritten.fget(self)

        def entry(*args, **kwargs):
            slots = {}
            if args and isinstance(args[-1], ParameterSlots):
                slots = dict(args[-1].per_argument)
                args = args[:-1]
            ctx = KernelContext()
            _active.append(ctx)
            try:
                result = body(*(bound_argument(a, slots.get(i, ())) for i, a in enumerate(args)),
                              **{k: bound_argument(v) for k, v in kwargs.items()})
                for action in ctx.at_end:
                    action()
            finally:
                _active.pop()
            return result

        entry.__name__ = self.fn.__name__
        return entry


def claim_parameter(tensor, name: str, attrs: dict):
    """The kernel-side parameter (a DeviceHostArgument) computed at each call by host-argument producer `name`
    from the kernel argument `tensor` is a view of, with static attributes `attrs`: a slot of that argument, the
    same one for the same request."""
    if not isinstance(tensor, BoundedTensor):
        raise DSLTypeError(f"{name}: expected a global-memory argument of the @cute.experimental.kernel (or a view "
                           f"of one), got {type(tensor).__name__}", user_location(2))
    if not tensor.slots:
        raise DSLValueError(f"{name}: the tensor is no argument of the @cute.experimental.kernel's launch (a tensor "
                            "of the @cute.experimental.jit function's arguments is)", user_location(2))
    p = host_arguments.producer(name)
    if p.size != SLOT_BYTES or SLOT_ALIGN % p.align:
        raise DSLValueError(f"{name}: its {p.size}-byte parameter does not fit a {SLOT_BYTES}-byte slot",
                            user_location(2))
    free = None
    for s in tensor.slots:
        h = s.host
        if h.producer.name == name and h.attrs == attrs:
            return s
        if h.producer.name == SLOT and free is None:
            free = s
    if free is None:
        raise DSLValueError(f"{name}: the argument's {SLOTS_PER_ARGUMENT} per-call parameters are taken (each "
                            "distinct TMA box of one argument takes one)", user_location(2))
    free.host.producer = p
    free.host.attrs = dict(attrs)
    return free


def _decorate(fn, preprocessor: bool):
    k = BoundedKernel(fn)
    if not preprocessor:  # Python control flow stays Python, as with @cute.kernel(preprocessor=False)
        k._rewritten = fn
    return k


def kernel(fn=None, *, preprocessor: bool = True):
    """@cute.experimental.kernel / @cute.experimental.kernel(preprocessor=False): launched as a @cute.kernel."""
    if fn is None:
        return lambda f: _decorate(f, preprocessor)
    return _decorate(fn, preprocessor)
