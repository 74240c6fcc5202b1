"""The optional keywords the generated op builders take beside their operands: `results=` (the result types, which
the builders here infer; a list that disagrees is refused, as MLIR's verifier would refuse the op), `fastmath=`
(arith's fast-math flags, carried on the op to the LLVM lowering) and `roundingmode=` (arith's rounding of a float
result). A keyword is honoured or refused at the user's line, never dropped: a program that asks for a rounding the
compiled code would not do is told so."""
from __future__ import annotations

import enum

from .errors import DSLTypeError, DSLValueError, user_location
from .ir_values import Type


class FastMathFlags(enum.IntFlag):
    """arith's fast-math flags (`arith.FastMathFlags`), combinable with |; `fast` is all of them."""
    none = 0
    reassoc = 1
    nnan = 2
    ninf = 4
    nsz = 8
    arcp = 16
    contract = 32
    afn = 64
    fast = 127


class RoundingMode(enum.IntEnum):
    """arith's rounding modes (`arith.RoundingMode`) of an op whose float result is rounded."""
    to_nearest_even = 0
    downward = 1
    upward = 2
    toward_zero = 3
    to_nearest_away = 4


_FLAG_NAMES = [f.name for f in FastMathFlags if f not in (FastMathFlags.none, FastMathFlags.fast)]


def fastmath_flags(name: str, fastmath, where=None) -> list:
    """The flag names of `fastmath` (a FastMathFlags value or an int of its bits, a flag's name, "fast", "none",
    None or a bool), in arith's order; refuses anything else."""
    where = where or user_location(3)
    if fastmath is None or fastmath is False:
        return []
    if fastmath is True:
        fastmath = FastMathFlags.fast
    if isinstance(fastmath, str):
        if fastmath not in FastMathFlags.__members__:
            raise DSLValueError(f"{name}: fastmath is a FastMathFlags value or one of "
                                f"{sorted(FastMathFlags.__members__)}, got {fastmath!r}", where)
        fastmath = FastMathFlags[fastmath]
    elif isinstance(fastmath, enum.Enum) and type(fastmath).__name__ == "FastMathFlags":
        fastmath = int(fastmath.value)    # another module's enum of the same flags (arith's bits)
    if not isinstance(fastmath, int) or isinstance(fastmath, bool) or not 0 <= fastmath <= int(FastMathFlags.fast):
        raise DSLTypeError(f"{name}: fastmath is a FastMathFlags value (flags combined with |), got {fastmath!r}",
                           where)
    bits = FastMathFlags(fastmath)
    return [n for n in _FLAG_NAMES if bits & FastMathFlags[n]]


def fastmath_property(name: str, fastmath, where=None) -> str:
    """`fastmath = #arith.fastmath<...>` for an op's properties, or "" when no flag is set."""
    flags = fastmath_flags(name, fastmath, where or user_location(3))
    return f"fastmath = #arith.fastmath<{','.join(flags)}>" if flags else ""


def check_rounding(name: str, roundingmode, where=None):
    """A float result's rounding: None or to_nearest_even, the rounding the compiled conversion does. Directed and
    away-from-zero roundings are refused rather than compiled as to-nearest-even."""
    where = where or user_location(3)
    if roundingmode is None:
        return
    try:
        mode = RoundingMode(int(roundingmode.value if isinstance(roundingmode, enum.Enum) else roundingmode))
    except (TypeError, ValueError):
        raise DSLValueError(f"{name}: roundingmode is an arith.RoundingMode, got {roundingmode!r}", where) from None
    if mode is not RoundingMode.to_nearest_even:
        raise DSLValueError(f"{name}: roundingmode={mode.name} is not supported; the conversion rounds to nearest "
                            f"even (give roundingmode=RoundingMode.to_nearest_even or none)", where)


def check_results(name: str, results, inferred: list, where=None):
    """`results=`: the op's result types as the program states them; they must be the ones the op has."""
    if results is None:
        return
    where = where or user_location(3)
    if not isinstance(results, (list, tuple)):
        raise DSLTypeError(f"{name}: results is a list of the op's result types, got {results!r}", where)
    given = [Type(t) for t in results]
    want = [Type(t) for t in inferred]
    if given != want:
        raise DSLTypeError(f"{name}: the op's results are ({', '.join(str(t) for t in want)}), the results given "
                           f"are ({', '.join(str(t) for t in given)})", where)
