"""How a JAX array is seen by a @cute.jit function inside cutlass_call: its element type, the order of its modes,
and which of its extents and strides are compiled in.

A JAX array is dense and row-major. The kernel's mode k is the array's dimension `mode[k]` (default: the same
order), so a TensorSpec(mode=(1, 0)) shows a row-major matrix as its column-major transpose without a copy. By
default extents and strides are runtime values (one compiled function serves every size, and jax.export's
symbolic shapes compile), each assumed a multiple of its divisibility: the extent itself for a concrete shape, the
spec's `divisibility`, or what a symbolic dimension guarantees ("32*M" is a multiple of 32). A static tensor
compiles every extent and stride in.
"""
from __future__ import annotations

import copy
import dataclasses

import jax
import numpy as np

from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import (BFloat16, Boolean, Float8E4M3FN, Float8E5M2, Float8E8M0FNU, Float16, Float32, Float64,
                              Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64)
from ..values.runtime import RuntimeTensor, make_fake_tensor, sym_int

# The alignment cutlass_call promises of every buffer: XLA's device allocations are 256-byte aligned.
BUFFER_ALIGNMENT = 256

_JAX_NAMES = {"float16": Float16, "bfloat16": BFloat16, "float32": Float32, "float64": Float64, "int8": Int8,
              "int16": Int16, "int32": Int32, "int64": Int64, "uint8": Uint8, "uint16": Uint16, "uint32": Uint32,
              "uint64": Uint64, "bool": Boolean, "float8_e4m3fn": Float8E4M3FN, "float8_e5m2": Float8E5M2,
              "float8_e8m0fnu": Float8E8M0FNU}
_CUTLASS_NAMES = {v: k for k, v in _JAX_NAMES.items()}


def jax_to_cutlass_dtype(dtype):
    """The DSL element type of a JAX (NumPy) dtype."""
    name = np.dtype(dtype).name
    if name not in _JAX_NAMES:
        raise DSLTypeError(f"cutlass.jax: no DSL element type for the JAX dtype {name}", user_location())
    return _JAX_NAMES[name]


def cutlass_to_jax_dtype(dtype):
    """The JAX dtype of a DSL element type (cutlass.Float32 -> jnp.float32)."""
    if dtype not in _CUTLASS_NAMES:
        raise DSLTypeError(f"cutlass.jax: no JAX dtype for the element type {dtype!r}", user_location())
    return jax.numpy.dtype(_CUTLASS_NAMES[dtype])


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """How cutlass_call shows one array to the kernel. mode: the array dimension of each kernel mode (a permutation);
    static: compile the extents and strides in (None: cutlass_call's use_static_tensors); divisibility: what each
    extent (in the kernel's mode order) is a multiple of, for dynamic extents; ptr_assumed_align: the buffer's
    alignment in bytes."""
    mode: tuple | None = None
    static: bool | None = None
    divisibility: tuple | None = None
    ptr_assumed_align: int = BUFFER_ALIGNMENT

    def __post_init__(self):
        if self.mode is not None:
            object.__setattr__(self, "mode", tuple(int(m) for m in self.mode))
            if sorted(self.mode) != list(range(len(self.mode))):
                raise DSLValueError(f"TensorSpec: mode {self.mode} is not a permutation of 0..{len(self.mode) - 1}",
                                    user_location())
        if self.divisibility is not None:
            object.__setattr__(self, "divisibility", tuple(int(d) for d in self.divisibility))
            if any(d < 1 for d in self.divisibility):
                raise DSLValueError(f"TensorSpec: divisibility {self.divisibility} must be positive integers",
                                    user_location())
        a = self.ptr_assumed_align
        if not isinstance(a, int) or a < 1 or a & (a - 1):
            raise DSLValueError(f"TensorSpec: ptr_assumed_align must be a power of two, got {a!r}", user_location())


def specs_for(spec, n: int, what: str) -> list:
    """One TensorSpec (or None) for each of n arrays: spec is None, one spec for all, or a sequence of n."""
    if spec is None or isinstance(spec, TensorSpec):
        return [spec] * n
    spec = list(spec)
    if len(spec) != n or any(s is not None and not isinstance(s, TensorSpec) for s in spec):
        raise DSLValueError(f"cutlass_call: {what} must be a TensorSpec or a sequence of {n} TensorSpec or None, one "
                            f"for each array, got {spec!r}", user_location())
    return spec


def _dim_divisibility(d) -> int:
    """What a symbolic dimension of jax.export is always a multiple of (its largest power-of-two factor up to 2**16
    that JAX can prove)."""
    div = 1
    while div < 1 << 16:
        try:
            r = d % (div * 2)
        except Exception:  # JAX cannot reduce the remainder: no more than what is proven so far
            break
        if not (isinstance(r, (int, np.integer)) and r == 0):
            break
        div *= 2
    return div


def is_concrete(d) -> bool:
    return isinstance(d, (int, np.integer))


class ArrayView:
    """One array of a cutlass_call as its kernel sees it: shape and dtype of the JAX array, the kernel's mode order,
    static or not, the divisibility of each kernel mode's extent."""

    def __init__(self, shape, dtype, spec: TensorSpec | None, use_static: bool, what: str):
        self.shape = tuple(shape)
        self.dtype = jax_to_cutlass_dtype(dtype)
        spec = spec or TensorSpec()
        rank = len(self.shape)
        self.mode = spec.mode if spec.mode is not None else tuple(range(rank))
        if len(self.mode) != rank:
            raise DSLValueError(f"cutlass_call: {what} has rank {rank}, its TensorSpec's mode {self.mode} has "
                                f"{len(self.mode)} modes", user_location())
        self.static = spec.static if spec.static is not None else use_static
        self.align = spec.ptr_assumed_align
        if self.static and not all(is_concrete(d) for d in self.shape):
            raise DSLValueError(f"cutlass_call: {what} is static but its shape {self.shape} is symbolic",
                                user_location())
        if spec.divisibility is not None and len(spec.divisibility) != rank:
            raise DSLValueError(f"cutlass_call: {what} has rank {rank}, its TensorSpec's divisibility "
                                f"{spec.divisibility} has {len(spec.divisibility)} entries", user_location())
        self.divisibility = []
        for k, j in enumerate(self.mode):
            d = self.shape[j]
            own = int(d) if is_concrete(d) and int(d) > 0 else (1 if is_concrete(d) else _dim_divisibility(d))
            if spec.divisibility is not None:
                want = spec.divisibility[k]
                if is_concrete(d) and int(d) % want:
                    raise DSLValueError(f"cutlass_call: {what}'s extent {d} (mode {k}) is not a multiple of the "
                                        f"divisibility {want} its TensorSpec promises", user_location())
                own = want
            self.divisibility.append(own)
        self.divisibility = tuple(self.divisibility)
        elems = 1
        for d in self.shape:
            elems = elems * (int(d) if is_concrete(d) else 1 << 20)
        self.wide = not all(is_concrete(d) for d in self.shape) or elems >= 1 << 31

    @property
    def permuted(self) -> bool:
        return self.mode != tuple(range(len(self.mode)))

    def key(self):
        shape = tuple(int(d) if is_concrete(d) else str(d) for d in self.shape) if self.static else len(self.shape)
        return (shape, self.dtype.__name__, self.mode, self.static, self.align, self.divisibility, self.wide)

    def _row_major_strides(self, shape):
        strides, acc = [0] * len(shape), 1
        for j in range(len(shape) - 1, -1, -1):
            strides[j] = acc
            acc = acc * shape[j]
        return strides

    def fake(self) -> RuntimeTensor:
        """The tensor the function is compiled for; a TVM FFI entry reads XLA's buffer (in the array's order) into
        it by `dlpack_dims`."""
        rt = self._fake()
        rt.dlpack_dims = self.mode if self.permuted else None
        return rt

    def _fake(self) -> RuntimeTensor:
        if self.static:
            strides = self._row_major_strides([int(d) for d in self.shape])
            return make_fake_tensor(self.dtype, [int(self.shape[j]) for j in self.mode],
                                    [strides[j] for j in self.mode], assumed_align=self.align)
        width = 64 if self.wide else 32
        # the array's dimension j is an unknown multiple of its kernel mode's divisibility
        dims = [None] * len(self.shape)
        for k, j in enumerate(self.mode):
            dims[j] = sym_int(width, self.divisibility[k])
        strides = self._row_major_strides(dims)
        return make_fake_tensor(self.dtype, [dims[j] for j in self.mode], [strides[j] for j in self.mode],
                                assumed_align=self.align)

    def host(self, array: np.ndarray) -> RuntimeTensor:
        """A host array (a compile-only run's buffers) seen as the kernel sees the JAX array."""
        esize = array.dtype.itemsize
        strides = [s // esize for s in array.strides]
        rt = RuntimeTensor(array, array.ctypes.data, [array.shape[j] for j in self.mode],
                           [strides[j] for j in self.mode], self.dtype, "cuda", self.align)
        # runtime where the compiled function reads them at run time, with the divisibility it was compiled for
        f = self.fake()
        for field in ("dynamic_shape", "dynamic_stride", "shape_divisibility", "stride_divisibility",
                      "use_32bit_stride", "index_bits"):
            setattr(rt, field, copy.copy(getattr(f, field)))
        return rt


def aligned_empty(shape, dtype, align: int = BUFFER_ALIGNMENT) -> np.ndarray:
    """A zeroed host array whose buffer starts `align`-aligned (as XLA's device buffers do)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(n + align, dtype=np.uint8)
    off = -raw.ctypes.data % align
    return raw[off:off + n].view(dtype).reshape(shape)
