"""How one variable's value is carried through a dynamic region (tracing/region_carry.py gathers a region's):
numbers (DSL numbers, and Python numbers, which become dynamic) as region results; pointers and the tensors over
them as their base and offset (carried_memory.py); tuples that hold a DSL number (a coordinate such as (None,
None, k, stage)) or objects of CuTe DSL's IR-values protocol element by element, their other elements unchanged;
objects of that protocol value by value. Other objects (layouts, ...) must stay the same object, and a variable
may not change type inside a dynamic body. A variable first defined inside a dynamic body is not available after
it (Undefined), as in CuTe DSL.
"""
from __future__ import annotations

from ..base.errors import DSLTypeError, user_location
from ..base.ir_values import Value
from ..base import ir_values as ir_values_mod
from . import region_scope
from ..values.value_tree import (
    carries_ir_values, extract_mlir_values, new_from_mlir_values, tree_difference, type_tree,
)
from ..values.numeric import Boolean, Float32, Int32, Int64, Numeric, SymInt
from ..values.tensor import Pointer, Tensor, full_layout


class Undefined:
    """The value of a variable that a dynamic body defines but that is not available after it."""
    __slots__ = ("name", "line")

    def __init__(self, name, line=None):
        self.name = name
        self.line = line

    def _fail(self, *args, **kwargs):
        raise self._error()

    def _error(self):
        where = f" (line {self.line})" if self.line else ""
        return DSLTypeError(
            f"variable '{self.name}' is not defined here: it is assigned inside a dynamic if/loop{where} but not "
            "defined before it; define it before (e.g. x = cutlass.Int32(0)) so that it is carried out of the region",
            user_location(2))

    __getattr__ = __call__ = __getitem__ = __setitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __mod__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __neg__ = __index__ = _fail

    def __repr__(self):
        return f"<undefined {self.name}>"


class Stale(Undefined):
    """The value after a dynamic loop of a variable the loop rebinds to what it cannot carry (a tensor over a pointer
    moved by a run-time offset into another swizzle phase, a number rebound to a register fragment) but never reads
    inside it before rebinding: the loop was free to carry anything there. Likewise after a dynamic if whose branch
    rebinds a variable to another object than it held (a named barrier of a phase computed in that branch, used
    there): the branch uses it, and only a read after the if needs a value the if cannot carry. Reading it after
    the region is refused with the reason."""
    __slots__ = ("why", "where")

    def __init__(self, name, line, why, where="loop"):
        super().__init__(name, line)
        self.why = why
        self.where = where

    def _error(self):
        return DSLTypeError(f"variable '{self.name}' is not usable after the dynamic {self.where} at line {self.line}: "
                            f"{self.why}", user_location(2))

    def __repr__(self):
        return f"<stale {self.name}>"


def read(getter, name):
    try:
        return getter()
    except NameError:
        return Undefined(name)


def is_static(v) -> bool:
    if isinstance(v, Numeric):
        return v.is_static
    return not isinstance(v, (SymInt, Value))


def static_value(v):
    return v.value if isinstance(v, Numeric) else v


def numeric_type_of(v):
    """The DSL type a carried value has, or None for values that are not carried."""
    if isinstance(v, Numeric):
        return type(v)
    if isinstance(v, bool):
        return Boolean
    if isinstance(v, int):
        return Int32 if -(1 << 31) <= v < (1 << 31) else Int64
    if isinstance(v, float):
        return Float32
    if isinstance(v, SymInt):
        return Int32 if v.bits <= 32 else Int64
    return None


def as_type(name, v, t, lineno, where):
    if isinstance(v, Undefined):
        raise DSLTypeError(f"variable '{name}' is deleted inside the dynamic {where} at line {lineno}",
                           user_location(3))
    if isinstance(v, Numeric) and type(v) is not t and isinstance(v, t) and type(v).ir_type == t.ir_type:
        # a value of a subtype of the variable's type held the same way (a descriptor built as an Int64): the variable
        # keeps its declared type after the region
        return t._wrap(v._v) if v.is_static else t.from_ir(v.ir())
    if isinstance(v, Numeric) and type(v) is not t:
        raise DSLTypeError(f"variable '{name}' changes type from {t.__name__} to {type(v).__name__} inside the "
                           f"dynamic {where} at line {lineno}; convert it explicitly (e.g. {t.__name__}(x))",
                           user_location(3))
    if not isinstance(v, (Numeric, bool, int, float, SymInt)):
        raise DSLTypeError(f"variable '{name}' changes from a {t.__name__} to a {type(v).__name__} inside the dynamic "
                           f"{where} at line {lineno}", user_location(3))
    return v if isinstance(v, Numeric) else t(v)


def _same_static(a, b) -> bool:
    """a and b are the same value, compared without asking a runtime number for a truth value."""
    if a is b:
        return True
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same_static(x, y) for x, y in zip(a, b))
    if isinstance(a, Numeric) or isinstance(b, Numeric):
        return (isinstance(a, Numeric) and isinstance(b, Numeric) and type(a) is type(b) and a.is_static
                and b.is_static and a.value == b.value)
    if isinstance(a, (bool, int, float, str)) and isinstance(b, (bool, int, float, str)):
        return type(a) is type(b) and a == b
    return False


def _same_view(a, b) -> bool:
    """a and b view the same elements the same way: one base and offset, element type and layout."""
    if not isinstance(b, Tensor) or a.element_type is not b.element_type or str(full_layout(a)) != str(full_layout(b)):
        return False
    p, q = a.iterator, b.iterator
    if not (isinstance(p, Pointer) and isinstance(q, Pointer)):
        return False
    return (p.base == q.base and p.memspace == q.memspace and p.dtype is q.dtype and isinstance(p.offset, int)
            and p.offset == q.offset and p.swizzle == q.swizzle)


def check_unchanged(name, before, after, lineno, where):
    if after is before or isinstance(before, Undefined):
        return
    if isinstance(before, (tuple, str)) and _same_static(before, after):
        return
    if isinstance(before, Tensor) and _same_view(before, after):
        return  # the same view made again (e.g. filter_zeros of a fragment each iteration)
    raise DSLTypeError(
        f"variable '{name}' is reassigned inside the dynamic {where} at line {lineno} to a different "
        f"{type(after).__name__}; only numbers can change inside dynamic control flow", user_location(3))


def tuple_leaves(t):
    return [x for c in t for x in tuple_leaves(c)] if isinstance(t, tuple) else [t]


def _tuple_profile(t):
    return tuple(_tuple_profile(c) for c in t) if isinstance(t, tuple) else None


def _profile_str(p) -> str:
    return "(" + ", ".join(_profile_str(c) for c in p) + ("," if len(p) == 1 else "") + ")" \
        if isinstance(p, tuple) else "_"


def _object_leaf(x) -> bool:
    """A tuple element carried as an object of CuTe DSL's IR-values protocol (a fast divisor, a register vector, a
    library's state): not a tensor or a pointer, whose static facts (layout, swizzle, alignment) a region keeps
    as a variable of its own keeps them (carried_memory.py)."""
    return not isinstance(x, (Tensor, Pointer)) and carries_ir_values(x)


def holds_dsl_number(t) -> bool:
    """A tuple with a DSL number (or a runtime integer) in it: carried element by element. So is one with a Python
    float, which no shape holds: running statistics a region starts from constants (`stats = (0.0, -inf)`, then
    `stats = step(stats)` in a dynamic loop, as CuTe DSL's attention softmax does), and one holding objects of the
    IR-values protocol (a pair of fast divisors a persistent loop makes again for each tile). Tuples of other Python
    values (a tile shape) stay as they are and must not change."""
    return isinstance(t, tuple) and any(isinstance(x, (Numeric, SymInt, float)) or _object_leaf(x)
                                        for x in tuple_leaves(t))


class CarriedObject:
    """How an object of CuTe DSL's IR-values protocol (`__extract_mlir_values__` / `__new_from_mlir_values__`, a
    library's state class) is carried through a region: its IR values are region values, and the object is made
    again of the region's. The values it is made of must keep their number and types."""

    def __init__(self, name, obj):
        self.name = name
        self.template = obj
        self.types = [v.type.text for v in extract_mlir_values(obj)]
        self.tree = type_tree(obj)

    def ir_types(self):
        return list(self.types)

    def values(self, obj):
        return [v.use() for v in extract_mlir_values(obj)]

    def rebuild(self, ir_values):
        return new_from_mlir_values(self.template, [ir_values_mod.wrap(v, t) for v, t in zip(ir_values, self.types)])

    def yields(self, after, lineno, where):
        region_scope.promote_constants(self.template, after)
        vals = extract_mlir_values(after) if type(after) is type(self.template) else None
        if vals is None or [v.type.text for v in vals] != self.types:
            got = "a " + type(after).__name__ if vals is None else "(" + ", ".join(v.type.text for v in vals) + ")"
            diff = tree_difference(self.tree, type_tree(after)) if vals is not None else None
            raise DSLTypeError(f"variable '{self.name}' ({type(self.template).__name__} of IR values "
                               f"({', '.join(self.types)})) becomes {got} inside the dynamic {where} at line "
                               f"{lineno}" + (f": {diff}" if diff else "") + "; an object carried through dynamic "
                               "control flow keeps its values' types", user_location(4))
        return [v.use() for v in vals]


class CarriedTuple:
    """How a tuple holding a DSL number is carried through a region: each number in it (static ones too, which
    become dynamic, as carried Python numbers do) is a region value; its other elements (None, layouts, ...) and
    its nesting must stay the same."""

    def __init__(self, name, t):
        self.name = name
        self.template = t
        self.profile = _tuple_profile(t)
        self.leaves = tuple_leaves(t)
        self.leaf_types = [numeric_type_of(x) for x in self.leaves]
        # elements of the IR-values protocol, each carried as an object (by position)
        self.objects = {k: CarriedObject(f"{name}[{k}]", x) for k, (x, lt) in enumerate(zip(self.leaves,
                                                                                           self.leaf_types))
                        if lt is None and _object_leaf(x)}

    def ir_types(self):
        return [t for k, lt in enumerate(self.leaf_types)
                for t in ([lt.ir_type] if lt is not None else self.objects[k].ir_types() if k in self.objects else [])]

    def values(self, t):
        out = []
        for k, (x, lt) in enumerate(zip(tuple_leaves(t), self.leaf_types)):
            if lt is not None:
                out.append(lt(x).ir())
            elif k in self.objects:
                out.extend(self.objects[k].values(x))
        return out

    def rebuild(self, ir_values):
        it = iter(ir_values)

        def leaf(k, x, lt):
            if lt is not None:
                return lt.from_ir(next(it))
            if k in self.objects:
                co = self.objects[k]
                return co.rebuild([next(it) for _ in co.types])
            return x

        leaves = iter([leaf(k, x, lt) for k, (x, lt) in enumerate(zip(self.leaves, self.leaf_types))])

        def build(p):
            return tuple(build(c) for c in p) if isinstance(p, tuple) else next(leaves)

        return build(self.profile)

    def yields(self, after, lineno, where):
        if not isinstance(after, tuple) or _tuple_profile(after) != self.profile:
            got = _profile_str(_tuple_profile(after)) if isinstance(after, tuple) else f"a {type(after).__name__}"
            raise DSLTypeError(f"variable '{self.name}' changes from a tuple {_profile_str(self.profile)} to {got} "
                               f"inside the dynamic {where} at line {lineno}; a tuple carried through dynamic "
                               "control flow keeps its nesting", user_location(4))
        out = []
        for k, (x, before, lt) in enumerate(zip(tuple_leaves(after), self.leaves, self.leaf_types)):
            if lt is not None:
                out.append(as_type(f"{self.name}[{k}]", x, lt, lineno, where).ir())
            elif k in self.objects:
                out.extend(self.objects[k].yields(x, lineno, where))
            elif x is not before and not (isinstance(before, str) and before == x):
                raise DSLTypeError(f"element {k} of the tuple '{self.name}' is reassigned inside the dynamic {where} "
                                   f"at line {lineno} to a different {type(x).__name__}; only its numbers can "
                                   "change inside dynamic control flow", user_location(4))
        return out
