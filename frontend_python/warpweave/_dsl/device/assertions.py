"""cute.testing.assert_: an assertion in a kernel.

A condition known when compiling is checked then (a false one raises at the user's line). A condition known only
at run time is checked by the kernel where the compilation enables assertions (cute.compile's EnableAssertions or
`--enable-assertions`): a thread that finds it false prints where and why, then stops the kernel with a trap (the
launch fails); without that option the check is left out, as CuTe DSL leaves it out.
"""
from __future__ import annotations

import os

from ..base import trace
from ..base.errors import DSLAssertionError, DSLTypeError, user_location
from ..values.numeric import Boolean, Numeric
from .arch import printf


def assert_(cond, msg: str | None = None) -> None:
    where = user_location(2)
    if isinstance(cond, Numeric):
        c = cond if type(cond) is Boolean else cond != 0
    elif isinstance(cond, (bool, int)):
        c = Boolean(bool(cond))
    else:
        raise DSLTypeError(f"cute.testing.assert_: the condition is a Boolean, got {type(cond).__name__}", where)
    text = msg if msg is not None else "assertion failed"
    if c.is_static:
        if not c.value:
            raise DSLAssertionError(text, where)
        return
    if not trace.in_kernel():
        raise DSLTypeError("cute.testing.assert_: a condition known at run time is checked in a kernel, not on the "
                           "host side of a @cute.jit function", where)
    if not trace.current().assertions:
        return
    b = trace.builder()
    failed = (c == Boolean(False)).ir()
    b.begin_region([])
    # the message is text, not a format: its % signs and {} printed as they are
    place = f"{os.path.basename(where[0])}:{where[1]}" if where else "?"
    printf(f"\nLocation: {place}\nAssertion Error: {text}".replace("%", "%%").replace("{}", "{ }"))
    b.op0("llvm.intr.trap", [])
    b.op0("scf.yield", [])
    b.end_region()
    b.begin_region([])
    b.op0("scf.yield", [])
    b.end_region()
    b.op0("scf.if", [failed], num_regions=2)
