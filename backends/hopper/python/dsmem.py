"""Distributed shared memory: another CTA's shared memory in the cluster, with CuTe DSL's names.

- cute.arch.smem.map_dsmem_ptr(ptr, cta_rank): the pointer to the same offset as `ptr` (this CTA's shared memory)
  in the shared memory of the cluster's CTA of rank cta_rank (arch.mapa), in the "dsmem" memory space (LLVM's
  shared::cluster address space). Pointer arithmetic on it stays in that CTA's window.
- cpasync.CopyDsmemStoreOp: cute.copy(atom, registers, remote tensor, mbar_ptr=remote barrier) stores each value
  with st.async (the manifest's cpasync.dsmem_store_b32/b64) and completes its bytes on that mbarrier, which must be
  in the same CTA as the destination (map_dsmem_ptr of the barrier with the same rank): the receiving CTA waits on
  its barrier for the bytes its peers send.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

# LLVM NVPTX's shared::cluster address space: 32-bit addresses of any CTA's shared memory in the cluster.
DSMEM_ADDRESS_SPACE = 7


def _address32(ptr, what: str):
    """The 32-bit address (shared::cta or shared::cluster) of a shared-memory pointer."""
    if not (hasattr(ptr, "memspace") and ptr.memspace in ("smem", "dsmem")):
        raise ext.user_error(f"{what} is a shared-memory pointer (this CTA's, or map_dsmem_ptr's), got {ptr!r}",
                             ext.DSLTypeError)
    return ext.builder().op1("llvm.ptrtoint", [ptr.address(0)], "i32")


def map_dsmem_ptr(ptr, cta_rank, *, loc=None, ip=None):
    """`ptr` (this CTA's shared memory) in the shared memory of the cluster's CTA of rank cta_rank."""
    if hasattr(ptr, "iterator") and not hasattr(ptr, "memspace"):
        ptr = ptr.iterator
    if getattr(ptr, "memspace", None) != "smem":
        raise ext.user_error(f"map_dsmem_ptr: expected a pointer to this CTA's shared memory, got {ptr!r}",
                             ext.DSLTypeError)
    b = ext.builder()
    backend, entry = ext.select_instruction("arch.mapa", {}, {"addr", "cta_id"})
    local = ptr.address(0)
    out = ext.emit_instruction(b, backend, entry, {"addr": [b.op1("llvm.ptrtoint", [local], "i32")],
                                                   "cta_id": [cutlass.Int32(cta_rank).ir()]})
    remote = out["remote"][0]
    address = b.op1("llvm.inttoptr", [remote], f"!llvm.ptr<{DSMEM_ADDRESS_SPACE}>")
    return ext.make_pointer(address, ptr.dtype, "dsmem", ptr.alignment_at(0))


class CopyDsmemStoreOp:
    """Registers to another CTA's shared memory with st.async, completing on an mbarrier there."""

    def __repr__(self):
        return "cpasync.CopyDsmemStoreOp()"

    def __ww_make_copy_atom__(self, value_type, num_bits_per_copy=None):
        return DsmemStoreAtom(self, value_type, num_bits_per_copy)


class DsmemStoreAtom(cute.CopyAtom):
    """The copy atom of CopyDsmemStoreOp for values of value_type (32 or 64 bits each): one thread stores
    num_bits_per_copy / width of them (one by default), so that make_tiled_copy lays threads and values out over a
    tile as for any one-thread atom; each value is one st.async."""

    def __init__(self, op, value_type, num_bits_per_copy=None):
        if value_type.width not in (32, 64):
            raise ext.user_error(f"CopyDsmemStoreOp stores 32- or 64-bit values, not {value_type.__name__}",
                                 ext.DSLTypeError)
        super().__init__(op, value_type, num_bits_per_copy)

    def __repr__(self):
        return f"CopyAtom(cpasync.CopyDsmemStoreOp, {self.value_type.__name__})"

    def __ww_copy__(self, src, dst, *, pred=None, mbar_ptr=None, **kwargs):
        if kwargs:
            raise ext.user_error(f"cute.copy of CopyDsmemStoreOp got an unexpected keyword argument "
                                 f"{next(iter(kwargs))!r} (it takes mbar_ptr=)", ext.DSLTypeError)
        if pred is not None:
            raise ext.user_error("cute.copy of CopyDsmemStoreOp takes no pred=", ext.DSLTypeError)
        if mbar_ptr is None:
            raise ext.user_error("cute.copy of CopyDsmemStoreOp needs mbar_ptr= (the receiving CTA's mbarrier, "
                                 "map_dsmem_ptr of it)", ext.DSLTypeError)
        if getattr(dst, "memspace", None) != "dsmem":
            raise ext.user_error(f"cute.copy of CopyDsmemStoreOp: the destination is a tensor over a map_dsmem_ptr "
                                 f"pointer, got {dst!r}", ext.DSLTypeError)
        n, m = cute.size(src), cute.size(dst)
        if not isinstance(n, int) or n != m:
            raise ext.user_error(f"cute.copy of CopyDsmemStoreOp: the source has {n} elements and the destination "
                                 f"{m}", ext.DSLValueError)
        bits = self.value_type.width
        if src.element_type.width != bits or dst.element_type.width != bits:
            raise ext.user_error(f"cute.copy of CopyDsmemStoreOp: the atom stores {bits}-bit values, the tensors "
                                 f"hold {src.element_type.__name__} and {dst.element_type.__name__}",
                                 ext.DSLTypeError)
        b = ext.builder()
        backend, entry = ext.select_instruction(f"cpasync.dsmem_store_b{bits}", {}, {"dst", "value", "mbar"})
        mbar = _address32(mbar_ptr.iterator if hasattr(mbar_ptr, "iterator") else mbar_ptr, "mbar_ptr")
        word = f"i{bits}"
        for i in range(n):
            v = src[i].ir()
            if not src.element_type.is_integer:
                v = b.op1("llvm.bitcast", [v], word)
            addr = b.op1("llvm.ptrtoint", [dst.iterator.address(ext.full_layout(dst)(i))], "i32")
            ext.emit_instruction(b, backend, entry, {"dst": [addr], "value": [v], "mbar": [mbar]})


def _i32(v, what):
    if isinstance(v, bool) or not (isinstance(v, int) or isinstance(v, cutlass.Integer)):
        raise ext.user_error(f"store_async_dsmem: {what} is an integer (an i32), got {type(v).__name__}",
                             ext.DSLTypeError)
    return cutlass.Int32(v).ir()


def store_async_dsmem(smem_ptr, value, mbar_ptr, peer_cta_rank, *, loc=None, ip=None):
    """st.async of value (an i32, or a tuple of 2 or 4) to smem_ptr's offset in the shared memory of the cluster's
    CTA peer_cta_rank, completing its bytes on the mbarrier at mbar_ptr's offset in that CTA (both pointers are
    this CTA's and are mapped with mapa). smem_ptr must be aligned to the bytes stored. Two values go as one 8-byte
    store, four as two (the bytes and the transaction count are those of one 16-byte store)."""
    for p, what in ((smem_ptr, "smem_ptr"), (mbar_ptr, "mbar_ptr")):
        if not hasattr(p, "memspace") or not hasattr(p, "alignment_at"):
            raise ext.user_error(f"store_async_dsmem: {what} is a CuTe pointer, got {type(p).__name__}",
                                 ext.DSLTypeError)
        if p.memspace != "smem":
            raise ext.user_error(f"store_async_dsmem: {what} is a pointer to this CTA's shared memory, got one to "
                                 f"{p.memspace}", ext.DSLValueError)
    values = list(value) if isinstance(value, tuple) else [value]
    if len(values) not in (1, 2, 4):
        raise ext.user_error(f"store_async_dsmem: value is an i32 or a tuple of 2 or 4, got {len(values)} values",
                             ext.DSLValueError)
    words = [_i32(v, "each value") for v in values]
    nbytes = 4 * len(words)
    if smem_ptr.alignment_at(0) < nbytes:
        raise ext.user_error(f"store_async_dsmem: smem_ptr must be aligned to {nbytes} bytes (the bytes stored), its "
                             f"known alignment is {smem_ptr.alignment_at(0)}", ext.DSLValueError)
    dst = _address32(map_dsmem_ptr(smem_ptr, peer_cta_rank), "smem_ptr")
    mbar = _address32(map_dsmem_ptr(mbar_ptr, peer_cta_rank), "mbar_ptr")
    b = ext.builder()
    if len(words) == 1:
        backend, entry = ext.select_instruction("cpasync.dsmem_store_b32", {}, {"dst", "value", "mbar"})
        ext.emit_instruction(b, backend, entry, {"dst": [dst], "value": words, "mbar": [mbar]})
        return
    backend, entry = ext.select_instruction("cpasync.dsmem_store_b64", {}, {"dst", "value", "mbar"})
    for k in range(0, len(words), 2):
        lo = b.op1("llvm.zext", [words[k]], "i64")
        hi = b.op1("llvm.zext", [words[k + 1]], "i64")
        hi = b.op1("llvm.shl", [hi, cutlass.Int64(32).ir()], "i64")
        pair = b.op1("llvm.or", [lo, hi], "i64")   # the first value at the lower address (little endian)
        at = dst if k == 0 else b.op1("llvm.add", [dst, cutlass.Int32(4 * k).ir()], "i32")
        ext.emit_instruction(b, backend, entry, {"dst": [at], "value": [pair], "mbar": [mbar]})
