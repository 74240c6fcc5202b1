"""IR ops written on values of a @cute.jit function's host side (`x.ir_value()` of a runtime extent, then
`llvm.intr_ctlz(...)`, `arith.addi(...)`): CuTe DSL compiles host code, so libraries compute launch parameters with
IR ops there (a fast divisor's magic number from ctlz, say). Here host code is a program each call runs
(host_program.py): each op below is the same operation on the DSL's numbers, so it becomes part of that program.
"""
from __future__ import annotations

from ..base import ir_values
from ..base.errors import DSLTypeError
from ..values import hooks
from ..values.numeric import Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, select

_SIGNED = {8: Int8, 16: Int16, 32: Int32, 64: Int64}
_UNSIGNED = {8: Uint8, 16: Uint16, 32: Uint32, 64: Uint64}


def _width(t: ir_values.Type, name, where) -> int:
    w = ir_values.bit_width(t)
    if not ir_values.IntegerType.isinstance(t) or w not in _SIGNED:
        raise DSLTypeError(f"{name} on the host side takes 8- to 64-bit integers, got {t}", where)
    return w


def _numbers(ops, name, where, signed=True):
    w = _width(ops[0].type, name, where)
    table = _SIGNED if signed else _UNSIGNED
    return w, [table[w](o.number) for o in ops]


def _result(x, w):
    return [ir_values.HostIRValue(Int64(x) if w == 64 else _SIGNED[w](x), ir_values.Type(f"i{w}"))]


def _bit_count(kind):
    def op(ops, result_types, properties, where):
        w, (x,) = _numbers(ops, f"llvm.intr.{kind}", where, signed=False)
        if x.is_static:  # a constant of the host side: known now, so it stays one (usable as an immediate)
            return _result(Int32(_count(kind, int(x.value), w)), w)
        v = hooks.defer_on_host(lambda a: Int32(_count(kind, int(a.value), w)), (x,), Int32, op=(kind, w))
        return _result(v, w)
    return op


def _count(kind, v, w):
    v &= (1 << w) - 1
    if kind == "ctlz":
        return w - v.bit_length()
    if kind == "cttz":
        return w if v == 0 else (v & -v).bit_length() - 1
    return bin(v).count("1")


def _binary(fn, signed=True):
    def op(ops, result_types, properties, where):
        w, (a, b) = _numbers(ops, "an arith op", where, signed)
        return _result(fn(a, b), w)
    return op


def _extract_value(ops, result_types, properties, where):
    """A field of a struct value of the host side (a JitArgument's C struct): the value it holds."""
    v = ir_values.host_number(ops[0])
    for p in properties.split("array<i64:")[1].rstrip(">").split(","):
        if not isinstance(v, tuple):
            raise DSLTypeError(f"llvm.extractvalue on the host side reads a struct's fields, got {ops[0].type}", where)
        v = ir_values.host_number(v[int(p)])
    return [ir_values.HostIRValue(v, result_types[0])]


ir_values.HOST_OPS.update({
    "llvm.extractvalue": _extract_value,
    "llvm.intr.ctlz": _bit_count("ctlz"), "llvm.intr.cttz": _bit_count("cttz"), "llvm.intr.ctpop": _bit_count("popc"),
    "math.ctlz": _bit_count("ctlz"), "math.cttz": _bit_count("cttz"), "math.ctpop": _bit_count("popc"),
    "arith.addi": _binary(lambda a, b: a + b), "arith.subi": _binary(lambda a, b: a - b),
    "arith.muli": _binary(lambda a, b: a * b), "arith.andi": _binary(lambda a, b: a & b),
    "arith.ori": _binary(lambda a, b: a | b), "arith.xori": _binary(lambda a, b: a ^ b),
    "arith.shli": _binary(lambda a, b: a << b), "arith.shrsi": _binary(lambda a, b: a >> b),
    "arith.shrui": _binary(lambda a, b: a >> b, signed=False),
    "arith.divsi": _binary(lambda a, b: a // b), "arith.divui": _binary(lambda a, b: a // b, signed=False),
    "arith.remsi": _binary(lambda a, b: a % b), "arith.remui": _binary(lambda a, b: a % b, signed=False),
    "arith.maxsi": _binary(lambda a, b: select(a > b, a, b)), "arith.minsi": _binary(lambda a, b: select(a < b, a, b)),
    "arith.maxui": _binary(lambda a, b: select(a > b, a, b), signed=False),
    "arith.minui": _binary(lambda a, b: select(a < b, a, b), signed=False),
})
