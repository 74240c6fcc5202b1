"""Tensors: an iterator (a pointer into global, shared or register memory, or a coordinate) and a layout.

Indexing with a full coordinate reads or writes one element; a coordinate holding None slices (CuTe's slice: the
None modes stay, the pointer moves to the rest). Offsets are integers of the layout algebra, static or symbolic,
and become IR only at a memory access, where their known divisibility gives the access its alignment.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from .. import _core
from . import trace
from .errors import DSLError, DSLTypeError, DSLValueError, user_location
from .numeric import (PACKED_TYPES, Uint8 as _Uint8, Boolean, FLOAT8_TYPES, Int32, Int64, IRVal, Numeric, SymInt,
                      as_numeric, cast, dtype as
                      dtype_of)

Layout = _core.Layout
ComposedLayout = _core.ComposedLayout

GMEM, SMEM, RMEM, GENERIC = "gmem", "smem", "rmem", "generic"


class DSLIndexError(DSLError, IndexError):
    """A static index outside a tensor whose extent is known while tracing."""
_ADDRSPACE = {GMEM: 1, SMEM: 3, RMEM: 0, GENERIC: 0}


def register_memory_space(name: str, address_space: int) -> None:
    """A backend's memory space (warpweave.ext.register_memory_space), e.g. tensor memory."""
    known = _ADDRSPACE.get(name)
    if known is not None and known != address_space:
        raise ValueError(f"memory space {name!r} is already address space {known}")
    _ADDRSPACE[name] = int(address_space)


def ptr_type(memspace: str) -> str:
    a = _ADDRSPACE.get(memspace)
    if a is None:
        raise DSLValueError(f"no loaded backend registers the memory space {memspace!r} (known: "
                            f"{', '.join(sorted(_ADDRSPACE))})", user_location(3))
    return "!llvm.ptr" if a == 0 else f"!llvm.ptr<{a}>"


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


class Pointer:
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
        f = {k: getattr(self, k) for k in self.__slots__}
        f.update(kw)
        return Pointer(f["base"], f["dtype"], f["memspace"], f["base_align"], f["offset"], f["host"], f["wide"],
                       f["assumed"], f["swizzle"])

    def with_base(self, base):
        return self._copy(base=base, host=None)

    def load(self, *, loc=None, ip=None):
        """The element the pointer points to (CuTe DSL's Pointer.load: `(ptr + i).load()`)."""
        return load_scalar(self, 0)

    def store(self, value, *, loc=None, ip=None):
        """Writes value (converted to the pointer's element type) where the pointer points."""
        store_scalar(self, 0, value)

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
    def ptr(self):
        """The pointer itself (CuTe DSL code reads a shared-storage scalar's address as `storage.field.ptr`)."""
        return self

    @property
    def llvm_ptr(self):
        """The pointer itself (CuTe DSL code passes `ptr.llvm_ptr` to cute.arch's atomics)."""
        return self

    @property
    def memspace_name(self):
        return self.memspace

    @property
    def alignment(self) -> int:
        return self.alignment_at(0)

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
        and the loop would carry an index per access. Without `inbounds` a GEP is plain 64-bit arithmetic, so LLVM
        may reassociate the two."""
        if self.base is None:
            raise DSLTypeError("this tensor lives on the host side of a @cute.jit function: pass it to a kernel to "
                               "access its elements", user_location(1))
        if is_packed(self.dtype):
            total = self.offset + offset
            odd = total % 2 if isinstance(total, int) else (0 if total.divisibility % 2 == 0 else 1)
            if odd:
                raise DSLValueError(f"the address of element {total} of a packed {self.dtype.__name__} buffer is "
                                    "inside a byte: start accesses at an even element", user_location(3))
            return self._copy(dtype=_Uint8, offset=0).address(total // 2)
        if self._split(offset):
            return self._gep(self._gep(self.base, self.offset), offset)
        return self._gep(self.base, self.offset + offset)

    def _split(self, offset) -> bool:
        """Whether address(offset) indexes by the pointer's offset and by `offset` in two GEPs (the pointer's
        offset is dynamic and `offset` is not zero); otherwise by their sum, in one."""
        return not isinstance(self.offset, int) and not (isinstance(offset, int) and offset == 0)

    def _gep(self, base, total):
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
        return f"ptr<{self.dtype.__name__}, {self.memspace}, align {self.alignment_at(0)}>"


class CoordIterator:
    """The iterator of an identity tensor: elements are coordinates (base + layout(c))."""

    __slots__ = ("base",)

    def __init__(self, base):
        self.base = base  # a coordinate tuple (ints or SymInts), or 0

    def __add__(self, off):
        return CoordIterator(_core_add(self.base, off))


def _core_add(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        a = a if isinstance(a, tuple) else ()
        b = b if isinstance(b, tuple) else ()
        n = max(len(a), len(b))
        return tuple(_core_add(a[i] if i < len(a) else 0, b[i] if i < len(b) else 0) for i in range(n))
    return a + b


def _int_of(x):
    if isinstance(x, Numeric):
        if not x.is_integer:
            raise DSLTypeError(f"a coordinate must be an integer, got {type(x).__name__}", user_location(2))
        return x.__ww_int__()
    if hasattr(x, "__ww_int__"):
        return x.__ww_int__()
    return x


def _norm_coord(c):
    """A coordinate with DSL integers replaced by their algebra values."""
    if isinstance(c, tuple):
        return tuple(_norm_coord(x) for x in c)
    if c is None:
        return None
    return _int_of(c)


def _has_none(c) -> bool:
    return c is None or (isinstance(c, tuple) and any(_has_none(x) for x in c))


def _zero_nones(c):
    if isinstance(c, tuple):
        return tuple(_zero_nones(x) for x in c)
    return 0 if c is None else c


def _lift_slice(c, t, out: list):
    if isinstance(c, tuple):
        if not isinstance(t, tuple) or len(c) != len(t):
            raise DSLValueError(f"the coordinate {c} does not match the shape {t}", user_location(3))
        for ci, ti in zip(c, t):
            _lift_slice(ci, ti, out)
    elif c is None:
        out.append(t)


def slice_tuple(coord, t):
    """CuTe's slice: the parts of t under the None leaves of coord, one level of nesting removed."""
    if coord is None:
        return t
    if not isinstance(coord, tuple):
        return ()
    out: list = []
    _lift_slice(coord, t, out)
    return tuple(out)


def slice_layout(coord, layout):
    if isinstance(layout, ComposedLayout):
        raise DSLTypeError("slicing a swizzled layout: slice the tensor, or the layout's outer part",
                           user_location(2))
    return _core.make_layout(slice_tuple(coord, layout.shape), slice_tuple(coord, layout.stride))


def swizzle_span(inner) -> int:
    """The period of a swizzle: adding a multiple of it commutes with the swizzle, so such offsets can move from
    inside a composed layout to the pointer."""
    if isinstance(inner, _core.Swizzle):
        return 1 << (inner.num_base + inner.num_bits + abs(inner.num_shift))
    return 0


def view(tensor, outer_offset, outer_layout):
    """`tensor` moved by outer_offset (in units of its layout's codomain; for a composed layout, of the outer
    layout's) and given outer_layout. A swizzled tensor keeps what the swizzle must see inside its composed
    offset and moves the rest, a multiple of the swizzle's span, into the pointer."""
    L = tensor.layout
    if isinstance(L, ComposedLayout):
        total = L.offset + outer_offset
        span = swizzle_span(L.inner)
        d, r = _core.split_divisible(total, span) if span else (0, total)
        return Tensor(tensor.iterator + d, _core.ComposedLayout(L.inner, r, outer_layout), tensor.element_type)
    return Tensor(tensor.iterator + outer_offset, outer_layout, tensor.element_type)


def outer_of(layout):
    return layout.outer if isinstance(layout, ComposedLayout) else layout


class Tensor:
    """A CuTe tensor: iterator and layout."""

    def __init__(self, iterator, layout, dtype=None):
        if not isinstance(layout, (Layout, ComposedLayout)):
            raise DSLTypeError(f"make_tensor: expected a Layout, got {type(layout).__name__}", user_location(2))
        self.iterator = iterator
        self.layout = layout
        self._dtype = dtype if dtype is not None else getattr(iterator, "dtype", None)

    # --- properties -------------------------------------------------------------------------------------------
    @property
    def element_type(self):
        return self._dtype

    @property
    def shape(self):
        return self.layout.shape

    @property
    def stride(self):
        if isinstance(self.layout, ComposedLayout):
            raise DSLTypeError("a swizzled tensor has no single stride", user_location(2))
        return self.layout.stride

    @property
    def memspace(self):
        return self.iterator.memspace if isinstance(self.iterator, Pointer) else "coord"

    @property
    def is_coordinate_tensor(self) -> bool:
        return isinstance(self.iterator, CoordIterator)

    @property
    def type(self) -> str:
        if self.is_coordinate_tensor:
            return f"coord_tensor<{self.layout}>"
        p = self.iterator
        return f"tensor<{self._dtype.__name__}, {p.memspace}, align {p.alignment_at(0)}, {self.layout}>"

    def __repr__(self):
        return self.type

    __str__ = __repr__

    def _ww_with_layout(self, layout):
        return Tensor(self.iterator, layout, self._dtype)

    # --- indexing ---------------------------------------------------------------------------------------------
    def _offset(self, coord):
        off = self.layout(coord)
        if isinstance(off, int) and isinstance(self.iterator, Pointer) and self.iterator.memspace == RMEM:
            self._check_static_index(coord, off)
        return off

    def _check_static_index(self, coord, off):
        """A register tensor is a fixed array: a static index outside it would be an out-of-bounds store or load
        (undefined behaviour in the kernel), so it is refused while tracing."""
        n = _core.product(self.shape)
        cos = outer_of(self.layout).cosize()
        bad = isinstance(coord, int) and isinstance(n, int) and not 0 <= coord < n
        bad = bad or (isinstance(cos, int) and not 0 <= off < max(cos, 1))
        if bad:
            raise DSLIndexError(f"index {coord} is out of range for the register tensor of shape {self.shape} "
                                f"({n} elements, layout {self.layout})", user_location(3))

    def __getitem__(self, coord):
        coord = _norm_coord(coord)
        if _has_none(coord):
            outer = outer_of(self.layout)
            return view(self, outer(_zero_nones(coord)), slice_layout(coord, outer))
        offset = self._offset(coord)
        if self.is_coordinate_tensor:
            return _coord_value(_core_add(self.iterator.base, offset))
        return load_scalar(self.iterator, offset)

    def __setitem__(self, coord, value):
        coord = _norm_coord(coord)
        if self.is_coordinate_tensor:
            raise DSLTypeError("a coordinate (identity) tensor is read-only", user_location(2))
        if _has_none(coord):
            self[coord].store(value)
            return
        store_scalar(self.iterator, self._offset(coord), value)

    def __iter__(self):
        raise DSLTypeError("iterate a tensor with an index range: for i in range(cute.size(t)): t[i]", user_location(2))

    def __bool__(self):
        # Python's default would make every tensor true, so `if t:` would silently take its branch.
        raise DSLTypeError("a Tensor has no truth value: test an element (if t[i]: ...), or its size "
                           "(cute.size(t) > 0), or `t is not None`", user_location(2))

    # --- whole-tensor values ----------------------------------------------------------------------------------
    def load(self):
        """All elements as a TensorSSA (in the order of the tensor's coordinates)."""
        n = _static_size(self, "load")
        if self.is_coordinate_tensor:
            return [self[i] for i in range(n)]
        return TensorSSA([self[i] for i in range(n)], self.shape, self._dtype)

    def store(self, value):
        n = _static_size(self, "store")
        if isinstance(value, TensorSSA):
            if len(value.values) != n:
                raise DSLValueError(f"store: {len(value.values)} values into a tensor of {n} elements",
                                    user_location(2))
            for i, v in enumerate(value.values):
                self[i] = v
        else:
            for i in range(n):
                self[i] = value

    def fill(self, value):
        self.store(value)


def _static_size(t, op):
    n = _core.product(t.shape)
    if not isinstance(n, int):
        raise DSLTypeError(f"{op}: needs a tensor of static size, got shape {t.shape}", user_location(3))
    return n


def _coord_value(c):
    if isinstance(c, tuple):
        return tuple(_coord_value(x) for x in c)
    if isinstance(c, int):
        return c
    return Int32._wrap(c) if c.bits <= 32 else Int64._wrap(c)


# --- element access -----------------------------------------------------------------------------------------------

def _nibble(ptr: Pointer, offset):
    """(the byte's address, the shift of the element's nibble as an i8 value) of a packed element."""
    b = trace.builder()
    total = ptr.offset + offset
    byte_ptr = ptr._copy(dtype=_Uint8, offset=0)
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
        from .host_values import load
        return load(ptr, offset)
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
        from .host_values import store
        store(ptr, offset, value)
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


# --- construction -------------------------------------------------------------------------------------------------

def make_tensor(iterator, layout):
    """A tensor over a pointer (or a coordinate iterator) with a layout (or a shape, made column-major)."""
    if not isinstance(layout, (Layout, ComposedLayout)):
        layout = _core.make_layout(layout)
    if isinstance(iterator, Pointer) and iterator.swizzle is not None:
        return _swizzled_tensor(iterator, layout)
    return Tensor(iterator, layout)


def _swizzled_tensor(ptr, layout):
    """make_tensor over a swizzled pointer: element c lives at the swizzle of ptr's element address + layout(c).
    The allocation's base is aligned to the swizzle's span, so the swizzle of the address is the base plus the
    swizzle of the offset from it: the tensor is the base with Swizzle o offset o layout (the offset's multiples
    of the span move to the pointer, as tensor views keep them)."""
    sw = ptr.swizzle
    if isinstance(layout, ComposedLayout):
        raise DSLTypeError(f"make_tensor: the pointer is swizzled ({sw}) and the layout {layout} is composed too; "
                           "give one swizzle", user_location(3))
    span = swizzle_span(sw)
    span_bytes = span * storage_bits(ptr.dtype) // 8
    if ptr.base_align % span_bytes:
        raise DSLValueError(f"make_tensor: a pointer swizzled by {sw} must lie in a buffer aligned to the swizzle's "
                            f"{span_bytes} bytes (its known alignment is {ptr.base_align} bytes)", user_location(3))
    d, r = _core.split_divisible(ptr.offset, span)
    base = ptr._copy(offset=0, swizzle=None) + d
    return Tensor(base, _core.ComposedLayout(sw, r, layout), ptr.dtype)


def make_identity_tensor(shape):
    """A tensor whose element at coordinate c is c (the global coordinates of tiles, for predication)."""
    shape = _norm_coord(shape)
    return Tensor(CoordIterator(0), _core.make_identity_layout(shape), None)


def _alloca(dtype, n: int, align: int) -> int:
    b = trace.builder()
    with trace.at_entry():
        # One alloca of an array type (not n of the element type): LLVM's SROA splits only single allocations, and
        # it must, so that fragments live in registers.
        one = b.constant_int(1, "i32")
        return b.op1("llvm.alloca", [one], "!llvm.ptr",
                     f"alignment = {align} : i64, elem_type = !llvm.array<{n} x {mem_type(dtype)}>")


_REGISTER_FILE_BYTES = 255 * 4


def make_rmem_tensor(layout_or_shape, dtype):
    """A register tensor: a layout (or a shape, column-major) over registers of `dtype`."""
    dtype = dtype_of(dtype)
    layout = layout_or_shape if isinstance(layout_or_shape, (Layout, ComposedLayout)) \
        else _core.make_layout(_norm_coord(layout_or_shape))
    cos = layout.cosize()
    if not isinstance(cos, int):
        raise DSLTypeError(f"a register tensor needs a static layout, got {layout}", user_location(2))
    if not trace.in_kernel():  # the host side of a @cute.jit function: an array of each call (host_values.py)
        from .host_values import make_local_tensor
        return make_local_tensor(layout, dtype)
    # A thread has at most 255 32-bit registers (1020 bytes): a larger register tensor can never be held there.
    # It is a mistake (a shape meant for shared memory, an extent too many), and a huge one stalls LLVM's
    # promotion of the array to registers (2^30 values never finished). A smaller one may still spill, as in CUDA.
    nbytes = (cos * storage_bits(dtype) + 7) // 8
    if nbytes > _REGISTER_FILE_BYTES:
        raise DSLValueError(f"make_rmem_tensor: a register tensor of {cos} {getattr(dtype, '__name__', dtype)} "
                            f"values ({nbytes} bytes) is more than a thread's 255 32-bit registers hold "
                            f"({_REGISTER_FILE_BYTES} bytes); partition it among the threads, or put it in shared "
                            "memory", user_location(2))
    # 16-byte alignment lets copies into and out of registers use vector accesses.
    align = 16
    n = (cos + 1) // 2 if is_packed(dtype) else cos
    base = _alloca(dtype, max(n, 1), align)
    return Tensor(Pointer(base, dtype, RMEM, align), layout, dtype)


make_fragment = make_rmem_tensor


def _fragment_layout(layout):
    """CuTe's make_fragment_like: mode 0 compact column-major (keeping its stride-0 leaves at 0, as an atom's
    broadcast values need no registers), the other modes compact in the order of their strides."""
    layout = outer_of(layout)
    shape = layout.shape
    if not isinstance(shape, tuple) or len(shape) <= 1 or not isinstance(_core.product(shape), int):
        return _core.make_layout(shape)
    mode0 = _core.get(layout, [0])
    first = _core.make_layout(mode0.shape, _compact_keeping_zeros(mode0.shape, mode0.stride))
    rest_shape, rest_stride = tuple(shape[1:]), tuple(layout.stride[1:])
    rest = _core.make_ordered_layout(rest_shape, _order_of(rest_stride))
    return _core.tiled_product(first, rest)


def _compact_keeping_zeros(shape, stride):
    run = [1]

    def walk(sh, st):
        if isinstance(sh, tuple):
            return tuple(walk(a, b) for a, b in zip(sh, st))
        if isinstance(st, int) and st == 0:
            return 0
        d = run[0]
        run[0] *= sh
        return d

    return walk(shape, stride)


def _order_of(stride):
    """The rank of each leaf of a stride among all leaves (stable), as CuTe's compact_order uses it."""
    leaves = []

    def walk(s):
        if isinstance(s, tuple):
            for x in s:
                walk(x)
        else:
            leaves.append(abs(s) if isinstance(s, int) else 1 << 40)

    walk(stride)
    ranks = sorted(range(len(leaves)), key=lambda i: (leaves[i], i))
    order = [0] * len(leaves)
    for r, i in enumerate(ranks):
        order[i] = r
    it = iter(order)

    def build(s):
        return tuple(build(x) for x in s) if isinstance(s, tuple) else next(it)

    return build(stride)


def make_fragment_like(src, dtype=None):
    """A register tensor shaped like `src` (a tensor or layout), ordered for vector copies from it."""
    if isinstance(src, Tensor):
        layout = src.layout
        dtype = dtype or src.element_type
        if dtype is None:
            raise DSLTypeError("make_fragment_like of a coordinate tensor needs dtype=", user_location(2))
    elif isinstance(src, (Layout, ComposedLayout)):
        layout = src
        if dtype is None:
            raise DSLTypeError("make_fragment_like of a layout needs dtype=", user_location(2))
    else:
        raise DSLTypeError(f"make_fragment_like expects a Tensor or Layout, got {type(src).__name__}", user_location(2))
    return make_rmem_tensor(_fragment_layout(layout), dtype)


# --- TensorSSA ----------------------------------------------------------------------------------------------------

class TensorSSA:
    """The values of a tensor, held in registers: elementwise arithmetic, conversion, reduction."""

    def __init__(self, values, shape, dtype):
        self.values = list(values)
        self.shape = shape
        self.dtype = dtype

    @property
    def element_type(self):
        return self.dtype

    def __len__(self):
        return len(self.values)

    def __getitem__(self, i):
        """The value at a linear index or a coordinate; a coordinate with None modes is the TensorSSA of the
        values it leaves (as slicing a tensor of this shape gives)."""
        if not isinstance(i, tuple):
            return self.values[i]
        coord = _norm_coord(i)
        compact = _core.make_layout(self.shape)  # values are in the colexicographic order of the coordinates
        if not _has_none(coord):
            return self.values[compact(coord)]
        base, sub = compact(_zero_nones(coord)), slice_layout(coord, compact)
        n = _core.product(sub.shape)
        return TensorSSA([self.values[base + sub(k)] for k in range(n)], sub.shape, self.dtype)

    def broadcast_to(self, shape):
        """The values repeated along the modes of extent 1 to `shape` (of the same rank; other extents equal)."""
        shape = _norm_coord(shape)
        src = self.shape if isinstance(self.shape, tuple) else (self.shape,)
        dst = shape if isinstance(shape, tuple) else (shape,)
        if len(src) != len(dst) or any(isinstance(x, tuple) for x in src + dst) or \
                any(a != b and a != 1 for a, b in zip(src, dst)):
            raise DSLValueError(f"broadcast_to: a TensorSSA of shape {self.shape} does not broadcast to {shape} "
                                "(same rank, flat modes, each extent equal or 1)", user_location(2))
        out = []
        for k in range(_core.product(dst)):
            off, stride, rest = 0, 1, k
            for a, b in zip(src, dst):
                c, rest = rest % b, rest // b
                off += (c if a != 1 else 0) * stride
                stride *= a
            out.append(self.values[off])
        return TensorSSA(out, shape, self.dtype)

    def _map2(self, other, fn):
        if isinstance(other, TensorSSA) and other.shape != self.shape:
            common = _broadcast_shape(self.shape, other.shape)
            if common is not None:
                return self.broadcast_to(common)._map2(other.broadcast_to(common), fn)
        if isinstance(other, TensorSSA):
            if len(other.values) != len(self.values):
                raise DSLValueError(f"elementwise operation on {len(self.values)} and {len(other.values)} values",
                                    user_location(3))
            vals = [fn(a, b) for a, b in zip(self.values, other.values)]
        else:
            vals = [fn(a, other) for a in self.values]
        t = type(vals[0]) if vals and isinstance(vals[0], Numeric) else self.dtype
        return TensorSSA(vals, self.shape, t)

    def _rmap2(self, other, fn):
        vals = [fn(other, a) for a in self.values]
        t = type(vals[0]) if vals and isinstance(vals[0], Numeric) else self.dtype
        return TensorSSA(vals, self.shape, t)

    def __add__(self, o): return self._map2(o, lambda a, b: a + b)
    def __radd__(self, o): return self._rmap2(o, lambda a, b: a + b)
    def __sub__(self, o): return self._map2(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._rmap2(o, lambda a, b: a - b)
    def __mul__(self, o): return self._map2(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._rmap2(o, lambda a, b: a * b)
    def __truediv__(self, o): return self._map2(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._rmap2(o, lambda a, b: a / b)
    def __floordiv__(self, o): return self._map2(o, lambda a, b: a // b)
    def __mod__(self, o): return self._map2(o, lambda a, b: a % b)
    def __and__(self, o): return self._map2(o, lambda a, b: a & b)
    def __or__(self, o): return self._map2(o, lambda a, b: a | b)
    def __xor__(self, o): return self._map2(o, lambda a, b: a ^ b)
    def __lt__(self, o): return self._map2(o, lambda a, b: a < b)
    def __le__(self, o): return self._map2(o, lambda a, b: a <= b)
    def __gt__(self, o): return self._map2(o, lambda a, b: a > b)
    def __ge__(self, o): return self._map2(o, lambda a, b: a >= b)
    def __eq__(self, o): return self._map2(o, lambda a, b: a == b)
    def __ne__(self, o): return self._map2(o, lambda a, b: a != b)
    def __neg__(self): return TensorSSA([-a for a in self.values], self.shape, self.dtype)
    def __abs__(self): return TensorSSA([abs(a) for a in self.values], self.shape, self.dtype)

    __hash__ = object.__hash__

    def to(self, dtype):
        dtype = dtype_of(dtype)
        return TensorSSA([dtype(a) for a in self.values], self.shape, dtype)

    def reduce(self, op, init_val=None, reduction_profile=0):
        """Reduces with op (a cute.ReductionOp, "add"/"mul"/"max"/"min", or a function of two values) over every
        mode (reduction_profile=0: a number) or over the modes the profile marks 1 (a TensorSSA of the modes it
        marks None); init_val joins each result once."""
        from .reduction import reduce
        return reduce(self, op, init_val, reduction_profile)

    def __repr__(self):
        return f"TensorSSA<{self.dtype.__name__}, {self.shape}>"


def _broadcast_shape(a, b):
    """The shape two TensorSSA shapes broadcast to (flat, same rank, extents equal or 1), or None."""
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    if len(a) != len(b) or any(isinstance(x, tuple) or not isinstance(x, int) for x in a + b):
        return None
    if any(x != y and 1 not in (x, y) for x, y in zip(a, b)):
        return None
    return tuple(max(x, y) for x, y in zip(a, b))


def full(shape, fill_value, dtype):
    """A TensorSSA of `shape` with every value fill_value."""
    dtype = dtype_of(dtype)
    n = _core.product(shape)
    return TensorSSA([dtype(fill_value)] * n, shape, dtype)


def full_like(t, fill_value, dtype=None):
    return full(t.shape, fill_value, dtype or t.element_type)


def zeros_like(t, dtype=None):
    return full_like(t, 0, dtype)


# --- predicates ---------------------------------------------------------------------------------------------------

def elem_less(lhs, rhs):
    """True where every coordinate component of lhs is less than the one of rhs (bounds checks)."""
    if isinstance(lhs, tuple) != isinstance(rhs, tuple):
        if isinstance(rhs, tuple) and len(rhs) == 1:
            return elem_less(lhs, rhs[0])
        raise DSLValueError(f"elem_less: coordinate {lhs} and shape {rhs} differ in rank", user_location(2))
    if isinstance(lhs, tuple):
        if len(lhs) != len(rhs):
            raise DSLValueError(f"elem_less: coordinate {lhs} and shape {rhs} differ in rank", user_location(2))
        r = Boolean(True)
        for a, c in zip(lhs, rhs):
            r = r & elem_less(a, c)
        return r
    a = as_numeric(lhs) if not isinstance(lhs, Numeric) else lhs
    a, rhs = _lane_shared_bound(a, rhs)
    r = a < rhs
    return r if isinstance(r, Numeric) else Boolean(bool(r))


def _lane_shared_bound(a, rhs):
    """(a, rhs) or an equivalent (a // g, rhs // g) that the lanes of one vector access share: when rhs is a
    multiple of g and a = d + r with d a multiple of g and 0 <= r < g static, a < rhs exactly when d/g < rhs/g,
    the same comparison for the g consecutive coordinates of a vector. The copy's per-lane predicates are then
    one value, and the compiler keeps only its vector path (no scalar fallback for a partial vector)."""
    x = a._v if isinstance(a, Numeric) else a
    bound = rhs._v if isinstance(rhs, Numeric) else rhs
    if not isinstance(x, SymInt) or not isinstance(bound, (SymInt, int)) or isinstance(bound, bool):
        return a, rhs
    div = bound.divisibility if isinstance(bound, SymInt) else (abs(bound) & -abs(bound) if bound else 0)
    g = 16
    while g > 1:
        if div and div % g == 0:
            d, r = _core.split_divisible(x, g)
            if isinstance(r, int) and 0 <= r < g:
                return type(a)._wrap(d // g), bound // g
        g //= 2
    return a, rhs


def _dice(proj, x):
    """The modes of x where proj is not None (CuTe's dice with projection steps); modes of x past the end of proj
    are kept (a (m, n, k, l) tile coordinate diced by an (M, N, K) projection keeps l)."""
    if not isinstance(x, tuple):
        return x
    return tuple(v for v, p in zip(x, proj) if p is not None) + tuple(x[len(proj):])


def local_tile(input, tiler, coord, proj=None):
    """The tile of `input` at `coord` in the grid of `tiler`-sized tiles; with proj, only the modes of tiler and
    coord where proj is not None are used (e.g. proj=(1, None, 1) takes M and K of an (M, N, K) tiler)."""
    if proj is not None:
        tiler, coord = _dice(proj, tiler), _dice(proj, coord)
    r0 = len(tiler) if isinstance(tiler, tuple) else 1
    rank = _core.tuple_rank(input.shape)
    coord = tuple(coord) if isinstance(coord, tuple) else (coord,)
    rest = coord + (None,) * (rank - len(coord))
    z = _core.zipped_divide(input.layout, tiler) if isinstance(input.layout, Layout) else None
    if z is None:
        raise DSLTypeError("local_tile of a swizzled tensor: tile its outer layout", user_location(2))
    tile_sel = (None,) * r0 if r0 > 1 else None
    return Tensor(input.iterator, z, input.element_type)[(tile_sel, rest if len(rest) > 1 else rest[0])]


# --- views --------------------------------------------------------------------------------------------------------

def domain_offset(coord, tensor):
    """`tensor` with its origin moved to `coord` (a coordinate of its layout, possibly negative): element c of the
    result is element coord + c of the input."""
    coord = _norm_coord(coord)
    if tensor.is_coordinate_tensor:
        return Tensor(tensor.iterator + tensor.layout(coord), tensor.layout, None)
    outer = outer_of(tensor.layout)
    return view(tensor, outer(coord), outer)


def recast_ptr(ptr, swizzle_=None, dtype=None):
    """The pointer as one to `dtype` values; with swizzle_ (a Swizzle, over `dtype` elements' addresses), a
    swizzled shared-memory pointer: make_tensor(recast_ptr(p, sw, dtype=T), layout) is the tensor sw o layout
    from p."""
    if not isinstance(ptr, Pointer):
        raise DSLTypeError(f"recast_ptr expects a pointer, got {type(ptr).__name__}", user_location(2))
    if swizzle_ is not None and not isinstance(swizzle_, _core.Swizzle):
        raise DSLTypeError(f"recast_ptr: swizzle_ must be a Swizzle (e.g. a composed layout's .inner), got "
                           f"{type(swizzle_).__name__}", user_location(2))
    if swizzle_ is not None and ptr.swizzle is not None:
        raise DSLTypeError(f"recast_ptr: the pointer is already swizzled ({ptr.swizzle})", user_location(2))
    if swizzle_ is not None and ptr.memspace != SMEM:
        raise DSLValueError(f"recast_ptr: only shared-memory pointers are swizzled, this one is {ptr.memspace}",
                            user_location(2))
    out = ptr.recast(dtype_of(dtype)) if dtype is not None else ptr
    return out._copy(swizzle=swizzle_) if swizzle_ is not None else out


def size_in_bytes(dtype, layout) -> int:
    """The bytes a tensor of `dtype` over `layout` occupies (its cosize); 0 for no layout (None), as a program
    sizing an optional buffer passes it."""
    dtype = dtype_of(dtype)
    if layout is None:
        return 0
    cos = layout.cosize()
    bits = storage_bits(dtype)
    return (cos * bits + 7) // 8 if isinstance(cos, int) else cos * bits // 8


# --- CuTe DSL's tensor-level helpers ------------------------------------------------------------------------------

def make_rmem_tensor_like(src, dtype=None):
    """A register tensor shaped like `src` (a Tensor, a Layout, or a TensorSSA), of src's element type or dtype."""
    if isinstance(src, TensorSSA):
        return make_rmem_tensor(src.shape, dtype_of(dtype) if dtype is not None else src.dtype)
    return make_fragment_like(src, dtype_of(dtype) if dtype is not None else None)


def where(cond, x, y):
    """Elementwise cond ? x : y; cond a TensorSSA of Booleans (or one Boolean), x and y TensorSSA values or numbers
    (broadcast)."""
    from .numeric import select

    sizes = {len(v.values) for v in (cond, x, y) if isinstance(v, TensorSSA)}
    if len(sizes) > 1:
        raise DSLValueError(f"where: TensorSSA operands of different sizes {sorted(sizes)}", user_location(2))
    if not sizes:
        return select(cond, x, y)
    n = sizes.pop()
    shape = next(v.shape for v in (cond, x, y) if isinstance(v, TensorSSA))

    def at(v, i):
        return v.values[i] if isinstance(v, TensorSSA) else v

    vals = []
    for i in range(n):
        c = at(cond, i)
        if not isinstance(c, Numeric):
            c = Boolean(bool(c))
        elif not c.is_boolean:
            c = c != 0
        a, b = at(x, i), at(y, i)
        if not isinstance(a, Numeric) and isinstance(b, Numeric):
            a = type(b)(a)
        elif not isinstance(b, Numeric) and isinstance(a, Numeric):
            b = type(a)(b)
        vals.append(select(c, a, b))
    dt = type(vals[0]) if vals and isinstance(vals[0], Numeric) else None
    return TensorSSA(vals, shape, dt)


def _recast_layout(layout, old_bits: int, new_bits: int):
    """CuTe's recast_layout for a static or dynamic non-swizzled layout: the unit-stride mode's extent and every
    other stride scaled by old_bits / new_bits."""
    def walk(sh, st, up):
        if isinstance(sh, tuple):
            parts = [walk(a, b, up) for a, b in zip(sh, st)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        if isinstance(st, int) and st == 0:
            return sh, 0
        if up > 1:   # fewer, wider elements
            if isinstance(st, int) and st == 1:
                if isinstance(sh, int) and sh % up:
                    raise DSLValueError(f"recast_tensor: the unit-stride extent {sh} is not a multiple of {up}",
                                        user_location(5))
                return sh // up, 1
            if isinstance(st, int) and st % up:
                raise DSLValueError(f"recast_tensor: the stride {st} is not a multiple of {up}", user_location(5))
            return sh, st // up
        down = -up
        if isinstance(st, int) and st == 1:
            return sh * down, 1
        return sh, st * down

    if old_bits == new_bits:
        return layout
    up = new_bits // old_bits if new_bits > old_bits else -(old_bits // new_bits)
    if (new_bits > old_bits and new_bits % old_bits) or (old_bits > new_bits and old_bits % new_bits):
        raise DSLValueError(f"recast_tensor: {old_bits}-bit and {new_bits}-bit elements do not divide each other",
                            user_location(3))
    shape, stride = walk(layout.shape, layout.stride, up)
    return _core.make_layout(shape, stride)


def recast_tensor(src, dtype, swizzle_=None):
    """The same memory viewed as `dtype` elements (e.g. four Float8 values as one Int32): the pointer and the
    layout are recast."""
    dtype = dtype_of(dtype)
    if swizzle_ is not None:
        raise DSLTypeError("recast_tensor(swizzle_=...): compose the swizzle with the layout instead",
                           user_location(2))
    if not isinstance(src, Tensor) or not isinstance(src.iterator, Pointer):
        raise DSLTypeError(f"recast_tensor expects a tensor in memory, got {type(src).__name__}", user_location(2))
    if isinstance(src.layout, ComposedLayout):
        raise DSLTypeError("recast_tensor of a swizzled tensor: recast its outer layout's tensor", user_location(2))
    old, new = src.element_type, dtype
    layout = _recast_layout(src.layout, storage_bits(old), storage_bits(new))
    return Tensor(src.iterator.recast(new), layout, new)


def _flat_coord(tile, index):
    """The coordinate of `index` in the thread layout `tile`, one integer per top mode (CuTe's get_flat_coord)."""
    index = _int_of(index)
    modes = [_core.get(tile, [i]) for i in range(_core.tuple_rank(tile.shape))] if isinstance(tile.shape, tuple) \
        else [tile]
    out = []
    for m in modes:
        leaves = []

        def walk(sh, st):
            if isinstance(sh, tuple):
                for a, b in zip(sh, st):
                    walk(a, b)
            else:
                leaves.append((sh, st))

        walk(m.shape, m.stride)
        c, scale = 0, 1
        for sh, st in leaves:
            if isinstance(st, int) and st == 0:
                part = 0
            else:
                part = (index // st) % sh
            c = c + part * scale
            scale = scale * sh
        out.append(c)
    return tuple(out)


def local_partition(target, tiler, index, proj=None):
    """The elements of `target` that thread `index` of the thread layout `tiler` owns: target is divided into
    tiles of tiler's shape and the thread takes its position in every tile (CuTe's local_partition)."""
    if not isinstance(tiler, (Layout, ComposedLayout)):
        tiler = _core.make_layout(_norm_coord(tiler))
    if proj is not None:
        keep = [i for i, p in enumerate(proj) if p is not None]
        tiler = _core.make_layout(tuple(tiler.shape[i] for i in keep), tuple(tiler.stride[i] for i in keep))
    if isinstance(target.layout, ComposedLayout):
        raise DSLTypeError("local_partition of a swizzled tensor: partition its outer layout", user_location(2))
    tile_shape = tuple(_core.product(s) for s in tiler.shape) if isinstance(tiler.shape, tuple) \
        else _core.product(tiler.shape)
    coord = _flat_coord(tiler, index)
    z = _core.zipped_divide(target.layout, tile_shape)
    rank = _core.tuple_rank(target.shape)
    rest = (None,) * rank if rank > 1 else None
    inner = coord if len(coord) > 1 else coord[0]
    return Tensor(target.iterator, z, target.element_type)[(inner, rest)]


def print_tensor(tensor, *, verbose: bool = False):
    """Prints a tensor's type and values from the device (each thread that calls it): one line per row of the
    first two modes, later modes one after another."""
    from .arch import printf

    if not trace.in_kernel() and isinstance(tensor, Tensor):  # host side: read at each call (host_actions.py)
        from .host_actions import host_print_tensor

        return host_print_tensor(tensor, verbose)
    if isinstance(tensor, TensorSSA):
        vals, shape, what = tensor.values, tensor.shape, repr(tensor)
    elif isinstance(tensor, Tensor):
        n = _static_size(tensor, "print_tensor")
        vals, shape, what = [tensor[i] for i in range(n)], tensor.shape, tensor.type
    else:
        raise DSLTypeError(f"print_tensor expects a Tensor or a TensorSSA, got {type(tensor).__name__}",
                           user_location(2))
    printf(what.replace("{", "(").replace("}", ")").replace("%", "%%") + " data=", end="\n")
    flat = shape if isinstance(shape, tuple) else (shape,)
    dims = [_core.product(s) for s in flat]
    rows = dims[0] if len(dims) > 1 else 1
    cols = max(1, len(vals) // max(rows, 1)) if len(dims) > 1 else len(vals)
    for r in range(rows):
        row = [vals[r + rows * c] if len(dims) > 1 else vals[c] for c in range(cols)]
        for start in range(0, len(row), 16):   # vprintf takes a bounded argument buffer
            chunk = row[start:start + 16]
            lead = "  [" if start == 0 else "   "
            tail = "]" if start + 16 >= len(row) else ""
            printf(lead + ", ".join("{}" for _ in chunk) + tail, *chunk, end="\n")
    del verbose
