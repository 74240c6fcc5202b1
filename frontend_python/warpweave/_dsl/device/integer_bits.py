"""cute.arch's integer bit operations that LLVM's generic intrinsics express, so that every target's compiler picks
its own instruction for them: leading-zero count, bit reversal, funnel shifts, the base-2 logarithm of a power of
two; and match_sync (the warp's lanes holding equal values) through NVVM's
intrinsic. The instructions that need a backend's spelling (bit-field extract and insert, bfind, 24-bit multiply,
saturating add, carry chains) come from the backends.

The result types are CuTe DSL 4.8.1's: clz gives a Uint32 whatever the width; brev and shf the operand's type."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.markers import accept_locations
from ..values.numeric import Int32, Int64, Numeric, Uint32, Uint64, as_numeric

_WORDS = (Int32, Uint32, Int64, Uint64)


def _operand(x, name: str, types=_WORDS, what="an Int32, Uint32, Int64 or Uint64"):
    """x as a DSL integer of `types` (a Python int is an Int32); anything else is the user's error."""
    if isinstance(x, bool):
        raise DSLTypeError(f"cute.arch.{name} takes {what}, got a bool", user_location(3))
    if isinstance(x, int):
        x = as_numeric(x) if Int32 in types else Uint32(x)
    if not isinstance(x, Numeric) or type(x) not in types:
        raise DSLTypeError(f"cute.arch.{name} takes {what}, got {getattr(type(x), '__name__', type(x))}",
                           user_location(3))
    return x


def _intrinsic(name: str, operands: list, ty: str) -> int:
    return trace.builder().op1("llvm.call_intrinsic", operands, ty,
                               f'intrin = "{name}", op_bundle_sizes = array<i32>, '
                               f"operandSegmentSizes = array<i32: {len(operands)}, 0>")


def _false() -> int:
    return trace.builder().constant_int(0, "i1")


def clz(value, *, loc=None, ip=None):
    """The number of zero bits above the highest set bit (the width for 0), as a Uint32."""
    x = _operand(value, "clz")
    if x.is_static:
        w = x.width
        return Uint32(w - (x.value & ((1 << w) - 1)).bit_length())
    r = _intrinsic(f"llvm.ctlz.{x.ir_type}", [x.ir(), _false()], x.ir_type)
    if x.width == 64:
        r = trace.builder().op1("llvm.trunc", [r], "i32")
    return Uint32.from_ir(r)


def brev(value, *, loc=None, ip=None):
    """value with its bits in reverse order (bit 0 becomes bit width-1), of value's type."""
    x = _operand(value, "brev")
    return type(x).from_ir(_intrinsic(f"llvm.bitreverse.{x.ir_type}", [x.ir()], x.ir_type))


def log2_of_pow2_int(a, *, loc=None, ip=None):
    """log2(a) of a power of two a (an Int32): the index of its lowest set bit; -1 for 0."""
    x = _operand(a, "log2_of_pow2_int", (Int32,), "an Int32")
    if x.is_static:
        v = x.value & 0xFFFFFFFF
        return Int32(-1 if v == 0 else (v & -v).bit_length() - 1)
    b = trace.builder()
    tz = _intrinsic("llvm.cttz.i32", [x.ir(), _false()], "i32")
    zero = b.op1("arith.cmpi", [x.ir(), b.constant_int(0, "i32")], "i1", "predicate = 0")
    return Int32.from_ir(b.op1("arith.select", [zero, b.constant_int(-1, "i32"), tz], "i32"))


_SHF_KINDS = ("l", "r", "clamp_left", "clamp_right")


def shf(a, b, shift, kind="l", *, loc=None, ip=None):
    """The funnel shift of the 64-bit pair with b high and a low (Int32 or Uint32 words): "l" shifts it left and
    gives the high word, "r" shifts it right and gives the low word, the shift taken modulo 32; "clamp_left" and
    "clamp_right" clamp the shift to 32 instead (a shift of 32 or more gives a for the left shift, b for the
    right). The result has a's type."""
    if kind not in _SHF_KINDS:
        raise DSLValueError(f"cute.arch.shf: kind is one of {', '.join(_SHF_KINDS)}, got {kind!r}", user_location(2))
    lo = _operand(a, "shf", (Int32, Uint32), "Int32 or Uint32 words")
    hi = _operand(b, "shf", (Int32, Uint32), "Int32 or Uint32 words")
    n = _operand(shift, "shf", (Int32, Uint32), "an Int32 or Uint32 shift")
    left = kind in ("l", "clamp_left")
    name = ("llvm.fshl" if left else "llvm.fshr") if kind in ("l", "r") else \
        ("llvm.nvvm.fshl.clamp" if left else "llvm.nvvm.fshr.clamp")
    return type(lo).from_ir(_intrinsic(f"{name}.i32", [hi.ir(), lo.ir(), Uint32(n).ir()], "i32"))


_MATCH_KINDS = ("any", "all")


def match_sync(mask, value, kind="any", *, loc=None, ip=None):
    """The lanes of `mask` whose value equals this lane's (kind "any"), or, with kind "all", every lane of `mask`
    if all of them hold the same value and 0 otherwise; value is a 32- or 64-bit integer. A Uint32."""
    if kind not in _MATCH_KINDS:
        raise DSLValueError(f"cute.arch.match_sync: kind is 'any' or 'all', got {kind!r}", user_location(2))
    m = _operand(mask, "match_sync", _WORDS, "an integer mask")
    v = _operand(value, "match_sync", _WORDS, "a 32- or 64-bit integer value")
    width = "i64" if v.width == 64 else "i32"
    b = trace.builder()
    mv = Int32(m).ir() if m.width == 32 else b.op1("llvm.trunc", [m.ir()], "i32")
    if kind == "any":
        return Uint32.from_ir(_intrinsic(f"llvm.nvvm.match.any.sync.{width}", [mv, v.ir()], "i32"))
    pair = _intrinsic(f"llvm.nvvm.match.all.sync.{width}p", [mv, v.ir()], "!llvm.struct<(i32, i1)>")
    return Uint32.from_ir(b.op1("llvm.extractvalue", [pair], "i32", "position = array<i64: 0>"))


__all__ = ["clz", "brev", "log2_of_pow2_int", "shf", "match_sync"]

accept_locations(globals(), __all__)
