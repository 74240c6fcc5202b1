"""cute.arch's half-precision arithmetic with CuTe DSL's signatures: add, subtract and fused multiply-add of f16x2
and bf16x2 pairs, the scalar f16 and bf16 fused multiply-add, and the approximate base-2 exponential of a pair.

A pair is given either as its 32-bit word (an Int32, the first value in the low half) or as a tuple of two numbers
(converted to the pair's type); the result comes back in the form of the first operand. The qualifiers are the
instruction's: rnd ("rn", or None for none: the assembler may then contract an add with a multiply), ftz
(flush subnormals; f16 only), sat (clamp to [0, 1]; f16 only), relu (clamp below at 0; fma only), oob (the
out-of-bounds form of fma, which keeps a NaN operand's payload out of the result: compute capability 9.0 and
later). With predicate=, the instruction runs only where the predicate holds, and elsewhere the result is a.

bf16x2 add and subtract, and the bf16x2 exponential, are instructions of compute capability 9.0 and later; for
compute capability 8.x the add and subtract are one fused multiply-add by +1 or -1 (exact: the product needs no
rounding), and the exponential is refused."""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

_TYPES = {"f16": cutlass.Float16, "bf16": cutlass.BFloat16}


def _cc() -> int:
    return ext.current_target().compute_capability


def _name(op: str, ty: str, packed: bool) -> str:
    return f"cute.arch.{op}_{'packed_' if packed else ''}{ty}{'x2' if packed else ''}"


def _half_bits(v, ty: str) -> int:
    """The i16 bits of a number converted to the half type ty."""
    t = _TYPES[ty]
    h = v if type(v) is t else t(v)
    return ext.builder().op1("llvm.bitcast", [h.ir()], "i16")


def _pair(x, ty: str, what: str):
    """(the pair's i32 word, whether it was given as a word)."""
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise ext.user_error(f"{what} is a pair of two values, got {len(x)}", ext.DSLTypeError)
        for v in x:
            if isinstance(v, bool) or not isinstance(v, (int, float, cutlass.Numeric)):
                raise ext.user_error(f"{what}: the pair's values are numbers, got {type(v).__name__}",
                                     ext.DSLTypeError)
        b = ext.builder()
        lo, hi = (b.op1("arith.extui", [_half_bits(v, ty)], "i32") for v in x)
        hi = b.op1("arith.shli", [hi, b.constant_int(16, "i32")], "i32")
        return b.op1("arith.ori", [lo, hi], "i32"), False
    if isinstance(x, cutlass.Numeric) and type(x) in (cutlass.Int32, cutlass.Uint32):
        return x.ir(), True
    raise ext.user_error(f"{what} is an Int32 word of two packed {ty} values or a pair (x, y), got "
                         f"{type(x).__name__}", ext.DSLTypeError)


def _unpair(word: int, ty: str, as_word: bool):
    if as_word:
        return cutlass.Int32.from_ir(word)
    b = ext.builder()
    t = _TYPES[ty]
    lo = b.op1("arith.trunci", [word], "i16")
    hi = b.op1("arith.trunci", [b.op1("arith.shrui", [word, b.constant_int(16, "i32")], "i32")], "i16")
    return tuple(t.from_ir(b.op1("llvm.bitcast", [h], ty)) for h in (lo, hi))


def _flag(value, what: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ext.user_error(f"{what} is True, False or None, got {value!r}", ext.DSLTypeError)
    return value


def _qualifiers(name: str, ty: str, rnd, ftz=None, sat=None, relu=None, oob=None, *, fma=False) -> str:
    if rnd not in (None, "rn"):
        raise ext.user_error(f"{name}: rnd is 'rn' or None, got {rnd!r}")
    ftz, sat = _flag(ftz, f"{name}: ftz"), _flag(sat, f"{name}: sat")
    relu, oob = _flag(relu, f"{name}: relu"), _flag(oob, f"{name}: oob")
    if ty == "bf16" and (ftz or sat):
        raise ext.user_error(f"{name}: ftz and sat are qualifiers of f16 arithmetic, not of bf16")
    if relu and sat:
        raise ext.user_error(f"{name}: relu and sat cannot both be asked for")
    if oob and (ftz or sat):
        raise ext.user_error(f"{name}: oob takes no ftz or sat")
    if oob and _cc() < 90:
        raise ext.user_error(f"{name}: oob=True needs compute capability 9.0 or later; compiling for "
                             f"{ext.current_target().name}")
    r = "rn" if fma else rnd    # fma is always rounded to nearest
    q = (f".{r}" if r else "") + (".oob" if oob else "") + (".ftz" if ftz else "") + (".sat" if sat else "")
    return q + (".relu" if relu else "")


def _predicate(predicate, name: str):
    if predicate is None:
        return None
    if isinstance(predicate, bool):
        predicate = cutlass.Boolean(predicate)
    if not isinstance(predicate, cutlass.Numeric) or not type(predicate).is_boolean:
        raise ext.user_error(f"{name}: predicate is a Boolean, got {type(predicate).__name__}", ext.DSLTypeError)
    return predicate.ir()


def _emit(instr: str, words: list, pred, reg: str = "r", ty: str = "i32") -> int:
    """`instr $0, $1, ...` over words; with a predicate, guarded by it, the result tied to the first word."""
    places = ", ".join(f"${i + 1}" for i in range(len(words)))
    constraints = [f"={reg}"] + [reg] * len(words)
    operands = list(words)
    text = f"{instr} $0, {places};"
    if pred is not None:
        k = len(words) + 1
        text = f"@${k} {text}"
        constraints += ["b", "0"]
        operands += [pred, words[0]]
    return ext.builder().op1("llvm.inline_asm", operands, ty,
                             f'asm_string = "{text}", constraints = "{",".join(constraints)}"')


_ONE = {"bf16": 0x3F80, "f16": 0x3C00}
_MINUS_ONE = {"bf16": 0xBF80, "f16": 0xBC00}


def _add_sub(op: str, ty: str, a, b, rnd, ftz, sat, predicate):
    name = _name(op, ty, True)
    q = _qualifiers(name, ty, rnd, ftz, sat)
    x, as_word = _pair(a, ty, f"{name}: a")
    y, _ = _pair(b, ty, f"{name}: b")
    pred = _predicate(predicate, name)
    if ty == "bf16" and _cc() < 90:
        # a + b = fma(b, +1, a) and a - b = fma(b, -1, a), each with the one rounding of the add
        one = (_ONE if op == "add" else _MINUS_ONE)["bf16"]
        word = ext.builder().constant_int(one | one << 16, "i32")
        if pred is None:
            return _unpair(_emit("fma.rn.bf16x2", [y, word, x], None), ty, as_word)
        return _unpair(_fma_tied(y, word, x, pred), ty, as_word)
    return _unpair(_emit(f"{op}{q}.{ty}x2", [x, y], pred), ty, as_word)


def _fma_tied(b_word, one_word, a_word, pred) -> int:
    """fma.rn.bf16x2 of (b, +-1, a) under a predicate, the result tied to a (the add's first operand)."""
    return ext.builder().op1("llvm.inline_asm", [b_word, one_word, a_word, pred, a_word], "i32",
                             'asm_string = "@$4 fma.rn.bf16x2 $0, $1, $2, $3;", constraints = "=r,r,r,r,b,0"')


def add_packed_f16x2(a, b, *, rnd=None, ftz=None, sat=None, predicate=None, loc=None, ip=None):
    """(a0 + b0, a1 + b1) of f16 pairs in one instruction."""
    return _add_sub("add", "f16", a, b, rnd, ftz, sat, predicate)


def sub_packed_f16x2(a, b, *, rnd=None, ftz=None, sat=None, predicate=None, loc=None, ip=None):
    """(a0 - b0, a1 - b1) of f16 pairs in one instruction."""
    return _add_sub("sub", "f16", a, b, rnd, ftz, sat, predicate)


def add_packed_bf16x2(a, b, *, rnd=None, ftz=None, sat=None, predicate=None, loc=None, ip=None):
    """(a0 + b0, a1 + b1) of bf16 pairs in one instruction."""
    return _add_sub("add", "bf16", a, b, rnd, ftz, sat, predicate)


def sub_packed_bf16x2(a, b, *, rnd=None, ftz=None, sat=None, predicate=None, loc=None, ip=None):
    """(a0 - b0, a1 - b1) of bf16 pairs in one instruction."""
    return _add_sub("sub", "bf16", a, b, rnd, ftz, sat, predicate)


def _fma_packed(ty, a, b, c, rnd, ftz, sat, relu, oob):
    name = _name("fma", ty, True)
    q = _qualifiers(name, ty, rnd, ftz, sat, relu, oob, fma=True)
    x, as_word = _pair(a, ty, f"{name}: a")
    y, _ = _pair(b, ty, f"{name}: b")
    z, _ = _pair(c, ty, f"{name}: c")
    return _unpair(_emit(f"fma{q}.{ty}x2", [x, y, z], None), ty, as_word)


def fma_packed_f16x2(a, b, c, *, rnd="rn", ftz=None, sat=None, relu=None, oob=None, loc=None, ip=None):
    """(a0 * b0 + c0, a1 * b1 + c1) of f16 pairs, each with one rounding, in one instruction."""
    return _fma_packed("f16", a, b, c, rnd, ftz, sat, relu, oob)


def fma_packed_bf16x2(a, b, c, *, rnd="rn", relu=None, oob=None, loc=None, ip=None):
    """(a0 * b0 + c0, a1 * b1 + c1) of bf16 pairs, each with one rounding, in one instruction."""
    return _fma_packed("bf16", a, b, c, rnd, None, None, relu, oob)


def _fma_scalar(ty, a, b, c, rnd, ftz, sat, relu, oob):
    name = _name("fma", ty, False)
    q = _qualifiers(name, ty, rnd, ftz, sat, relu, oob, fma=True)
    vals = []
    for what, v in (("a", a), ("b", b), ("c", c)):
        if isinstance(v, bool) or not isinstance(v, (int, float, cutlass.Numeric)):
            raise ext.user_error(f"{name}: {what} is a number, got {type(v).__name__}", ext.DSLTypeError)
        vals.append(_half_bits(v, ty))
    bits = _emit(f"fma{q}.{ty}", vals, None, "h", "i16")
    return _TYPES[ty].from_ir(ext.builder().op1("llvm.bitcast", [bits], ty))


def fma_f16(a, b, c, *, rnd="rn", ftz=None, sat=None, relu=None, oob=None, loc=None, ip=None):
    """a * b + c of f16 values with one rounding."""
    return _fma_scalar("f16", a, b, c, rnd, ftz, sat, relu, oob)


def fma_bf16(a, b, c, *, rnd="rn", relu=None, oob=None, loc=None, ip=None):
    """a * b + c of bf16 values with one rounding."""
    return _fma_scalar("bf16", a, b, c, rnd, None, None, relu, oob)


def exp2_packed_f16x2(a, *, predicate=None, loc=None, ip=None):
    """(2 ** a0, 2 ** a1), approximately, of an f16 pair in one instruction."""
    name = _name("exp2", "f16", True)
    x, as_word = _pair(a, "f16", f"{name}: a")
    return _unpair(_emit("ex2.approx.f16x2", [x], _predicate(predicate, name)), "f16", as_word)


def exp2_packed_bf16x2(a, *, predicate=None, loc=None, ip=None):
    """(2 ** a0, 2 ** a1), approximately, of a bf16 pair in one instruction, subnormals flushed (compute
    capability 9.0 and later)."""
    name = _name("exp2", "bf16", True)
    if _cc() < 90:
        raise ext.user_error(f"{name} needs compute capability 9.0 or later (its instruction's); compiling for "
                             f"{ext.current_target().name}: use exp2_packed_f16x2, or cute.arch.exp2 per value")
    x, as_word = _pair(a, "bf16", f"{name}: a")
    return _unpair(_emit("ex2.approx.ftz.bf16x2", [x], _predicate(predicate, name)), "bf16", as_word)


NAMES = {f.__name__: f for f in (add_packed_f16x2, sub_packed_f16x2, add_packed_bf16x2, sub_packed_bf16x2,
                                 fma_packed_f16x2, fma_packed_bf16x2, fma_f16, fma_bf16, exp2_packed_f16x2,
                                 exp2_packed_bf16x2)}
