"""cutlass.experimental.primitives.convert_and_pack_integer: two 32-bit integers saturated to a narrow integer type
and packed into one word (cvt.pack.sat, sm_72 on; every target of this backend has it).

For a type of w bits (16, 8, 4 or 2; signed with is_signed=True, else unsigned), a and b, read as signed 32-bit
integers whatever their DSL type, are clamped to the type's range and packed a above b: for 16 bits the word is
a:b; for narrower types a:b fills the low 2*w bits and src_c's low 32 - 2*w bits lie above them (src_c is needed
then, and refused for 16 bits). Known a, b and c give a known word; otherwise one instruction."""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext
from warpweave._mlir import ir

M32 = 0xFFFFFFFF
WIDTHS = (16, 8, 4, 2)


def _word(x, what: str):
    """x as a DSL 32-bit integer (its bits, which the instruction reads as signed)."""
    if isinstance(x, bool) or not isinstance(x, (int, cutlass.Numeric)):
        raise ext.user_error(f"convert_and_pack_integer: {what} must be an Int32, Uint32 or int, got "
                             f"{type(x).__name__}", ext.DSLTypeError)
    if isinstance(x, int):
        if not -(1 << 31) <= x <= M32:
            raise ext.user_error(f"convert_and_pack_integer: {what} = {x} is not a 32-bit integer")
        return cutlass.Int32(x - (1 << 32) if x >= 1 << 31 else x)
    if not type(x).is_integer or type(x).width != 32:
        raise ext.user_error(f"convert_and_pack_integer: {what} must be a 32-bit integer, got {type(x).__name__}",
                             ext.DSLTypeError)
    return x


def _width(convert_type) -> int:
    if isinstance(convert_type, type) and issubclass(convert_type, cutlass.Numeric):
        convert_type = convert_type.mlir_type
    if not isinstance(convert_type, ir.Type) or not ir.IntegerType.isinstance(convert_type):
        raise ext.user_error(f"convert_and_pack_integer: convert_type must be an integer IR type (T.i16(), ...), "
                             f"got {convert_type!r}", ext.DSLTypeError)
    w = ir.IntegerType(convert_type).width
    if w not in WIDTHS:
        raise ext.user_error(f"convert_and_pack_integer: convert_type must be 16, 8, 4 or 2 bits wide, got {w}")
    return w


def pack_static(a: int, b: int, width: int, signed: bool, c: int = 0) -> int:
    """The packed word (unsigned 32-bit) of known a, b (their low 32 bits, read as signed) and c."""
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    mask = (1 << width) - 1

    def sat(x):
        x &= M32
        x = x - (1 << 32) if x >> 31 else x
        return min(max(x, lo), hi) & mask

    word = sat(a) << width | sat(b)
    return word if width == 16 else (word | (c << 2 * width)) & M32


def _bits(x) -> int:
    return x.value & M32


def convert_and_pack_integer(src_a, src_b, convert_type, *, src_c=None, is_signed=None, loc=None, ip=None):
    """src_a and src_b saturated to convert_type's width (signed if is_signed, else unsigned) and packed a above b
    into an Int32; below 16 bits, src_c's low bits fill the word above them."""
    width = _width(convert_type)
    a, b = _word(src_a, "src_a"), _word(src_b, "src_b")
    if width == 16 and src_c is not None:
        raise ext.user_error("convert_and_pack_integer: src_c is for types narrower than 16 bits; a 16-bit pack "
                             "fills the whole word")
    if width < 16 and src_c is None:
        raise ext.user_error(f"convert_and_pack_integer: a {width}-bit pack fills {2 * width} bits of the word; "
                             "src_c gives the rest (pass src_c=0 for zeros)")
    c = _word(src_c, "src_c") if src_c is not None else None
    signed = bool(is_signed)
    kind = f"{'s' if signed else 'u'}{width}"
    if a.is_static and b.is_static and (c is None or c.is_static):
        word = pack_static(_bits(a), _bits(b), width, signed, _bits(c) if c is not None else 0)
        return cutlass.Int32(word - (1 << 32) if word >> 31 else word)
    operands = {"a": [a.ir()], "b": [b.ir()]}
    if c is not None:
        operands["c"] = [c.ir()]
    backend, entry = ext.select_instruction("primitives.convert_and_pack_integer", {}, set(operands))
    out = ext.emit_instruction(ext.builder(), backend, entry, operands, {"type": kind})
    return cutlass.Int32.from_ir(out["d"][0])
