"""Execute probe of kind "ldmatrix": a warp-wide shared-memory -> register copy with a source and a destination
thread-value layout (ldmatrix, with or without .trans).

Shared memory is filled with distinct non-zero 16-bit words. Each thread passes the address of its source row
(src layout at value 0); afterwards every bit of every thread's registers must be the shared-memory bit the dst
layout names. Memory holds the tile in the order of the src layout, which requires each thread's source bits to
be contiguous from its address (as for ldmatrix rows); layouts are in layout_unit_bits (1: bits).
"""
from __future__ import annotations

import numpy as np

from warpweave import _core

from .. import gpu, numerics as nx
from ..kernels import ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, out_records
from . import FAIL, PASS, SKIP, block_for, execute_probe, kernel_name, layout_table, thread_ids


def prepare(backend, entry: dict, seed: int | None = None):
    name = getattr(backend, "name", backend)
    ops = entry.get("operands", [])
    dst = [o for o in ops if is_result(o) and o["role"] == "REGISTERS"]
    src = [o for o in ops if o["role"] == "SMEM_ADDRESS" and not is_result(o)]
    if len(dst) != 1 or len(src) != 1 or len(ops) != 2:
        return SKIP, "the ldmatrix probe takes one shared-memory source address and one register destination"
    dst, src = dst[0], src[0]
    if not dst.get("layout_tv") or not src.get("layout_tv"):
        return SKIP, "the ldmatrix probe needs the src and dst layouts"
    if int(src.get("count") or 1) != 1:
        return SKIP, "the ldmatrix probe takes one address per thread"
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem
    et = nx.element_type(dst["element_type"])
    unit = int(entry.get("layout_unit_bits") or et.bits)
    thr = thread_ids(entry)
    T = len(thr)
    block = block_for(thr)
    Ld = layout_table(dst["layout_tv"], T)          # (T, dst units per thread)
    Ls = layout_table(src["layout_tv"], T)          # (T, src units per thread)
    reg_bits = int(dst["values"]) * et.bits
    if Ld.shape[1] * unit != reg_bits:
        return FAIL, (f"the dst layout gives each thread {Ld.shape[1]} x {unit} bits, its registers hold {reg_bits}")
    contiguous = Ls == Ls[:, :1] + np.arange(Ls.shape[1])[None, :]
    if not contiguous.all():
        return SKIP, "the src layout's values are not contiguous from each thread's address"
    addr_bits = Ls[:, 0] * unit
    if (addr_bits % 128).any():
        return FAIL, "the src layout puts a thread's address off a 16-byte boundary"
    row_bytes = Ls.shape[1] * unit // 8
    tile_bytes = max(int(Ld.max() + 1) * unit // 8, int(addr_bits.max()) // 8 + row_bytes)
    words_per_thread = -(-tile_bytes // (4 * block))
    smem = words_per_thread * 4 * block
    if smem // 2 > 65535:
        return SKIP, "the tile is too large for distinct 16-bit words"

    rng = np.random.default_rng(seed)
    mem16 = (rng.permutation(65535)[: smem // 2] + 1).astype(np.uint16)
    mem = mem16.view(np.uint8)
    in_rec, out_rec = Record(), Record()
    in_rec.add(src["name"] + "@off", "i32", 1)
    out_rec.add(dst["name"], "i32" if (reg_bits % 32 == 0) else "i16", reg_bits // (32 if reg_bits % 32 == 0 else 16))
    recs, data, out_size = host_buffers(1, block, in_rec, out_rec, data_bytes=smem)
    f = in_rec.fields[src["name"] + "@off"]
    recs[0, thr, f.offset:f.offset + 4] = (addr_bits // 8).astype("<u4").view(np.uint8).reshape(T, 4)
    data[0, :smem] = mem

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, block, in_rec, out_rec, data_bytes=smem, smem_bytes=smem)
    for j in range(words_per_thread):
        off = k.mul(k.add(k.tid, k.i32(j * block)), k.i32(4))
        v = k.load(k.gep_value(k.data_ptr(), off), "i32")
        k.store(v, k.smem_at_value(off))
    k.barrier()
    res = k.emit(name, entry, attrs)
    vals = res[dst["name"]]
    # The values come back unpacked (e.g. two b16 per register); stored in order they rebuild the registers.
    for i, v in enumerate(vals):
        k.store(v, k.gep(k._out, out_rec.fields[dst["name"]].offset + i * et.bytes))
    k.end()

    mem_bits = np.unpackbits(mem, bitorder="little")
    exp_bits = np.zeros((T, reg_bits), dtype=np.uint8)
    for j in range(Ld.shape[1]):
        for r in range(unit):
            exp_bits[:, j * unit + r] = mem_bits[Ld[:, j] * unit + r]

    def check(out: np.ndarray):
        got_raw = out_rec.get(out_records(out, 1, block, out_rec), dst["name"])[0, thr, : reg_bits // 8]
        got_bits = np.unpackbits(np.ascontiguousarray(got_raw), axis=1, bitorder="little")
        if np.array_equal(got_bits, exp_bits):
            return PASS, f"every bit of the {T} threads' registers is the shared-memory bit the dst layout names"
        # Name the first wrong 16-bit word by where its value sits in shared memory.
        got16 = np.ascontiguousarray(got_raw).view(np.uint16)
        exp16 = np.packbits(exp_bits, axis=1, bitorder="little").view(np.uint16)
        where = {int(w): i for i, w in enumerate(mem16)}
        ts, ws = np.nonzero(got16 != exp16)
        notes = []
        for t, w in list(zip(ts, ws))[:3]:
            g, e = int(got16[t, w]), int(exp16[t, w])
            notes.append(f"thread {int(thr[t])} bits {16 * w}..{16 * w + 15}: got the word at smem byte "
                         f"{2 * where[g] if g in where else '?'}, expected the one at byte {2 * where.get(e, -1)}")
        return FAIL, f"{len(ts)} of {got16.size} 16-bit words differ; " + "; ".join(notes)

    return gpu.Probe(str(b), kname, 1, block, in_image(recs, data), out_size, check,
                     in_rec=in_rec, out_rec=out_rec)


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
