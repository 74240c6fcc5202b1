"""The variables a dynamic region carries (tracing/carried_values.py says how each kind is): their values entering
the region, its block arguments, what its yields hand on, and its results; with the objects the region changes in
place (pipeline states, a library's state objects)."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLRuntimeError, DSLTypeError, user_location
from . import dynamic_debug, region_scope
from .carried_memory import CarriedPointer, CarriedTensor, carried_pointer, carried_tensor
from .carried_values import (
    CarriedObject, CarriedTuple, Stale, Undefined, as_type, check_unchanged, holds_dsl_number, numeric_type_of,
    tuple_leaves,
)
from ..values.value_tree import carries_ir_values, extract_mlir_values, new_from_mlir_values


class Carry:
    """Which variables a region carries, with their types; and the objects it may change in place (a pipeline
    state's advance()), carried through their _ww_carry_get / _ww_carry_set values, or, for the program's own
    objects of the IR-values protocol, through those values (in_place)."""

    def __init__(self, names, values, mutables=(), mutable_names=(), rebound=()):
        self.names = names
        self.rebound = set(rebound)  # names each trip of a loop sets before reading them (ast_rewrite)
        self.values = list(values)
        self.index = []  # positions of carried values
        self.types = []  # their DSL numeric types
        # (position, how) of variables carried as several values (tuples, pointers, tensors, objects): their values
        # follow the numbers'
        self.tuples = []
        for i, v in enumerate(self.values):
            t = numeric_type_of(v)
            if t is not None:
                self.index.append(i)
                self.types.append(t)
            elif carried_tensor(v):
                self.tuples.append((i, CarriedTensor(names[i], v)))
            elif carried_pointer(v):
                self.tuples.append((i, CarriedPointer(names[i], v)))
            elif holds_dsl_number(v):
                self.tuples.append((i, CarriedTuple(names[i], v)))
            elif not isinstance(v, Undefined) and carries_ir_values(v) and not hasattr(type(v), "_ww_carry_get"):
                # (warpweave's own objects changed in place, a pipeline state, keep their identity: carried below,
                # though they give the IR-values protocol too, for a library's objects holding them)
                self.tuples.append((i, CarriedObject(names[i], v)))
        self.objects = []
        # a variable the region assigns that holds an object changed in place (a pipeline state that a helper
        # advances and returns, `state = self.load(state, n)`) is carried as one: its values, not its name
        carried = set(self.index) | {i for i, _ in self.tuples}
        assigned = [v for i, v in enumerate(self.values) if i not in carried and not isinstance(v, type)]
        # so is one held in a tuple the region assigns (pipeline participants the program passes around as a tuple
        # of arguments, returned again by the helper that advanced them)
        assigned += [x for v in self.values if isinstance(v, tuple) for x in tuple_leaves(v)
                     if hasattr(x, "_ww_carry_get") and not isinstance(x, type)]
        self.in_place = []  # (object, CarriedObject, what it held before the region: region_scope.state)
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
                self.in_place.append((m, CarriedObject(type(m).__name__, template), region_scope.state(m)))
        # a list of numbers the region stores elements of (stats[stage] = (row_sum, row_max)): carried in place,
        # element by element as a tuple of its elements is, its Python numbers taking DSL types
        self.lists = []  # (list, CarriedTuple, what it held before the region)
        for k, m in enumerate(mutables):
            if type(m) is list and holds_dsl_number(tuple(m)) and not any(m is x for x, _, _ in self.lists):
                name = mutable_names[k] if k < len(mutable_names) else "list"
                self.lists.append((m, CarriedTuple(name, tuple(m)), list(m)))
        # the block values of the carried numbers and of the other carried variables in a loop's body (inner)
        self.block_scalars = self.block_tuples = None
        self.stale = {}  # position: why, of variables the region rebound to what it cannot carry (yields)
        self.stale_where = "loop"
        self.snapshot = [list(o._ww_carry_get()) for o in self.objects]
        for o in self.objects + [o for o, _, _ in self.in_place]:
            region_scope.note(o)
        self.object_types = [[type(x) for x in vals] for vals in self.snapshot]
        self.depth = dynamic_debug.enter()

    def ir_types(self):
        return ([ty.ir_type for ty in self.types] + [t for _, ct in self.tuples for t in ct.ir_types()] +
                [t.ir_type for ts in self.object_types for t in ts] + [t for _, co, _ in self.in_place
                                                                       for t in co.ir_types()] +
                [t for _, ct, _ in self.lists for t in ct.ir_types()])

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
            out.append(t(self.values[i]).ir())
        for i, ct in self.tuples:
            out.extend(ct.values(self.values[i]))
        for vals in self.snapshot:
            out.extend(v.ir() for v in vals)
        for o, co, _ in self.in_place:
            out.extend(co.values(o))
        for lst, ct, _ in self.lists:
            out.extend(ct.values(tuple(lst)))
        return out

    def _wrap(self, k, v):
        t = self.types[k]
        return t.from_ir(v)

    def _set_objects(self, ir_values):
        pos = 0
        for o, ts in zip(self.objects, self.object_types):
            o._ww_carry_set([t.from_ir(x) for t, x in zip(ts, ir_values[pos:pos + len(ts)])])
            pos += len(ts)
        for o, co, _ in self.in_place:
            k = len(co.ir_types())
            o.__dict__.update(co.rebuild(ir_values[pos:pos + k]).__dict__)
            pos += k
        for lst, ct, _ in self.lists:
            k = len(ct.ir_types())
            lst[:] = ct.rebuild(ir_values[pos:pos + k])
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
        for lst, _, held in self.lists:
            lst[:] = held

    def inner(self, block_args):
        vals = list(self.values)
        scalars, per_tuple, objects = self._split(list(block_args))
        self.block_scalars, self.block_tuples = scalars, per_tuple
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
        unread = []  # (its block values, where they are in out, the refusal) of variables rebound before any read

        def hand_on_unread(i, args, e):
            # rebound to what the loop cannot carry, but never read in it before: the loop hands on what it
            # entered with, and the variable is unusable after it (as a variable first set inside it is)
            if args is None:
                raise e
            unread.append((args, len(out), e))
            out.extend(args)
            self.stale[i] = _why(e)

        for k, i in enumerate(self.index):
            try:
                out.append(as_type(self.names[i], results[i], self.types[k], lineno, where).ir())
            except DSLTypeError as e:
                hand_on_unread(i, self._unread(where, None if self.block_scalars is None else [self.block_scalars[k]],
                                        self.names[i]), e)
        tuples = dict(self.tuples)
        for k, (i, ct) in enumerate(self.tuples):
            try:
                out.extend(ct.yields(results[i], lineno, where))
            except DSLTypeError as e:
                # (a tuple or an object rebound to another structure is the program's mistake where the trip may
                # read it, a memory variable's representation is not: see _unread)
                vals = self.block_tuples[k] if self.block_tuples is not None and (
                    isinstance(ct, CarriedPointer) or self.names[i] in self.rebound) else None
                hand_on_unread(i, self._unread(where, vals, self.names[i]), e)
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
                try:
                    check_unchanged(self.names[i], before, after, lineno, where)
                except DSLTypeError as e:
                    # an if's branch runs once; a loop's next trip would read the rebinding, which the trace
                    # cannot give it (a while loop's too: its trips are not known to set the variable first)
                    if where != "if" and (where != "loop" or self.names[i] not in self.rebound):
                        raise
                    # not carried: a loop's trips set it anew before a read, or an if's branch rebinds it for its
                    # own use; unusable after the region only
                    self.stale[i] = _why(e)
                    self.stale_where = where
        for o, ts in zip(self.objects, self.object_types):
            now = list(rebound.get(id(o), o)._ww_carry_get())
            if len(now) != len(ts):
                raise DSLTypeError(f"{type(o).__name__} changed its number of values inside the dynamic {where} at "
                                   f"line {lineno}", user_location(3))
            out.extend(t(v).ir() for t, v in zip(ts, now))
        for o, co, _ in self.in_place:
            out.extend(co.yields(o, lineno, where))
        for lst, ct, _ in self.lists:
            out.extend(ct.yields(tuple(lst), lineno, where))
        for args, at, e in unread:
            # read without an op (another variable set to its pointer, handed on unchanged): not free after all
            if any(v in args for v in out[:at] + out[at + len(args):]):
                raise e
        return out

    def _unread(self, where, vals, name):
        """A loop body's block values of one variable when nothing in the body read them (its trips rebind the
        variable before any use: a number rebound to a register tensor, a swizzled tensor moved by a run-time
        offset), else None: the body set it before any mention (ast_rewrite's rebound), or its ops never named
        them."""
        if where != "loop" or vals is None:
            return None
        if name in self.rebound:
            return list(vals)
        b = trace.builder()
        return list(vals) if all(b.use_count(v) == 0 for v in vals) else None

    def outputs(self, result_values, lineno):
        vals = []
        scalars, per_tuple, objects = self._split(list(result_values))
        carried = dict(zip(self.index, scalars))
        tuples = {i: ct.rebuild(v) for (i, ct), v in zip(self.tuples, per_tuple)}
        for i, v in enumerate(self.values):
            if i in self.stale:
                vals.append(Stale(self.names[i], lineno, self.stale[i], self.stale_where))
            elif i in carried:
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


def _why(e) -> str:
    """The refusal a stale variable's later read repeats, with the line it came from."""
    return e.bare_message + (f" (line {e.location[1]})" if e.location else "")


def at_line(b, lineno):
    loc = user_location(1)
    if loc is not None:
        b.set_location(loc[0], lineno, 1)
