"""Objects a region changes in place without carrying them.

A dynamic loop sets the objects it carries (a tile scheduler the program advances, a pipeline state) from its
results, in place. Where that loop sits in a branch or loop that does not carry the object (the scheduler was
handed to a helper called in a branch), the object would leave the outer region holding values made inside it,
which nothing after it may use. CuTe DSL binds a region's results to the helper's names and leaves the caller's
object as it was; so here each region records the objects changed in place while it is traced, with what they
held before, and puts back, when its body ends, those it does not carry itself.
"""
from __future__ import annotations

from ..base import trace


def _logs() -> list:
    return trace.current().__dict__.setdefault("region_change_logs", [])


def note(obj, saved, restore) -> None:
    """obj is about to be changed in place; restore(obj, saved) puts back what it holds now."""
    logs = _logs() if trace.current() is not None else None
    if logs and id(obj) not in logs[-1]:
        logs[-1][id(obj)] = (obj, saved, restore)


class Scope:
    """The body of one region: `with Scope(carried):` restores, at its end, the objects changed in place inside
    it other than `carried` (those the region carries, whose values it yields)."""

    def __init__(self, carried):
        self.carried = {id(o) for o in carried}

    def __enter__(self):
        _logs().append({})
        return self

    def __exit__(self, *exc):
        logs = _logs()
        log = logs.pop()
        for key, entry in log.items():
            if key not in self.carried:
                entry[2](entry[0], entry[1])
            elif logs:
                # the region sets it from its results next: what it held before the region is what the
                # enclosing one puts back
                logs[-1].setdefault(key, entry)
        return False
