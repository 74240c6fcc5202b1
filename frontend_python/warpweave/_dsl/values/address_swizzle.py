"""`cutlass.Swizzle`: a permutation of shared-memory byte addresses (CuTe's Swizzle<B, M, S> applied to addresses
in bytes), as TMA writes tiles and the tensor cores read them: address bits [M+S, M+S+B) are XORed into bits
[M, M+B). `Swizzle.from_name("s128b")` is 128-byte swizzling (16-byte units in rows of 128 bytes). A pointer's
`apply_swizzle(sw)` is the pointer to the swizzled address; `load_swizzled` / `store_swizzled` access through it.
"""
from __future__ import annotations

from ... import _core
from ..base.errors import DSLTypeError, DSLValueError, user_location

_NAMED = {"none": (0, 0, 0), "s32b": (1, 4, 3), "s64b": (2, 4, 3), "s128b": (3, 4, 3)}


class Swizzle:
    """CuTe's Swizzle<bbits, mbase, sshift> over byte addresses."""

    __slots__ = ("bbits", "mbase", "sshift")

    def __init__(self, bbits: int, mbase: int, sshift: int):
        for name, v in (("bbits", bbits), ("mbase", mbase), ("sshift", sshift)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise DSLValueError(f"cutlass.Swizzle: {name} is an int >= 0, got {v!r}", user_location(2))
        if bbits and sshift < bbits:
            raise DSLValueError(f"cutlass.Swizzle({bbits}, {mbase}, {sshift}): the shift must be at least the "
                                "number of bits, or the bits XORed overlap the bits they change", user_location(2))
        self.bbits, self.mbase, self.sshift = bbits, mbase, sshift

    @classmethod
    def from_name(cls, name: str) -> "Swizzle":
        """The swizzle named as TMA names its modes: "none", "s32b", "s64b", "s128b"."""
        if name not in _NAMED:
            raise DSLValueError(f"cutlass.Swizzle.from_name: unknown swizzle {name!r} (known: {', '.join(_NAMED)})",
                                user_location(2))
        return cls(*_NAMED[name])

    @property
    def name(self) -> str | None:
        """Its name ("s128b", ...), or None for a swizzle TMA has no mode for."""
        return next((n for n, v in _NAMED.items() if v == (self.bbits, self.mbase, self.sshift)), None)

    @property
    def span_bytes(self) -> int:
        """The bytes after which the permutation repeats (1024 for s128b; 1 for the identity)."""
        return 1 << (self.bbits + self.mbase + self.sshift) if self.bbits else 1

    def apply(self, offset: int) -> int:
        """The swizzled byte offset of a Python int (what the kernel computes for runtime addresses)."""
        mask = ((1 << self.bbits) - 1) << (self.mbase + self.sshift)
        return offset ^ ((offset & mask) >> self.sshift)

    def to(self, target_type):
        """This swizzle in another encoding: an instruction descriptor's or a tensor map's enumeration, which
        builds it with its `from_swizzle(swizzle)` if it has one, else the member named after the swizzle's
        byte width ("128B", "B128", "SWIZZLE_128B", ...; "none"/"NONE" for the identity)."""
        make = getattr(target_type, "from_swizzle", None)
        if callable(make):
            return make(self)
        name = self.name
        members = getattr(target_type, "__members__", None)
        if name is not None and members:
            width = name[1:-1] if name != "none" else None
            for key, member in members.items():
                k = key.upper()
                if width is None and ("NONE" in k or "INTERLEAVE" in k) or width is not None and (
                        k.endswith(f"{width}B") or k.endswith(f"B{width}") or k == f"S{width}B"):
                    return member
        raise DSLTypeError(f"{self} has no encoding in {getattr(target_type, '__name__', target_type)}",
                           user_location(2))

    def __eq__(self, other):
        return isinstance(other, Swizzle) and (self.bbits, self.mbase, self.sshift) == (
            other.bbits, other.mbase, other.sshift)

    def __hash__(self):
        return hash((Swizzle, self.bbits, self.mbase, self.sshift))

    def __repr__(self):
        return f"Swizzle(bbits={self.bbits}, mbase={self.mbase}, sshift={self.sshift})"


class PointerType:
    """A pointer's type as CuTe DSL code reads it (`ptr.type`): the element type, the memory space, the alignment
    and the swizzle of its addresses (the identity, of no bits, for a plain pointer), with which code swizzles a
    raw address itself."""

    __slots__ = ("value_type", "memspace", "alignment", "swizzle_type")

    def __init__(self, value_type, memspace, alignment: int, element_swizzle):
        self.value_type, self.memspace, self.alignment = value_type, memspace, alignment
        # the pointer keeps the swizzle of its element offsets; its type gives that of the byte addresses, which is
        # what code applies to the pointer as an integer (toint()): the base moves up by log2 of the element's bytes
        sw, shift = element_swizzle, (getattr(value_type, "width", 8) // 8).bit_length() - 1
        if sw is None or not sw.num_bits:
            self.swizzle_type = _core.Swizzle(0, 0, 0)
        else:
            self.swizzle_type = _core.Swizzle(sw.num_bits, sw.num_base + shift, sw.num_shift)

    def __repr__(self):
        return (f"PointerType({getattr(self.value_type, '__name__', self.value_type)}, {self.memspace}, "
                f"align={self.alignment}, {self.swizzle_type})")


def swizzle_suffix(t: PointerType) -> str:
    """What a pointer's printing adds for its swizzle (of byte addresses, as CuTe DSL prints it): nothing for none."""
    return f", {t.swizzle_type}" if t.swizzle_type.num_bits else ""


__all__ = ["PointerType", "Swizzle", "swizzle_suffix"]


def byte_swizzle(sw, dtype) -> Swizzle:
    """A pointer's swizzle of its `dtype` element addresses (a _core.Swizzle) as a Swizzle of byte addresses."""
    shift = (dtype.width if hasattr(dtype, "width") else 8).bit_length() - 4     # log2 of bytes per element
    if shift < 0 or sw.num_base + shift < 0:
        raise DSLValueError(f"an access through a swizzled pointer to {dtype.__name__} values: the swizzle would "
                            "split an element", user_location(3))
    return Swizzle(sw.num_bits, sw.num_base + shift, sw.num_shift)

