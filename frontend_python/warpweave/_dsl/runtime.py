"""Host-side tensors (cute.runtime.from_dlpack) and how jit arguments are specialised.

A RuntimeTensor records a buffer's address, shape, strides and element type. By default its layout is static
(every extent and stride is compiled in); mark_layout_dynamic() keeps them as runtime values, so that one
compiled kernel serves every size. A dynamic extent or stride is still specialised on its known divisibility
(the largest power of two up to 16 dividing it) and the buffer on its alignment, so that vector accesses can be
proven; a call whose arguments break what a compiled kernel assumed gets a fresh specialisation (or an error for
an explicitly compiled function).
"""
from __future__ import annotations

from typing import Any

from .errors import DSLTypeError, DSLValueError, user_location
from .numeric import (BFloat16, Boolean, Float8E4M3FN, Float8E5M2, Float16, Float32, Float64, Int8, Int16, Int32,
                      Int64, Numeric, Uint8, Uint16, Uint32, Uint64)

_MAX_DIV = 16

_NUMPY_TYPES = {"float16": Float16, "float32": Float32, "float64": Float64, "int8": Int8, "int16": Int16,
                "int32": Int32, "int64": Int64, "uint8": Uint8, "uint16": Uint16, "uint32": Uint32, "uint64": Uint64,
                "bool": Boolean}
_TORCH_TYPES = {"float16": Float16, "bfloat16": BFloat16, "float32": Float32, "float64": Float64, "int8": Int8,
                "int16": Int16, "int32": Int32, "int64": Int64, "uint8": Uint8, "uint16": Uint16, "uint32": Uint32,
                "uint64": Uint64, "bool": Boolean, "float8_e4m3fn": Float8E4M3FN, "float8_e5m2": Float8E5M2}


def pow2_divisibility(v: int, cap: int = _MAX_DIV) -> int:
    """The largest power of two up to cap that divides v (v == 0 counts as divisible by cap)."""
    v = abs(int(v))
    if v == 0:
        return cap
    d = 1
    while d < cap and v % (d * 2) == 0:
        d *= 2
    return d


class RuntimeTensor:
    """A device (or host) buffer seen as a tensor, passed to @cute.jit functions."""

    def __init__(self, source, data_ptr: int, shape, strides, dtype, device: str, assumed_align: int | None = None):
        self.source = source
        self.data_ptr = int(data_ptr)
        self._shape = tuple(int(s) for s in shape)
        self._strides = tuple(int(s) for s in strides)
        self.element_type = dtype
        self.device = device
        eb = max(1, dtype.width // 8)
        self.assumed_align = assumed_align if assumed_align is not None else min(16, pow2_divisibility(self.data_ptr, 16) or eb)
        if self.data_ptr % self.assumed_align:
            raise DSLValueError(f"from_dlpack: assumed_align={self.assumed_align} but the buffer address "
                                f"{self.data_ptr:#x} is not aligned to it", user_location(2))
        self.dynamic_shape = [False] * len(self._shape)
        self.dynamic_stride = [False] * len(self._strides)
        self.shape_divisibility = [None] * len(self._shape)
        self.stride_divisibility = [None] * len(self._strides)
        self._spec = None

    # --- marks ------------------------------------------------------------------------------------------------
    def mark_layout_dynamic(self, leading_dim: int | None = None):
        """Every extent and stride becomes a runtime value, except the unit stride of the leading dimension."""
        if leading_dim is None:
            ones = [i for i, s in enumerate(self._strides) if s == 1]
            leading_dim = ones[0] if len(ones) == 1 else None
        elif not 0 <= leading_dim < len(self._shape):
            raise DSLValueError(f"mark_layout_dynamic: leading_dim={leading_dim} out of range for rank "
                                f"{len(self._shape)}", user_location(2))
        elif self._strides[leading_dim] != 1:
            raise DSLValueError(f"mark_layout_dynamic: dimension {leading_dim} has stride {self._strides[leading_dim]}, "
                                "not 1", user_location(2))
        self.dynamic_shape = [True] * len(self._shape)
        self.dynamic_stride = [i != leading_dim for i in range(len(self._strides))]
        self._spec = None
        return self

    def mark_compact_shape_dynamic(self, mode: int, stride_order=None, divisibility: int = 1):
        """Extent `mode` becomes a runtime value (a multiple of `divisibility`), and the strides that depend on
        it with it."""
        if not 0 <= mode < len(self._shape):
            raise DSLValueError(f"mark_compact_shape_dynamic: mode {mode} out of range", user_location(2))
        if self._shape[mode] % divisibility:
            raise DSLValueError(f"mark_compact_shape_dynamic: extent {self._shape[mode]} of mode {mode} is not a "
                                f"multiple of {divisibility}", user_location(2))
        self.dynamic_shape[mode] = True
        self.shape_divisibility[mode] = divisibility
        order = stride_order if stride_order is not None else sorted(range(len(self._strides)),
                                                                       key=lambda i: self._strides[i])
        seen = False
        for i in order:
            if seen:
                self.dynamic_stride[i] = True
            if i == mode:
                seen = True
        self._spec = None
        return self

    # --- views ------------------------------------------------------------------------------------------------
    @property
    def shape(self):
        return self._shape

    @property
    def stride(self):
        return self._strides

    @property
    def memspace(self):
        return "gmem"

    def __repr__(self):
        dims = ",".join("?" if d else str(s) for s, d in zip(self._shape, self.dynamic_shape))
        strides = ",".join("?" if d else str(s) for s, d in zip(self._strides, self.dynamic_stride))
        return f"RuntimeTensor<{self.element_type.__name__}, ({dims}):({strides}), align {self.assumed_align}>"

    # --- specialisation ---------------------------------------------------------------------------------------
    def spec(self) -> tuple:
        """What a compiled kernel may rely on: type, static extents and strides, divisibility, alignment."""
        if self._spec is None:
            self._spec = self._make_spec()
        return self._spec

    def _make_spec(self) -> tuple:
        # Dynamic extents carry only the divisibility the user promised; dynamic strides and the address carry
        # what they have (up to 16), which is what proves vector accesses aligned.
        shape = tuple(("?", self.shape_divisibility[i] or 1) if self.dynamic_shape[i] else s
                      for i, s in enumerate(self._shape))
        stride = tuple(("?", self.stride_divisibility[i] or pow2_divisibility(s)) if self.dynamic_stride[i] else s
                       for i, s in enumerate(self._strides))
        return ("tensor", self.element_type.__name__, shape, stride, self.assumed_align)


def satisfies(spec: tuple, compiled: tuple) -> bool:
    """Whether a tensor of `spec` may run a kernel compiled for `compiled`: same type and static values, at least
    the divisibility and alignment the kernel relied on."""
    if spec == compiled:
        return True
    if spec[0] != compiled[0] or spec[1] != compiled[1] or spec[4] % compiled[4] != 0:
        return False
    for mine, theirs in zip(spec[2] + spec[3], compiled[2] + compiled[3]):
        if isinstance(theirs, tuple):
            if not isinstance(mine, tuple) or mine[1] % theirs[1] != 0:
                return False
        elif mine != theirs:
            return False
    return len(spec[2]) == len(compiled[2])


def _torch_dtype_name(t) -> str:
    return str(t).replace("torch.", "")


def from_dlpack(tensor, assumed_align: int | None = None, **kwargs) -> RuntimeTensor:
    """Wraps a PyTorch tensor, a NumPy array, or any object with __cuda_array_interface__ / __array_interface__."""
    mod = type(tensor).__module__
    if mod.startswith("torch"):
        name = _torch_dtype_name(tensor.dtype)
        if name not in _TORCH_TYPES:
            raise DSLTypeError(f"from_dlpack: unsupported torch dtype {tensor.dtype}", user_location(2))
        device = "cuda" if tensor.is_cuda else "cpu"
        return RuntimeTensor(tensor, tensor.data_ptr(), tensor.shape, tensor.stride(), _TORCH_TYPES[name], device,
                             assumed_align)
    iface = getattr(tensor, "__cuda_array_interface__", None)
    device = "cuda"
    if iface is None:
        iface = getattr(tensor, "__array_interface__", None)
        device = "cpu"
    if iface is None:
        raise DSLTypeError(f"from_dlpack: {type(tensor).__name__} offers no array interface (torch tensors, NumPy "
                           "and CuPy arrays are supported)", user_location(2))
    import numpy as np

    dt = np.dtype(iface["typestr"])
    if dt.name not in _NUMPY_TYPES:
        raise DSLTypeError(f"from_dlpack: unsupported element type {dt}", user_location(2))
    shape = iface["shape"]
    strides = iface.get("strides")
    if strides is None:
        strides, acc = [], 1
        for s in reversed(shape):
            strides.insert(0, acc)
            acc *= s
    else:
        strides = [s // dt.itemsize for s in strides]
    return RuntimeTensor(tensor, iface["data"][0], shape, strides, _NUMPY_TYPES[dt.name], device, assumed_align)


def is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def numeric_dtype_of_torch(t):
    return _TORCH_TYPES.get(_torch_dtype_name(t))


def make_fake_tensor(dtype, shape, stride=None, assumed_align: int = 16) -> RuntimeTensor:
    """A tensor with a shape, strides and element type but no memory: for compiling without a GPU (cute.compile
    accepts it like any tensor; calling the compiled function with it is refused)."""
    from .numeric import dtype as dtype_of

    dtype = dtype_of(dtype)
    shape = tuple(int(s) for s in shape)
    if stride is None:
        stride, acc = [], 1
        for s in shape:
            stride.append(acc)
            acc *= s
    return RuntimeTensor(None, 0, shape, tuple(int(s) for s in stride), dtype, "fake", assumed_align)
