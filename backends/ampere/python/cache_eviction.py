"""cute.nvgpu.CacheEvictionPriority: the L1 eviction priority of global-memory loads and stores (cute.autovec_copy's
l1c_evict_priority=).

The priority is a qualifier of the access instruction (ld.global / st.global with .L1::evict_first, ...,
.L1::no_allocate: PTX 7.4, sm_70 and later), so a member emits the accesses itself: the frontend's copy hands it
each global access it would have made (the address, the value or its type, the bytes) and the member writes that
access as one instruction per 16 bytes or less, its bits moved as 32-bit words (16- or 8-bit units for accesses of
fewer bytes than a word). EVICT_NORMAL, the priority a plain access has, is a plain LLVM access.
"""
from __future__ import annotations

import enum

from warpweave import ext

_UNITS = ((4, "b32", "r", "i32"), (2, "b16", "h", "i16"), (1, "b8", "h", "i8"))


def _unit(nbytes: int, align: int):
    for size, ptx, reg, ir in _UNITS:
        if nbytes % size == 0 and align % size == 0:
            return size, ptx, reg, ir
    raise AssertionError(nbytes)


def _asm_attrs(asm: str, constraints: str, side_effects: bool) -> str:
    return f'asm_string = "{asm}", constraints = "{constraints}"' + (", has_side_effects" if side_effects else "")


class CacheEvictionPriority(enum.Enum):
    EVICT_NORMAL = "evict_normal"
    EVICT_FIRST = "evict_first"
    EVICT_LAST = "evict_last"
    EVICT_UNCHANGED = "evict_unchanged"
    NO_ALLOCATE = "no_allocate"

    def _plan(self, nbytes: int, align: int):
        """(unit bytes, PTX type, constraint, IR type, units per instruction, instructions)."""
        size, ptx, reg, ir = _unit(nbytes, align)
        units = nbytes // size
        per = min(units, 4) if size == 4 else 1   # vector accesses of 32-bit words only, at most 16 bytes
        while units % per or per * size > align:
            per //= 2
        return size, ptx, reg, ir, per, units // per

    def __ww_global_store__(self, b, value, ty: str, addr, nbytes: int, align: int):
        if self is CacheEvictionPriority.EVICT_NORMAL:
            b.op0("llvm.store", [value, addr], f"alignment = {align} : i64")
            return
        size, ptx, reg, ir, per, count = self._plan(nbytes, align)
        units = nbytes // size
        as_units = ir if units == 1 else f"vector<{units}x{ir}>"
        words = value if ty == as_units else b.op1("llvm.bitcast", [value], as_units)
        if units == 1:
            parts = [words]
        else:
            parts = [b.op1("vector.extract", [words], ir, f"static_position = array<i64: {k}>") for k in range(units)]
        if ir == "i8":   # a byte moves through a 16-bit register
            parts = [b.op1("llvm.zext", [p], "i16") for p in parts]
        base = b.op1("llvm.ptrtoint", [addr], "i64")
        vec = f".v{per}" if per > 1 else ""
        for j in range(count):
            regs = ", ".join(f"${1 + k}" for k in range(per))
            data = f"{{{regs}}}" if per > 1 else regs
            off = f"+{j * per * size}" if j else ""
            asm = f"st.global.L1::{self.value}{vec}.{ptx} [$0{off}], {data};"
            b.op0("llvm.inline_asm", [base] + parts[j * per:(j + 1) * per],
                  _asm_attrs(asm, ",".join(["l"] + [reg] * per), True))

    def __ww_global_load__(self, b, addr, ty: str, nbytes: int, align: int):
        if self is CacheEvictionPriority.EVICT_NORMAL:
            return b.op1("llvm.load", [addr], ty, f"alignment = {align} : i64")
        size, ptx, reg, ir, per, count = self._plan(nbytes, align)
        held = "i16" if ir == "i8" else ir
        base = b.op1("llvm.ptrtoint", [addr], "i64")
        vec = f".v{per}" if per > 1 else ""
        parts = []
        for j in range(count):
            regs = ", ".join(f"${k}" for k in range(per))
            data = f"{{{regs}}}" if per > 1 else regs
            off = f"+{j * per * size}" if j else ""
            asm = f"ld.global.L1::{self.value}{vec}.{ptx} {data}, [${per}{off}];"
            res = held if per == 1 else "!llvm.struct<(" + ", ".join([held] * per) + ")>"
            # a load is not hoisted or merged across the program's stores: it is an access with an effect
            out = b.op1("llvm.inline_asm", [base], res, _asm_attrs(asm, ",".join([f"={reg}"] * per + ["l"]), True))
            parts += [out] if per == 1 else [b.op1("llvm.extractvalue", [out], held, f"position = array<i64: {k}>")
                                              for k in range(per)]
        if ir == "i8":
            parts = [b.op1("llvm.trunc", [p], "i8") for p in parts]
        words = parts[0] if len(parts) == 1 else b.op1("vector.from_elements", parts, f"vector<{len(parts)}x{ir}>")
        as_units = ir if len(parts) == 1 else f"vector<{len(parts)}x{ir}>"
        return words if ty == as_units else b.op1("llvm.bitcast", [words], ty)

