"""TensorSSA: the values of a tensor held in registers, with elementwise arithmetic, broadcasting, conversion and
reduction (the reduction itself is the device layer's, values/hooks.py), and the TensorSSA helpers (full, where)."""
from __future__ import annotations

from ... import _core
from ..base import ir_dialects, trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.ir_values import Value, VectorType
from . import hooks
from .coordinates import has_none, norm_coord, slice_layout, zero_nones
from .numeric import BFloat16, Boolean, Float16, Float32, Numeric, dtype as dtype_of, select
from .numeric_meta import from_lane, to_lane


def _add(a, b):
    return a + b


def _sub(a, b):
    return a - b


def _mul(a, b):
    return a * b


# Elementwise arithmetic on 16-bit floats goes two lanes at a time, as one operation on a two-lane vector: the code
# generator makes it the GPU's paired half-precision instruction, half the instructions of one per element.
_PAIRED = {_add: "arith.addf", _sub: "arith.subf", _mul: "arith.mulf"}


def _paired(fn, xs, ys):
    """fn over xs and ys two lanes at a time (None where that does not apply: other operations or types, values
    known while tracing, or outside a kernel)."""
    if fn not in _PAIRED or len(xs) < 2 or not trace.in_kernel():
        return None
    t = type(xs[0])
    if t not in (Float16, BFloat16) or any(type(v) is not t or v.is_static for v in xs + ys):
        return None
    b = trace.builder()
    vt = f"vector<2x{t.ir_type}>"
    out = []
    for k in range(0, len(xs) - 1, 2):
        va = b.op1("vector.from_elements", [xs[k].ir(), xs[k + 1].ir()], vt)
        vb = b.op1("vector.from_elements", [ys[k].ir(), ys[k + 1].ir()], vt)
        r = b.op1(_PAIRED[fn], [va, vb], vt)
        out += [t.from_ir(b.op1("vector.extract", [r], t.ir_type, f"static_position = array<i64: {i}>"))
                for i in (0, 1)]
    if len(xs) % 2:
        out.append(fn(xs[-1], ys[-1]))
    return out


def _narrowed_in_pairs(xs, t):
    """xs (f32) rounded to the 16-bit float t two lanes at a time, as one conversion of a two-lane vector: the code
    generator makes it the GPU's paired rounding, which also leaves both halves in one register, where a
    fragment's pairs are read as words (a matrix operand). None where that does not apply (other types, values
    known while tracing, or outside a kernel)."""
    if t not in (Float16, BFloat16) or len(xs) < 2 or not trace.in_kernel():
        return None
    if any(type(v) is not Float32 or v.is_static for v in xs):
        return None
    b = trace.builder()
    out = []
    for k in range(0, len(xs) - 1, 2):
        v = b.op1("vector.from_elements", [xs[k].ir(), xs[k + 1].ir()], "vector<2xf32>")
        r = b.op1("arith.truncf", [v], f"vector<2x{t.ir_type}>")
        out += [t.from_ir(b.op1("vector.extract", [r], t.ir_type, f"static_position = array<i64: {i}>"))
                for i in (0, 1)]
    if len(xs) % 2:
        out.append(t(xs[-1]))
    return out


class TensorSSA:
    """The values of a tensor, held in registers: elementwise arithmetic, conversion, reduction."""

    def __init__(self, values, shape, dtype):
        if isinstance(values, Value):   # one IR vector (CuTe DSL's form, e.g. a math-dialect op's result)
            values = _lanes(values, shape, dtype)
        self.values = list(values)
        self.shape = shape
        self.dtype = dtype

    def ir_value(self, *, loc=None, ip=None):
        """The values as one IR vector, in the order of `values`, which the constructor takes back: what
        cutlass._mlir's vector-capable ops (math.absf, ...) take and give."""
        dt = dtype_of(self.dtype)
        vt = VectorType.get([len(self.values)], dt.mlir_type)
        return ir_dialects.from_elements(vt, [to_lane(dt, dt(v).ir_value()) for v in self.values])

    @property
    def element_type(self):
        return self.dtype

    @property
    def type(self):
        """The IR vector type of the values (CuTe DSL's TensorSSA is an IR vector, whose type code reads)."""
        return VectorType.get([len(self.values)], dtype_of(self.dtype).mlir_type)

    def __extract_mlir_values__(self):
        """CuTe DSL's IR-values protocol: the values, one IR value each, so that dynamic control flow carries a
        TensorSSA variable a branch or loop assigns (a fragment's values loaded only where a tile has work)."""
        dt = dtype_of(self.dtype)
        return [dt(v).ir_value() for v in self.values]

    def __new_from_mlir_values__(self, values):
        dt = dtype_of(self.dtype)
        return TensorSSA([dt.from_ir(v.use() if isinstance(v, Value) else v) for v in values], self.shape,
                         self.dtype)

    def maybe_downcast(self):
        """The same values: an IR value's maybe_downcast gives it as its most specific Python class, which a
        TensorSSA already is (code writes `t.load().maybe_downcast()` before handing the vector to a conversion)."""
        return self

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        """The value at a linear index or a coordinate; a coordinate with None modes is the TensorSSA of the
        values it leaves (as slicing a tensor of this shape gives)."""
        if not isinstance(i, tuple):
            return self.values[i]
        coord = norm_coord(i)
        compact = _core.make_layout(self.shape)  # values are in the colexicographic order of the coordinates
        if not has_none(coord):
            return self.values[compact(coord)]
        base, sub = compact(zero_nones(coord)), slice_layout(coord, compact)
        n = _core.product(sub.shape)
        return TensorSSA([self.values[base + sub(k)] for k in range(n)], sub.shape, self.dtype)

    def broadcast_to(self, shape):
        """The values repeated along the modes of extent 1 to `shape` (of the same rank, or a higher one: the lower
        rank is aligned to the left; other extents equal)."""
        shape = norm_coord(shape)
        dst = shape if isinstance(shape, tuple) else (shape,)
        src = self.shape if isinstance(self.shape, tuple) else (self.shape,)
        if len(src) < len(dst):  # a lower rank is aligned to the left (trailing modes of extent 1)
            src = _padded(src, len(dst))
        if len(src) != len(dst) or any(isinstance(x, tuple) for x in src + dst) or \
                any(a != b and a != 1 for a, b in zip(src, dst)):
            raise DSLValueError(f"broadcast_to: a TensorSSA of shape {self.shape} does not broadcast to {shape} "
                                "(same rank, flat modes, each extent equal or 1)", user_location(2))
        out = []
        for k in range(_core.product(dst)):
            off, stride, rest = 0, 1, k
            for a, b in zip(src, dst):
                c, rest = rest % b, rest // b
                off += (c if a != 1 else 0) * stride
                stride *= a
            out.append(self.values[off])
        return TensorSSA(out, shape, self.dtype)

    def reshape(self, shape):
        """The same values in the same (colexicographic) order, seen with another shape of the same size: a kernel
        converts the values one copy loads and hands them to a copy of another partition shape."""
        shape = norm_coord(shape)
        if _core.product(shape) != len(self.values):
            raise DSLValueError(f"reshape: a TensorSSA of shape {self.shape} ({len(self.values)} values) cannot take "
                                f"the shape {shape} ({_core.product(shape)} values)", user_location(2))
        return TensorSSA(self.values, shape, self.dtype)

    def _map2(self, other, fn):
        if isinstance(other, TensorSSA) and other.shape != self.shape:
            common = _broadcast_shape(self.shape, other.shape)
            if common is not None:
                return self.broadcast_to(common)._map2(other.broadcast_to(common), fn)
        if isinstance(other, TensorSSA):
            if len(other.values) != len(self.values):
                raise DSLValueError(f"elementwise operation on {len(self.values)} and {len(other.values)} values",
                                    user_location(3))
            vals = _paired(fn, self.values, other.values) or [fn(a, b) for a, b in zip(self.values, other.values)]
        else:
            vals = [fn(a, other) for a in self.values]
        t = type(vals[0]) if vals and isinstance(vals[0], Numeric) else self.dtype
        return TensorSSA(vals, self.shape, t)

    def _rmap2(self, other, fn):
        vals = [fn(other, a) for a in self.values]
        t = type(vals[0]) if vals and isinstance(vals[0], Numeric) else self.dtype
        return TensorSSA(vals, self.shape, t)

    def __add__(self, o): return self._map2(o, _add)
    def __radd__(self, o): return self._rmap2(o, lambda a, b: a + b)
    def __sub__(self, o): return self._map2(o, _sub)
    def __rsub__(self, o): return self._rmap2(o, lambda a, b: a - b)
    def __mul__(self, o): return self._map2(o, _mul)
    def __rmul__(self, o): return self._rmap2(o, lambda a, b: a * b)
    def __truediv__(self, o): return self._map2(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._rmap2(o, lambda a, b: a / b)
    def __floordiv__(self, o): return self._map2(o, lambda a, b: a // b)
    def __mod__(self, o): return self._map2(o, lambda a, b: a % b)
    def __and__(self, o): return self._map2(o, lambda a, b: a & b)
    def __or__(self, o): return self._map2(o, lambda a, b: a | b)
    def __xor__(self, o): return self._map2(o, lambda a, b: a ^ b)
    def __lt__(self, o): return self._map2(o, lambda a, b: a < b)
    def __le__(self, o): return self._map2(o, lambda a, b: a <= b)
    def __gt__(self, o): return self._map2(o, lambda a, b: a > b)
    def __ge__(self, o): return self._map2(o, lambda a, b: a >= b)
    def __eq__(self, o): return self._map2(o, lambda a, b: a == b)
    def __ne__(self, o): return self._map2(o, lambda a, b: a != b)
    def __neg__(self): return TensorSSA([-a for a in self.values], self.shape, self.dtype)
    def __abs__(self): return TensorSSA([abs(a) for a in self.values], self.shape, self.dtype)

    __hash__ = object.__hash__

    def to(self, dtype, *, loc=None, ip=None):
        dtype = dtype_of(dtype)
        return TensorSSA(_narrowed_in_pairs(self.values, dtype) or [dtype(a) for a in self.values], self.shape,
                         dtype)

    def reduce(self, op, init_val=None, reduction_profile=0):
        """Reduces with op (a cute.ReductionOp, "add"/"mul"/"max"/"min", or a function of two values) over every
        mode (reduction_profile=0: a number) or over the modes the profile marks 1 (a TensorSSA of the modes it
        marks None); init_val joins each result once."""
        return hooks.reduce_tensor(self, op, init_val, reduction_profile)

    def __repr__(self):
        return f"TensorSSA<{self.dtype.__name__}, {self.shape}>"


def _lanes(value, shape, dtype):
    """The numbers of an IR vector that stands for a TensorSSA of shape and dtype."""
    dt = dtype_of(dtype)
    n = _core.product(shape)
    if not VectorType.isinstance(value.type) or VectorType(value.type).shape != [n] or \
            VectorType(value.type).element_type != dt.mlir_type:
        raise DSLTypeError(f"TensorSSA of shape {shape} and {dt.__name__}: expected a value of "
                           f"vector<{n}x{dt.mlir_type}>, got one of {value.type}", user_location(3))
    return [dt(from_lane(dt, ir_dialects.extract(value, [], [i]))) for i in range(n)]


def _padded(shape, rank: int) -> tuple:
    """A flat shape of a lower rank aligned to the left of one of `rank` modes: trailing modes of extent 1, as
    CuTe DSL broadcasts ((8,) against (8, 2) is (8, 1)); the values' order is the same."""
    shape = shape if isinstance(shape, tuple) else (shape,)
    return shape + (1,) * (rank - len(shape))


def _broadcast_shape(a, b):
    """The shape two TensorSSA shapes broadcast to (flat, the lower rank padded with trailing modes of extent 1,
    extents equal or 1), or None."""
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    a, b = _padded(a, len(b)), _padded(b, len(a))
    if any(isinstance(x, tuple) or not isinstance(x, int) for x in a + b):
        return None
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
        return None
    return tuple(max(x, y) for x, y in zip(a, b))


def full(shape, fill_value, dtype):
    """A TensorSSA of `shape` with every value fill_value."""
    dtype = dtype_of(dtype)
    n = _core.product(shape)
    return TensorSSA([dtype(fill_value)] * n, shape, dtype)


def full_like(t, fill_value, dtype=None):
    return full(t.shape, fill_value, dtype or t.element_type)


def zeros_like(t, dtype=None):
    return full_like(t, 0, dtype)


def where(cond, x, y):
    """Elementwise cond ? x : y; cond a TensorSSA of Booleans (or one Boolean), x and y TensorSSA values or numbers
    (broadcast)."""
    sizes = {len(v.values) for v in (cond, x, y) if isinstance(v, TensorSSA)}
    if len(sizes) > 1:
        raise DSLValueError(f"where: TensorSSA operands of different sizes {sorted(sizes)}", user_location(2))
    if not sizes:
        return select(cond, x, y)
    n = sizes.pop()
    shape = next(v.shape for v in (cond, x, y) if isinstance(v, TensorSSA))

    def at(v, i):
        return v.values[i] if isinstance(v, TensorSSA) else v

    vals = []
    for i in range(n):
        c = at(cond, i)
        if not isinstance(c, Numeric):
            c = Boolean(bool(c))
        elif not c.is_boolean:
            c = c != 0
        a, b = at(x, i), at(y, i)
        if not isinstance(a, Numeric) and isinstance(b, Numeric):
            a = type(b)(a)
        elif not isinstance(b, Numeric) and isinstance(a, Numeric):
            b = type(a)(b)
        vals.append(select(c, a, b))
    dt = type(vals[0]) if vals and isinstance(vals[0], Numeric) else None
    return TensorSSA(vals, shape, dt)
