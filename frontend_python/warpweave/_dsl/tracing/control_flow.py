"""Run-time side of the preprocessor: dynamic loops and branches become scf.for / scf.if / scf.while; static
ones run as Python.

Variables a dynamic body assigns are carried through the region when they are defined before it: numbers (DSL
numbers, and Python numbers, which become dynamic) as region results; tuples that hold a DSL number (a
coordinate such as (None, None, k, stage)) number by number, their other elements unchanged; other objects
(tensors, layouts, ...) must stay the same object. A variable first defined inside a dynamic body is not available after it, as in CuTe DSL.
A variable may not change type inside a dynamic body.
"""
from __future__ import annotations

import builtins
import math

from ..base import trace
from ..base.errors import DSLNotImplementedError, DSLRuntimeError, DSLTypeError, user_location
from ..base.ir_values import Value
from ..values import hooks
from ..base import ir_values as ir_values_mod
from . import dynamic_debug, region_scope
from .membership import contains  # noqa: F401 - rewritten code's `in` (ast_rewrite.visit_Compare)
from ..values.value_tree import (
    carries_ir_values, extract_mlir_values, new_from_mlir_values, tree_difference, type_tree,
)
from ..values.numeric import Boolean, Float32, Int32, Int64, Numeric, SymInt, as_numeric, select
from ..values.tensor import GMEM, RMEM, SMEM, Pointer, Tensor, ptr_type


class Undefined:
    """The value of a variable that a dynamic body defines but that is not available after it."""
    __slots__ = ("name", "line")

    def __init__(self, name, line=None):
        self.name = name
        self.line = line

    def _fail(self, *args, **kwargs):
        where = f" (line {self.line})" if self.line else ""
        raise DSLTypeError(
            f"variable '{self.name}' is not defined here: it is assigned inside a dynamic if/loop{where} but not "
            "defined before it; define it before (e.g. x = cutlass.Int32(0)) so that it is carried out of the region",
            user_location(3))

    __getattr__ = __call__ = __getitem__ = __setitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __floordiv__ = __mod__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __neg__ = __index__ = _fail

    def __repr__(self):
        return f"<undefined {self.name}>"


def read(getter, name):
    try:
        return getter()
    except NameError:
        return Undefined(name)


def _is_static(v) -> bool:
    if isinstance(v, Numeric):
        return v.is_static
    return not isinstance(v, (SymInt, Value))


def _static_value(v):
    return v.value if isinstance(v, Numeric) else v


def _numeric_type_of(v):
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


def _as_type(name, v, t, lineno, where):
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
    if not isinstance(b, Tensor) or a.element_type is not b.element_type or str(a.layout) != str(b.layout):
        return False
    p, q = a.iterator, b.iterator
    if not (isinstance(p, Pointer) and isinstance(q, Pointer)):
        return False
    return (p.base == q.base and p.memspace == q.memspace and p.dtype is q.dtype and isinstance(p.offset, int)
            and p.offset == q.offset and p.swizzle == q.swizzle)


def _check_unchanged(name, before, after, lineno, where):
    if after is before or isinstance(before, Undefined):
        return
    if isinstance(before, (tuple, str)) and _same_static(before, after):
        return
    if isinstance(before, Tensor) and _same_view(before, after):
        return  # the same view made again (e.g. filter_zeros of a fragment each iteration)
    raise DSLTypeError(
        f"variable '{name}' is reassigned inside the dynamic {where} at line {lineno} to a different "
        f"{type(after).__name__}; only numbers can change inside dynamic control flow", user_location(3))


class _CarriedTensor:
    """How a tensor in global or shared memory is carried through a region: its address as a pointer value, its
    layout, element type and the alignment the region may assume (that of the value it enters with)."""

    def __init__(self, name, t):
        self.name = name
        self.layout = t.layout
        self.dtype = t.element_type
        self.memspace = t.iterator.memspace
        self.align = t.iterator.alignment_at(0)
        self.wide = t.iterator.wide
        self.ir_type = ptr_type(self.memspace)

    def value(self, t):
        return t.iterator.address(0)

    def rebuild(self, ir_value):
        return Tensor(Pointer(ir_value, self.dtype, self.memspace, self.align, wide=self.wide), self.layout,
                      self.dtype)

    def check(self, after, lineno, where):
        if not isinstance(after, Tensor) or not _is_carried_tensor(after):
            raise DSLTypeError(f"variable '{self.name}' changes from a tensor to a {type(after).__name__} inside the "
                               f"dynamic {where} at line {lineno}", user_location(4))
        if after.element_type is not self.dtype or after.iterator.memspace != self.memspace:
            raise DSLTypeError(f"variable '{self.name}' changes its element type or memory inside the dynamic "
                               f"{where} at line {lineno}", user_location(4))
        if not (after.layout == self.layout):
            raise DSLTypeError(f"variable '{self.name}' changes its layout inside the dynamic {where} at line "
                               f"{lineno} ({self.layout} before, {after.layout} after); a tensor carried through "
                               "dynamic control flow may only move its pointer", user_location(4))
        got = after.iterator.alignment_at(0)
        if got < self.align and got % self.align:
            raise DSLTypeError(f"variable '{self.name}' enters the dynamic {where} at line {lineno} {self.align}-byte "
                               f"aligned but is only {got}-byte aligned at its end; the region assumes what it "
                               "entered with", user_location(4))


def _is_carried_tensor(v) -> bool:
    return (isinstance(v, Tensor) and isinstance(v.iterator, Pointer) and v.iterator.base is not None
            and v.iterator.memspace in (GMEM, SMEM))


def _tuple_leaves(t):
    return [x for c in t for x in _tuple_leaves(c)] if isinstance(t, tuple) else [t]


def _tuple_profile(t):
    return tuple(_tuple_profile(c) for c in t) if isinstance(t, tuple) else None


def _profile_str(p) -> str:
    return "(" + ", ".join(_profile_str(c) for c in p) + ("," if len(p) == 1 else "") + ")" \
        if isinstance(p, tuple) else "_"


def _holds_dsl_number(t) -> bool:
    """A tuple with a DSL number (or a runtime integer) in it: carried element by element. So is one with a Python
    float, which no shape holds: running statistics a region starts from constants (`stats = (0.0, -inf)`, then
    `stats = step(stats)` in a dynamic loop, as CuTe DSL's attention softmax does). Tuples of other Python values
    (a tile shape) stay as they are and must not change."""
    return isinstance(t, tuple) and any(isinstance(x, (Numeric, SymInt, float)) for x in _tuple_leaves(t))


class _CarriedObject:
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


class _CarriedTuple:
    """How a tuple holding a DSL number is carried through a region: each number in it (static ones too, which
    become dynamic, as carried Python numbers do) is a region value; its other elements (None, layouts, ...) and
    its nesting must stay the same."""

    def __init__(self, name, t):
        self.name = name
        self.template = t
        self.profile = _tuple_profile(t)
        self.leaves = _tuple_leaves(t)
        self.leaf_types = [_numeric_type_of(x) for x in self.leaves]

    def ir_types(self):
        return [lt.ir_type for lt in self.leaf_types if lt is not None]

    def values(self, t):
        return [lt(x).ir() for x, lt in zip(_tuple_leaves(t), self.leaf_types) if lt is not None]

    def rebuild(self, ir_values):
        it = iter(ir_values)
        leaves = iter([lt.from_ir(next(it)) if lt is not None else x for x, lt in zip(self.leaves, self.leaf_types)])

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
        for k, (x, before, lt) in enumerate(zip(_tuple_leaves(after), self.leaves, self.leaf_types)):
            if lt is not None:
                out.append(_as_type(f"{self.name}[{k}]", x, lt, lineno, where).ir())
            elif x is not before and not (isinstance(before, str) and before == x):
                raise DSLTypeError(f"element {k} of the tuple '{self.name}' is reassigned inside the dynamic {where} "
                                   f"at line {lineno} to a different {type(x).__name__}; only its numbers can "
                                   "change inside dynamic control flow", user_location(4))
        return out


class _Carry:
    """Which variables a region carries, with their types; and the objects it may change in place (a pipeline
    state's advance()), carried through their _ww_carry_get / _ww_carry_set values, or, for the program's own
    objects of the IR-values protocol, through those values (in_place)."""

    def __init__(self, names, values, mutables=()):
        self.names = names
        self.values = list(values)
        self.index = []  # positions of carried values
        self.types = []  # a DSL numeric type, or a _CarriedTensor
        self.tuples = []  # (position, _CarriedTuple) of carried tuples: their values follow the others'
        for i, v in enumerate(self.values):
            t = _CarriedTensor(names[i], v) if _is_carried_tensor(v) else _numeric_type_of(v)
            if t is not None:
                self.index.append(i)
                self.types.append(t)
            elif _holds_dsl_number(v):
                self.tuples.append((i, _CarriedTuple(names[i], v)))
            elif not isinstance(v, Undefined) and carries_ir_values(v) and not hasattr(type(v), "_ww_carry_get"):
                # (warpweave's own objects changed in place, a pipeline state, keep their identity: carried below,
                # though they give the IR-values protocol too, for a library's objects holding them)
                self.tuples.append((i, _CarriedObject(names[i], v)))
        self.objects = []
        # a variable the region assigns that holds an object changed in place (a pipeline state that a helper
        # advances and returns, `state = self.load(state, n)`) is carried as one: its values, not its name
        carried = set(self.index) | {i for i, _ in self.tuples}
        assigned = [v for i, v in enumerate(self.values) if i not in carried and not isinstance(v, type)]
        # so is one held in a tuple the region assigns (pipeline participants the program passes around as a tuple
        # of arguments, returned again by the helper that advanced them)
        assigned += [x for v in self.values if isinstance(v, tuple) for x in _tuple_leaves(v)
                     if hasattr(x, "_ww_carry_get") and not isinstance(x, type)]
        self.in_place = []  # (object, _CarriedObject, what it held before the region: region_scope.state)
        for m in list(mutables) + assigned:
            # A receiver not defined before the region (one made under a false const_expr, say) is not carried;
            # asking it for its attributes would report it as used.
            if isinstance(m, Undefined):
                continue
            if hasattr(m, "_ww_carry_get"):
                if not any(m is o for o in self.objects):
                    self.objects.append(m)
            elif any(m is x for x in mutables) and region_scope.changes_in_place(m) \
                    and not any(m is o for o, _, _ in self.in_place):
                # made again of its values as they are here, so that its constants are materialized once, before
                # the region, and not in each of its blocks
                template = new_from_mlir_values(m, extract_mlir_values(m))
                self.in_place.append((m, _CarriedObject(type(m).__name__, template), region_scope.state(m)))
        self.snapshot = [list(o._ww_carry_get()) for o in self.objects]
        for o in self.objects + [o for o, _, _ in self.in_place]:
            region_scope.note(o)
        self.object_types = [[type(x) for x in vals] for vals in self.snapshot]
        self.depth = dynamic_debug.enter()

    def ir_types(self):
        return ([ty.ir_type for ty in self.types] + [t for _, ct in self.tuples for t in ct.ir_types()] +
                [t.ir_type for ts in self.object_types for t in ts] + [t for _, co, _ in self.in_place
                                                                       for t in co.ir_types()])

    def _split(self, ir_values):
        """(scalar and tensor values, per-tuple value lists, object values) of a flat list of region values."""
        n = len(self.index)
        scalars, pos, per_tuple = ir_values[:n], n, []
        for _, ct in self.tuples:
            k = len(ct.ir_types())
            per_tuple.append(ir_values[pos:pos + k])
            pos += k
        return scalars, per_tuple, ir_values[pos:]

    def inits(self):
        out = []
        for k, i in enumerate(self.index):
            t = self.types[k]
            out.append(t.value(self.values[i]) if isinstance(t, _CarriedTensor) else t(self.values[i]).ir())
        for i, ct in self.tuples:
            out.extend(ct.values(self.values[i]))
        for vals in self.snapshot:
            out.extend(v.ir() for v in vals)
        for o, co, _ in self.in_place:
            out.extend(co.values(o))
        return out

    def _wrap(self, k, v):
        t = self.types[k]
        return t.rebuild(v) if isinstance(t, _CarriedTensor) else t.from_ir(v)

    def _set_objects(self, ir_values):
        pos = 0
        for o, ts in zip(self.objects, self.object_types):
            o._ww_carry_set([t.from_ir(x) for t, x in zip(ts, ir_values[pos:pos + len(ts)])])
            pos += len(ts)
        for o, co, _ in self.in_place:
            k = len(co.ir_types())
            o.__dict__.update(co.rebuild(ir_values[pos:pos + k]).__dict__)
            pos += k

    def scope(self):
        """The body of a region: objects nested regions change in place are put back at its end (region_scope.py)."""
        return region_scope.Scope()

    def restore_objects(self):
        """The objects the region carries as they were before it, with the objects in their fields that change in
        place (a branch that advanced a scheduler's own pipeline state leaves that state as it was too)."""
        for o, vals in zip(self.objects, self.snapshot):
            o._ww_carry_set(vals)
        for _, _, held in self.in_place:
            region_scope.put_back(held)

    def inner(self, block_args):
        vals = list(self.values)
        scalars, per_tuple, objects = self._split(list(block_args))
        for k, i in enumerate(self.index):
            vals[i] = self._wrap(k, scalars[k])
        for (i, ct), v in zip(self.tuples, per_tuple):
            vals[i] = ct.rebuild(v)
        self._set_objects(objects)
        return vals

    def yields(self, results, lineno, where):
        if not isinstance(results, tuple) or len(results) != len(self.values):
            raise DSLRuntimeError("internal: a rewritten body returned the wrong number of values")
        out = []
        for k, i in enumerate(self.index):
            t = self.types[k]
            if isinstance(t, _CarriedTensor):
                t.check(results[i], lineno, where)
                out.append(t.value(results[i]))
            else:
                out.append(_as_type(self.names[i], results[i], t, lineno, where).ir())
        tuples = dict(self.tuples)
        for i, ct in self.tuples:
            out.extend(ct.yields(results[i], lineno, where))
        # A variable holding a carried object that the region rebinds to another object of its type (a scheduler
        # helper returning a new WorkTileInfo each trip) hands its state to the object it held before, which the
        # variable names again after the region.
        rebound = {}
        for i, (before, after) in enumerate(zip(self.values, results)):
            if i in self.index or i in tuples:
                continue
            if after is not before and type(after) is type(before) and any(before is o for o in self.objects):
                rebound[id(before)] = after
                continue
            if not region_scope.takes_register_values(before, after):
                _check_unchanged(self.names[i], before, after, lineno, where)
        for o, ts in zip(self.objects, self.object_types):
            now = list(rebound.get(id(o), o)._ww_carry_get())
            if len(now) != len(ts):
                raise DSLTypeError(f"{type(o).__name__} changed its number of values inside the dynamic {where} at "
                                   f"line {lineno}", user_location(3))
            out.extend(t(v).ir() for t, v in zip(ts, now))
        for o, co, _ in self.in_place:
            out.extend(co.yields(o, lineno, where))
        return out

    def outputs(self, result_values, lineno):
        vals = []
        scalars, per_tuple, objects = self._split(list(result_values))
        carried = dict(zip(self.index, scalars))
        tuples = {i: ct.rebuild(v) for (i, ct), v in zip(self.tuples, per_tuple)}
        for i, v in enumerate(self.values):
            if i in carried:
                vals.append(self._wrap(self.index.index(i), carried[i]))
            elif i in tuples:
                vals.append(tuples[i])
            elif isinstance(v, Undefined):
                vals.append(Undefined(self.names[i], lineno))
            else:
                vals.append(v)
        self._set_objects(objects)
        carried = [(self.names[i], self.values[i]) for i in self.index] + \
            [(self.names[i], self.values[i]) for i, _ in self.tuples]
        dynamic_debug.leave(self.depth, lineno, carried)
        return tuple(vals)


def _at_line(b, lineno):
    loc = user_location(1)
    if loc is not None:
        b.set_location(loc[0], lineno, 1)


# --- for ----------------------------------------------------------------------------------------------------------

def _range_bounds(args):
    if len(args) == 1:
        return 0, args[0], 1
    if len(args) == 2:
        return args[0], args[1], 1
    if len(args) == 3:
        return args
    raise DSLTypeError(f"range expects 1 to 3 arguments, got {len(args)}", user_location(3))


# A loop with static bounds that indexes a register tensor with its variable is unrolled while tracing (up to this
# many trips): registers cannot be indexed at run time, so a loop kept in the IR would move the tensor to local
# memory. (CuTe DSL programs write `for i in range(cute.size(acc)): acc[i] = ...`.)
UNROLL_REGISTER_LOOPS_UP_TO = 512


# A host loop of static bounds with at least this many trips is traced once and run at each call, as one of
# runtime bounds is (its element copies then run in bulk), instead of trip by trip in Python while tracing: a
# scale-factor conversion over a static tensor has millions of trips.
HOST_LOOP_STATIC_TRIPS = 1 << 16


def _many_trips(start, stop, step) -> bool:
    a, b, c = (_static_value(x) for x in (start, stop, step))
    return c != 0 and len(builtins.range(a, b, c)) >= HOST_LOOP_STATIC_TRIPS


def loop_attributes(unroll, unroll_full, where) -> str:
    """The unrolling a kernel's loop asks of the compiler, as the scf.for's LLVM loop annotation (lowered onto the
    loop's latch branch): unroll=1 keeps the loop rolled (nothing peeled or unrolled: a pipelined mainloop keeps
    the one copy of its body the program wrote), unroll=N unrolls N times, unroll_full completely; none (or 0)
    leaves it to the compiler's heuristics."""
    if unroll_full:
        return "loop_annotation = #llvm.loop_annotation<unroll = <full = true>>"
    if unroll is None:
        return ""
    if not _is_static(unroll) or isinstance(_static_value(unroll), bool) \
            or not isinstance(_static_value(unroll), int):
        raise DSLTypeError(f"cutlass.range(unroll=...) takes an integer known while tracing, got {unroll!r}", where)
    n = _static_value(unroll)
    if n < 0:
        raise DSLTypeError(f"cutlass.range(unroll={n}): the unroll count cannot be negative", where)
    if n == 0:
        return ""
    if n == 1:
        return "loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>"
    return f"loop_annotation = #llvm.loop_annotation<unroll = <count = {n} : i32>>"


def _indexes_registers(indexed) -> bool:
    return any(isinstance(t, Tensor) and isinstance(t.iterator, Pointer) and t.iterator.memspace == RMEM
               for t in indexed)


def for_range(body, range_args, names, values, lineno, unroll=None, unroll_full=False, mutables=(),
              prefetch_stages=None, vectorize=False, indexed=(), **kwargs):
    # prefetch_stages: CuTe DSL's request to software-pipeline the loop's loads; a scheduling hint that does not
    # change what the loop computes, and that is not applied here. Any other keyword is refused, not ignored.
    # vectorize: a request that the trips' element operations become vector operations. A loop with static bounds
    # is unrolled while tracing for it, so that LLVM's vectorizer sees the trips side by side (a loop kept in the
    # IR would hide them); a loop with runtime bounds stays a loop.
    # indexed: the values of the names the body subscripts with the loop variable (from the preprocessor).
    if kwargs:
        loc = user_location(2)
        raise DSLTypeError(f"cutlass.range() got an unexpected keyword argument {next(iter(kwargs))!r} (its "
                           "keywords: unroll, unroll_full, prefetch_stages, vectorize)",
                           (loc[0], lineno) if loc else None)
    start, stop, step = _range_bounds(range_args)
    attributes = ""
    if unroll is not None or unroll_full:
        loc = user_location(2)
        attributes = loop_attributes(unroll, unroll_full, (loc[0], lineno) if loc else None)
    st = trace.current()
    static = all(_is_static(x) for x in (start, stop, step))
    if vectorize and static and unroll is None:
        unroll_full = True
    if static and unroll is None and not unroll_full and _static_value(step) != 0 and _indexes_registers(indexed):
        trips = len(builtins.range(_static_value(start), _static_value(stop), _static_value(step)))
        unroll_full = trips <= UNROLL_REGISTER_LOOPS_UP_TO
    if st.kernel is None and (not static or not unroll_full and _many_trips(start, stop, step)):
        # a loop of the compiled host code, run at each call (host/host_loop.py); one of static bounds too where
        # its trips are too many to run one by one in Python while tracing (a whole tensor's elements)
        return hooks.loop_on_host(body, (start, stop, step), names, values, lineno)
    if st.kernel is None or (unroll_full and static):
        # Host code runs as Python; a fully unrolled loop is unrolled while tracing, so its index is a constant.
        vals = tuple(values)
        for i in builtins.range(_static_value(start), _static_value(stop), _static_value(step)):
            vals = body(i, *vals)
        return vals
    if static and _static_value(step) == 0:
        raise DSLTypeError("range() step must not be zero", user_location(2))
    t = Int64 if any(isinstance(x, Numeric) and type(x) in (Int64,) for x in (start, stop, step)) else Int32
    start, stop, step = t(start), t(stop), t(step)
    carry = _Carry(names, values, mutables)
    b = st.builder
    _at_line(b, lineno)
    # The IR's loop counts up (it runs while its variable is below the bound): a loop with a negative step (range(n,
    # -1, -1)) runs over k in [0, trips) and its variable is start + k * step. A step known only at run time may be
    # either: a negative one walks [stop, start) up by -step, and the variable is start + stop - that.
    down = step.is_static and step.value < 0
    either = not step.is_static
    if down:
        lb, ub, sp = t(0).ir(), ((start - stop + (-step.value - 1)) // -step.value).ir(), t(1).ir()
    elif either:
        neg = step < 0
        lb, ub, sp = select(neg, stop, start).ir(), select(neg, start, stop).ir(), select(neg, -step, step).ir()
    else:
        lb, ub, sp = start.ir(), stop.ir(), step.ir()
    inits = carry.inits()
    _at_line(b, lineno)  # the region's own line: the builder names it when a value escapes the region
    block = b.begin_region([t.ir_type] + carry.ir_types())
    if down:
        iv = start + t._wrap(trace.lift_int(block[0], t.ir_type, nonneg=True)) * step
    elif either:
        walked = t._wrap(trace.lift_int(block[0], t.ir_type))
        iv = select(neg, start + stop - walked, walked)
    else:
        nonneg = start.is_static and step.is_static and start.value >= 0 and step.value > 0
        div = math.gcd(start.value, step.value) if start.is_static and step.is_static else 1
        iv = t._wrap(trace.lift_int(block[0], t.ir_type, nonneg=nonneg, divisibility=max(div, 1)))
    with carry.scope():
        results = body(iv, *carry.inner(block[1:]))
        ys = carry.yields(results, lineno, "loop")
    _at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    outs = b.op("scf.for", [lb, ub, sp] + inits, carry.ir_types(), attributes=attributes, num_regions=1)
    return carry.outputs(outs, lineno)


# --- if -----------------------------------------------------------------------------------------------------------

def _as_condition(c):
    if isinstance(c, Value):  # an IR value of a user op (`if arith.cmpi(...):`) is a runtime condition too
        c = as_numeric(c)
    if isinstance(c, Numeric):
        return c if type(c) is Boolean else c != 0
    if isinstance(c, SymInt):
        return Int32._wrap(c) != 0
    return c


def if_(cond, then_fn, else_fn, names, values, lineno, mutables=()):
    cond = _as_condition(cond)
    if _is_static(cond):
        return then_fn(*values) if _static_value(cond) else else_fn(*values)
    st = trace.current()
    if st.kernel is None:  # a branch of the compiled host code, taken at each call (host/host_branch.py)
        return hooks.branch_on_host(cond, then_fn, else_fn, names, values, lineno)
    carry = _Carry(names, values, mutables)
    b = st.builder
    _at_line(b, lineno)
    c = cond.ir()
    k = st.kernel
    smem_before = k.smem_bytes
    _at_line(b, lineno)
    b.begin_region([])
    with carry.scope():
        ys = carry.yields(then_fn(*values), lineno, "if")
    _at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    carry.restore_objects()  # the else branch starts from the state before the if
    smem_then = k.smem_bytes
    if k.merge_branch_allocs:  # launch(smem_merge_branch_allocs=True): the else branch reuses the then's space
        k.smem_bytes = smem_before
    _at_line(b, lineno)
    b.begin_region([])
    with carry.scope():
        ys = carry.yields(else_fn(*values), lineno, "if")
    _at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    carry.restore_objects()  # set from the if's results next; until then as before it, not as the else left them
    k.smem_bytes = max(k.smem_bytes, smem_then)
    outs = b.op("scf.if", [c], carry.ir_types(), num_regions=2)
    return carry.outputs(outs, lineno)


def when(cond, fn):
    """`if cond: fn()` for library code, which the preprocessor does not rewrite (user code writes the if)."""
    def then():
        fn()
        return ()

    return if_(cond, then, lambda: (), (), (), 0)


def static_condition(cond, lineno):
    cond = _as_condition(cond)
    if not _is_static(cond):
        raise DSLNotImplementedError(f"the if/while at line {lineno} holds a return, break or continue, so its "
                                     "condition must be known while tracing (it is a runtime value here)",
                                     user_location(2))
    return bool(_static_value(cond))


# --- while --------------------------------------------------------------------------------------------------------

def while_(cond_fn, body_fn, names, values, lineno, mutables=()):
    st = trace.current()
    raw = cond_fn(*values)
    probe = _as_condition(raw)
    # A loop on a flag variable made a DSL Boolean (`go = cutlass.Boolean(True)`, `while go:`) runs at run time, as
    # in CuTe DSL, where that Boolean is an IR value: its body usually sets the flag from runtime values.
    if _is_static(probe) and not (isinstance(raw, Boolean) and any(raw is v for v in values)):
        vals = tuple(values)
        while True:
            c = _as_condition(cond_fn(*vals))
            if not _is_static(c):
                raise DSLTypeError(f"the condition of the while loop at line {lineno} became a runtime value after "
                                   "some iterations; make it dynamic from the start (e.g. with cutlass.Int32)",
                                   user_location(2))
            if not _static_value(c):
                return vals
            vals = body_fn(*vals)
    if st.kernel is None:  # a loop of the compiled host code, run at each call (host/host_loop.py)
        return hooks.while_on_host(cond_fn, body_fn, names, values, lineno)
    carry = _Carry(names, values, mutables)
    b = st.builder
    _at_line(b, lineno)
    inits = carry.inits()
    types = carry.ir_types()
    _at_line(b, lineno)
    before = b.begin_region(types)
    c = _as_condition(cond_fn(*carry.inner(before)))
    c = (c if isinstance(c, Numeric) else Boolean(c)).ir()
    _at_line(b, lineno)
    b.op0("scf.condition", [c] + list(before))
    b.end_region()
    _at_line(b, lineno)
    after = b.begin_region(types)
    with carry.scope():
        ys = carry.yields(body_fn(*carry.inner(after)), lineno, "while loop")
    _at_line(b, lineno)
    b.op0("scf.yield", ys)
    b.end_region()
    outs = b.op("scf.while", inits, types, num_regions=2)
    return carry.outputs(outs, lineno)


# --- boolean operators --------------------------------------------------------------------------------------------

def and_(first, *rest):
    v = _as_condition(first) if isinstance(first, Value) else first
    for f in rest:
        if _is_static(v):
            if not _static_value(v):
                return v
            v = f()
        else:
            w = _as_condition(f())
            v = _as_condition(v) & (w if isinstance(w, Numeric) else Boolean(bool(w)))
    return v


def or_(first, *rest):
    v = _as_condition(first) if isinstance(first, Value) else first
    for f in rest:
        if _is_static(v):
            if _static_value(v):
                return v
            v = f()
        else:
            w = _as_condition(f())
            v = _as_condition(v) | (w if isinstance(w, Numeric) else Boolean(bool(w)))
    return v


def not_(x):
    if _is_static(x):
        return not _static_value(x)
    return ~_as_condition(x)


def ifexp(cond, a, b):
    cond = _as_condition(cond)
    if _is_static(cond):
        return a() if _static_value(cond) else b()
    va, vb = a(), b()
    if not isinstance(va, Numeric) and not isinstance(vb, Numeric):
        # Python numbers on both sides (`1.0 if tidx > 3 else 2.0`): they become DSL numbers of one type, as they
        # would in arithmetic with a DSL number.
        ta, tb = _numeric_type_of(va), _numeric_type_of(vb)
        if ta is None or tb is None:
            raise DSLTypeError(f"`a if cond else b` with a runtime condition picks between numbers, not a "
                               f"{type(va).__name__} and a {type(vb).__name__}; use an if statement (or "
                               "cutlass.const_expr for a condition known while tracing)", user_location(2))
        order = (Boolean, Int32, Int64, Float32)
        t = max(ta, tb, key=order.index)
        va, vb = t(va), t(vb)
    elif not isinstance(va, Numeric) or not isinstance(vb, Numeric):
        other = vb if isinstance(va, Numeric) else va
        if _numeric_type_of(other) is None:
            raise DSLTypeError(f"`a if cond else b` with a runtime condition picks between numbers, not a "
                               f"{type(va).__name__} and a {type(vb).__name__}; use an if statement",
                               user_location(2))
    return select(cond, va, vb)


def builtin_min_max(fn, name, *args):
    """`min(a, b, ...)` / `max(...)` in a kernel: Python's builtin on Python values; where `fn` is the builtin and
    an argument is a DSL number (or a runtime integer), cutlass.min / cutlass.max, which compare at run time. A
    user's own min/max (a shadowing name) is called as it is."""
    if fn is getattr(builtins, name) and len(args) > 1 and \
            any(isinstance(a, (Numeric, SymInt)) or hasattr(a, "__ww_int__") for a in args):
        return hooks.min_max(name, *args)
    return fn(*args)


# --- ranges and compile-time markers --------------------------------------------------------------------------

def range_constexpr(*args):
    """A loop unrolled while tracing: every bound must be known (Constexpr)."""
    for a in args:
        if not _is_static(a):
            raise DSLTypeError("cutlass.range_constexpr needs bounds known while tracing; use range() for a runtime "
                               "bound", user_location(2))
    return builtins.range(*(int(_static_value(a)) for a in args))


def dsl_range(*args, unroll=None, unroll_full=False, prefetch_stages=None):
    """cutlass.range: in a `for` statement of a kernel it emits a loop (rewritten); elsewhere a Python range."""
    return range_constexpr(*args)


def const_expr(x):
    """Marks a condition evaluated while tracing; a runtime value here is an error, except a host-side Boolean
    that the values being compiled for decide (kept as a guard of the compiled function, host/host_guards.py)."""
    if isinstance(x, Numeric) and not x.is_static and trace.on_host():
        r = hooks.decide_on_host(x)
        if r is not None:
            return r
    if isinstance(x, Numeric) and not x.is_static or isinstance(x, SymInt):
        raise DSLTypeError("cutlass.const_expr got a runtime value; its condition must be known while tracing",
                           user_location(2))
    return _static_value(x)
