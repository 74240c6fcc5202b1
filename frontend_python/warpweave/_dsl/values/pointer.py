"""Pointers: a typed address in a memory space (global, shared, registers, or one a backend registers), and the
element accesses through one: scalars, packed 4-bit values, vectors, and register fragments read or written 32 bits
or a whole array at a time.

A pointer's offset is an integer of the layout algebra, static or symbolic, and becomes IR only at an access, where
its known divisibility gives the access its alignment. Outside a kernel (the host side of a @cute.jit function) an
access is recorded for each call by the host layer (values/hooks.py)."""
from __future__ import annotations

import enum
import math

from ..base import ir_values, trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from . import address_units, hooks
from .address_swizzle import PointerType, Swizzle, byte_swizzle, swizzle_suffix
from .ir_vector import Vector
from .numeric import PACKED_TYPES, Int32, Int64, Numeric, SymInt, Uint8

GMEM, SMEM, RMEM, GENERIC = "gmem", "smem", "rmem", "generic"

_ADDRSPACE = {GMEM: 1, SMEM: 3, RMEM: 0, GENERIC: 0}
# LLVM NVPTX's address spaces whose addresses are 32-bit values: shared, shared::cluster and tensor memory
_SHORT_ADDRESS_SPACES = (3, 6, 7)


def register_memory_space(name: str, address_space: int, address_bits: int = 8) -> None:
    """A backend's memory space (warpweave.ext.register_memory_space), e.g. tensor memory."""
    known = _ADDRSPACE.get(name)
    if known is not None and known != address_space:
        raise ValueError(f"memory space {name!r} is already address space {known}")
    address_units.register(name, address_bits)
    _ADDRSPACE[name] = int(address_space)


def ptr_type(memspace: str) -> str:
    a = _ADDRSPACE.get(memspace)
    if a is None:
        raise DSLValueError(f"no loaded backend registers the memory space {memspace!r} (known: "
                            f"{', '.join(sorted(_ADDRSPACE))})", user_location(3))
    return "!llvm.ptr" if a == 0 else f"!llvm.ptr<{a}>"


def pointer_like(x):
    """The Pointer that x stands for where an instruction takes an address, or None: a Pointer; the iterator of a
    tensor or an array; an IR value of an LLVM pointer type (user IR), as bytes of its address space."""
    if isinstance(x, Pointer):
        return x
    it = getattr(x, "iterator", None)
    if isinstance(it, Pointer):
        return it
    if isinstance(x, ir_values.Value) and x.type.text.startswith("!llvm.ptr"):
        return pointer_of(x, dtype=Uint8)
    return None


def mem_type(t) -> str:
    """How a value of type t is stored in memory (Booleans and sub-byte types in bytes)."""
    return "i8" if t.is_boolean or t.width < 8 else t.ir_type


def elem_bytes(t) -> int:
    return max(1, t.width // 8) if not t.is_boolean else 1


def is_packed(t) -> bool:
    """Two values per byte (4-bit types), low nibble first."""
    return t in PACKED_TYPES


def storage_bits(t) -> int:
    """The bits one element occupies in memory (6-bit floats take a byte each, as the MMA operands keep them)."""
    return 4 if is_packed(t) else 8 * elem_bytes(t)


class _PointerType(type):
    """Pointer(value, dtype=..., space=...) as CuTe DSL's programs write it (cutlass.Pointer over an IR pointer
    value or another pointer) makes a typed pointer of it; the DSL's own constructions pass the base id, type,
    memory space and alignment positionally."""

    def __call__(cls, base, *args, **kwargs):
        if args or not isinstance(base, (ir_values.Value, Pointer)):
            return super().__call__(base, *args, **kwargs)
        return pointer_of(base, **kwargs)


class Pointer(metaclass=_PointerType):
    """A typed address: an SSA base value plus an element offset kept symbolic. `base_align` is the base's known
    alignment in bytes; `assumed` is an alignment the user promised for base + offset (Pointer.align). A pointer
    from recast_ptr(ptr, swizzle_) carries a swizzle of its element addresses, which make_tensor composes with the
    tensor's layout."""

    __slots__ = ("base", "offset", "dtype", "memspace", "base_align", "host", "wide", "assumed", "swizzle")

    def __init__(self, base, dtype, memspace, align, offset=0, host=None, wide=False, assumed=0, swizzle=None):
        self.base = base        # SSA value id, or None for a host-side placeholder
        self.offset = offset    # int or SymInt, in elements
        self.dtype = dtype
        self.memspace = memspace
        self.base_align = align
        self.host = host        # host placeholder: the jit argument it stands for
        self.wide = wide        # offsets may pass 2**31 elements: index with 64-bit integers
        self.assumed = assumed
        self.swizzle = swizzle  # a Swizzle of the element addresses (CuTe's swizzle_ptr), or None

    def _copy(self, **kw):
        f = {k: getattr(self, k) for k in Pointer.__slots__}   # a subclass copies as a plain pointer
        f.update(kw)
        return Pointer(f["base"], f["dtype"], f["memspace"], f["base_align"], f["offset"], f["host"], f["wide"],
                       f["assumed"], f["swizzle"])

    def with_base(self, base):
        return self._copy(base=base, host=None)

    def __extract_mlir_values__(self):
        """CuTe DSL's IR-values protocol: the address, one value (which carries an object holding the pointer through
        dynamic control flow); none for a host placeholder, a swizzled or a packed pointer, which stay what they are."""
        if self.base is None or self.swizzle is not None or is_packed(self.dtype):
            return []
        return [self.ir_value()]

    def __new_from_mlir_values__(self, values):
        if not values:
            return self
        v = values[0]
        return self._copy(base=v.use() if isinstance(v, ir_values.Value) else int(v), offset=0, host=None,
                          base_align=self.alignment_at(0))

    def load(self, *, count=None, alignment=None, is_volatile=False, is_invariant=False, loc=None, ip=None):
        """The element the pointer points to (CuTe DSL's Pointer.load: `(ptr + i).load()`), or with count=n the n
        elements from it as one Vector (one vector access; alignment= promises the address's alignment in bytes)."""
        p = self.align(alignment) if alignment else self
        if p.swizzle is not None:   # CuTe's swizzled pointer: the access goes to the swizzle of its address
            return p._copy(swizzle=None).load_swizzled(byte_swizzle(p.swizzle, p.dtype), count=count)
        if count is None and not (is_volatile or is_invariant):
            return load_scalar(p, 0)
        return load_vector_value(p, 0, 1 if count is None else count, volatile=is_volatile, invariant=is_invariant,
                                 scalar=count is None)

    def store(self, value, *, alignment=None, is_volatile=False, loc=None, ip=None):
        """Writes value where the pointer points: a number (converted to the element type), or a Vector from here on
        in one vector access (alignment= promises the address's alignment in bytes)."""
        p = self.align(alignment) if alignment else self
        if p.swizzle is not None:
            return p._copy(swizzle=None).store_swizzled(byte_swizzle(p.swizzle, p.dtype), value)
        if isinstance(value, Vector) or is_volatile:
            store_vector_value(p, 0, value, volatile=is_volatile)
        else:
            store_scalar(p, 0, value)

    def masked_load(self, mask, *, alignment=None, default=None, loc=None, ip=None):
        """A Vector of len(mask) elements from here, each read only where its mask lane (a Boolean Vector) is true;
        the others are `default` (zero if not given). Lanes off the mask are not accessed."""
        return masked_load(self.align(alignment) if alignment else self, 0, mask, default)

    def masked_store(self, value, mask, *, alignment=None, loc=None, ip=None):
        """Writes the lanes of the Vector `value` whose mask lane is true; memory under the others is untouched."""
        masked_store(self.align(alignment) if alignment else self, 0, value, mask)

    def __getitem__(self, i):
        return (self + i).load() if self.swizzle is not None else load_scalar(self, element_index(i))

    def __setitem__(self, i, value):
        (self + i).store(value) if self.swizzle is not None else store_scalar(self, element_index(i), value)

    def apply_swizzle(self, swizzle: Swizzle) -> "Pointer":
        """The pointer to this address permuted by `swizzle` (a cutlass.Swizzle of byte addresses): where a tile
        written swizzled (by TMA) keeps the element this pointer would address unswizzled."""
        if not isinstance(swizzle, Swizzle):
            raise DSLTypeError(f"apply_swizzle takes a cutlass.Swizzle, got {type(swizzle).__name__}",
                               user_location(2))
        if not swizzle.bbits:
            return self
        _in_kernel("apply_swizzle")
        eb, off = elem_bytes(self.dtype), self.offset   # a base the swizzle's span divides: permute the offset alone
        if isinstance(off, int) and self.base_align >= swizzle.span_bytes and swizzle.apply(off * eb) % eb == 0:
            return self._copy(offset=swizzle.apply(off * eb) // eb, assumed=0, swizzle=None)
        b = trace.builder()
        addr = b.op1("llvm.ptrtoint", [self.address(0)], "i64")
        mask = b.constant_int(((1 << swizzle.bbits) - 1) << (swizzle.mbase + swizzle.sshift), "i64")
        moved = b.op1("arith.shrui", [b.op1("arith.andi", [addr, mask], "i64"),
                                      b.constant_int(swizzle.sshift, "i64")], "i64")
        base = b.op1("llvm.inttoptr", [b.op1("arith.xori", [addr, moved], "i64")], ptr_type(self.memspace))
        return Pointer(base, self.dtype, self.memspace, min(self.alignment_at(0), 1 << swizzle.mbase))

    def load_swizzled(self, swizzle: Swizzle, *, count=None, alignment=None, loc=None, ip=None):
        """load() of the element here, or of the `count` elements from here, each at its address permuted by
        `swizzle`: a run of consecutive elements stays consecutive only inside one of the swizzle's units of
        2**mbase bytes, so a longer run is read unit by unit (one vector access each)."""
        p = self.align(alignment) if alignment else self
        if count is None or not swizzle.bbits:
            return p.apply_swizzle(swizzle).load(count=count)
        n = _count(count, "load_swizzled")
        step = p._swizzle_piece(swizzle, n)
        if step == n:
            return p.apply_swizzle(swizzle).load(count=n)
        lanes = []
        for i in range(0, n, step):
            lanes.extend((p + i).apply_swizzle(swizzle).load(count=step).to_elements())
        return Vector.from_elements(lanes, self.dtype)

    def store_swizzled(self, swizzle: Swizzle, value, *, alignment=None, loc=None, ip=None):
        """store() of value (a number, or a Vector of consecutive elements) with each element at its address
        permuted by `swizzle`, unit by unit as load_swizzled reads them."""
        p = self.align(alignment) if alignment else self
        if not isinstance(value, Vector) or not swizzle.bbits:
            p.apply_swizzle(swizzle).store(value)
            return
        n = value.numel
        step = p._swizzle_piece(swizzle, n)
        if step == n:
            p.apply_swizzle(swizzle).store(value)
            return
        lanes = vector_of(value, self.dtype, n, "store_swizzled").to_elements()
        for i in range(0, n, step):
            (p + i).apply_swizzle(swizzle).store(Vector.from_elements(lanes[i:i + step], self.dtype))

    def _swizzle_piece(self, swizzle: Swizzle, n: int) -> int:
        """The most consecutive elements from here (a power of two dividing n) that `swizzle` keeps consecutive
        wherever they start: ones filling at most one unit of 2**mbase bytes from a boundary of their width, which
        the pointer's known alignment guarantees."""
        _refuse_packed(self.dtype, "a swizzled access")
        width = math.gcd(1 << swizzle.mbase, self.alignment_at(0))
        step = 1
        while n % (step * 2) == 0 and step * 2 * elem_bytes(self.dtype) <= width:
            step *= 2
        return step

    def tospace(self, space, *, loc=None, ip=None) -> "Pointer":
        """The same memory through another address space (LLVM's addrspacecast: to or from generic addresses)."""
        ms = memspace_of(space)
        if ms == self.memspace:
            return self
        _in_kernel("tospace")
        base = trace.builder().op1("llvm.addrspacecast", [self.address(0)], ptr_type(ms))
        return Pointer(base, self.dtype, ms, self.alignment_at(0))

    def raw_ptr(self):
        """The pointer as CuTe DSL's typed pointer (cutlass.Pointer: `tensor.iterator.raw_ptr()`): one class here."""
        return self

    def __add__(self, off):
        off = off.__ww_int__() if hasattr(off, "__ww_int__") else off
        assumed = 0
        if self.assumed:
            d = off * elem_bytes(self.dtype)
            assumed = math.gcd(self.assumed, abs(d) if isinstance(d, int) else d.divisibility) or self.assumed
        return self._copy(offset=self.offset + off, assumed=assumed)

    __radd__ = __add__

    def align(self, min_align: int):
        """This pointer, with the promise that its address is a multiple of min_align bytes (CuTe DSL's
        Pointer.align): accesses through it may then be vectorized that wide."""
        if not isinstance(min_align, int) or min_align <= 0 or min_align & (min_align - 1):
            raise DSLValueError(f"Pointer.align: the alignment must be a power of two, got {min_align}",
                                user_location(2))
        return self._copy(assumed=max(self.assumed, min_align))

    @property
    def element_type(self):
        return self.dtype

    @property
    def value_type(self):
        """The element type (CuTe DSL's name for it on pointers: a GEMM taking pointers reads its types so)."""
        return self.dtype

    @property
    def type(self) -> PointerType:
        return PointerType(self.dtype, self.memspace, self.alignment, self.swizzle)

    @property
    def ptr(self):
        """The pointer itself (CuTe DSL code reads a shared-storage scalar's address as `storage.field.ptr`)."""
        return self

    @property
    def llvm_ptr(self):
        """The pointer itself (CuTe DSL code passes `ptr.llvm_ptr` to cute.arch's atomics, and to IR ops, which take
        its ir_value())."""
        return self

    @property
    def value(self):
        """The pointer itself, as llvm_ptr (CuTe DSL code hands a pipeline handle's barrier on as `.value`, its IR
        value, to the operations that take an mbarrier)."""
        return self

    def ir_value(self, *, loc=None, ip=None):
        """The address as an IR value (`!llvm.ptr<addrspace>`), for ops written with the IR (inline asm, NVVM)."""
        return ir_values.wrap(self.address(0), ptr_type(self.memspace))

    to_llvm_ptr = ir_value  # CuTe DSL's name, for code that builds IR over the address (llvm.addrspacecast)

    def toint(self, dtype=None, *, loc=None, ip=None):
        """The address as an integer of dtype (by default 32 bits where the memory's addresses are, else 64), in the
        memory's address unit (address_units.py); of packed values at a run-time offset, the byte holding the element
        (offset / 2), as CuTe DSL gives (a tensor map's address of a tensor moved by a run-time offset)."""
        if self.base is None and self.host is not None:
            return HostAddress(self)    # known only at each call, where what takes it resolves it to the argument
        t = dtype or (Int32 if _ADDRSPACE.get(self.memspace) in _SHORT_ADDRESS_SPACES else Int64)
        if not getattr(t, "is_integer", False):
            raise DSLTypeError(f"Pointer.toint: dtype is an integer type, got {t!r}", user_location(2))
        byte = is_packed(self.dtype) and not isinstance(self.offset, int)
        a = self._copy(dtype=Uint8, offset=0).address(self.offset // 2) if byte else self.address(0)
        return t.from_ir(trace.builder().op1("llvm.ptrtoint", [a], t.ir_type))

    @property
    def memspace_name(self):
        return self.memspace

    alignment = property(lambda self: self.alignment_at(0), doc="Known alignment in bytes of the address.")
    max_alignment = property(lambda self: self.alignment, doc="CuTe DSL 4.8.1's other name of alignment.")

    def alignment_at(self, offset) -> int:
        """Known alignment in bytes of the address `offset` elements past this pointer."""
        total = self.offset + offset
        if is_packed(self.dtype):
            # Two elements per byte: the byte offset is total / 2.
            d = total.divisibility if not isinstance(total, int) else abs(total)
            return self.base_align if d == 0 else (math.gcd(self.base_align, d // 2) if d % 2 == 0 else 1)
        eb = elem_bytes(self.dtype)
        if isinstance(total, int):
            d = abs(total) * eb
            known = self.base_align if d == 0 else math.gcd(self.base_align, d)
        else:
            known = math.gcd(self.base_align, total.divisibility * eb)
        if self.assumed:
            rel = offset * eb
            rd = (abs(rel) if isinstance(rel, int) else rel.divisibility)
            known = max(known, math.gcd(self.assumed, rd) if rd else self.assumed)
        return known

    def recast(self, dtype):
        """The same address, as a pointer to `dtype` values."""
        ob, nb = storage_bits(self.dtype), storage_bits(dtype)
        off = self.offset * ob
        if isinstance(off, int) and off % nb or not isinstance(off, int) and off.divisibility % nb:
            raise DSLValueError(f"recast_ptr: the offset of {self} is not a whole number of {dtype.__name__} values",
                                user_location(3))
        return self._copy(dtype=dtype, offset=off // nb)

    def address(self, offset):
        """The SSA address `offset` elements past this pointer: a GEP by the pointer's own offset (where a view or
        slice of a tensor starts), then one by `offset` (the element's place in the layout). Kept apart, the two
        index computations do not mix: in a loop over the k-tiles of a tensor the first changes per k-tile and is
        the same for all of a thread's accesses, the second is per access and loop-invariant, so each access is the
        shared pointer plus a hoisted offset. One index of their sum (a 32-bit sum, sign-extended) would be neither,
        and the loop would carry an index per access. Without `inbounds` LLVM may reassociate the two GEPs."""
        if self.base is None and self.host is None and address_units.unit_bits(self.memspace):
            # a fragment of a space addressed by number (tensor memory) laid out from a shape alone starts at 0
            return self._copy(base=trace.builder().op1("llvm.mlir.zero", [], ptr_type(self.memspace))).address(offset)
        if self.base is None:
            raise DSLTypeError("this tensor lives on the host side of a @cute.jit function: pass it to a kernel to "
                               "access its elements", user_location(1))
        if is_packed(self.dtype):
            total = self.offset + offset
            odd = total % 2 if isinstance(total, int) else (0 if total.divisibility % 2 == 0 else 1)
            if odd:
                raise DSLValueError(f"the address of element {total} of a packed {self.dtype.__name__} buffer is "
                                    "inside a byte: start accesses at an even element", user_location(3))
            return self._copy(dtype=Uint8, offset=0).address(total // 2)
        if self._split(offset):
            return self._gep(self._gep(self.base, self.offset), offset)
        return self._gep(self.base, self.offset + offset)

    def address_from(self, offset, k: int):
        """The address k elements past address(offset), as a constant step from it: the accesses of a contiguous
        run share the address of its start and differ by immediate offsets."""
        return self._gep(self.address(offset), k)

    def _split(self, offset) -> bool:
        """Whether address(offset) indexes by the pointer's offset and by `offset` in two GEPs (the pointer's
        offset is dynamic and `offset` is not zero); otherwise by their sum, in one."""
        return not isinstance(self.offset, int) and not (isinstance(offset, int) and offset == 0)

    def _gep(self, base, total):
        if address_units.unit_bits(self.memspace):
            return address_units.unit_address(base, total, self.dtype, self.memspace, ptr_type(self.memspace))
        b = trace.builder()
        et = mem_type(self.dtype)
        if isinstance(total, int):
            if total == 0:
                return base
            if -(1 << 31) <= total < (1 << 31):
                return b.op1("llvm.getelementptr", [base], ptr_type(self.memspace),
                             f"elem_type = {et}, rawConstantIndices = array<i32: {total}>")
        idx = self._index(total)
        return b.op1("llvm.getelementptr", [base, idx], ptr_type(self.memspace),
                     f"elem_type = {et}, rawConstantIndices = array<i32: -2147483648>")

    def _index(self, total):
        idx_type = "i64" if self.wide or isinstance(total, int) or total.bits > 32 else "i32"
        return trace.builder().materialize(total, idx_type)

    def prepare_address(self, offset) -> None:
        """Computes the indices of address(offset) here, ahead of a branch that accesses it (a predicated copy):
        every element's branch then reuses the index arithmetic, which the compiler does not share between
        branches."""
        if self.base is None or is_packed(self.dtype):
            return
        parts = (self.offset, offset) if self._split(offset) else (self.offset + offset,)
        for part in parts:
            if not isinstance(part, int):
                self._index(part)

    def __repr__(self):
        return f"ptr<{self.dtype.__name__}, {self.memspace}, align {self.alignment_at(0)}{swizzle_suffix(self.type)}>"

# --- element access -----------------------------------------------------------------------------------------------

def _nibble(ptr: Pointer, offset):
    """(the byte's address, the shift of the element's nibble as an i8 value) of a packed element."""
    b = trace.builder()
    total = ptr.offset + offset
    byte_ptr = ptr._copy(dtype=Uint8, offset=0)
    addr = byte_ptr.address(total // 2)
    if isinstance(total, int):
        return addr, b.constant_int(4 * (total % 2), "i8")
    odd = b.materialize(total % 2, "i32")
    return addr, b.op1("arith.trunci", [b.op1("arith.shli", [odd, b.constant_int(2, "i32")], "i32")], "i8")


def _load_packed(ptr: Pointer, offset):
    t = ptr.dtype
    b = trace.builder()
    addr, sh = _nibble(ptr, offset)
    byte = b.op1("llvm.load", [addr], "i8", "alignment = 1 : i64")
    code = b.op1("arith.andi", [b.op1("arith.shrui", [byte, sh], "i8"), b.constant_int(15, "i8")], "i8")
    return t.from_ir(code if t.ir_type == "i8" else b.op1("arith.trunci", [code], t.ir_type))


def _store_packed(ptr: Pointer, offset, value):
    """Read-modify-write of the element's byte: not atomic, so two threads must not write the two halves of one
    byte at the same time (as with CuTe's sub-byte references)."""
    t = ptr.dtype
    v = value if isinstance(value, Numeric) and type(value) is t else t(value)
    b = trace.builder()
    code = v.ir()
    if t.ir_type != "i8":
        code = b.op1("arith.extui", [code], "i8")
    code = b.op1("arith.andi", [code, b.constant_int(15, "i8")], "i8")
    addr, sh = _nibble(ptr, offset)
    old = b.op1("llvm.load", [addr], "i8", "alignment = 1 : i64")
    keep = b.op1("arith.xori", [b.op1("arith.shli", [b.constant_int(15, "i8"), sh], "i8"),
                                b.constant_int(-1, "i8")], "i8")
    new = b.op1("arith.ori", [b.op1("arith.andi", [old, keep], "i8"), b.op1("arith.shli", [code, sh], "i8")], "i8")
    b.op0("llvm.store", [new, addr], "alignment = 1 : i64")


def load_scalar(ptr: Pointer, offset):
    t = ptr.dtype
    if not trace.in_kernel():  # the host side of a @cute.jit function: read at each call (host_values.py)
        return hooks.load_on_host(ptr, offset)
    if is_packed(t):
        return _load_packed(ptr, offset)
    b = trace.builder()
    addr = ptr.address(offset)
    align = ptr.alignment_at(offset)
    v = b.op1("llvm.load", [addr], mem_type(t), f"alignment = {min(align, elem_bytes(t))} : i64")
    if t.is_boolean:
        v = b.op1("arith.trunci", [v], "i1")
    return t.from_ir(v)


def store_scalar(ptr: Pointer, offset, value):
    t = ptr.dtype
    if not trace.in_kernel():  # the host side of a @cute.jit function: written at each call (host_values.py)
        hooks.store_on_host(ptr, offset, value)
        return
    if is_packed(t):
        _store_packed(ptr, offset, value)
        return
    v = value if isinstance(value, Numeric) and type(value) is t else t(value)
    b = trace.builder()
    x = v.ir()
    if t.is_boolean:
        x = b.op1("arith.extui", [x], "i8")
    addr = ptr.address(offset)
    align = ptr.alignment_at(offset)
    b.op0("llvm.store", [x, addr], f"alignment = {min(align, elem_bytes(t))} : i64")


def _register_runs(ptr: Pointer, offsets):
    """Splits a list of element offsets into runs that one 32-bit access covers: for 8- and 16-bit elements, 4 or 2
    consecutive static offsets starting 4-byte aligned; every other offset alone. Instructions read and write
    registers 32 bits at a time: accessing a register fragment so keeps each such register one value for LLVM (its
    SROA slices the fragment by access), where per-element accesses leave 16-bit halves that a loop carries apart and
    ptxas repacks with PRMT before every use."""
    t = ptr.dtype
    n = 32 // t.width if t.width in (8, 16) and not t.is_boolean and not is_packed(t) else 1
    runs, i = [], 0
    while i < len(offsets):
        o = offsets[i]
        if (n > 1 and isinstance(o, int) and i + n <= len(offsets)
                and all(isinstance(offsets[i + k], int) and offsets[i + k] == o + k for k in range(n))
                and ptr.alignment_at(o) >= 4):
            runs.append((i, n))
            i += n
        else:
            runs.append((i, 1))
            i += 1
    return runs


# A register fragment read or written whole by one instruction (an MMA's accumulator: 128 values for a 64x256
# wgmma) is accessed as one array: one load and a value extracted per element, or the values inserted into one
# array and one store, instead of an address and an access per element. SROA splits the array access into the
# same per-element values, so the code is the same, and the module has ~40% fewer ops to trace, parse and lower.
_WHOLE_MIN = 8


def _whole_run(ptr: Pointer, offsets, store: bool):
    """(first offset, span) when the offsets can be one array access of a register fragment, else None: 32- or
    64-bit elements (narrower ones go 32 bits at a time, _register_runs), all offsets static and, to store, exactly
    the span's elements (a store writes the whole array)."""
    t = ptr.dtype
    if (len(offsets) < _WHOLE_MIN or ptr.memspace != RMEM or not isinstance(ptr.offset, int) or t.is_boolean
            or t.width not in (32, 64) or is_packed(t) or not trace.in_kernel()):
        return None
    if not all(type(o) is int for o in offsets):
        return None
    lo, hi = min(offsets), max(offsets)
    span = hi - lo + 1
    if store:
        if span != len(offsets) or len(set(offsets)) != span:
            return None
    elif span > 2 * len(offsets):
        return None
    return lo, span


def _load_whole(ptr: Pointer, offsets, lo: int, span: int) -> list:
    t = ptr.dtype
    b = trace.builder()
    et = mem_type(t)
    whole = b.op1("llvm.load", [ptr.address(lo)], f"!llvm.array<{span} x {et}>",
                  f"alignment = {min(ptr.alignment_at(lo), elem_bytes(t))} : i64")
    return [t.from_ir(b.op1("llvm.extractvalue", [whole], et, f"position = array<i64: {o - lo}>")) for o in offsets]


def _store_whole(ptr: Pointer, offsets, values, lo: int, span: int) -> None:
    t = ptr.dtype
    b = trace.builder()
    at = f"!llvm.array<{span} x {mem_type(t)}>"
    whole = b.op1("llvm.mlir.undef", [], at)
    for o, v in zip(offsets, values):
        x = (v if isinstance(v, Numeric) and type(v) is t else t(v)).ir()
        whole = b.op1("llvm.insertvalue", [whole, x], at, f"position = array<i64: {o - lo}>")
    b.op0("llvm.store", [whole, ptr.address(lo)], f"alignment = {min(ptr.alignment_at(lo), elem_bytes(t))} : i64")


def load_scalars(ptr: Pointer, offsets) -> list:
    """The elements at `offsets` (DSL numbers), read 32 bits at a time where they share a register
    (_register_runs), or a whole register fragment at once (_whole_run)."""
    whole = _whole_run(ptr, offsets, store=False)
    if whole is not None:
        return _load_whole(ptr, offsets, *whole)
    out = []
    for i, n in _register_runs(ptr, offsets):
        out.extend(load_vector(ptr, offsets[i], n) if n > 1 else [load_scalar(ptr, offsets[i])])
    return out


def store_scalars(ptr: Pointer, offsets, values) -> None:
    """Stores values at `offsets`, 32 bits at a time where they share a register (_register_runs), or a whole
    register fragment at once (_whole_run)."""
    whole = _whole_run(ptr, offsets, store=True)
    if whole is not None:
        _store_whole(ptr, offsets, values, *whole)
        return
    for i, n in _register_runs(ptr, offsets):
        if n > 1:
            store_vector(ptr, offsets[i], values[i:i + n])
        else:
            store_scalar(ptr, offsets[i], values[i])


def _refuse_packed(t, what):
    if is_packed(t):
        raise DSLTypeError(f"{what} of packed {t.__name__} values: access them one by one, or recast_tensor the "
                           "tensor to bytes", user_location(3))


def load_vector(ptr: Pointer, offset, n: int):
    """n consecutive elements as SSA values, with one vector load."""
    t = ptr.dtype
    _refuse_packed(t, "a vector load")
    b = trace.builder()
    vt = f"vector<{n}x{mem_type(t)}>"
    addr = ptr.address(offset)
    v = b.op1("llvm.load", [addr], vt, f"alignment = {min(ptr.alignment_at(offset), n * elem_bytes(t))} : i64")
    out = []
    for i in range(n):
        e = b.op1("vector.extract", [v], mem_type(t), f"static_position = array<i64: {i}>")
        if t.is_boolean:
            e = b.op1("arith.trunci", [e], "i1")
        out.append(t.from_ir(e))
    return out


def store_vector(ptr: Pointer, offset, values):
    t = ptr.dtype
    _refuse_packed(t, "a vector store")
    b = trace.builder()
    n = len(values)
    mt = mem_type(t)
    xs = []
    for v in values:
        x = (v if isinstance(v, Numeric) and type(v) is t else t(v)).ir()
        if t.is_boolean:
            x = b.op1("arith.extui", [x], "i8")
        xs.append(x)
    vec = b.op1("vector.from_elements", xs, f"vector<{n}x{mt}>")
    addr = ptr.address(offset)
    b.op0("llvm.store", [vec, addr], f"alignment = {min(ptr.alignment_at(offset), n * elem_bytes(t))} : i64")


# --- vector accesses (CuTe DSL's Pointer and Array loads and stores of n elements) ----------------------------------

class HostAddress:
    """The address of a pointer or tensor argument in @cute.jit host code (Pointer.toint() there)."""

    __slots__ = ("pointer",)

    def __init__(self, pointer: Pointer):
        self.pointer = pointer

    def __ww_address_of__(self) -> Pointer:
        return self.pointer

    def __repr__(self):
        return f"HostAddress(of argument {self.pointer.host})"


def element_index(i, what: str = "a pointer is indexed", depth: int = 2):
    """i as an element offset (an int or a symbolic integer of the layout algebra): a Python or DSL integer."""
    if isinstance(i, bool) or isinstance(i, Numeric) and not type(i).is_integer or \
            not isinstance(i, (int, Numeric, SymInt)) and not hasattr(i, "__ww_int__"):
        raise DSLTypeError(f"{what} by an integer, got {type(i).__name__}", user_location(depth))
    return i.__ww_int__() if hasattr(i, "__ww_int__") else i


def _in_kernel(what: str):
    if not trace.in_kernel():
        raise DSLTypeError(f"{what} is a device access: make it inside a @cute.kernel function", user_location(4))


def _access_props(ptr: Pointer, offset, n: int, volatile=False, invariant=False, nontemporal=False) -> str:
    align = min(ptr.alignment_at(offset), n * elem_bytes(ptr.dtype))
    return (f"alignment = {align} : i64" + (", volatile_" if volatile else "") + (", invariant" if invariant else "")
            + (", nontemporal" if nontemporal else ""))


def _count(n, what):
    if isinstance(n, Numeric) and n.is_static:
        n = n.value
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise DSLValueError(f"{what}: the number of elements is a positive int known while tracing, got {n!r}",
                            user_location(4))
    return n


def load_vector_value(ptr: Pointer, offset, n, *, volatile=False, invariant=False, nontemporal=False, scalar=False):
    """n consecutive elements from ptr + offset as one Vector (one vector load), or the element alone (scalar)."""
    _in_kernel("a vector load")
    n = _count(n, "load")
    t = ptr.dtype
    _refuse_packed(t, "a vector load")
    b = trace.builder()
    mt = mem_type(t)
    vt = mt if scalar else f"vector<{n}x{mt}>"
    v = b.op1("llvm.load", [ptr.address(offset)], vt, _access_props(ptr, offset, n, volatile, invariant, nontemporal))
    if t.is_boolean:
        v = b.op1("arith.trunci", [v], "i1" if scalar else f"vector<{n}xi1>")
    if scalar:
        return t.from_ir(v)
    return Vector(ir_values.wrap(v, f"vector<{n}x{t.ir_type}>"), dtype=t)


def vector_of(value, t, n=None, what="store"):
    """value as a Vector of t: a Vector (converted lane by lane if of another type), or a number broadcast to n
    lanes."""
    if isinstance(value, (tuple, list)):  # a[0:4] = (1.0, 2.0, 3.0, 4.0)
        value = Vector.from_elements(value, t)
    if isinstance(value, Vector):
        if n is not None and value.numel != n:
            raise DSLValueError(f"{what}: a Vector of {value.numel} elements where {n} are expected", user_location(4))
        return value if value.dtype is t else value.to(t)
    if n is None:
        raise DSLTypeError(f"{what}: expected a Vector, got {type(value).__name__}", user_location(4))
    x = value if isinstance(value, Numeric) and type(value) is t else t(value)
    return Vector.from_elements([x] * n, t)


def _vector_id(vec: Vector, t):
    b = trace.builder()
    v = vec.ir_value().use()
    if t.is_boolean:
        v = b.op1("arith.extui", [v], f"vector<{vec.numel}xi8>")
    return v


def store_vector_value(ptr: Pointer, offset, value, n=None, *, volatile=False, nontemporal=False):
    """Stores a Vector (or a number broadcast to n lanes) at ptr + offset with one vector store."""
    _in_kernel("a vector store")
    t = ptr.dtype
    _refuse_packed(t, "a vector store")
    if not isinstance(value, Vector) and n is None:
        n = 1
    vec = vector_of(value, t, n)
    x = _vector_id(vec, t)
    trace.builder().op0("llvm.store", [x, ptr.address(offset)],
                        _access_props(ptr, offset, vec.numel, volatile, nontemporal=nontemporal))


def _mask_id(mask, n=None):
    """The i1 vector of a mask (a Boolean Vector)."""
    if not isinstance(mask, Vector):
        raise DSLTypeError(f"a mask is a Boolean Vector (or a register cutlass.Array of Booleans), got "
                           f"{type(mask).__name__}", user_location(4))
    if not mask.dtype.is_boolean:
        raise DSLTypeError(f"a mask holds Booleans, got a Vector of {mask.dtype.__name__}", user_location(4))
    if n is not None and mask.numel != n:
        raise DSLValueError(f"a mask of {mask.numel} lanes for {n} elements", user_location(4))
    return mask.numel, mask.ir_value().use()


def masked_load(ptr: Pointer, offset, mask, default=None, n=None):
    """A Vector of the mask's lanes from ptr + offset: lane i read where mask[i] holds, else `default`."""
    _in_kernel("a masked load")
    t = ptr.dtype
    _refuse_packed(t, "a masked load")
    if t.is_boolean:
        raise DSLTypeError("a masked load of Booleans: load bytes (Uint8) instead", user_location(3))
    n, m = _mask_id(mask, n)
    b = trace.builder()
    vt = f"vector<{n}x{t.ir_type}>"
    fill = vector_of(t.zero if default is None else default, t, n, "masked_load's default")
    align = min(ptr.alignment_at(offset), n * elem_bytes(t))
    v = b.op1("llvm.intr.masked.load", [ptr.address(offset), m, fill.ir_value().use()], vt,
              f"alignment = {align} : i32")
    return Vector(ir_values.wrap(v, vt), dtype=t)


def masked_store(ptr: Pointer, offset, value, mask):
    """Writes lane i of the Vector value to ptr + offset + i where mask[i] holds."""
    _in_kernel("a masked store")
    t = ptr.dtype
    _refuse_packed(t, "a masked store")
    if t.is_boolean:
        raise DSLTypeError("a masked store of Booleans: store bytes (Uint8) instead", user_location(3))
    vec = vector_of(value, t, None, "masked_store")
    n, m = _mask_id(mask, vec.numel)
    align = min(ptr.alignment_at(offset), n * elem_bytes(t))
    trace.builder().op0("llvm.intr.masked.store", [vec.ir_value().use(), ptr.address(offset), m],
                        f"alignment = {align} : i32")


# CuTe DSL numbers address spaces as NVVM does (cutlass.Pointer(v, space=3), cutlass.inttoptr(a, 6, ...)).
_NVVM_SPACES = {0: GENERIC, 1: GMEM, 3: SMEM, 5: RMEM, 6: "tmem", 7: "dsmem"}


def memspace_of(space, what: str = "space") -> str:
    """The memory space named by an AddressSpace member (or its name), or by NVVM's address space number."""
    if isinstance(space, enum.Enum):  # cutlass.AddressSpace: its name is the memory space
        space = space.name
    value = space
    if isinstance(value, int) and not isinstance(value, bool) and value in _NVVM_SPACES:
        return _NVVM_SPACES[value]
    if isinstance(value, str) and (value in _ADDRSPACE or value in _NVVM_SPACES.values()):
        return value
    raise DSLTypeError(f"{what} is a cutlass.AddressSpace (or NVVM's address space number {sorted(_NVVM_SPACES)}), "
                       f"got {space!r}", user_location(3))


def pointer_of(base, *, dtype=None, space=None, alignment=None, loc=None, ip=None) -> Pointer:
    """cutlass.Pointer(base, dtype=, space=): a typed pointer over an IR pointer value (`!llvm.ptr<N>`, its space
    read from its type unless given) or another pointer (recast to dtype, in space)."""
    if isinstance(base, Pointer):
        p = base.recast(dtype) if dtype is not None and dtype is not base.dtype else base
        if space is not None and memspace_of(space) != p.memspace:
            raise DSLValueError(f"cutlass.Pointer: the pointer is in {p.memspace} memory, not {memspace_of(space)}",
                                user_location(3))
        return p.align(alignment) if alignment else p
    text = base.type.text
    if not text.startswith("!llvm.ptr"):
        raise DSLTypeError(f"cutlass.Pointer wraps a pointer value (!llvm.ptr), got one of type {text}",
                           user_location(3))
    number = int(text[len("!llvm.ptr<"):-1]) if text != "!llvm.ptr" else 0
    ms = memspace_of(space) if space is not None else memspace_of(number)
    if dtype is None or not getattr(dtype, "ir_type", ""):
        raise DSLTypeError(f"cutlass.Pointer(value, dtype=...): the element type is a DSL numeric type, got "
                           f"{dtype!r}", user_location(3))
    v = base.use()
    if ptr_type(ms) != text:
        v = trace.builder().op1("llvm.addrspacecast", [v], ptr_type(ms))
    return Pointer(v, dtype, ms, alignment or elem_bytes(dtype))
