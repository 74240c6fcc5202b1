"""warpweave.utils.distributed: what kernels of several GPUs use to exchange data and flags through memory that
every GPU maps (symmetric memory: a peer's buffer, or the multicast address of NVLink SHARP), with CuTe DSL's
names.

- multimem_ld_reduce(ptr, dtype=, num_elements=): the sum over every GPU of the multicast address ptr of its
  num_elements values of dtype there (1, 2 or 4 32-bit words: f32, or pairs of f16/bf16 reduced in f32), as the
  words' bits (Int32 values); multimem_st(ptr, *words)
  stores such words at a multicast address (every GPU's memory); multimem_red_add1(ptr) adds 1 to a multicast
  flag in every GPU's memory. multimem_ld_reduce_4xf32 / multimem_st_4xb32 are the four-word forms.
- atomicAdd(ptr, val): adds val to a 32-bit integer and returns the value it held (CUDA's atomicAdd).
- red_add1(ptr): adds 1 to a flag (a peer's or this GPU's) without a result.
- spin_lock_atom_cas_{acquire,relaxed}_wait(ptr, expected_val=, reset_val=): waits until the flag at ptr holds
  expected_val, and resets it to reset_val in the same atomic compare-and-swap; spin_lock_ld_lt_relaxed_wait waits
  while the flag is below expected_val.

Each takes order= ("relaxed", or "release" for the writes, "acquire" for the reads) and scope= ("cta", "cluster",
"gpu", "sys"): the multicast accesses default to relaxed at system scope, the others as the caller asks.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

# DSL element type -> multimem's PTX type of one 32-bit word of it
_WORD_TYPES = {cutlass.Float32: "f32", cutlass.Float16: "f16x2", cutlass.BFloat16: "bf16x2", cutlass.Int32: "s32",
               cutlass.Uint32: "u32"}
_SCOPES = ("cta", "cluster", "gpu", "sys")


def _multicast_address(ptr, what: str):
    """The global pointer ptr. Its alignment (4 bytes a word) is the caller's promise, not checked: the addresses
    such kernels compute (a thread's slice of a tile at a dynamic coordinate of a dynamic layout) are aligned by
    construction, which tracing cannot prove; a misaligned one faults when the kernel runs."""
    p = ext.address_of(ptr, f"{what}: ptr")
    if p.memspace != "gmem":
        raise ext.user_error(f"{what}: a multicast address is in global memory, got a pointer to {p.memspace}",
                             ext.DSLTypeError)
    return p


def _word_type(dtype, what: str) -> str:
    t = _WORD_TYPES.get(dtype)
    if t is None:
        raise ext.user_error(f"{what}: multimem reduces {', '.join(d.__name__ for d in _WORD_TYPES)}, got "
                             f"{getattr(dtype, '__name__', dtype)!r}", ext.DSLTypeError)
    return t


def _order(order, what, allowed, default):
    return ext.qualifier(order if order is not None else default, f"{what}: order", allowed)


def _scope(scope, what, default):
    return ext.qualifier(scope if scope is not None else default, f"{what}: scope", _SCOPES)


def multimem_ld_reduce(ptr, *, dtype, num_elements, order=None, scope=None, loc=None, ip=None):
    """The words of the sum over every GPU of num_elements values of dtype at the multicast address ptr."""
    what = "utils.distributed.multimem_ld_reduce"
    ptx_t = _word_type(dtype, what)
    n = ext.static_int(num_elements, f"{what}: num_elements")
    bits = n * dtype.width
    if bits not in (32, 64, 128) or (ptx_t in ("s32", "u32") and bits != 32):
        raise ext.user_error(f"{what}: {n} values of {dtype.__name__} are {bits} bits; multimem reads 1, 2 or 4 "
                             "32-bit words (integers: one)")
    words = bits // 32
    p = _multicast_address(ptr, what)
    b = ext.builder()
    backend, entry = ext.select_instruction("distributed.multimem_ld_reduce", {"type": ptx_t, "words": str(words)},
                                            {"addr"})
    addr = b.op1("llvm.ptrtoint", [p.address(0)], "i64")
    out = ext.emit_instruction(b, backend, entry, {"addr": [addr]},
                               {"sem": _order(order, what, ("relaxed", "acquire"), "relaxed"),
                                "scope": _scope(scope, what, "sys")})
    return tuple(cutlass.Int32.from_ir(r) for r in out["d"])


def _word(b, v, what):
    if isinstance(v, cutlass.Float32):
        return b.op1("llvm.bitcast", [v.ir()], "i32")
    if isinstance(v, (cutlass.Int32, cutlass.Uint32)):
        return v.ir()
    if isinstance(v, int) and not isinstance(v, bool):
        return cutlass.Int32(v).ir()
    if isinstance(v, ext.ir.Value) and str(v.type) in ("i32", "f32"):   # a word an IR op (inline PTX) made
        return v.use() if str(v.type) == "i32" else b.op1("llvm.bitcast", [v.use()], "i32")
    raise ext.user_error(f"{what}: each value is a 32-bit word (Float32, Int32 or Uint32, as multimem_ld_reduce "
                         f"returns them, or an i32/f32 IR value), got {v!r}", ext.DSLTypeError)


def multimem_st(ptr, *values, order=None, scope=None, loc=None, ip=None):
    """Stores the 32-bit words `values` (1, 2 or 4) at the multicast address ptr, in every GPU's memory."""
    what = "utils.distributed.multimem_st"
    if len(values) not in (1, 2, 4):
        raise ext.user_error(f"{what}: stores 1, 2 or 4 words, got {len(values)}")
    p = _multicast_address(ptr, what)
    ptx_t = _word_type(p.dtype, what) if p.dtype.width >= 16 else None
    if ptx_t is None:
        raise ext.user_error(f"{what}: the pointer's elements are {p.dtype.__name__}; multimem stores words of "
                             f"{', '.join(d.__name__ for d in _WORD_TYPES)}", ext.DSLTypeError)
    if ptx_t in ("s32", "u32"):
        ptx_t = "f32" if len(values) > 1 else ptx_t   # the same bits: PTX's vector stores take floating words
    b = ext.builder()
    backend, entry = ext.select_instruction("distributed.multimem_st", {"type": ptx_t, "words": str(len(values))},
                                            {"addr", "value"})
    addr = b.op1("llvm.ptrtoint", [p.address(0)], "i64")
    ext.emit_instruction(b, backend, entry, {"addr": [addr], "value": [_word(b, v, what) for v in values]},
                         {"sem": _order(order, what, ("relaxed", "release"), "relaxed"),
                          "scope": _scope(scope, what, "sys")})


def multimem_ld_reduce_4xf32(ptr, *, order=None, scope=None, loc=None, ip=None):
    """The sums over every GPU of the 4 f32 at the multicast address ptr (16-byte aligned), as Float32 values."""
    words = multimem_ld_reduce(ptr, dtype=cutlass.Float32, num_elements=4, order=order, scope=scope)
    b = ext.builder()
    return tuple(cutlass.Float32.from_ir(b.op1("llvm.bitcast", [w.ir()], "f32")) for w in words)


def multimem_st_4xb32(ptr, x, y, z, w, *, order=None, scope=None, loc=None, ip=None):
    """Stores 4 words at the multicast address ptr (16-byte aligned), in every GPU's memory."""
    multimem_st(ptr, x, y, z, w, order=order, scope=scope)


def multimem_red_add1(lock_ptr, *, order=None, scope=None, loc=None, ip=None):
    """Adds 1 to the 32-bit flag at the multicast address lock_ptr in every GPU's memory, without a result."""
    what = "utils.distributed.multimem_red_add1"
    p = _multicast_address(lock_ptr, what)
    if p.dtype.width != 32 or not p.dtype.is_integer:
        raise ext.user_error(f"{what}: the flag is a 32-bit integer, the pointer is to {p.dtype.__name__}",
                             ext.DSLTypeError)
    b = ext.builder()
    backend, entry = ext.select_instruction("distributed.multimem_red", {}, {"addr", "value"})
    addr = b.op1("llvm.ptrtoint", [p.address(0)], "i64")
    ext.emit_instruction(b, backend, entry, {"addr": [addr], "value": [cutlass.Int32(1).ir()]},
                         {"sem": _order(order, what, ("relaxed", "release"), "relaxed"),
                          "scope": _scope(scope, what, "sys")})


def atomicAdd(dst_ptr, val, *, loc=None, ip=None):
    """*dst_ptr += val for the 32-bit integer at dst_ptr (global or shared memory); the value it held before. A
    relaxed atomic of the whole GPU, as CUDA's atomicAdd."""
    what = "utils.distributed.atomicAdd"
    p = ext.address_of(dst_ptr, f"{what}: dst_ptr")
    if p.dtype.width != 32 or not p.dtype.is_integer:
        raise ext.user_error(f"{what}: adds to a 32-bit integer, the pointer is to {p.dtype.__name__}",
                             ext.DSLTypeError)
    return cute.arch.atomic_add(p, val, sem="relaxed", scope="gpu")


def red_add1(lock_ptr, *, order=None, scope=None, loc=None, ip=None):
    """Adds 1 to the 32-bit flag at lock_ptr (this GPU's memory or a peer's), without a result."""
    what = "utils.distributed.red_add1"
    p = ext.address_of(lock_ptr, f"{what}: lock_ptr")
    cute.arch.red(p, cutlass.Uint32(1), op="add", dtype="u32",
                  sem=_order(order, what, ("relaxed", "release"), "relaxed"), scope=_scope(scope, what, "gpu"))


@cute.jit
def _cas_wait(lock_ptr, expected_val, reset_val, sem: cutlass.Constexpr, scope: cutlass.Constexpr):
    while cute.arch.atomic_cas(lock_ptr, expected_val, reset_val, sem=sem, scope=scope) != expected_val:
        pass


@cute.jit
def _below_wait(lock_ptr, expected_val, scope: cutlass.Constexpr):
    while cute.arch.load(lock_ptr, lock_ptr.dtype, sem="relaxed", scope=scope) < expected_val:
        pass


def _flag(lock_ptr, what):
    p = ext.address_of(lock_ptr, f"{what}: lock_ptr")
    if p.dtype.width != 32 or not p.dtype.is_integer:
        raise ext.user_error(f"{what}: the flag is a 32-bit integer, the pointer is to {p.dtype.__name__}",
                             ext.DSLTypeError)
    return p


def spin_lock_atom_cas_acquire_wait(lock_ptr, *, expected_val, reset_val, scope=None, loc=None, ip=None):
    """Waits until the flag at lock_ptr holds expected_val and sets it to reset_val (one acquiring
    compare-and-swap): what the other GPUs wrote before raising the flag is then visible."""
    what = "utils.distributed.spin_lock_atom_cas_acquire_wait"
    p = _flag(lock_ptr, what)
    _cas_wait(p, p.dtype(expected_val), p.dtype(reset_val), "acquire", _scope(scope, what, "gpu"))


def spin_lock_atom_cas_relaxed_wait(lock_ptr, *, expected_val, reset_val, scope=None, loc=None, ip=None):
    """spin_lock_atom_cas_acquire_wait with a relaxed compare-and-swap (the caller orders memory itself)."""
    what = "utils.distributed.spin_lock_atom_cas_relaxed_wait"
    p = _flag(lock_ptr, what)
    _cas_wait(p, p.dtype(expected_val), p.dtype(reset_val), "relaxed", _scope(scope, what, "gpu"))


def spin_lock_ld_lt_relaxed_wait(lock_ptr, *, expected_val, scope=None, loc=None, ip=None):
    """Waits while the flag at lock_ptr (read relaxed) is below expected_val."""
    what = "utils.distributed.spin_lock_ld_lt_relaxed_wait"
    p = _flag(lock_ptr, what)
    _below_wait(p, p.dtype(expected_val), _scope(scope, what, "gpu"))
