"""cute.arch.elect_one() as CuTe DSL's kernels use it: a Boolean (true in one lane of the calling warp, for `if`)
that is also a context manager, `with cute.arch.elect_one(): ...` running its body in that lane only.

The body becomes the then-region of an scf.if on the election; like library code under warpweave.ext.when, it may
issue instructions (arrivals, commits, stores) but values it computes do not leave it. The election itself is the
target's arch.elect_one primitive (elect.sync), so the wrapper serves every backend that publishes one.
"""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

_classes: dict = {}


def _elect_class(base):
    cls = _classes.get(base)
    if cls is None:
        class ElectedLane(base):
            __slots__ = ()

            def __enter__(self):
                ext.builder().begin_region([])
                return None

            def __exit__(self, exc_type, exc, tb):
                b = ext.builder()
                if exc_type is not None:
                    return False
                b.op0("scf.yield", [])
                b.end_region()
                b.begin_region([])
                b.op0("scf.yield", [])
                b.end_region()
                b.op0("scf.if", [self.ir()], num_regions=2)
                return False

        cls = _classes[base] = ElectedLane
    return cls


def elect_one(*, loc=None, ip=None):
    """True in exactly one lane of the calling warp (elect.sync); `with elect_one():` runs a block in that lane."""
    backend, entry = ext.select_instruction("arch.elect_one", {}, set())
    out = ext.emit_instruction(ext.builder(), backend, entry, {})
    flag = cutlass.Boolean.from_ir(out["elected"][0])
    flag.__class__ = _elect_class(type(flag))
    return flag
