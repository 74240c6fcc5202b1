"""`cutlass.experimental.cuda`: the host side of CuTe DSL's experimental layer, tensor maps.

A tensor map describes a tiled view of a global tensor to the GPU's tensor-copy engine: built in @cute.jit host
code (create_tensor_map_tiled from an address, extents and strides; create_tensor_map_tiled_from_view from a
tensor), passed to a kernel as a grid-constant parameter (`cutlass.GridConstant[cuda.TensorMap]`), and used there
through `get_ptr()` by the copy primitives of `cutlass.experimental.primitives`.

The enumerations are the CUDA driver's vocabulary for a tensor map (its swizzle, interleave, L2 promotion, fill
and data-format choices, by CuTe DSL's names), the same on every GPU. What a tensor map is on a given GPU, which
formats and swizzles its hardware has, and how the map is encoded at each call are the backends': TensorMap and
the two constructors come from the loaded backends (registered as `cuda.<name>`); without one that offers them,
using them is an AttributeError naming the name.
"""
import enum

from .._dsl.atoms.atoms import namespace


class TensorMapSwizzle(enum.Enum):
    """How the copy engine swizzles a box's rows in shared memory (by 16-byte chunks within 32, 64 or 128 bytes;
    the atom variants swizzle 32- or 64-byte atoms within 128 bytes)."""
    none = 0
    s32b = 1
    s64b = 2
    s128b = 3
    s128b_atom_32b = 4
    s128b_atom_32b_flip_8b = 5
    s128b_atom_64b = 6

    def to(self, kind):
        """The same swizzle as another enumeration names it (e.g. the layout field of a matrix operand's
        shared-memory descriptor, an enumeration of `primitives`), where `kind` says how (its
        from_tensor_map_swizzle)."""
        convert = getattr(kind, "from_tensor_map_swizzle", None)
        if convert is None:
            raise TypeError(f"TensorMapSwizzle.to: {getattr(kind, '__name__', kind)!r} does not name tensor-map "
                            "swizzles")
        return convert(self)


class TensorMapInterleave(enum.Enum):
    none = 0
    i16b = 1
    i32b = 2


class TensorMapL2Promotion(enum.Enum):
    none = 0
    l2_64b = 1
    l2_128b = 2
    l2_256b = 3


class TensorMapFloatOOBFill(enum.Enum):
    """What a load reads outside the tensor: zeros, or NaN (request zero FMA) for floating-point data."""
    none = 0
    nan_request_zero_fma = 1


class TensorMapDataFormat(enum.Enum):
    """How the elements are moved: DEFAULT as the element type says; BYTE as bytes; F32_FTZ / TF32_FTZ with
    denormals flushed; B4X16 packed 4-bit elements; B4X16_P64 / B6X16_P32 4- / 6-bit elements, 16 of them to 16
    bytes in shared memory (padded with 64 / 32 bits)."""
    DEFAULT = 1
    BYTE = 2
    F32_FTZ = 3
    TF32_FTZ = 4
    B4X16 = 5
    B4X16_P64 = 6
    B6X16_P32 = 7


_ENUMS = {e.__name__: e for e in (TensorMapSwizzle, TensorMapInterleave, TensorMapL2Promotion, TensorMapFloatOOBFill,
                                  TensorMapDataFormat)}

_names = namespace(__name__, "cuda", _ENUMS)


def __getattr__(name):
    # TensorMap, create_tensor_map_tiled, create_tensor_map_tiled_from_view: the loaded backends'
    return getattr(_names, name)


def __dir__():
    return sorted(set(globals()) | set(dir(_names)))


__all__ = list(_ENUMS) + ["TensorMap", "create_tensor_map_tiled", "create_tensor_map_tiled_from_view"]
