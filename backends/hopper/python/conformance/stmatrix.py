"""Execute probe of kind "hopper_stmatrix": stmatrix (sm_90), a warp-wide register -> shared-memory copy of
8x8 b16 matrices, with or without .trans.

The mirror image of the ldmatrix probe: every thread's registers hold distinct non-zero 16-bit words, each
thread passes the row address its dst layout names (value 0; lanes whose dst mode has stride 0 pass a row that
is ignored), and after the store every 16-bit word of the tile in shared memory must be the register word the
src layout puts there. Layouts are in layout_unit_bits (1: bits), like CuTe's SM90 STSM copy traits.
"""
from __future__ import annotations

import numpy as np

from warpweave import _core

from warpweave_conformance import gpu
from warpweave_conformance.kernels import ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, plan_inputs
from warpweave_conformance.probes import FAIL, PASS, SKIP, block_for, execute_probe, kernel_name, layout_table, thread_ids


def prepare(backend, entry: dict, seed: int | None = None):
    name = getattr(backend, "name", backend)
    ops = entry.get("operands", [])
    src = [o for o in ops if o["role"] == "REGISTERS" and not is_result(o)]
    dst = [o for o in ops if o["role"] == "SMEM_ADDRESS" and not is_result(o)]
    if len(src) != 1 or len(dst) != 1 or len(ops) != 2:
        return SKIP, "the stmatrix probe takes one register source and one shared-memory destination address"
    src, dst = src[0], dst[0]
    if src.get("element_type") != "b16" or int(entry.get("layout_unit_bits") or 0) != 1:
        return SKIP, "the stmatrix probe expects b16 registers and layouts in bits"
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem
    thr = thread_ids(entry)
    T = len(thr)
    block = block_for(thr)
    Ls = layout_table(src["layout_tv"], T)          # (T, register bits)
    Ld = layout_table(dst["layout_tv"], T)          # (T, bits of the row each thread addresses)
    words = int(src["values"])
    if Ls.shape[1] != 16 * words:
        return FAIL, f"the src layout gives each thread {Ls.shape[1]} bits, its registers hold {16 * words}"
    if not (Ls.reshape(T, words, 16) == Ls.reshape(T, words, 16)[:, :, :1] + np.arange(16)).all():
        return SKIP, "the src layout does not keep each 16-bit word contiguous"
    if (Ld[:, 0] % 128).any():
        return FAIL, "the dst layout puts a row address off a 16-byte boundary"
    tile_bits = int(max(Ls.max(), Ld.max())) + 1
    smem = -(-tile_bits // 8 // (4 * block)) * 4 * block

    rng = np.random.default_rng(seed)
    vals = (rng.permutation(65535)[: T * words] + 1).astype(np.uint16).reshape(T, words)
    expected = np.zeros(smem // 2, dtype=np.uint16)
    expected[Ls[:, ::16] // 16] = vals

    in_rec, out_rec = Record(), Record()
    plan_inputs(entry, in_rec)
    out_rec.add("mem", "i32", smem // 4 // block)
    recs, data, out_size = host_buffers(1, block, in_rec, out_rec)
    f = in_rec.fields[dst["name"] + "@off"]
    recs[0, thr, f.offset:f.offset + 4] = (Ld[:, 0] // 8).astype("<u4").view(np.uint8).reshape(T, 4)
    f = in_rec.fields[src["name"]]
    recs[0, thr, f.offset:f.offset + f.size] = vals.astype("<u2").view(np.uint8).reshape(T, 2 * words)

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, block, in_rec, out_rec, smem_bytes=smem)
    # Shared memory starts zeroed so that a word stmatrix did not write reads as 0, never as a valid word.
    per = smem // 4 // block
    for j in range(per):
        k.store(k.i32(0), k.smem_at_value(k.mul(k.add(k.tid, k.i32(j * block)), k.i32(4))))
    k.barrier()
    k.emit(name, entry, attrs)
    k.barrier()
    # Thread t copies words t, t + block, ... so the output holds shared memory in order.
    for j in range(per):
        off = k.mul(k.add(k.tid, k.i32(j * block)), k.i32(4))
        v = k.load(k.smem_at_value(off), "i32")
        dst_ptr = k.gep_value(k.args[1], k.add(k.mul(k.i32(j), k.i32(4)), k.mul(k.tid, k.i32(out_rec.size))))
        k.store(v, dst_ptr)
    k.end()

    def check(out: np.ndarray):
        raw = np.ascontiguousarray(np.asarray(out, dtype=np.uint8)[: block * out_rec.size]
                                   .reshape(block, out_rec.size)[:, : per * 4])
        got = np.ascontiguousarray(raw.view("<u4").reshape(block, per).T).reshape(-1).view("<u2")[: smem // 2]
        if np.array_equal(got, expected):
            return PASS, f"every 16-bit word of the {T} threads' registers landed where the src layout puts it"
        where = {int(v): (int(thr[t]), w) for t in range(T) for w, v in enumerate(vals[t])}
        bad = np.nonzero(got != expected)[0]
        notes = []
        for i in bad[:3]:
            g, e = int(got[i]), int(expected[i])
            notes.append(f"smem bytes {2 * i}..{2 * i + 1}: got {'word ' + str(where[g]) if g in where else g}, "
                         f"expected (thread, word) {where.get(e, e)}")
        return FAIL, f"{len(bad)} of {got.size} 16-bit words differ; " + "; ".join(notes)

    return gpu.Probe(str(b), kname, 1, block, in_image(recs, data), out_size, check)


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
