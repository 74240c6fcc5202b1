"""cute.arch names of this backend's instructions whose CuTe DSL signature adapts onto a manifest entry: lop3
(a three-input bitwise function by its truth table), red (a reduction into memory without a result) and prmt (a
byte permute of a register pair)."""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

from . import primitives as _primitives

_LOP3_TYPES = (cutlass.Int32, cutlass.Uint32)


def _lop3_operand(x, what):
    if isinstance(x, bool) or not isinstance(x, (int, cutlass.Numeric)):
        raise ext.user_error(f"cute.arch.lop3: {what} must be an Int32 or Uint32, got {type(x).__name__}",
                             ext.DSLTypeError)
    if isinstance(x, int):
        return cutlass.Int32(x)
    if type(x) not in _LOP3_TYPES:
        raise ext.user_error(f"cute.arch.lop3: {what} must be an Int32 or Uint32, got {type(x).__name__}",
                             ext.DSLTypeError)
    return x


def lop3_static(a: int, b: int, c: int, lut: int) -> int:
    """lop3 on known 32-bit words: bit i of the result is lut's bit (a_i << 2 | b_i << 1 | c_i)."""
    out = 0
    for i in range(32):
        sel = ((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1)
        out |= ((lut >> sel) & 1) << i
    return out


def lop3(a, b, c, lut, *, loc=None, ip=None):
    """Any bitwise function of a, b and c (Int32 or Uint32), given by its truth table lut: the function's value on
    a = 0xF0, b = 0xCC, c = 0xAA (so a & b | c is lut 0xF0 & 0xCC | 0xAA). The result has a's type."""
    a, b, c = _lop3_operand(a, "a"), _lop3_operand(b, "b"), _lop3_operand(c, "c")
    lut = ext.static_int(lut, "cute.arch.lop3: lut")
    if not 0 <= lut <= 0xFF:
        raise ext.user_error(f"cute.arch.lop3: lut is an 8-bit truth table (0 to 0xFF), got {lut:#x}")
    t = type(a)
    if a.is_static and b.is_static and c.is_static:
        word = lop3_static(a.value & 0xFFFFFFFF, b.value & 0xFFFFFFFF, c.value & 0xFFFFFFFF, lut)
        return t(word - (1 << 32) if t is cutlass.Int32 and word >= 1 << 31 else word)
    bld = ext.builder()
    backend, entry = ext.select_instruction("primitives.lop3", {}, {"a", "b", "c"})
    out = ext.emit_instruction(bld, backend, entry, {"a": [a.ir()], "b": [b.ir()], "c": [c.ir()]}, {"lut": lut})
    return t.from_ir(out["d"][0])


# CuTe DSL's dtype= as a DSL type: the instruction type it names (integers signed unless Uint*)
_RED_DTYPES = {cutlass.Float16: "f16", cutlass.BFloat16: "bf16", cutlass.Float32: "f32", cutlass.Float64: "f64",
               cutlass.Int32: "s32", cutlass.Uint32: "u32", cutlass.Int64: "s64", cutlass.Uint64: "u64"}


def _red_dtype(dtype) -> str:
    if isinstance(dtype, str):
        return dtype.lower()
    if dtype in _RED_DTYPES:
        return _RED_DTYPES[dtype]
    raise ext.user_error(f"cute.arch.red: dtype is a type name ('f32', 's32', ...) or one of "
                         f"{', '.join(t.__name__ for t in _RED_DTYPES)}, got {dtype!r}", ext.DSLTypeError)


def _vector_elements(val):
    """The elements of a vector value (a TensorSSA or an IR vector) as DSL numbers, or None for a scalar."""
    if hasattr(val, "values") and hasattr(val, "dtype") and hasattr(val, "ir_value"):   # TensorSSA
        return [val.dtype(v) for v in val.values]
    if isinstance(val, ext.ir.Value) and ext.ir.VectorType.isinstance(val.type):
        vt = ext.ir.VectorType(val.type)
        if len(vt.shape) != 1 or not ext.ir.F32Type.isinstance(vt.element_type):
            raise ext.user_error(f"cute.arch.red: a vector value is a 1-D vector of f32, got {val.type}",
                                 ext.DSLTypeError)
        b = ext.builder()
        return [cutlass.Float32.from_ir(b.op1("vector.extract", [val.use()], "f32",
                                              f"static_position = array<i64: {i}>")) for i in range(vt.shape[0])]
    return None


def red(ptr, val, *, op, dtype, sem=None, scope=None, loc=None, ip=None):
    """Combines val into memory at ptr (global or shared) atomically, without a result: op add, min, max, umin,
    umax (unsigned min and max), and, or, xor over dtype; sem relaxed (default) or release, scope gpu (default),
    cta, cluster or sys. A vector val (2 or 4 f32, as TensorSSA or IR vector) adds to consecutive words of global
    memory in one instruction, each word atomically."""
    o = ext.qualifier(op, "cute.arch.red: op", ("add", "min", "max", "umin", "umax", "and", "or", "xor"))
    d = _red_dtype(dtype)
    if o in ("umin", "umax"):
        if d not in ("u32", "u64"):
            raise ext.user_error(f"cute.arch.red: {o} compares unsigned integers (dtype u32 or u64), got {d}")
        o = o[1:]
    elems = _vector_elements(val)
    if elems is None or len(elems) == 1:
        if elems is not None:
            val = elems[0]
        elif isinstance(val, ext.ir.Value):
            val = _primitives.RED_TYPES.get(d, (0, cutlass.Int32))[1].from_ir(val.use())
        return _primitives.red(o, d, ptr, val, sem, scope)
    if o != "add" or d != "f32" or len(elems) not in (2, 4):
        raise ext.user_error(f"cute.arch.red: a vector value adds 2 or 4 f32 (op='add', dtype='f32'), got op={o!r}, "
                             f"dtype={d!r} over {len(elems)} values")
    s = ext.qualifier(sem if sem is not None else "relaxed", "cute.arch.red: sem", ("relaxed", "release"))
    sc = ext.qualifier(scope if scope is not None else "gpu", "cute.arch.red: scope", ("cta", "cluster", "gpu", "sys"))
    p = ext.address_of(ptr, "cute.arch.red: ptr")
    if p.memspace != "gmem":
        raise ext.user_error(f"cute.arch.red: a vector value goes to global memory, got a pointer to {p.memspace}",
                             ext.DSLTypeError)
    b = ext.builder()
    backend, entry = ext.select_instruction("primitives.red_vector", {"width": str(len(elems))}, {"addr", "value"})
    addr = b.op1("llvm.ptrtoint", [p.address(0)], "i64")
    ext.emit_instruction(b, backend, entry, {"addr": [addr], "value": [cutlass.Float32(e).ir() for e in elems]},
                         {"sem": s, "scope": sc})


def prmt(src, src_reg_shifted, prmt_indices, *, loc=None, ip=None):
    """cute.arch.prmt: bytes of the pair (src_reg_shifted, src) picked by prmt_indices (the default mode's four
    selector nibbles), as primitives.prmt with src low and src_reg_shifted high."""
    return _primitives.prmt(src, prmt_indices, "default", hi=src_reg_shifted)


def cp_async_mbarrier_arrive_noinc(mbar_ptr, *, loc=None, ip=None):
    """cute.arch's name for the arrival on an mbarrier once this thread's asynchronous copies land, without
    counting itself as an expected arrival (a pipeline's producer commit)."""
    return _primitives.cp_async_mbarrier_arrive(mbar_ptr, noinc=True)


NAMES = {"lop3": lop3, "red": red, "prmt": prmt, "cp_async_mbarrier_arrive_noinc": cp_async_mbarrier_arrive_noinc}
