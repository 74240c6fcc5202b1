"""cute.arch's integer instructions that LLVM has no generic form for, spelled here for every target from sm_80:
bit-field extract and insert (bfe, bfi), the position of the highest significant bit (bfind), the 24-bit multiply
and multiply-add (mul24, mad24), saturating 32-bit add and subtract (one instruction each, where LLVM's saturating
intrinsics expand to a compare-and-select sequence), and the extended-precision chains (add_cc/addc, sub_cc/subc,
mad_cc/madc).

A chain passes its carry through the condition-code register, which no value carries: each step is an asm
statement with side effects, so the compiler keeps the steps in the order the program issues them, and the
carry an *c step reads is the one the previous .cc step of the thread set. Nothing else the compiler emits for a
kernel's 32- and 64-bit integer arithmetic writes that register, so consecutive steps chain as written."""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

_W32 = (cutlass.Int32, cutlass.Uint32)
_W64 = (cutlass.Int64, cutlass.Uint64)


def _word(x, name: str, what: str, types=_W32):
    """x as a DSL integer of `types` (a Python int is an Int32)."""
    if isinstance(x, int) and not isinstance(x, bool):
        x = cutlass.Int32(x) if cutlass.Int32 in types else cutlass.Int64(x)
    if not isinstance(x, cutlass.Numeric) or type(x) not in types:
        allowed = " or ".join(t.__name__ for t in types)
        raise ext.user_error(f"cute.arch.{name}: {what} must be an {allowed}, got {type(x).__name__}",
                             ext.DSLTypeError)
    return x


def _asm(asm: str, constraints: str, operands: list, ty: str = "i32", side_effects: bool = False):
    attrs = f'asm_string = "{asm}", constraints = "{constraints}"' + (", has_side_effects" if side_effects else "")
    return ext.builder().op1("llvm.inline_asm", operands, ty, attrs)


def _sign(t) -> str:
    return "s" if t.signed else "u"


def bfe(value, start, length, *, loc=None, ip=None):
    """The bit field of `length` bits of value from bit `start`, right-justified: sign-extended from the field's
    top bit for Int32, zero-extended for Uint32 (start and length are taken in 0..255, as the instruction does)."""
    v = _word(value, "bfe", "value")
    s = cutlass.Uint32(_word(start, "bfe", "start"))
    n = cutlass.Uint32(_word(length, "bfe", "length"))
    t = type(v)
    return t.from_ir(_asm(f"bfe.{_sign(t)}32 $0, $1, $2, $3;", "=r,r,r,r", [v.ir(), s.ir(), n.ir()]))


def bfi(value, replacement, start, length, *, loc=None, ip=None):
    """value with its `length` bits from bit `start` replaced by the low bits of replacement; the other bits
    kept. Of value's type."""
    v = _word(value, "bfi", "value")
    r = _word(replacement, "bfi", "replacement")
    s = cutlass.Uint32(_word(start, "bfi", "start"))
    n = cutlass.Uint32(_word(length, "bfi", "length"))
    # the instruction inserts its first operand's bits into its second
    return type(v).from_ir(_asm("bfi.b32 $0, $1, $2, $3, $4;", "=r,r,r,r,r",
                                [cutlass.Int32(r).ir(), cutlass.Int32(v).ir(), s.ir(), n.ir()]))


# CuTe DSL 4.8.1's result types of bfind, by the operand's type
_BFIND_RESULT = {cutlass.Int32: cutlass.Uint32, cutlass.Uint32: cutlass.Int32, cutlass.Int64: cutlass.Uint32,
                 cutlass.Uint64: cutlass.Uint32}


def bfind(value, *, loc=None, ip=None):
    """The position of the highest bit of value that differs from its sign (for unsigned types: the highest set
    bit), 0xFFFFFFFF if there is none. A 32-bit result whatever the operand's width."""
    v = _word(value, "bfind", "value", _W32 + _W64)
    t = type(v)
    reg = "l" if t.width == 64 else "r"
    return _BFIND_RESULT[t].from_ir(_asm(f"bfind.{_sign(t)}{t.width} $0, $1;", f"=r,{reg}", [v.ir()]))


def _hi(hi) -> str:
    if not isinstance(hi, bool):
        raise ext.user_error(f"cute.arch.mul24/mad24: hi is a bool (the product's bits 47..16 if True, else its "
                             f"low 32 bits), got {hi!r}", ext.DSLTypeError)
    return "hi" if hi else "lo"


def _same(a, b, name: str):
    if type(a) is not type(b):
        raise ext.user_error(f"cute.arch.{name}: the operands must be of one type, got {type(a).__name__} and "
                             f"{type(b).__name__}", ext.DSLTypeError)


def mul24(a, b, hi=False, *, loc=None, ip=None):
    """The product of the low 24 bits of a and b (signed for Int32, unsigned for Uint32): its low 32 bits, or with
    hi=True its bits 47..16."""
    x, y = _word(a, "mul24", "a"), _word(b, "mul24", "b")
    _same(x, y, "mul24")
    t = type(x)
    return t.from_ir(_asm(f"mul24.{_hi(hi)}.{_sign(t)}32 $0, $1, $2;", "=r,r,r", [x.ir(), y.ir()]))


def mad24(a, b, c, hi=False, *, loc=None, ip=None):
    """mul24(a, b, hi) + c, in one instruction."""
    x, y, z = _word(a, "mad24", "a"), _word(b, "mad24", "b"), _word(c, "mad24", "c")
    _same(x, y, "mad24")
    _same(x, z, "mad24")
    t = type(x)
    return t.from_ir(_asm(f"mad24.{_hi(hi)}.{_sign(t)}32 $0, $1, $2, $3;", "=r,r,r,r", [x.ir(), y.ir(), z.ir()]))


def _saturating(op: str, name: str, a, b):
    x = _word(a, name, "a", (cutlass.Int32,))
    y = _word(b, name, "b", (cutlass.Int32,))
    if x.is_static and y.is_static:
        v = x.value + y.value if op == "add" else x.value - y.value
        return cutlass.Int32(max(-(1 << 31), min((1 << 31) - 1, v)))
    return cutlass.Int32.from_ir(_asm(f"{op}.sat.s32 $0, $1, $2;", "=r,r,r", [x.ir(), y.ir()]))


def add_sat_int(a, b, *, loc=None, ip=None):
    """a + b of two Int32, clamped to [-2**31, 2**31 - 1] instead of wrapping."""
    return _saturating("add", "add_sat_int", a, b)


def sub_sat_int(a, b, *, loc=None, ip=None):
    """a - b of two Int32, clamped to [-2**31, 2**31 - 1] instead of wrapping."""
    return _saturating("sub", "sub_sat_int", a, b)


def _chain(name: str, op: str, operands: list):
    vals = [_word(x, name, f"operand {i}", _W32 + _W64) for i, x in enumerate(operands)]
    for v in vals[1:]:
        _same(vals[0], v, name)
    t = type(vals[0])
    reg = "l" if t.width == 64 else "r"
    places = ", ".join(f"${i + 1}" for i in range(len(vals)))
    asm = f"{op}.{_sign(t)}{t.width} $0, {places};"
    return t.from_ir(_asm(asm, ",".join([f"={reg}"] + [reg] * len(vals)), [v.ir() for v in vals],
                          t.ir_type, side_effects=True))


def add_cc(a, b, *, loc=None, ip=None):
    """a + b, setting the carry that the next addc reads: a multi-word addition's first step."""
    return _chain("add_cc", "add.cc", [a, b])


def addc(a, b, *, loc=None, ip=None):
    """a + b + the carry of the previous add_cc/addc, setting it again: a multi-word addition's next step."""
    return _chain("addc", "addc.cc", [a, b])


def sub_cc(a, b, *, loc=None, ip=None):
    """a - b, setting the borrow that the next subc reads."""
    return _chain("sub_cc", "sub.cc", [a, b])


def subc(a, b, *, loc=None, ip=None):
    """a - b - the borrow of the previous sub_cc/subc, setting it again."""
    return _chain("subc", "subc.cc", [a, b])


def mad_cc(a, b, c, *, loc=None, ip=None):
    """The low word of a * b + c, setting the carry of that addition for the next madc."""
    return _chain("mad_cc", "mad.lo.cc", [a, b, c])


def madc(a, b, c, *, loc=None, ip=None):
    """The low word of a * b + c + the previous step's carry, setting it again."""
    return _chain("madc", "madc.lo.cc", [a, b, c])


NAMES = {f.__name__: f for f in (bfe, bfi, bfind, mul24, mad24, add_sat_int, sub_sat_int, add_cc, addc, sub_cc,
                                 subc, mad_cc, madc)}
