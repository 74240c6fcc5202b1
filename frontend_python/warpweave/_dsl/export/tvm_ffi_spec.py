"""The parameters of a TVM FFI entry, one per argument of the compiled function, as CuTe DSL libraries name them
(`cutlass.base_dsl.tvm_ffi_builder.spec`): what the caller passes at that position, or that the argument has no
position. tvm_ffi_args.py decides them; tvm_ffi_call.py generates the entry's reading and checks from them."""
from __future__ import annotations


class Param:
    """One argument's place in the call. `positional`: whether the caller passes something there."""

    positional = True

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class ConstNone(Param):
    """Compiled in: the caller passes None there (a None argument, or a field a library marks compile-time)."""


class Const(Param):
    """Compiled in, in a tuple: the caller passes the value it was compiled for there (a number is checked;
    another object is not read) or None."""

    def __init__(self, name: str, value=None):
        super().__init__(name)
        self.value = value


class Absent(Param):
    """Compiled in and not passed: a cutlass.Constexpr parameter, or another compile-time value but None (an
    enumeration, a Python number), which the call leaves out."""

    positional = False


class Tensor(Param):
    """A DLPack tensor (a torch tensor) of the element type and rank compiled for. `dims`: the DLPack dimension
    each mode of the compiled tensor is (None: mode k is dimension k), for callers whose tensors come in another
    order than the kernel's modes (cutlass.jax's TensorSpec(mode=...))."""

    def __init__(self, name: str, dtype: str = "", ndim: int = 0, dims: tuple | None = None):
        super().__init__(name)
        self.dtype = dtype
        self.ndim = ndim
        self.dims = dims


class Pointer(Param):
    """A device address (an integer or an opaque pointer)."""


class Scalar(Param):
    """A number of the TVM FFI dtype named (`int32`, `float32`, `bool`, ...)."""

    def __init__(self, name: str, dtype: str = ""):
        super().__init__(name)
        self.dtype = dtype


class Stream(Param):
    """A CUDA stream handle, or None for the environment's current stream."""


class EnvStream(Param):
    """TVM FFI's environment stream of the tensors' device: not passed (make_fake_stream(use_tvm_ffi_env_stream=
    True) at compile time)."""

    positional = False


class Tuple(Param):
    """A tuple (a NamedTuple too) passed as one argument, whose elements are parameters of their own. `dataclass`:
    the name of the dataclass the caller passes there, whose fields the call makes this tuple."""

    def __init__(self, name: str, params: list, dataclass: str | None = None):
        super().__init__(name)
        self.params = list(params)
        self.dataclass = dataclass   # the dataclass's name, where the caller passes one

    def __repr__(self):
        return f"Tuple({self.name!r}, {self.params!r})"


__all__ = ["Absent", "Const", "ConstNone", "EnvStream", "Param", "Pointer", "Scalar", "Stream", "Tensor", "Tuple"]
