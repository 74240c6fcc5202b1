"""cute.typing: the names of CuTe DSL's types, gathered in one module as CuTe DSL programs import them
(`from cutlass.cute.typing import Int32, Pointer`): the numeric types, tensors, pointers, layouts and the
type names of shapes, strides, coordinates and tiles. Each is the very object warpweave.cute has by that name."""
from __future__ import annotations

from typing import Union as _Union
# CuTe DSL's typing module is where its programs also find the annotation helpers of Python's typing (Type, Optional,
# Union, ...): `from cutlass.cute.typing import Type, Pointer` is one import line there.
from typing import Any, ForwardRef, List, Literal, Optional, Tuple, Type, Union  # noqa: F401

from .. import cute as _cute
from .._dsl.base.constexpr import Constexpr  # noqa: F401
from .._dsl.values.layout_annotations import Tiler, XTuple  # noqa: F401 - a tiler: a tile of layouts or extents
from .._dsl.values.numeric import Numeric, NumericMeta, as_numeric  # noqa: F401
from .._dsl.values.runtime import sym_int, sym_int32, sym_int64  # noqa: F401 - symbolic extents of fake tensors
from .._mlir.extras import types as T  # noqa: F401 - MLIR types by short name, as CuTe DSL's typing has them

_NUMERIC = [n for n in ("Integer", "Float", "Boolean", "Int4", "Int8", "Int16", "Int32", "Int64", "Int128", "Uint4",
                        "Uint8", "Uint16", "Uint32", "Uint64", "Uint128", "Float16", "BFloat16", "Float32", "Float64",
                        "TFloat32", "Float8E4M3FN", "Float8E4M3", "Float8E4M3B11FNUZ", "Float8E5M2", "Float8E8M0FNU",
                        "Float4E2M1FN", "Float6E2M3FN", "Float6E3M2FN") if hasattr(_cute, n)]
_STRUCTURE = ["Pointer", "Tensor", "TensorSSA", "Layout", "ComposedLayout", "Swizzle", "ScaledBasis", "AddressSpace",
              "Shape", "Stride", "Coord", "IntTuple", "Tile"]
globals().update({n: getattr(_cute, n) for n in _NUMERIC + _STRUCTURE})
Int = _Union[int, _cute.Integer]  # an integer annotation: a Python int or a DSL integer

# (Python's typing names are attributes, not exports: `from cutlass.cute.typing import *` gives cute's own names)
__all__ = ["sym_int", "sym_int32", "sym_int64", "Numeric", "NumericMeta", "Constexpr", "T", "Tiler", "Int", "XTuple", "as_numeric"] + _NUMERIC + _STRUCTURE
