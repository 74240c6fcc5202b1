"""Host-side tensors (cute.runtime.from_dlpack) and how jit arguments are specialised.

A RuntimeTensor records a buffer's address, shape, strides and element type. By default its layout is static
(every extent and stride is compiled in); mark_layout_dynamic() keeps them as runtime values, so that one
compiled kernel serves every size. A dynamic extent or stride is still specialised on its known divisibility
(the largest power of two up to 16 dividing it) and the buffer on its alignment, so that vector accesses can be
proven; a call whose arguments break what a compiled kernel assumed gets a fresh specialisation (or an error for
an explicitly compiled function).
"""
from __future__ import annotations

import enum
from typing import Any

from ... import _core
from ..base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location
from ..base.ir_values import PointerType
from .jit_argument import HostAddress
from .pointer import GMEM, Pointer
from .user_numeric import numeric_name, storage_name
from .numeric import (
    BFloat16, Boolean, Float4E2M1FN, Float8E4M3FN, Float8E5M2, Float8E8M0FNU, Float16, Float32, Float64, Int8, Int16,
    Int32, Int64, Numeric, Uint8, Uint16, Uint32, Uint64, dtype as dtype_of,
)

_MAX_DIV = 16

_NUMPY_TYPES = {"float16": Float16, "float32": Float32, "float64": Float64, "int8": Int8, "int16": Int16,
                "int32": Int32, "int64": Int64, "uint8": Uint8, "uint16": Uint16, "uint32": Uint32, "uint64": Uint64,
                "bool": Boolean}
_TORCH_TYPES = {"float16": Float16, "bfloat16": BFloat16, "float32": Float32, "float64": Float64, "int8": Int8,
                "int16": Int16, "int32": Int32, "int64": Int64, "uint8": Uint8, "uint16": Uint16, "uint32": Uint32,
                "uint64": Uint64, "bool": Boolean, "float8_e4m3fn": Float8E4M3FN, "float8_e5m2": Float8E5M2,
                "float8_e8m0fnu": Float8E8M0FNU,
                # torch's packed fp4 (two values a byte): the view has fp4 elements over the tensor's strides, so
                # element offset o is nibble o of the buffer, low nibble first (cutlass.torch stores it so)
                "float4_e2m1fn_x2": Float4E2M1FN}


def pow2_divisibility(v: int, cap: int = _MAX_DIV) -> int:
    """The largest power of two up to cap that divides v (v == 0 counts as divisible by cap)."""
    v = abs(int(v))
    if v == 0:
        return cap
    d = 1
    while d < cap and v % (d * 2) == 0:
        d *= 2
    return d


def leading_dim_candidates(shape, strides) -> list:
    """The modes that may be a tensor's leading dimension: those of stride 1, or of those the ones of extent above 1
    where there are any (a mode of one element has every stride)."""
    ones = [i for i, s in enumerate(strides) if s == 1]
    return [i for i in ones if shape[i] != 1] or ones


class RuntimeTensor:
    """A device (or host) buffer seen as a tensor, passed to @cute.jit functions."""
    is_runtime_tensor = True   # isinstance(t, cute.Tensor) holds (tensor_type.py)

    def __init__(self, source, data_ptr: int, shape, strides, dtype, device: str, assumed_align: int | None = None):
        self.source = source
        self.data_ptr = int(data_ptr)
        self._shape = tuple(int(s) for s in shape)
        self._strides = tuple(int(s) for s in strides)
        self.element_type = dtype
        self.device = device
        eb = max(1, dtype.width // 8)
        self.assumed_align = assumed_align if assumed_align is not None else min(16, pow2_divisibility(self.data_ptr, 16) or eb)
        self.align_declared = assumed_align is not None
        if self.data_ptr % self.assumed_align:
            raise DSLValueError(f"from_dlpack: assumed_align={self.assumed_align} but the buffer address "
                                f"{self.data_ptr:#x} is not aligned to it", user_location(2))
        self.dynamic_shape = [False] * len(self._shape)
        self.dynamic_stride = [False] * len(self._strides)
        self.shape_divisibility = [None] * len(self._shape)
        self.stride_divisibility = [None] * len(self._strides)
        self.use_32bit_stride = None  # None: 64-bit extents and strides only where the buffer needs them
        self.index_bits = None        # 32 or 64 where forced (fake tensors of 64-bit sym_ints), else by size
        # a fake tensor's extents keep the width of their sym_int; other extents are 32-bit where they fit, as
        # CuTe DSL types them (an extent is an Int32 even in a tensor indexed with 64 bits)
        self.shape_bits = [None] * len(self._shape)
        self._spec = None

    # --- marks ------------------------------------------------------------------------------------------------
    def mark_layout_dynamic(self, leading_dim: int | None = None, *, _deduce_strictly: bool = True):
        """Every extent and stride becomes a runtime value, except the unit stride of the leading dimension and
        the zero strides of broadcast modes (compiled in: a kernel for a broadcast operand is another kernel).
        Without leading_dim, the leading dimension is the mode of stride 1, or of those the one of extent above 1;
        where that leaves several (a (2, 2) view of strides (1, 1)) it cannot be deduced, and is refused."""
        if leading_dim is None:
            leading_dim = self._deduced_leading_dim(strict=_deduce_strictly)
        elif not 0 <= leading_dim < len(self._shape):
            raise DSLValueError(f"mark_layout_dynamic: leading_dim={leading_dim} out of range for rank "
                                f"{len(self._shape)}", user_location(2))
        elif self._strides[leading_dim] != 1:
            raise DSLValueError(f"mark_layout_dynamic: dimension {leading_dim} has stride {self._strides[leading_dim]}, "
                                "not 1", user_location(2))
        self.dynamic_shape = [True] * len(self._shape)
        self.dynamic_stride = [i != leading_dim and s != 0 for i, s in enumerate(self._strides)]
        self._spec = None
        return self

    def _deduced_leading_dim(self, strict: bool):
        ones = leading_dim_candidates(self._shape, self._strides)
        if len(ones) > 1 and strict:
            raise DSLRuntimeError(f"mark_layout_dynamic: cannot deduce the leading dimension of shape {self._shape} "
                                  f"and strides {self._strides} (modes {tuple(ones)} all have stride 1); pass "
                                  "leading_dim=", user_location(3))
        return ones[0] if len(ones) == 1 else None

    def mark_compact_shape_dynamic(self, mode: int, stride_order=None, divisibility: int = 1):
        """Extent `mode` becomes a runtime value (a multiple of `divisibility`), and the strides that depend on
        it with it: those of the modes outside it in the compact order.

        stride_order reads as torch's `Tensor.dim_order()`: the modes from the outermost (largest stride) to the
        innermost (stride 1); e.g. (0, 1, 2) for a row-major (L, M, K) tensor, (0, 2, 1) for one whose mode 1 is
        contiguous. Without it, the order of the strides is used."""
        rank = len(self._shape)
        if not isinstance(mode, int) or not 0 <= mode < rank:
            raise DSLValueError(f"mark_compact_shape_dynamic: mode {mode} out of range for rank {rank}",
                                user_location(2))
        if not isinstance(divisibility, int) or divisibility < 1:
            raise DSLValueError(f"mark_compact_shape_dynamic: divisibility must be a positive integer, got "
                                f"{divisibility!r}", user_location(2))
        if self._shape[mode] % divisibility:
            raise DSLValueError(f"mark_compact_shape_dynamic: extent {self._shape[mode]} of mode {mode} is not a "
                                f"multiple of {divisibility}", user_location(2))
        if stride_order is None:
            inner_to_outer = sorted(range(rank), key=lambda i: (self._strides[i], -i))
        else:
            order = tuple(stride_order)
            if sorted(order) != list(range(rank)):
                raise DSLValueError(f"mark_compact_shape_dynamic: stride_order {order} is not a permutation of the "
                                    f"modes 0..{rank - 1}", user_location(2))
            inner_to_outer = list(reversed(order))
            strides = [abs(self._strides[i]) for i in inner_to_outer if self._shape[i] != 1]
            if any(a > b for a, b in zip(strides, strides[1:])):
                raise DSLValueError(f"mark_compact_shape_dynamic: stride_order {order} (outermost mode first, as "
                                    f"torch's dim_order) does not match the strides {self._strides}",
                                    user_location(2))
        self.dynamic_shape[mode] = True
        self.shape_divisibility[mode] = divisibility
        # a compact stride is the product of the extents inside it: what they are declared to divide, it divides
        inside, at = 1, inner_to_outer.index(mode)
        for k, i in enumerate(inner_to_outer):
            self.dynamic_stride[i] = self.dynamic_stride[i] or k > at
            if self.dynamic_stride[i]:
                self.stride_divisibility[i] = pow2_divisibility(inside)
            inside *= (self.shape_divisibility[i] or 1) if self.dynamic_shape[i] else self._shape[i]
        self._spec = None
        return self

    @property
    def leading_dim(self):
        """The mode whose stride is 1 (None when no single mode has it)."""
        return self._deduced_leading_dim(strict=False)

    # --- views ------------------------------------------------------------------------------------------------
    @property
    def element_type(self):
        return self._element_type

    @element_type.setter
    def element_type(self, t):
        """The element type kernels see (e.g. fp8 over a uint8 torch tensor); its width is the storage's, or a
        sub-byte type over bytes (fp6 over uint8, as CuTe DSL's host helpers make it): the tensor's strides count its
        elements, packed at their width from the buffer's start, which holds at least as many bits."""
        old = self.__dict__.get("_element_type")
        if old is not None and old.width != t.width and not (t.width < 8 and old.width == 8):
            raise DSLTypeError(f"element_type: {t.__name__} is {t.width} bits wide, the buffer holds {old.width}-bit "
                               "elements", user_location(2))
        self._element_type = t
        self._spec = None

    @property
    def shape(self):
        return self._shape

    @property
    def stride(self):
        return self._strides

    @property
    def memspace(self):
        return "gmem"

    def __tvm_ffi_value__(self):
        """What TVM FFI passes for this view (a function compiled with --enable-tvm-ffi takes the framework's
        tensors): the tensor it was made of, whose data, extents and strides are the view's."""
        if self.source is None:
            raise TypeError("a fake tensor has no memory to pass to a TVM FFI function: pass a tensor")
        return self.source

    @property
    def iterator(self) -> "RuntimePointer":
        """The buffer's first element as a pointer argument (a cute.Pointer in the function): its address, type and
        assumed alignment; programs that build their layouts in the function pass tensors so."""
        return RuntimePointer(self.element_type, self.data_ptr, AddressSpace.gmem, self.assumed_align)

    @property
    def _assumed_align(self) -> int:
        # CuTe DSL's tensors keep their alignment under this name, and code written against them reads it there
        # (QuACK's tests check the alignment its fake tensors claim); read-only, as assumed_align is the one kept.
        return self.assumed_align

    def __repr__(self):
        dims = ",".join("?" if d else str(s) for s, d in zip(self._shape, self.dynamic_shape))
        strides = ",".join("?" if d else str(s) for s, d in zip(self._strides, self.dynamic_stride))
        return f"RuntimeTensor<{self.element_type.__name__}, ({dims}):({strides}), align {self.assumed_align}>"

    @property
    def __cache_key__(self):
        """What a kernel compiled for this tensor depends on as the program declared it (spec_declared): libraries
        key their own caches of compiled functions on it. The divisibility a dynamic stride happens to have is a
        specialisation of ours (spec), which a call re-checks."""
        return self.spec_declared()

    # --- specialisation ---------------------------------------------------------------------------------------
    def spec(self) -> tuple:
        """What a compiled kernel may rely on: type, static extents and strides, divisibility, alignment."""
        if self._spec is None:
            self._spec = self._make_spec()
        return self._spec

    def spec_declared(self) -> tuple:
        """spec with only what the program declared: a run-time extent or stride divisible by what it promised
        (1 where it promised nothing), the buffer aligned as from_dlpack's assumed_align says (its element's
        alignment where it says nothing). What a kernel called through TVM FFI is compiled for (jit.py)."""
        _, name, shape, stride, _ = self.spec()
        shape = tuple(("?", self.shape_divisibility[i] or 1) if isinstance(x, tuple) else x
                      for i, x in enumerate(shape))
        stride = tuple(("?", self.stride_divisibility[i] or 1) if isinstance(x, tuple) else x
                       for i, x in enumerate(stride))
        align = self.assumed_align if self.align_declared else max(1, self.element_type.width // 8)
        return ("tensor", name, shape, stride, align)

    def _make_spec(self) -> tuple:
        # Dynamic extents carry only the divisibility the user promised; dynamic strides and the address carry
        # what they have (up to 16), which is what proves vector accesses aligned.
        shape = tuple(("?", self.shape_divisibility[i] or 1) if self.dynamic_shape[i] else s
                      for i, s in enumerate(self._shape))
        # (a buffer's own stride divides as it does, at least as its declaration says; a fake tensor's is declared)
        stride = tuple(("?", pow2_divisibility(s) if self.device != "fake" else
                        self.stride_divisibility[i] or pow2_divisibility(s)) if self.dynamic_stride[i] else s
                       for i, s in enumerate(self._strides))
        return ("tensor", numeric_name(self.element_type), shape, stride, self.assumed_align)


def satisfies(spec: tuple, compiled: tuple) -> bool:
    """Whether a tensor of `spec` may run a kernel compiled for `compiled`: same type and static values, at least
    the divisibility and alignment the kernel relied on."""
    if spec == compiled:
        return True
    # a tensor of a program's numeric type is passed as the DSL type of its bits (user_numeric.py)
    if spec[0] != compiled[0] or storage_name(spec[1]) != storage_name(compiled[1]) or spec[4] % compiled[4] != 0:
        return False
    for mine, theirs in zip(spec[2] + spec[3], compiled[2] + compiled[3]):
        if isinstance(theirs, tuple):  # a runtime value there: one of the call's (a static one too) that divides so
            if (mine[1] if isinstance(mine, tuple) else mine) % theirs[1] != 0:
                return False
        elif mine != theirs:
            return False
    return len(spec[2]) == len(compiled[2])


def _torch_dtype_name(t) -> str:
    return str(t).replace("torch.", "")


def from_dlpack(tensor, assumed_align: int | None = None, use_32bit_stride: bool = False,
                enable_tvm_ffi: bool = False) -> RuntimeTensor:
    """Wraps a PyTorch tensor, a JAX array, a NumPy array, or any object with __cuda_array_interface__ /
    __array_interface__.

    assumed_align: the alignment in bytes the kernels may assume of the address (default: what the address
    has, up to 16). use_32bit_stride: dynamic extents and strides are 32-bit integers even where the buffer
    would need 64 bits to be indexed (refused then); by default 64 bits are used only where needed.
    enable_tvm_ffi: the view is for compiling a function called through TVM FFI (cute.compile(...,
    options="--enable-tvm-ffi"), tvm_ffi_call.py), which then takes the framework's tensors themselves; the view
    is the same either way."""
    rt = _from_dlpack(tensor, assumed_align)
    if use_32bit_stride:
        rt.use_32bit_stride = True
    rt.enable_tvm_ffi = bool(enable_tvm_ffi)
    return rt


def _from_dlpack(tensor, assumed_align):
    mod = type(tensor).__module__
    if mod.startswith("torch"):
        name = _torch_dtype_name(tensor.dtype)
        if name not in _TORCH_TYPES:
            raise DSLTypeError(f"from_dlpack: unsupported torch dtype {tensor.dtype}", user_location(3))
        device = "cuda" if tensor.is_cuda else "cpu"
        return RuntimeTensor(tensor, tensor.data_ptr(), tensor.shape, tensor.stride(), _TORCH_TYPES[name], device,
                             assumed_align)
    if hasattr(tensor, "unsafe_buffer_pointer") and hasattr(tensor, "__dlpack_device__"):
        return _from_jax(tensor, assumed_align)
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


def _from_jax(array, assumed_align):
    """A JAX array (one device's): dense and row-major, its buffer's address and device as JAX reports them."""
    name = str(array.dtype)
    if name not in _TORCH_TYPES or name == "float4_e2m1fn_x2":
        raise DSLTypeError(f"from_dlpack: unsupported element type {name}", user_location(3))
    shape = tuple(int(d) for d in array.shape)
    strides, acc = [0] * len(shape), 1
    for j in range(len(shape) - 1, -1, -1):
        strides[j] = acc
        acc *= shape[j]
    device = "cuda" if int(array.__dlpack_device__()[0]) in (2, 13) else "cpu"
    return RuntimeTensor(array, array.unsafe_buffer_pointer(), shape, strides, _TORCH_TYPES[name], device,
                         assumed_align)


def is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def runtime_view(value):
    """The RuntimeTensor of a tensor argument (a torch tensor passed directly gets a dynamic layout), or None."""
    if isinstance(value, RuntimeTensor):
        return value
    if is_torch_tensor(value):
        # (a view whose leading dimension is ambiguous is passed with every unit stride a runtime value)
        return from_dlpack(value).mark_layout_dynamic(_deduce_strictly=False)
    return None


def numeric_dtype_of_torch(t):
    return _TORCH_TYPES.get(_torch_dtype_name(t))


class SymbolicInt:
    """An extent or stride of a fake tensor known only as a multiple of `divisibility` (cute.sym_int): the
    compiled code takes it at each call."""

    def __init__(self, width: int = 32, divisibility: int = 1):
        if width not in (32, 64):
            raise DSLValueError(f"sym_int: width is 32 or 64, got {width!r}", user_location(2))
        if not isinstance(divisibility, int) or divisibility < 1:
            raise DSLValueError(f"sym_int: divisibility must be a positive integer, got {divisibility!r}",
                                user_location(2))
        self.width = width
        self.divisibility = divisibility

    def __mul__(self, other):
        if isinstance(other, int):
            return SymbolicInt(self.width, self.divisibility * abs(other) if other else _MAX_DIV)
        if isinstance(other, SymbolicInt):
            return SymbolicInt(max(self.width, other.width), self.divisibility * other.divisibility)
        return NotImplemented

    __rmul__ = __mul__

    def __repr__(self):
        return f"?{{div={self.divisibility}}}" if self.divisibility > 1 else "?"


class _SymIntType(type):
    def __instancecheck__(cls, x):
        return isinstance(x, (_core.SymInt, SymbolicInt))

    def __call__(cls, width: int = 32, divisibility: int = 1):
        return SymbolicInt(width, divisibility)

    def __getattr__(cls, name):  # SymInt.symbol(...) and the rest of the algebra's integer type
        return getattr(_core.SymInt, name)


class SymInt(metaclass=_SymIntType):
    """cute.SymInt: `cute.SymInt(divisibility=16)` makes a symbolic integer for a fake tensor's shape (as
    cute.sym_int does); isinstance(x, cute.SymInt) holds for those and for the runtime integers of traced code."""


def sym_int(width: int = 32, divisibility: int = 1) -> SymbolicInt:
    """A symbolic integer for the shapes and strides of fake tensors (make_fake_tensor,
    make_fake_compact_tensor): the compiled function takes its value at each call, and may assume that value
    is a multiple of `divisibility`."""
    return SymbolicInt(width, divisibility)


def sym_int32(divisibility: int = 1) -> SymbolicInt:
    """sym_int(32, divisibility)."""
    return SymbolicInt(32, divisibility)


def sym_int64(divisibility: int = 1) -> SymbolicInt:
    """sym_int(64, divisibility): extents and strides that may pass 2**31 (the tensor indexes with 64 bits)."""
    return SymbolicInt(64, divisibility)


def _fake(dtype, shape, stride, assumed_align, what) -> RuntimeTensor:
    dtype = dtype_of(dtype)
    if assumed_align is None:
        assumed_align = max(1, dtype.width // 8)
    if not isinstance(assumed_align, int) or assumed_align < 1 or assumed_align & (assumed_align - 1):
        raise DSLValueError(f"{what}: assumed_align must be a power of two, got {assumed_align!r}", user_location(3))
    if len(shape) != len(stride):
        raise DSLValueError(f"{what}: shape {shape} and stride {stride} differ in rank", user_location(3))
    for x in tuple(shape) + tuple(stride):
        if not isinstance(x, (int, SymbolicInt)) or isinstance(x, bool):
            raise DSLTypeError(f"{what}: extents and strides are integers or cute.sym_int(), got {x!r}",
                               user_location(3))
    # A symbolic entry stands as its divisibility (a value it may take) where a number is needed.
    stand = lambda x: x.divisibility if isinstance(x, SymbolicInt) else x  # noqa: E731
    rt = RuntimeTensor(None, 0, [stand(x) for x in shape], [stand(x) for x in stride], dtype, "fake", assumed_align)
    for i, x in enumerate(shape):
        if isinstance(x, SymbolicInt):
            rt.dynamic_shape[i] = True
            rt.shape_divisibility[i] = x.divisibility
            rt.shape_bits[i] = x.width
    for i, x in enumerate(stride):
        if isinstance(x, SymbolicInt):
            rt.dynamic_stride[i] = True
            rt.stride_divisibility[i] = min(_MAX_DIV, pow2_divisibility(x.divisibility))
    if any(isinstance(x, SymbolicInt) and x.width == 64 for x in tuple(shape) + tuple(stride)):
        rt.use_32bit_stride = False
        rt.index_bits = 64
    return rt


def make_fake_tensor(dtype, shape, stride=None, assumed_align: int | None = 16) -> RuntimeTensor:
    """A tensor with a shape, strides and element type but no memory: for compiling without a GPU (cute.compile
    accepts it like any tensor; calling the compiled function with it is refused). Extents and strides may be
    cute.sym_int(): the compiled function takes them at each call. Without strides, the tensor is compact with
    mode 0 innermost. assumed_align (bytes, default 16; None: the element size) is what the kernels may assume
    of the address; a call with a less aligned tensor is refused."""
    shape = tuple(shape)
    if stride is None:
        stride, acc = [], 1
        for s in shape:
            stride.append(acc)
            acc = acc * s
    return _fake(dtype, shape, tuple(stride), assumed_align, "make_fake_tensor")


def make_fake_compact_tensor(dtype, shape, stride_order=None, assumed_align: int | None = 16) -> RuntimeTensor:
    """A compact fake tensor, as CuTe DSL makes it: stride_order[i] is the rank of mode i's stride, 0 for the
    contiguous mode (shape (64, 32, 2) with stride_order (1, 0, 2): strides (32, 1, 2048)); by default mode 0 is
    contiguous, then mode 1, ... (column-major). Symbolic extents (cute.sym_int) make the strides outside them
    symbolic too, with the divisibility they imply."""
    shape = tuple(shape)
    rank = len(shape)
    order = tuple(range(rank)) if stride_order is None else tuple(stride_order)
    if sorted(order) != list(range(rank)):
        raise DSLValueError(f"make_fake_compact_tensor: stride_order {order} is not a permutation of the modes "
                            f"0..{rank - 1}", user_location(2))
    stride = [0] * rank
    acc = 1
    for i in sorted(range(rank), key=lambda m: order[m]):
        stride[i] = acc
        acc = acc * shape[i]
    return _fake(dtype, shape, tuple(stride), assumed_align, "make_fake_compact_tensor")


class FakeStream:
    """A stream to compile for (make_fake_stream): a compiled function takes a real stream in its place. With
    use_tvm_ffi_env_stream, a function compiled with --enable-tvm-ffi has no stream parameter at all: it launches
    on the stream of TVM FFI's environment (torch's current stream of the tensors' device)."""

    def __init__(self, use_tvm_ffi_env_stream: bool = False):
        self.use_tvm_ffi_env_stream = bool(use_tvm_ffi_env_stream)

    def __repr__(self):
        return f"FakeStream(use_tvm_ffi_env_stream={self.use_tvm_ffi_env_stream})"


def make_fake_stream(*, use_tvm_ffi_env_stream: bool = False) -> FakeStream:
    return FakeStream(use_tvm_ffi_env_stream)


class AddressSpace(enum.Enum):
    """Where a pointer points (CuTe DSL's cute.AddressSpace / cutlass.AddressSpace): its value is NVVM's address
    space number (what `!llvm.ptr<N>` spells), its name the DSL's memory space (a pointer's `memspace`). A member
    also equals its name, which is how tensors and pointers being traced name their memory
    (`t.memspace == cute.AddressSpace.rmem`, as libraries test it)."""
    generic = 0
    gmem = 1
    smem = 3
    cmem = 4
    rmem = 5
    tmem = 6
    dsmem = 7  # a cluster's shared memory (another CTA's, through its mapped address)

    def __eq__(self, other):
        return self is other or (isinstance(other, str) and other == self.name)

    def __hash__(self):
        return hash(self.name)


class RuntimePointer:
    """A raw address of elements of one type, passed to a @cute.jit function as a cute.Pointer (make_ptr)."""

    @property
    def value_type(self):
        """The element type (CuTe DSL's name for it on pointers)."""
        return self.element_type

    def __init__(self, dtype, address: int, mem_space: AddressSpace, assumed_align: int):
        self.element_type = dtype
        self.address = int(address)
        self.mem_space = mem_space
        self.assumed_align = assumed_align

    def spec(self) -> tuple:
        return ("ptr", numeric_name(self.element_type), self.mem_space.name, self.assumed_align)

    # CuTe DSL's JitArgument protocol (jit_argument.py): a pointer is one value, its address, which an object
    # holding one passes on (`return self.ptr.__c_pointers__()`).
    def __get_mlir_types__(self) -> list:
        return [PointerType.get(1)]

    def __c_pointers__(self) -> list:
        import ctypes

        cell = self.__dict__.get("_cell")
        if cell is None or cell.value != self.address:
            cell = self._cell = ctypes.c_uint64(self.address)
        return [ctypes.addressof(cell)]

    def __new_from_mlir_values__(self, values):
        """The pointer a @cute.jit function sees: this one's element type and alignment at the address the call
        gives (a host pointer value of jit_argument.py)."""
        number = getattr(values[0], "number", None) if len(values) == 1 else None
        if not isinstance(number, HostAddress):
            raise DSLTypeError(f"a make_ptr pointer is made of one host pointer value, got {values!r}",
                               user_location(2))
        return Pointer(None, self.element_type, GMEM, self.assumed_align, host=number.key, wide=True)

    @property
    def _pointer(self) -> int:
        """The address (CuTe DSL's name for it, which programs read to free the memory)."""
        return self.address

    def __tvm_ffi_opaque_ptr__(self) -> int:
        """The address, as TVM FFI passes a pointer to a function compiled with --enable-tvm-ffi."""
        return self.address

    def __repr__(self):
        return f"RuntimePointer<{self.element_type.__name__}, {self.mem_space.name}, {self.address:#x}, " \
               f"align {self.assumed_align}>"


def make_ptr(dtype, value, mem_space: AddressSpace = AddressSpace.generic, assumed_align: int | None = None):
    """A pointer to elements of `dtype` at address `value` (an int, or an object with data_ptr() / ptr)."""
    dtype = dtype_of(dtype)
    if not isinstance(mem_space, AddressSpace):
        raise DSLTypeError(f"make_ptr: mem_space is a cute.AddressSpace, got {mem_space!r}", user_location(2))
    if mem_space not in (AddressSpace.generic, AddressSpace.gmem):
        raise DSLValueError(f"make_ptr: a host pointer is to global memory, not {mem_space.name}", user_location(2))
    if not isinstance(value, int):
        for attr in ("data_ptr", "ptr"):
            v = getattr(value, attr, None)
            if v is not None:
                value = v() if callable(v) else v
                break
    if not isinstance(value, int) or value < 0:
        raise DSLTypeError(f"make_ptr: the address is a non-negative integer, got {value!r}", user_location(2))
    eb = max(1, dtype.width // 8)
    align = assumed_align if assumed_align is not None else eb
    if align < 1 or align & (align - 1) or value % align:
        raise DSLValueError(f"make_ptr: the address {value:#x} is not aligned to assumed_align={align}",
                            user_location(2))
    return RuntimePointer(dtype, value, mem_space, align)
