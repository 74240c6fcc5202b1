"""Bitwise operators of a dynamic extent (a SymInt: what the layout algebra gives for a shape's runtime extent, or
arithmetic of one, `iters % stages`). Its symbolic form has no bitwise operators, so `phase ^ s`, `n & mask`,
`n << 1` are the same operators of the DSL integer it is (Int32, or Int64 for a 64-bit one), as in CuTe DSL, where
such an extent is an Int32 value; the result is that integer type's."""
from __future__ import annotations

import operator

from .numeric import SymInt, as_numeric

_OPS = {"and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
        "rshift": operator.rshift}


def _install():
    for name, op in _OPS.items():
        setattr(SymInt, f"__{name}__", lambda self, other, op=op: op(as_numeric(self), other))
        setattr(SymInt, f"__r{name}__", lambda self, other, op=op: op(other, as_numeric(self)))
    SymInt.__invert__ = lambda self: ~as_numeric(self)


_install()
