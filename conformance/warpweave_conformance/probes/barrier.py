"""Execute probe of kind "barrier": named CTA barriers (bar.sync / bar.arrive) with register id and count.

Four warps; each thread writes a random value to shared memory, meets the barrier, then reads the value another
warp wrote. bar.sync: every thread syncs, then reads its neighbour one warp further on. bar.arrive (kind
ARRIVE): warp 0 writes and arrives without waiting, warps 1-3 wait on the same barrier with the backend's
bar.sync and read what warp 0 wrote. A missing or broken barrier shows as stale reads (or as a hang, which the
runner turns into a failure); one that works cannot be told from luck by a single run, so several cases run
with fresh ids and values.
"""
from __future__ import annotations

import re

import numpy as np

from warpweave import _core

from .. import gpu
from ..kernels import ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, out_records
from . import FAIL, PASS, SKIP, execute_probe, kernel_name

THREADS = 128
CASES = 8


def _operands(entry):
    """(id operand, count operand or None) of a named barrier, from the PTX template's operand order
    (bar.sync a{, b}: a the barrier, b the thread count); None when the instruction is not one."""
    ops = entry.get("operands", [])
    if any(is_result(o) or o["role"] != "SCALAR" for o in ops) or not 1 <= len(ops) <= 2:
        return None
    m = re.search(r"\b(?:bar|barrier)(?:\.cta)?\.(?:sync|arrive)(?:\.aligned)?\s+([^;]+);", entry.get("ptx_template", ""))
    if not m:
        return None
    refs = []
    for tok in (t.strip() for t in m.group(1).split(",")):
        r = re.fullmatch(r"\$(\d+)", tok)
        if not r or int(r.group(1)) >= len(ops):
            return None
        refs.append(ops[int(r.group(1))])
    if len(refs) != len(ops):
        return None
    return refs[0], (refs[1] if len(refs) > 1 else None)


def _sync_partner(backend, with_count: bool):
    manifest = getattr(backend, "manifest", {}) or {}
    for p in manifest.get("primitives", []) + manifest.get("atoms", []):
        if p.get("kind") == "BARRIER" and p.get("conformance") == "barrier":
            ops = _operands(p)
            if ops and (ops[1] is not None) == with_count and not default_attrs(p)[1]:
                return p
    return None


def prepare(backend, entry: dict, seed: int | None = None):
    name = getattr(backend, "name", backend)
    ops = _operands(entry)
    if ops is None:
        return SKIP, "the barrier probe takes named barriers with scalar id (and count) operands"
    id_op, count_op = ops
    arrive = entry.get("kind") == "ARRIVE"
    partner = None
    if arrive:
        if count_op is None:
            return SKIP, "bar.arrive without a count cannot be paired"
        partner = _sync_partner(backend, True)
        if partner is None:
            return SKIP, "the backend has no bar.sync with id and count to pair bar.arrive with"
    elif entry.get("kind") != "BARRIER":
        return SKIP, f"the barrier probe knows kinds BARRIER and ARRIVE, not {entry.get('kind')}"
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem

    rng = np.random.default_rng(seed)
    in_rec, out_rec = Record(), Record()
    in_rec.add("val", "i32", 1)
    in_rec.add("nb", "i32", 1)
    in_rec.add(id_op["name"], "i32", 1)
    if count_op is not None:
        in_rec.add(count_op["name"], "i32", 1)
    out_rec.add("got", "i32", 1)
    recs, data, out_size = host_buffers(CASES, THREADS, in_rec, out_rec)
    vals = rng.integers(1, 1 << 31, (CASES, THREADS), dtype=np.int64)
    tid = np.arange(THREADS)
    nb = (tid % 32) if arrive else (tid + 32) % THREADS
    ids = rng.integers(1, 16, CASES)  # 0 is __syncthreads' barrier
    u32 = lambda x: np.broadcast_to(np.asarray(x, dtype="<u4"), (CASES, THREADS)).copy().view(np.uint8)  # noqa: E731
    in_rec.put(recs, "val", u32(vals).reshape(CASES, THREADS, 4))
    in_rec.put(recs, "nb", u32(nb).reshape(CASES, THREADS, 4))
    in_rec.put(recs, id_op["name"], u32(ids[:, None]).reshape(CASES, THREADS, 4))
    if count_op is not None:
        in_rec.put(recs, count_op["name"], u32(THREADS).reshape(CASES, THREADS, 4))
    expected = vals[:, nb] if not arrive else np.where(tid[None, :] < 32, vals, vals[:, nb])

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, THREADS, in_rec, out_rec, smem_bytes=THREADS * 4)
    val, nbv = k.read("val")[0], k.read("nb")[0]
    operands = {id_op["name"]: k.read(id_op["name"])}
    if count_op is not None:
        operands[count_op["name"]] = k.read(count_op["name"])
    mine = k.smem_at_value(k.mul(k.tid, k.i32(4)))
    theirs = k.smem_at_value(k.mul(nbv, k.i32(4)))
    from warpweave._dsl.atoms.instructions import emit_instruction
    if not arrive:
        k.store(val, mine)
        emit_instruction(b, name, entry, operands, attrs)
        k.write("got", [k.load(theirs, "i32")])
    else:
        producer = b.op1("arith.cmpi", [k.tid, k.i32(32)], "i1", "predicate = 6 : i64")  # ult
        b.begin_region([])
        k.store(val, mine)
        emit_instruction(b, name, entry, operands, attrs)
        k.write("got", [val])
        b.op0("scf.yield", [])
        b.end_region()
        b.begin_region([])
        p_ops = _operands(partner)
        emit_instruction(b, name, partner, {p_ops[0]["name"]: operands[id_op["name"]],
                                            p_ops[1]["name"]: operands[count_op["name"]]}, default_attrs(partner)[0])
        k.write("got", [k.load(theirs, "i32")])
        b.op0("scf.yield", [])
        b.end_region()
        b.op("scf.if", [producer], [], num_regions=2)
    k.end()

    def check(out: np.ndarray):
        got = np.ascontiguousarray(out_rec.get(out_records(out, CASES, THREADS, out_rec), "got")).view("<i4")[..., 0]
        bad = np.nonzero(got != expected)
        if bad[0].size == 0:
            what = "warp 0 arrives, warps 1-3 sync and" if arrive else "all 4 warps sync and"
            return PASS, f"{CASES} cases, barrier ids 1-15: {what} read the other warp's writes"
        c, t = int(bad[0][0]), int(bad[1][0])
        return FAIL, (f"case {c} (barrier {int(ids[c])}): thread {t} read {int(got[c, t])}, expected "
                      f"{int(expected[c, t])} written by thread {int(nb[t])} ({bad[0].size} reads wrong)")

    return gpu.Probe(str(b), kname, CASES, THREADS, in_image(recs, data), out_size, check,
                     in_rec=in_rec, out_rec=out_rec)


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
