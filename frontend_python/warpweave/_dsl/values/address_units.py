"""Memory spaces whose addresses count units wider than a byte (a backend declares the unit when it registers the
space, warpweave.ext.register_memory_space(..., address_bits=)). Such an address is the backend's own encoding, e.g.
a unit in its low half and a row in its high half that a layout's row strides reach through element offsets, so a
pointer's address there is integer arithmetic on its base in that unit, where other spaces step a GEP by bytes."""
from __future__ import annotations

from ..base import trace
from ..base.errors import DSLValueError, user_location

_UNIT_BITS: dict = {}


def register(memspace: str, bits: int) -> None:
    if bits < 8 or bits & (bits - 1):
        raise ValueError(f"memory space {memspace!r}: address_bits is a power of two of at least 8, got {bits}")
    if bits != 8:
        _UNIT_BITS[memspace] = bits


def unit_bits(memspace: str):
    """The bits one address step of the space counts, where it is not a byte; else None."""
    return _UNIT_BITS.get(memspace)


def unit_address(base, total, dtype, memspace: str, ptr_type: str):
    """The address `total` elements of dtype past `base` in a space of wider address units: base + total * width /
    unit, computed on the address as a 32-bit integer (such spaces have 32-bit addresses)."""
    bits, width, int_type = _UNIT_BITS[memspace], dtype.width, "i32"
    b = trace.builder()
    if isinstance(total, int):
        if total * width % bits:
            raise DSLValueError(f"{memspace} is addressed in {bits}-bit units: element {total} of {dtype.__name__} "
                                "values is inside one", user_location(4))
        if total == 0:
            return base
        idx = b.materialize(total * width // bits, int_type)
    else:
        idx = b.materialize(total, int_type)
        if width > bits:
            idx = b.op1("arith.muli", [idx, b.materialize(width // bits, int_type)], int_type)
        elif width < bits:
            per = bits // width
            if per & (per - 1):
                raise DSLValueError(f"{memspace} is addressed in {bits}-bit units, which {dtype.__name__} values do "
                                    "not divide", user_location(4))
            # as the backends address such a space: the unit holding the element (its values packed in the unit)
            idx = b.op1("arith.shrui", [idx, b.materialize(per.bit_length() - 1, int_type)], int_type)
    addr = b.op1("llvm.ptrtoint", [base], int_type)
    return b.op1("llvm.inttoptr", [b.op1("arith.addi", [addr, idx], int_type)], ptr_type)
