"""Objects a region changes in place without carrying them, and what such an object holds.

A dynamic loop sets the objects it carries (a tile scheduler the program advances, a pipeline state) from its
results, in place. Where that loop sits in a branch or loop that does not carry the object (the scheduler was
handed to a helper called in a branch), the object would leave the outer region holding values made inside it,
which nothing after it may use. CuTe DSL binds a region's results to the helper's names and leaves the caller's
object as it was; so each region records, in the region around it, what the objects it carries held before it,
and each region's body, when it ends, puts back the objects the regions inside it recorded.

What an object holds is taken through the objects it holds that change in place too: a tile scheduler's pipeline
state, which the scheduler advances itself. Its fields alone would give the scheduler back the same state object,
still at the stage a branch advanced it to, and the next branch (or the code after the region) would read values
made inside the branch.
"""
from __future__ import annotations

import sys

from ..base import trace
from ..base.errors import is_user_file
from ..base.ir_values import Value
from ..values.numeric import Numeric, SymInt
from ..values.tensor import RMEM, Pointer, Tensor, full_layout
from ..values.value_tree import carries_ir_values


def changes_in_place(obj) -> bool:
    """An object of the program's own class with CuTe DSL's IR-values protocol, which a region may change in place
    (a grid barrier's wait() flipping its phase): carried value by value, and its fields set from the region's."""
    t = type(obj)
    if isinstance(obj, type) or not hasattr(obj, "__dict__") or not carries_ir_values(obj):
        return False
    source = getattr(sys.modules.get(t.__module__), "__file__", None)
    if source is None:  # a class of a notebook's cell or of exec'd code: where its methods were written
        source = next((f.__code__.co_filename for f in vars(t).values() if hasattr(f, "__code__")), None)
    return bool(source) and is_user_file(source)


def _carry_set(o, values):
    o._ww_carry_set(values)


def _set_fields(o, fields):
    o.__dict__.clear()
    o.__dict__.update(fields)


_LEAVES = (Numeric, Value, str, bytes, int, float, complex, type(None), type)


def state(obj) -> list:
    """What obj holds, to put back with put_back: its carried values (an object of warpweave's carry protocol, a
    pipeline state), or its fields (a program's object changed in place), with those of the objects in its fields
    (through tuples, lists and dicts) that change in place."""
    out, seen = [], set()

    def walk(x):
        if isinstance(x, _LEAVES) or id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in list(x.values()):
                walk(y)
        elif hasattr(type(x), "_ww_carry_get"):  # on the type: a placeholder's __getattr__ is not asked
            out.append((x, list(x._ww_carry_get()), _carry_set))
        elif changes_in_place(x):
            fields = dict(x.__dict__)
            out.append((x, fields, _set_fields))
            for y in fields.values():
                walk(y)

    walk(obj)
    return out


def put_back(held) -> None:
    for o, saved, restore in held:
        restore(o, saved)


def _logs() -> list:
    return trace.current().__dict__.setdefault("region_change_logs", [])


def note(obj) -> None:
    """A region is about to carry obj (and to set it from its results): what obj holds now is what the region
    around it puts back when its body ends (the first note of an object there is what it held before)."""
    logs = _logs() if trace.current() is not None else None
    if logs and id(obj) not in logs[-1]:
        logs[-1][id(obj)] = state(obj)


class Scope:
    """The body of one region: `with Scope():` puts back, at its end, the objects the regions inside it carried.
    It ends after the body's results are taken: the region sets what it carries itself from its own results."""

    def __enter__(self):
        _logs().append({})
        return self

    def __exit__(self, *exc):
        # latest first: an object noted again after an enclosing object's note (a scheduler's pipeline state, then
        # carried by itself after an advance) ends as the earlier note had it, before this region
        for held in reversed(list(_logs().pop().values())):
            put_back(held)
        return False


def promote_constants(before, after) -> None:
    """A field of an object carried in place that held a DSL number before the region and a Python number or a
    symbolic extent at its end (`self.flag = True` in a branch, the flag a Boolean set before it; `self.idx =
    params.total`, a count made of the tensors' run-time shapes) takes the number's type, as a carried variable's
    does: the object is made of the same IR values at both ends."""
    if type(after) is not type(before) or not hasattr(after, "__dict__") or not hasattr(before, "__dict__"):
        return
    for k, was in vars(before).items():
        now = getattr(after, k, None)
        if isinstance(was, Numeric) and isinstance(now, (bool, int, float, SymInt)) and not isinstance(now, Numeric):
            object.__setattr__(after, k, type(was)(now))


def takes_register_values(before, after) -> bool:
    """A register tensor variable that a region binds to another register tensor of the same element type and
    layout (a helper packing values into a new fragment each trip) keeps its registers: the region's values are
    copied into them at its end, so that the variable after the region, and in the next trip, holds them. (A
    fragment nothing reads after the region costs nothing: its stores are dead.) False for anything else."""
    def plain(t):
        return (isinstance(t, Tensor) and isinstance(t.iterator, Pointer) and t.iterator.memspace == RMEM
                and t.iterator.swizzle is None and t.element_type.width >= 8)
    if after is before or not (plain(before) and plain(after)) or before.element_type is not after.element_type \
            or str(full_layout(before)) != str(full_layout(after)):
        return False
    if not _same_registers(before.iterator, after.iterator):
        before.store(after.load())
    return True


def _same_registers(p, q) -> bool:
    """Whether two register pointers of one element type address the same registers (a view the loop makes again
    each trip, `frag = f(tCrX)`): with the same layout, the values are already where the variable keeps them. A copy
    would read each element and store them back in wider pieces, which would tie the fragment's separate elements
    into vectors carried whole around the loop, keeping elements live that the next trip overwrites."""
    if p.base is None or p.base != q.base:
        return False
    d = p.offset - q.offset
    return isinstance(d, int) and d == 0
