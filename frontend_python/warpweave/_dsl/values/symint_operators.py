"""The operators of a dynamic extent (a SymInt: what the layout algebra gives for a shape's runtime extent, or
arithmetic of one: cute.size, cute.ceil_div of dynamic extents) that its symbolic form lacks: it orders and combines
bitwise as the DSL integer it stands for (Int32, or Int64 for a 64-bit one), as in CuTe DSL, where such an extent is
an Int32 value. `n_block > 0` in a kernel is then a runtime Boolean (in host code, a Boolean of the host program);
`phase ^ s`, `n & mask`, `n << 1` are that integer type's, as are `.dtype`, `.ir_value()` and `.to(type)`."""
from __future__ import annotations

import operator

from .numeric import SymInt, as_numeric


def _install():
    for name in ("lt", "le", "gt", "ge", "and", "or", "xor", "lshift", "rshift"):
        fn = getattr(operator, f"{name}_" if name in ("and", "or") else name)
        setattr(SymInt, f"__{name}__", lambda self, other, fn=fn: fn(as_numeric(self), other))
        if name not in ("lt", "le", "gt", "ge"):  # a comparison's reflection is the opposite comparison
            setattr(SymInt, f"__r{name}__", lambda self, other, fn=fn: fn(other, as_numeric(self)))
    SymInt.__invert__ = lambda self: ~as_numeric(self)
    # what code written for an Int32 extent asks of it: its type, its IR value, a conversion
    SymInt.dtype = property(lambda self: type(as_numeric(self)))
    SymInt.ir_value = lambda self, *, loc=None, ip=None: as_numeric(self).ir_value()
    SymInt.to = lambda self, dtype, *, loc=None, ip=None: as_numeric(self).to(dtype)


_install()
