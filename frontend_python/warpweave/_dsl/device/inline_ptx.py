"""cute.arch.inline_ptx: the user's own PTX in a kernel, with the DSL values it reads as operands, written {$r0},
{$r1}, ... in the order of read_only_args (numbers of the DSL or Python, and pointers, which pass their address).
It has side effects: it stays where it is written, in order with the kernel's other side effects. The text is the
user's, so what it holds, and for which target, is theirs; the operands' registers follow their types."""
from __future__ import annotations

import re

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Float32, Int32, Numeric
from ..values.pointer import Pointer

# LLVM NVPTX's inline-asm register classes, by the operand's IR type
_CONSTRAINTS = {"i1": "b", "i16": "h", "i32": "r", "i64": "l", "f32": "f", "f64": "d"}
_OPERAND = re.compile(r"\{\$r(\d+)\}")


def _operand(x, k: int):
    """(IR value, constraint) of read_only_args[k]."""
    if isinstance(x, Pointer):
        x = x.toint()
    elif isinstance(x, bool) or not isinstance(x, (int, float, Numeric)):
        raise DSLTypeError(f"cute.arch.inline_ptx: read_only_args[{k}] is a number or a pointer, got "
                           f"{type(x).__name__}", user_location(3))
    elif not isinstance(x, Numeric):
        x = Int32(x) if isinstance(x, int) else Float32(x)
    t = type(x).ir_type
    if t in ("f16", "bf16"):  # half-width floats travel in 16-bit registers
        return trace.builder().op1("llvm.bitcast", [x.ir()], "i16"), "h"
    if t not in _CONSTRAINTS:
        raise DSLTypeError(f"cute.arch.inline_ptx: read_only_args[{k}] is a {type(x).__name__}, which has no PTX "
                           "register class here", user_location(3))
    return x.ir(), _CONSTRAINTS[t]


def inline_ptx(ptx: str, *, read_only_args=(), loc=None, ip=None) -> None:
    if not isinstance(ptx, str) or not ptx.strip():
        raise DSLTypeError(f"cute.arch.inline_ptx: the PTX is a non-empty string, got {ptx!r}", user_location(2))
    used = {int(m) for m in _OPERAND.findall(ptx)}
    if used and max(used) >= len(read_only_args):
        raise DSLValueError(f"cute.arch.inline_ptx: the PTX reads {{$r{max(used)}}}, but read_only_args has "
                            f"{len(read_only_args)} values", user_location(2))
    if "$" in _OPERAND.sub("", ptx):
        raise DSLValueError("cute.arch.inline_ptx: a '$' outside an operand ({$r<n>}) is not PTX", user_location(2))
    values, constraints = [], []
    for k, x in enumerate(read_only_args):
        v, c = _operand(x, k)
        values.append(v)
        constraints.append(c)
    text = _OPERAND.sub(lambda m: "$" + m.group(1), ptx)
    trace.builder().inline_asm(text, ",".join(constraints), values, [], True)
