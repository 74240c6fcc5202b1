"""`Vector`: an IR vector value with its DSL element type (CuTe DSL's `cutlass.base_dsl.typing.Vector`); the IR
values objects are made of (CuTe DSL's protocol) are value_tree.py's.

A Vector lives in registers: it is built from numbers (`from_elements`), taken apart into numbers (`to_elements`,
`v[i]`), reinterpreted (`bitcast`) and converted (`to`), each a vector-dialect op at the user's line.
"""
from __future__ import annotations

import itertools
import math

from ..base import ir_dialects
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import Type, Value, VectorType, emit, operand
from .numeric import Boolean, Int32, Numeric, NumericMeta, as_numeric, numeric_type_of, select
from .numeric_meta import from_lane, to_lane
from .tensor_ssa import TensorSSA


def _dims(shape) -> tuple:
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise DSLValueError(f"a Vector's shape is positive ints known while tracing, got {shape!r}", user_location(3))
    return dims


def _row_major_index(shape: tuple, idx: tuple) -> int:
    flat = 0
    for d, i in zip(shape, idx):
        flat = flat * d + i
    return flat


class Vector:
    """A register vector of DSL numbers (CuTe DSL's cutlass.Vector), of any rank: its lanes are one IR vector in
    row-major order (`ir_value()`), its `shape` the logical one (`broadcast_to(row, (2, 4))`, `m[:, 1:3]`).
    Arithmetic with a Vector of the same shape, or a number (broadcast to every lane), is one vector op."""

    def __init__(self, v, *, dtype=None, shape=None, loc=None, ip=None):
        if isinstance(v, TensorSSA):  # a tensor's loaded values (t.load()): its lanes, in the tensor's order
            v = Vector.from_elements(v.values, dtype or v.dtype).ir_value()
        v = operand(v, "a Vector's value")
        if not VectorType.isinstance(v.type):
            raise DSLTypeError(f"a Vector wraps an IR vector, got a value of type {v.type}", user_location(2))
        vt = VectorType(v.type)
        if vt.rank != 1:
            raise DSLValueError(f"a Vector's IR value is one-dimensional (its lanes in row-major order), got {vt}",
                                user_location(2))
        et = dtype if dtype is not None else numeric_type_of(vt.element_type)
        if et is None or et.mlir_type != vt.element_type:
            raise DSLTypeError(f"a Vector of {vt} holds {vt.element_type}, not {getattr(et, '__name__', et)}",
                               user_location(2))
        shape = (vt.shape[0],) if shape is None else _dims(shape)
        if math.prod(shape) != vt.shape[0]:
            raise DSLValueError(f"a Vector of shape {shape} has {math.prod(shape)} lanes, its value {vt.shape[0]}",
                                user_location(2))
        self._value, self.dtype, self._shape = v, et, shape

    @staticmethod
    def from_elements(scalars, dtype, *, shape=None, loc=None, ip=None) -> "Vector":
        if not isinstance(dtype, NumericMeta):
            raise DSLTypeError(f"Vector.from_elements: dtype is a DSL numeric type, got {dtype!r}", user_location(2))
        xs = [to_lane(dtype, dtype(x).ir_value()) for x in scalars]
        if not xs:
            raise DSLValueError("Vector.from_elements: a vector has at least one element", user_location(2))
        vt = VectorType.get([len(xs)], dtype.mlir_type)
        return Vector(ir_dialects.from_elements(vt, xs), dtype=dtype, shape=shape)

    @property
    def type(self) -> Type:
        return self._value.type

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def numel(self) -> int:
        return math.prod(self._shape)

    def ir_value(self, *, loc=None, ip=None) -> Value:
        return self._value

    def __extract_mlir_values__(self):
        return [self._value]

    def __new_from_mlir_values__(self, values):
        return Vector(values[0], dtype=self.dtype, shape=self._shape)

    def __get_mlir_types__(self):
        return [self._value.type]

    def bitcast(self, dtype, *, loc=None, ip=None) -> "Vector":
        bits = self.numel * self.dtype.width
        if bits % dtype.width:
            raise DSLTypeError(f"Vector.bitcast: {bits} bits are no whole number of {dtype.__name__}",
                               user_location(2))
        vt = VectorType.get([bits // dtype.width], dtype.mlir_type)
        return Vector(ir_dialects.bitcast(vt, self._value), dtype=dtype)

    def reshape(self, shape) -> "Vector":
        """The same lanes (row-major) under another shape of as many."""
        return Vector(self._value, dtype=self.dtype, shape=_dims(shape))

    def _lane(self, i: int):
        return self.dtype(from_lane(self.dtype, ir_dialects.extract(self._value, [], [i])))

    def to_elements(self, *, loc=None, ip=None) -> tuple:
        return tuple(self._lane(i) for i in range(self.numel))

    def _dynamic_lane(self, idx: tuple):
        """The lane at a position computed at run time (row-major over the shape): one extractelement."""
        flat = 0
        for d, i in zip(self._shape, idx):
            if isinstance(i, slice) or isinstance(i, Numeric) and not type(i).is_integer:
                raise DSLValueError(f"Vector index {idx!r}: a position known only at run time selects one lane; "
                                    "slices are static", user_location(3))
            flat = flat * d + i
        pos = (flat if isinstance(flat, Numeric) else Int32(flat)).to(Int32)
        lane = emit("llvm.extractelement", [self._value, pos.ir_value()], [self.dtype.mlir_type])[0]
        return self.dtype(from_lane(self.dtype, lane))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if len(idx) == len(self._shape) and any(isinstance(i, Numeric) and not i.is_static for i in idx):
            return self._dynamic_lane(idx)
        idx = tuple(i.value if isinstance(i, Numeric) else i for i in idx)
        if len(idx) > len(self._shape):
            raise DSLValueError(f"Vector index {idx!r}: more positions than the shape {self._shape} has",
                                user_location(2))
        idx = idx + (slice(None),) * (len(self._shape) - len(idx))
        ranges, kept = [], []
        for i, d in zip(idx, self._shape):
            if isinstance(i, slice):
                r = range(*i.indices(d))
                if not r:
                    raise DSLValueError(f"Vector index {idx!r}: an empty slice", user_location(2))
                ranges.append(r)
                kept.append(len(r))
            elif isinstance(i, int) and not isinstance(i, bool) and -d <= i < d:
                ranges.append(range(i % d, i % d + 1))
            else:
                raise DSLValueError(f"Vector index {idx!r}: static positions in a shape of {self._shape}",
                                    user_location(2))
        lanes = [_row_major_index(self._shape, p) for p in itertools.product(*ranges)]
        if not kept:
            return self._lane(lanes[0])
        return Vector.from_elements([self._lane(i) for i in lanes], self.dtype, shape=tuple(kept))

    def __len__(self):
        return self._shape[0]

    def reduce(self, op: str = "add", *, dim=None, acc=None, loc=None, ip=None):
        """The lanes combined by op ("add", "mul", "min", "max"): over all of them a number (one reduction op,
        acc its initial value), over the modes `dim` (an int or a list) a Vector of the others."""
        if op not in _REDUCE:
            raise DSLValueError(f"Vector.reduce: op is one of {', '.join(_REDUCE)}, got {op!r}", user_location(2))
        t = self.dtype
        if dim is not None:
            dims = [dim] if isinstance(dim, int) else list(dim)
            if any(not isinstance(d, int) or not 0 <= d < len(self._shape) for d in dims):
                raise DSLValueError(f"Vector.reduce: dim {dim!r} is outside the shape {self._shape}",
                                    user_location(2))
            kept = [k for k in range(len(self._shape)) if k not in dims]
            if kept:
                out = []
                for outer in itertools.product(*(range(self._shape[k]) for k in kept)):
                    ranges = [range(self._shape[k]) if k in dims else (outer[kept.index(k)],)
                              for k in range(len(self._shape))]
                    lanes = [self._lane(_row_major_index(self._shape, p)) for p in itertools.product(*ranges)]
                    out.append(Vector.from_elements(lanes, t).reduce(op, acc=acc))
                return Vector.from_elements(out, t, shape=tuple(self._shape[k] for k in kept))
        kind = _REDUCE[op][0 if t.is_float else 1 if t.signed else 2]
        if kind is None:
            raise DSLTypeError(f"Vector.reduce {op!r} of {t.__name__} values", user_location(2))
        start = None if acc is None else (acc if isinstance(acc, Numeric) and type(acc) is t else t(acc)).ir_value()
        return t(ir_dialects.reduction(t.mlir_type, kind, self._value, acc=start))

    def __iter__(self):
        return (self[i] for i in range(self._shape[0]))

    def to(self, dtype, *, loc=None, ip=None) -> "Vector":
        return Vector.from_elements([x.to(dtype) for x in self.to_elements()], dtype, shape=self._shape)

    def _operand(self, other, op):
        """other as the IR vector of the op's other side: a Vector of this shape, or a number in every lane."""
        if isinstance(other, Vector):
            if other._shape != self._shape:
                raise DSLValueError(f"Vector {op}: shapes {self._shape} and {other._shape} differ", user_location(4))
            return (other if other.dtype is self.dtype else other.to(self.dtype))._value
        if isinstance(other, (Numeric, int, float, bool)):
            x = other if isinstance(other, Numeric) and type(other) is self.dtype else self.dtype(other)
            return ir_dialects.broadcast(VectorType.get([self.numel], self.dtype.mlir_type),
                                         to_lane(self.dtype, x.ir_value()))
        raise DSLTypeError(f"Vector {op} with a {type(other).__name__}", user_location(4))

    def _binary(self, other, op, reverse=False):
        t = self.dtype
        kind = "f" if t.is_float else None
        names = {"+": ("addf", "addi"), "-": ("subf", "subi"), "*": ("mulf", "muli"),
                 "/": ("divf", "divsi" if t.signed else "divui")}
        if kind is None and not t.is_integer:
            raise DSLTypeError(f"Vector {op} of {t.__name__} values", user_location(3))
        name = names[op][0 if t.is_float else 1]
        a, b = self._value, self._operand(other, op)
        if reverse:
            a, b = b, a
        v = emit(f"arith.{name}", [a, b], [self._value.type])[0]
        return Vector(v, dtype=t, shape=self._shape)

    def __add__(self, o):
        return self._binary(o, "+")

    def __radd__(self, o):
        return self._binary(o, "+", True)

    def __sub__(self, o):
        return self._binary(o, "-")

    def __rsub__(self, o):
        return self._binary(o, "-", True)

    def __mul__(self, o):
        return self._binary(o, "*")

    def __rmul__(self, o):
        return self._binary(o, "*", True)

    def __truediv__(self, o):
        return self._binary(o, "/")

    def __rtruediv__(self, o):
        return self._binary(o, "/", True)

    def __neg__(self):
        return self._binary(0, "-", True)

    def __bool__(self):
        raise DSLTypeError("a Vector has no truth value: reduce it first (cutlass.vector.any_ / all_)",
                           user_location(2))

    def __repr__(self):
        return f"Vector({self._value!r}, dtype={self.dtype.__name__}, shape={self._shape})"


# op -> the vector.reduction kind for floats, signed and unsigned integers
_REDUCE = {"add": ("add", "add", "add"), "mul": ("mul", "mul", "mul"), "min": ("minnumf", "minsi", "minui"),
           "max": ("maxnumf", "maxsi", "maxui")}


# --- cutlass.vector: Vectors made whole -----------------------------------------------------------------------------

def full(shape, fill_value, dtype=None, *, loc=None, ip=None) -> Vector:
    """A Vector of `shape` with fill_value in every lane (of dtype, else the value's type)."""
    shape = _dims(shape)
    x = as_numeric(fill_value) if dtype is None else dtype(fill_value)
    t = type(x)
    return Vector(ir_dialects.broadcast(VectorType.get([math.prod(shape)], t.mlir_type), to_lane(t, x.ir_value())),
                  dtype=t, shape=shape)


def full_like(a: Vector, fill_value, dtype=None, *, loc=None, ip=None) -> Vector:
    return full(a.shape, fill_value, dtype or a.dtype)


def zeros_like(a: Vector, dtype=None, *, loc=None, ip=None) -> Vector:
    return full(a.shape, 0, dtype or a.dtype)


def ones_like(a: Vector, dtype=None, *, loc=None, ip=None) -> Vector:
    return full(a.shape, 1, dtype or a.dtype)


def broadcast_to(src, target_shape, *, loc=None, ip=None) -> Vector:
    """src (a number, or a Vector whose shape matches the target's trailing extents, NumPy's rule) repeated to
    target_shape."""
    target = _dims(target_shape)
    if not isinstance(src, Vector):
        return full(target, src)
    shape = src.shape
    pad = (1,) * (len(target) - len(shape)) + shape if len(shape) <= len(target) else None
    if pad is None or any(s not in (1, t) for s, t in zip(pad, target)):
        raise DSLValueError(f"broadcast_to: a Vector of shape {shape} does not broadcast to {target}",
                            user_location(2))
    lanes = []
    for p in itertools.product(*(range(t) for t in target)):
        lanes.append(_row_major_index(pad, tuple(0 if s == 1 else i for s, i in zip(pad, p))))
    elems = src.to_elements()
    return Vector.from_elements([elems[i] for i in lanes], src.dtype, shape=target)


def outerproduct(a: Vector, b: Vector, acc: Vector | None = None, *, loc=None, ip=None) -> Vector:
    """The (len(a), len(b)) Vector of a[i] * b[j] (plus acc)."""
    if not isinstance(a, Vector) or not isinstance(b, Vector) or len(a.shape) != 1 or len(b.shape) != 1:
        raise DSLTypeError("outerproduct: a and b are one-dimensional Vectors", user_location(2))
    m, n = a.shape[0], b.shape[0]
    out = broadcast_to(a.reshape((m, 1)), (m, n)) * broadcast_to(b, (m, n))
    return out if acc is None else out + acc


def select_(cond, a, b):
    """cond ? a : b (cutlass.select_): numbers as numeric.select; where a or b is a Vector or a tensor's loaded
    values (TensorSSA), the whole Vector by one condition, or lane by lane by a Vector of Booleans, as a Vector (the
    other side may be a number, in every lane)."""
    if not any(isinstance(x, (Vector, TensorSSA)) for x in (a, b, cond)):
        return select(cond, a, b)
    if not isinstance(cond, (Vector, TensorSSA)):
        cond = cond if isinstance(cond, Numeric) else Boolean(cond)
        if cond.is_static:  # picks in Python, as for numbers
            return a if cond.value else b
    a, b = (Vector(x) if isinstance(x, TensorSSA) else x for x in (a, b))
    like = a if isinstance(a, Vector) else b
    if not isinstance(like, Vector):
        raise DSLTypeError("select_: a Vector condition picks between Vectors (or tensors' loaded values)",
                           user_location(2))
    a_ir, b_ir = like._operand(a, "select_"), like._operand(b, "select_")
    if isinstance(cond, (Vector, TensorSSA)):
        c = Vector(cond, dtype=Boolean) if isinstance(cond, TensorSSA) else cond
        if c.numel != like.numel or c.dtype is not Boolean:
            raise DSLValueError(f"select_: the condition is {c.numel} Booleans for {like.numel} lanes, or not "
                                "Booleans", user_location(2))
        c_ir = c.ir_value()
    else:
        c_ir = Boolean(cond).ir_value()
    return Vector(emit("arith.select", [c_ir, a_ir, b_ir], [like.type])[0], dtype=like.dtype, shape=like.shape)


def as_dsl(value):
    """An IR value as the DSL value it stands for: a Vector for a vector, a number for a scalar."""
    v = operand(value)
    if VectorType.isinstance(v.type):
        return Vector(v)
    return as_numeric(v)


__all__ = ["Vector", "as_dsl", "broadcast_to", "full", "full_like", "ones_like", "outerproduct", "select_",
           "zeros_like"]
