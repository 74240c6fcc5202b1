"""Division by a divisor fixed at run time, without a divide: CuTe DSL's `cute.FastDivmodDivisor` and
`cute.fast_divmod_create_divisor`. Tile schedulers make one per problem extent (on the host or in a kernel) and
divide block indices by it in the kernel: `divmod(x, d)`, `x // d` and `x % d`.

The divisor travels as one Int64 (CuTe DSL's protocol carries one value per divisor): the divisor in the low 32
bits, the magic multiplier m = ceil(2**(31 + L) / d), L = ceil(log2 d), in the high 32 (Granlund and Montgomery's
round-up method, as CUTLASS's FastDivmod). The quotient of a dividend 0 <= x < 2**31 is then
umulhi(x, m) >> (L - 1), and x itself where d is 1. The multiplier is computed where the divisor is made (on the
host: a step of the program each call runs); the shift comes back from the divisor's leading zeros where the kernel
unpacks it."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values import hooks
from ..values.numeric import Int32, Int64, Numeric, Uint32, Uint64, as_numeric, select
from ..values.value_tree import extract_mlir_values


def _static_pack(d: int) -> int:
    if d < 1 or d >= 1 << 31:
        raise DSLValueError(f"a fast divisor is a positive 32-bit integer, got {d}", user_location(4))
    if d == 1:
        return 1
    ceil_log2 = (d - 1).bit_length()
    m = -(-(1 << (31 + ceil_log2)) // d)
    return ((m & 0xFFFFFFFF) << 32) | d


def _dynamic_pack(d: Int32) -> Int64:
    wide = Uint64(Uint32(d))
    ceil_log2 = Uint64(32) - Uint64(_leading_zeros(Uint32(d) - Uint32(1)))
    m = ((Uint64(1) << (Uint64(31) + ceil_log2)) + wide - Uint64(1)) // wide   # below 2**33
    # packed in signed 64-bit arithmetic (wrapping), so no value of a host program's call leaves 64-bit integers
    packed = (Int64(m) << Int64(32)) | Int64(wide)
    return select(wide == Uint64(1), Int64(1), packed)


def _count_leading_zeros(v: int) -> int:
    return 32 - (v & 0xFFFFFFFF).bit_length()


def _leading_zeros(x: Uint32) -> Int32:
    if x.is_static:
        return Int32(_count_leading_zeros(int(x.value)))
    if not trace.in_kernel():   # a step of the host program each call runs (its op tag names it there)
        return hooks.defer_on_host(lambda a: Int32(_count_leading_zeros(int(a.value))), (x,), Int32,
                                   op=("ctlz", 32))
    return Int32.from_ir(trace.builder().op1("math.ctlz", [x.ir()], "i32"))


def _pack(divisor) -> Int64:
    d = divisor if isinstance(divisor, Numeric) else as_numeric(divisor)
    if not d.is_integer:
        raise DSLTypeError(f"a fast divisor is an integer, got {type(d).__name__}", user_location(3))
    if d.is_static:
        return Int64(_static_pack(int(d.value)))
    return _dynamic_pack(Int32(d))


class FastDivmodDivisor:
    """A divisor d (0 < d < 2**31) that divides non-negative Int32 dividends with a multiply-high and a shift."""

    def __init__(self, divisor, is_power_of_2: bool | None = None, *, _packed: Int64 | None = None):
        # is_power_of_2 is CuTe DSL's hint; the multiplier of a power of two already divides by a shift alone
        self._packed = _packed if _packed is not None else _pack(divisor)

    @property
    def divisor(self) -> Int32:
        p = self._packed
        return Int32(p.value & 0xFFFFFFFF) if p.is_static else Int32(p & Int64(0xFFFFFFFF))

    def __extract_mlir_values__(self):
        return extract_mlir_values(self._packed)

    def __new_from_mlir_values__(self, values):
        return FastDivmodDivisor(None, _packed=Int64(values[0]))

    def _parts(self):
        # Unpacked at each use, never kept: one divisor serves several branches of a kernel (the warps of a
        # warp-specialized one), and values made inside one branch are not defined in the next; the compiler
        # merges the repeats that are in reach of each other.
        p = self._packed
        d = Uint32(p & Int64(0xFFFFFFFF))
        m = Uint32(p >> Int64(32))
        shift = Uint32(31) - Uint32(_leading_zeros(d - Uint32(1)))   # L - 1
        return d, m, shift

    def _quotient(self, x) -> Int32:
        x = x if isinstance(x, Numeric) else as_numeric(x)
        if not x.is_integer or x.width > 32:
            raise DSLTypeError(f"a fast divisor divides 32-bit integers, got {type(x).__name__}", user_location(3))
        if not trace.in_kernel() and not (x.is_static and self._packed.is_static):
            return Int32(x) // self.divisor   # a host-side value: the call's program divides
        d, m, shift = self._parts()
        ux = Uint32(x)
        q = Uint32((Uint64(ux) * Uint64(m)) >> Uint64(32)) >> shift
        return Int32(select(d == Uint32(1), ux, q))

    def __rfloordiv__(self, x) -> Int32:
        return self._quotient(x)

    def __rmod__(self, x) -> Int32:
        return Int32(x) - self._quotient(x) * self.divisor

    def __rdivmod__(self, x) -> tuple[Int32, Int32]:
        q = self._quotient(x)
        return q, Int32(x) - q * self.divisor

    def __repr__(self) -> str:
        return f"FastDivmodDivisor({self.divisor!r})"


def fast_divmod_create_divisor(divisor, *, loc=None, ip=None) -> FastDivmodDivisor:
    """A FastDivmodDivisor of `divisor` (an Int32, on the host side or in a kernel)."""
    return FastDivmodDivisor(divisor)


__all__ = ["FastDivmodDivisor", "fast_divmod_create_divisor"]
