"""Numbers the host side of a @cute.jit function computes at each call: tensor elements read and written outside
a kernel, and what is computed from them.

The host side is traced once (host_actions.py), so an element read there is not a number yet: it is a
HostValue, a node that a call evaluates. A read records an action that takes the element from the argument's
memory when the call reaches it (so a read after a write sees the write); arithmetic, comparisons, conversions and
cute.math functions of host values make nodes that apply the static (Python) form of the same operation to the
call's numbers, with the same rounding and wrap-around. A write records an action that evaluates its value,
converts it to the tensor's element type and stores it. Register tensors made on the host
(cute.make_rmem_tensor) are arrays of each call, fresh at its start.

CuTe DSL documents host-side element access of tensors in host memory (NumPy arrays, CPU torch tensors, pointers
to host memory); memory of the device is refused at the call. A value read from tensor elements cannot be passed
to a kernel, nor branched on (errors at the user's line); values computed from the arguments' runtime scalars and
extents can (host_program.py, host_branch.py).
"""
from __future__ import annotations

import contextlib
import itertools
import threading

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values import hooks
from ..values.numeric import HostRef, Numeric, SymInt, Uint8
from ..values.jit_argument import is_jit_argument, leaves, read_leaves, types_of
from ..values.runtime import AddressSpace, RuntimePointer, RuntimeTensor, is_torch_tensor, runtime_view
from ..values.tensor import RMEM, Pointer, Tensor, is_packed
from . import host_program

_ids = itertools.count()
_call = threading.local()    # the slots of the call whose host actions are running: value -> its number


@contextlib.contextmanager
def call_slots():
    """The scope of one call's host actions: the numbers they read and compute, and its host registers."""
    saved = getattr(_call, "slots", None)
    _call.slots = {}
    try:
        yield
    finally:
        _call.slots = saved


class TripSlots:
    """One trip of a host loop after another (host_loop.py): what a trip reads and computes is the trip's own, so
    it is forgotten at the trip's end; host registers (and what the call held before the loop) stay."""

    def __init__(self):
        self.slots = _slots()
        self.before = set(self.slots)

    def end_trip(self) -> None:
        for k in [k for k in self.slots if k not in self.before and k[0] != "local"]:
            del self.slots[k]


def _slots() -> dict:
    slots = getattr(_call, "slots", None)
    if slots is None:
        raise RuntimeError("host values are evaluated inside call_slots()")
    return slots


class HostValue(HostRef):
    """A number of the host side known at each call: fn applied to the call's values of args (static Numerics in,
    a static Numeric out), or the value an action put in the call's slot."""
    __slots__ = ("fn", "args", "slot", "op", "sid")

    def __init__(self, fn=None, args=(), slot=None, op=None):
        super().__init__(None, "a host-side value")
        self.fn = fn
        self.args = tuple(args)
        self.slot = slot
        self.op = op  # (operation, operand) of the host program (host_program.py), or None: not expressible
        self.sid = None  # its derived symbol, once it has one


class HostLocal:
    """The memory of a register tensor made on the host: an array of `n` Python numbers of each call."""

    def __init__(self, dtype, n: int):
        self.id = next(_ids)
        self.dtype = dtype
        self.n = n

    def array(self, env) -> list:
        slots = _slots()
        key = ("local", self.id)
        if key not in slots:
            slots[key] = [self.dtype(0)._v] * self.n
        return slots[key]

    def __repr__(self):
        return f"host registers of {self.n} {self.dtype.__name__}"


def is_host(x) -> bool:
    """Whether x is a number of the host side that only a call knows (a runtime scalar argument or a HostValue)."""
    return isinstance(x, Numeric) and isinstance(x._v, HostRef)


@hooks.defer_on_host.register
def defer(fn, args, result_type=None, op=None):
    """fn(*args) made at each call: a Numeric of result_type (found by applying fn to ones when not given).
    `op` names the operation for the host program; an integer result of one that the program can compute is a
    derived host symbol (host_program.py), so that layouts, grids and kernels take it as any runtime integer."""
    if result_type is None:
        probe = fn(*[_probe(a) for a in args])
        if not isinstance(probe, Numeric):
            raise DSLTypeError(f"a host-side operation gave {type(probe).__name__}, not a number", user_location(3))
        result_type = type(probe)
    value = result_type._wrap(HostValue(fn, args, op=op))
    if op is not None and result_type.is_integer and trace.current_or_none() is not None:
        try:
            code: list = []
            host_program.code_of(value, code)
        except host_program.Unexpressible:
            return value  # computed from tensor elements: evaluated by the host actions of each call
        return result_type._wrap(host_program.derive(value, user_location(3)))
    return value


def _probe(a):
    if isinstance(a, Numeric) and not a.is_static:
        return type(a)(True if type(a).is_boolean else 1)
    return a


def evaluate(x, values, env):
    """x at a call: a static Numeric for a number (a Python value stays as it is; tuples map)."""
    if isinstance(x, tuple):
        return tuple(evaluate(e, values, env) for e in x)
    if not isinstance(x, Numeric) or x.is_static:
        return x
    t, v = type(x), x._v
    if isinstance(v, HostValue):
        slots = _slots()
        key = v.slot if v.slot is not None else ("node", id(v))
        if key not in slots:
            if v.slot is not None:
                raise DSLValueError("a host-side value was used before the call read it", None)
            r = v.fn(*[evaluate(a, values, env) for a in v.args])
            slots[key] = r if isinstance(r, Numeric) else t(r)
        if isinstance(slots[key], Unread):
            raise slots[key].error
        return slots[key]
    if isinstance(v, HostRef):
        a = values[v.arg_index]
        return t(a.value if isinstance(a, Numeric) else a)
    if isinstance(v, SymInt):
        return t(int(_core.evaluate(v, env)))
    raise DSLTypeError("the host side cannot use a value computed in device code", None)


# --- memory --------------------------------------------------------------------------------------------------

def argument_value(values, key):
    v = values[key[0]] if isinstance(key, tuple) else values[key]
    rest = key[1:] if isinstance(key, tuple) else ()
    if rest and is_jit_argument(v):
        # a pointer a JitArgument holds: the address the call's object gives (its element type is the access's)
        layout = leaves(types_of(v))
        at = next((n for n, (i, path, _, _) in enumerate(layout) if (i,) + path == tuple(rest)), None)
        if at is None:
            raise DSLValueError(f"{type(v).__name__} has no pointer value at {list(rest)}", None)
        return RuntimePointer(Uint8, read_leaves(v, layout, len(types_of(v)))[at], AddressSpace.gmem, 1)
    for k in rest:
        v = v[k]
    return v


class HostMemory:
    """Element access of one memory at a call: a tensor or pointer argument, or host registers."""

    def __init__(self, ref, dtype, values, env):
        self.dtype = dtype
        self.local = ref.array(env) if isinstance(ref, HostLocal) else None
        self.flat = self.address = None
        if self.local is not None:
            return
        arg = argument_value(values, ref)
        if isinstance(arg, RuntimePointer):
            self.address = arg.address
            _refuse_device_address(arg.address)
            return
        rt = arg if isinstance(arg, RuntimeTensor) else runtime_view(arg)
        src = getattr(rt, "source", None)
        if src is None:
            raise DSLValueError("host-side element access: a fake tensor has no memory", None)
        if is_torch_tensor(src):
            if src.device.type != "cpu":
                raise DSLValueError(f"host-side element access reads and writes host memory; this tensor is on "
                                    f"{src.device}", None)
            n = src.untyped_storage().nbytes() // src.element_size() - src.storage_offset()
            self.flat = src.as_strided((n,), (1,), src.storage_offset())
            self.torch = True
        else:
            import numpy as np

            if getattr(rt, "device", "cpu") != "cpu":
                raise DSLValueError("host-side element access reads and writes host memory (NumPy arrays, torch "
                                    "tensors on the CPU)", None)
            base = src
            while isinstance(base.base, np.ndarray):
                base = base.base
            # From the view's first element to the end of the memory it views.
            end = base.__array_interface__["data"][0] + base.nbytes
            n = (end - src.__array_interface__["data"][0]) // src.itemsize
            self.flat = np.lib.stride_tricks.as_strided(src, shape=(n,), strides=(src.itemsize,))
            self.torch = False

    def _ctype(self):
        import ctypes

        t = self.dtype
        if t.is_boolean:
            return ctypes.c_bool
        if t.is_float:
            if t.width == 32:
                return ctypes.c_float
            if t.width == 64:
                return ctypes.c_double
            raise DSLTypeError(f"host-side access through a pointer to {t.__name__} elements is not supported "
                               "(Float32, Float64, integers, Boolean)", None)
        names = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}
        if t.width not in names:
            raise DSLTypeError(f"host-side access through a pointer to {t.__name__} elements is not supported", None)
        return getattr(ctypes, ("c_" if t.signed else "c_u") + names[t.width])

    def _check(self, offset, n):
        if not 0 <= offset < n:
            raise DSLValueError(f"host-side element access at offset {offset} is outside the memory of {n} elements",
                                None)

    def read(self, offset: int):
        t = self.dtype
        if self.local is not None:
            self._check(offset, len(self.local))
            return t._wrap(self.local[offset])
        if self.address is not None:
            ct = self._ctype()
            import ctypes

            return t(ct.from_address(self.address + offset * ctypes.sizeof(ct)).value)
        self._check(offset, self.flat.shape[0])
        x = self.flat[offset]
        if self.torch and not (t.is_integer or t.is_boolean):
            x = x.float()
        return t(x.item())

    def write(self, offset: int, value) -> None:
        t = self.dtype
        v = value if isinstance(value, Numeric) and type(value) is t else t(value)
        if self.local is not None:
            self._check(offset, len(self.local))
            self.local[offset] = v._v
            return
        if self.address is not None:
            ct = self._ctype()
            import ctypes

            ct.from_address(self.address + offset * ctypes.sizeof(ct)).value = v._v
            return
        self._check(offset, self.flat.shape[0])
        self.flat[offset] = v._v


def _refuse_device_address(address: int) -> None:
    """A pointer the host reads through must be to host memory: where a driver is present, it is asked."""
    if _core.pointer_memory_type(address) == _core.MemoryType.device:
        raise DSLValueError(f"host-side element access through the pointer {address:#x}: it points to device "
                            "memory; the host side reads and writes host memory", None)


def _memory_ref(ptr):
    if isinstance(ptr.base, HostLocal):
        return ptr.base
    if ptr.host is not None:
        return ptr.host
    return None


class HostLoad:
    """An element read of the host side: the call's value goes into the value's slot. A read the call cannot make
    (device memory) fails where its value is used, not before: a value never used (a pointer read from a table of
    device addresses whose tensor serves only for its layout, on the host) costs nothing, as if not read."""

    # An exported function (export/export_c.py) leaves it out: only other host actions use its value (a kernel never
    # takes one: kernel_trace refuses it), and each of those that uses it has no C form, which keeps the function
    # from exporting; one with a C form prints no value read here.
    c_omitted = True

    def __init__(self, ref, dtype, offset, slot, where):
        self.ref, self.dtype, self.offset, self.slot, self.where = ref, dtype, offset, slot, where

    def run(self, values, env) -> None:
        off = self.offset if isinstance(self.offset, int) else int(_core.evaluate(self.offset, env))
        try:
            _slots()[self.slot] = HostMemory(self.ref, self.dtype, values, env).read(off)
        except DSLValueError as e:
            _slots()[self.slot] = Unread(DSLValueError(str(e), self.where))


class Unread:
    """The slot of a read the call could not make: the error its use raises."""

    def __init__(self, error):
        self.error = error


class ReadAddress:
    """The host-side placeholder of a pointer made (cute.make_ptr) from a value read from tensor elements: its
    tensors have layouts the host side computes with; the address itself is never known while tracing, and a
    kernel takes its pointers from arguments."""

    def __init__(self, where):
        self.where = where

    def error(self, where):
        return DSLTypeError(f"a pointer made on the host side from a value read from tensor elements (at "
                            f"{self.where[0]}:{self.where[1]}) cannot be passed to a kernel: pass the tensor that "
                            "holds the address and make the pointer in the kernel", where)


class HostStore:
    """An element write of the host side: the value is evaluated with the call's numbers and stored."""

    def __init__(self, ref, dtype, offset, value, where):
        self.ref, self.dtype, self.offset, self.value, self.where = ref, dtype, offset, value, where

    def run(self, values, env) -> None:
        off = self.offset if isinstance(self.offset, int) else int(_core.evaluate(self.offset, env))
        try:
            HostMemory(self.ref, self.dtype, values, env).write(off, evaluate(self.value, values, env))
        except DSLValueError as e:
            raise DSLValueError(str(e), self.where) from None


def _unusable(ptr, where):
    return DSLTypeError(f"the host side of a @cute.jit function reads and writes the elements of its tensor "
                        f"arguments and of register tensors it makes; this tensor's memory ({ptr.memspace_name}) is "
                        "device memory made in device code", where)


@hooks.load_on_host.register
def load(ptr, offset):
    """An element of a tensor read on the host side (tensor.load_scalar outside a kernel)."""
    where = user_location(3)
    ref = _memory_ref(ptr)
    if ref is None:
        raise _unusable(ptr, where)
    _refuse_packed(ptr.dtype, where)
    slot = ("load", next(_ids))
    trace.current().host_actions.append(HostLoad(ref, ptr.dtype, ptr.offset + offset, slot, where))
    return ptr.dtype._wrap(HostValue(slot=slot))


@hooks.store_on_host.register
def store(ptr, offset, value) -> None:
    """An element of a tensor written on the host side (tensor.store_scalar outside a kernel)."""
    where = user_location(3)
    ref = _memory_ref(ptr)
    if ref is None:
        raise _unusable(ptr, where)
    _refuse_packed(ptr.dtype, where)
    if not isinstance(value, (Numeric, int, float, bool)):
        raise DSLTypeError(f"a tensor element is a number, got {type(value).__name__}", where)
    if isinstance(value, Numeric) and not value.is_static and not isinstance(value._v, (HostRef, SymInt)):
        raise DSLTypeError("the host side cannot store a value computed in device code", where)
    if isinstance(value, Numeric) and value.is_static or not isinstance(value, Numeric):
        value = ptr.dtype(value)  # converted (and checked) while tracing, as a static store is
    trace.current().host_actions.append(HostStore(ref, ptr.dtype, ptr.offset + offset, value, where))


def _refuse_packed(t, where):
    if is_packed(t):
        raise DSLTypeError(f"host-side element access of {t.__name__} (packed sub-byte elements) is not supported",
                           where)


@hooks.local_tensor_on_host.register
def make_local_tensor(layout, dtype):
    """cute.make_rmem_tensor on the host side: registers of each call."""
    if is_packed(dtype):
        raise DSLTypeError(f"a register tensor of {dtype.__name__} (packed sub-byte elements) cannot be made on the "
                           "host side", user_location(3))
    cos = layout.cosize()
    return Tensor(Pointer(HostLocal(dtype, max(int(cos), 1)), dtype, RMEM, 16), layout, dtype)
