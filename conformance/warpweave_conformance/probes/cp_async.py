"""Execute probe of kind "cp_async": an asynchronous global -> shared copy by one thread (cp.async), with its
optional src_size operand (bytes read; the rest of the destination is zero-filled).

Each of 32 threads copies its own chunk: shared memory is poisoned first, then every thread issues the copy
with a src_size of the full size, 0, or something in between (varying per thread and case), commits, waits
(the backend's cp.async commit/wait primitives), and reads its chunk back. Expected: the first src_size bytes
are the source's, the rest zeros.
"""
from __future__ import annotations

import numpy as np

from warpweave import _core
from warpweave import cute

from .. import gpu
from ..kernels import ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, out_records
from . import FAIL, PASS, SKIP, execute_probe, kernel_name

THREADS = 32
CASES = 4
POISON_WORD = 0xA5A5A5A5


def _partner(backend, kind: str):
    """The backend's cp.async primitive of this kind (COMMIT / WAIT) that takes no register operand."""
    manifest = getattr(backend, "manifest", {}) or {}
    for p in manifest.get("primitives", []):
        text = (p.get("id", "") + " " + p.get("python_name", "") + " " + p.get("ptx_template", "")).lower()
        if p.get("kind") == kind and ("cp_async" in text or "cp.async" in text or "cpasync" in text) \
                and "bulk" not in text and not any(not is_result(o) for o in p.get("operands", [])):
            attrs, problem = default_attrs(p)
            if not problem:
                return p, attrs
    return None, None


def uses(backend) -> set:
    """The backend's primitives that every probe of this kind runs (named in the execute tier's report)."""
    return {p["id"] for p, _ in (_partner(backend, "COMMIT"), _partner(backend, "WAIT")) if p is not None}


def prepare(backend, entry: dict, seed: int | None = None):
    name = getattr(backend, "name", backend)
    ops = entry.get("operands", [])
    dst = [o for o in ops if o["role"] == "SMEM_ADDRESS"]
    src = [o for o in ops if o["role"] == "GMEM_ADDRESS"]
    size_ops = [o for o in ops if o["role"] == "SCALAR" and not is_result(o)]
    if len(dst) != 1 or len(src) != 1 or len(size_ops) > 1 or len(ops) != 2 + len(size_ops):
        return SKIP, "the cp_async probe takes a shared-memory destination, a global source and an optional src_size"
    dst, src = dst[0], src[0]
    if not dst.get("layout_tv"):
        return SKIP, "the cp_async probe needs the dst layout (the copy's size)"
    unit = int(entry.get("layout_unit_bits") or 8)
    bits = int(cute.size(cute.filter_zeros(cute.parse_layout(dst["layout_tv"])))) * unit
    if bits % 32:
        return SKIP, f"a copy of {bits} bits is not a whole number of 32-bit words"
    nbytes = bits // 8
    commit, commit_attrs = _partner(backend, "COMMIT")
    wait, wait_attrs = _partner(backend, "WAIT")
    if commit is None or wait is None:
        return SKIP, "the backend has no cp.async commit and wait primitives to complete the copy with"
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem

    rng = np.random.default_rng(seed)
    in_rec, out_rec = Record(), Record()
    in_rec.add(dst["name"] + "@off", "i32", 1)
    in_rec.add(src["name"] + "@off", "i64", 1)
    if size_ops:
        in_rec.add(size_ops[0]["name"], "i32", 1)
    out_rec.add("got", "i32", nbytes // 4)
    recs, data, out_size = host_buffers(CASES, THREADS, in_rec, out_rec, data_bytes=THREADS * nbytes)
    offsets = np.arange(THREADS, dtype=np.int64) * nbytes
    in_rec.put(recs, dst["name"] + "@off", offsets.astype("<u4").view(np.uint8).reshape(THREADS, 4))
    in_rec.put(recs, src["name"] + "@off", offsets.astype("<u8").view(np.uint8).reshape(THREADS, 8))
    sizes = np.full((CASES, THREADS), nbytes, dtype=np.int64)
    if size_ops:
        sizes = rng.integers(0, nbytes + 1, (CASES, THREADS))
        sizes[0] = nbytes
        sizes[1, ::2] = 0
        sizes[1, 1::2] = nbytes
        in_rec.put(recs, size_ops[0]["name"], sizes.astype("<u4").view(np.uint8).reshape(CASES, THREADS, 4))
    payload = rng.integers(1, 256, (CASES, THREADS * nbytes), dtype=np.uint8)
    data[:, : THREADS * nbytes] = payload

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, THREADS, in_rec, out_rec, data_bytes=THREADS * nbytes, smem_bytes=THREADS * nbytes,
                    smem_align=max(16, nbytes))
    base = k.mul(k.tid, k.i32(nbytes))
    poison = k.i32(POISON_WORD - (1 << 32))
    for w in range(nbytes // 4):
        k.store(poison, k.smem_at_value(k.add(base, k.i32(4 * w))))
    k.barrier()
    k.emit(name, entry, attrs)
    _ins_emit(k, name, commit, commit_attrs)
    _ins_emit(k, name, wait, wait_attrs)
    k.barrier()
    words = [k.load(k.smem_at_value(k.add(base, k.i32(4 * w))), "i32") for w in range(nbytes // 4)]
    k.write("got", words)
    k.end()

    expected = payload.reshape(CASES, THREADS, nbytes).copy()
    for c in range(CASES):
        for t in range(THREADS):
            expected[c, t, sizes[c, t]:] = 0

    def check(out: np.ndarray):
        got = out_rec.get(out_records(out, CASES, THREADS, out_rec), "got")[:, :, :nbytes]
        bad = got != expected
        if not bad.any():
            return PASS, (f"{CASES * THREADS} copies of {nbytes} bytes (src_size from 0 to {nbytes}) land whole and "
                          "zero-filled" if size_ops else f"{CASES * THREADS} copies of {nbytes} bytes land whole")
        c, t, byte = (int(x[0]) for x in np.nonzero(bad))
        g = got[c, t]
        state = "poison (never written)" if g[byte] == 0xA5 else "zero" if g[byte] == 0 else f"{int(g[byte]):#04x}"
        return FAIL, (f"{int(bad.any(axis=2).sum())} of {CASES * THREADS} copies differ; first: thread {t} case {c} "
                      f"src_size {int(sizes[c, t])}: byte {byte} is {state}, expected {int(expected[c, t, byte]):#04x}")

    return gpu.Probe(str(b), kname, CASES, THREADS, in_image(recs, data), out_size, check,
                     in_rec=in_rec, out_rec=out_rec)


def _ins_emit(k, backend_name, entry, attrs):
    from warpweave._dsl.atoms.instructions import emit_instruction
    emit_instruction(k.b, backend_name, entry, {}, attrs)


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
