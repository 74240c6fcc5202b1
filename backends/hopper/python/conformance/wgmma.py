"""Execute probe of kind "hopper_wgmma": one warpgroup-wide wgmma.mma_async (sm_90a), A from shared memory
through a matrix descriptor or from registers, B from shared memory, C/D accumulators in registers.

Why this kind has its own probe: the generic "mma" probe feeds every operand from registers, while wgmma reads
shared memory through 64-bit descriptors and runs asynchronously. Here each thread block (one case, 128 threads)
copies its case's A/B tiles into shared memory in the canonical no-swizzle K-major layout, fences them into the
async proxy, builds the descriptors with the backend's own make_smem_desc hook (so the hook's bit layout is
checked by the hardware too), and issues wgmma.fence / the atom / commit_group / wait_group 0.

Shared-memory layout (PTX ISA, "matrix descriptor", no swizzle, K-major): the tile is cut into core matrices of
8 rows x 16 bytes, each stored as 128 contiguous bytes (row r at 16 r). Core matrices adjacent in K are LBO =
128 bytes apart and groups of 8 rows SBO = 256 bytes apart (every dense wgmma tile is 32 bytes of K, two core
matrices). Element (row, k) of an e-byte type sits at
    (row % 8) * 16 + (k * e) % 16 + (row // 8) * SBO + ((k * e) // 16) * LBO.

Cases (one block each, one launch):
  - 3 random (scale_d true: D = A B^T + C), 1 random with scale_d false (D = A B^T, C ignored);
  - K "one-hot rows" cases for A: row m of A is zero but for k = (m + s) mod K (shift s = 0..K-1), B random, C
    zero, so row m of D must be A[m,k] * B[:,k]. Over the K shifts every (m, k) of A is the lone non-zero of its
    row once, which confirms each (thread, value) of the manifest's A layout (A in registers) or each position
    of the descriptor layout (A in shared memory) for a handful of cases instead of M*K one-hot ones;
  - K such cases for B (column n of D must be B[n,k] * A[:,k]), confirming B's shared-memory layout.
D is read back through the manifest's D layout, so a wrong C/D layout shows as a wrong result in every case.
"""
from __future__ import annotations

import numpy as np

from warpweave import _core
from warpweave.ext import emit_instruction

from warpweave_conformance import gpu, numerics as nx
from warpweave_conformance.kernels import (ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, out_records, plan_inputs,
                       value_type)
from warpweave_conformance.probes import FAIL, PASS, SKIP, block_for, execute_probe, kernel_name, layout_table, parse_shape, thread_ids

LBO, SBO = 128, 256
RANDOM_CASES = 3


def kmajor_offsets(rows: int, k: int, ebytes: int) -> np.ndarray:
    """Byte offset of each position p = row + rows * kk of a (rows, k) tile in the canonical no-swizzle K-major
    layout."""
    p = np.arange(rows * k)
    r, kk = p % rows, p // rows
    kb = kk * ebytes
    return (r % 8) * 16 + kb % 16 + (r // 8) * SBO + (kb // 16) * LBO


def tolerance(ta: nx.ElementType, td: nx.ElementType, k: int) -> float:
    """Relative to sum |a b| + |c|. Inputs are exact in their types, so only accumulation rounds; a misplaced
    element is an O(1) error, far above these bounds."""
    if td.kind != "float":
        return 0.0
    if td.name == "f16":
        # Rounds to f16 at least once, perhaps per group of products: still well under the ~1/K relative error
        # of one misplaced product.
        return 2.0 ** -8
    if ta.name in ("e4m3", "e5m2"):
        return 2.0 ** -10  # fp8 wgmma accumulates with fewer bits than f32
    return 2.0 ** -18


HELPERS = ("wgmma.make_smem_desc", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group",
           "fence.proxy.async.shared_cta")


def uses(backend) -> set:
    """The backend's primitives that every probe of this kind runs (named in the execute tier's report)."""
    name = getattr(backend, "name", backend)
    return {f"{name}.{i}" for i in HELPERS}


def _primitive(backend, ident):
    for p in backend.manifest.get("primitives", []):
        if p.get("id") == ident:
            return p
    return None


def prepare(backend, entry: dict, seed: int | None = None):
    name = getattr(backend, "name", backend)
    ops = {o["name"]: o for o in entry.get("operands", [])}
    if set(ops) != {"d", "a", "b", "c", "scale_d"} or ops["b"]["role"] != "SMEM_DESCRIPTOR" or not is_result(ops["d"]):
        return SKIP, "the hopper_wgmma probe takes d <- a (descriptor or registers), b (descriptor), c, scale_d"
    helpers = {i: _primitive(backend, f"{name}.{i}") for i in HELPERS}
    missing = [i for i, p in helpers.items() if p is None]
    if missing:
        return SKIP, f"the backend lacks the primitives {', '.join(missing)} the probe needs"
    try:
        M, N, K = parse_shape(entry.get("shape_mnk", ""))
    except ValueError:
        return FAIL, f"shape_mnk {entry.get('shape_mnk')!r} is not (M,N,K)"
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem
    # The shared-memory images assume K-major A and B (the defaults); MN-major is a different layout.
    if any(attrs.get(t, 0) not in (0, "0") for t in ("tnsp_a", "tnsp_b")):
        return SKIP, "the probe lays out K-major tiles only"
    a_rs = ops["a"]["role"] == "REGISTERS"
    if not ops["a"].get("element_type") or not ops["b"].get("element_type"):
        return SKIP, "a and b need their element_type (the tile's type for a descriptor operand)"
    ta = nx.element_type(ops["a"]["element_type"])
    tb = nx.element_type(ops["b"]["element_type"])
    td = nx.element_type(ops["d"]["element_type"])
    tc = nx.element_type(ops["c"]["element_type"])
    if M != 64 or K * ta.bytes != 32 or tb.bytes != ta.bytes:
        return SKIP, f"not a dense m64nNk({32 // max(1, ta.bytes)}) wgmma shape: {entry.get('shape_mnk')}"

    thr = thread_ids(entry, 128)
    T = len(thr)
    block = block_for(thr)
    idx = {"d": layout_table(ops["d"]["layout_tv"], T), "c": layout_table(ops["c"]["layout_tv"], T)}
    if a_rs:
        idx["a"] = layout_table(ops["a"]["layout_tv"], T)
    tiles = {"a": M * K, "c": M * N, "d": M * N}
    for n, t in idx.items():
        if t.min() < 0 or t.max() >= tiles[n] or t.shape[1] != int(ops[n]["values"]):
            return FAIL, f"operand {n}: its layout does not fit {ops[n]['values']} values per thread on the tile"

    rng = np.random.default_rng(seed)
    cases = [("random", None, 1)] * RANDOM_CASES + [("random", None, 0)]
    cases += [("A", s, 1) for s in range(K)] + [("B", s, 1) for s in range(K)]
    nc = len(cases)
    A = nx.random_codes(ta, (nc, M * K), rng)
    B = nx.random_codes(tb, (nc, N * K), rng)
    C = nx.random_codes(tc, (nc, M * N), rng, small_ints=tc.kind != "float")
    scale = np.array([s for _, _, s in cases], dtype=np.uint8)
    for i, (kind, shift, _) in enumerate(cases):
        if kind in ("A", "B"):
            X, rows = (A, M) if kind == "A" else (B, N)
            keep = np.arange(rows) + rows * ((np.arange(rows) + shift) % K)   # column-major (row, k)
            x = X[i, keep]
            X[i] = 0
            X[i, keep] = x
            C[i] = 0
    av, bv, cv = nx.decode(ta, A), nx.decode(tb, B), nx.decode(tc, C)
    Am = av.reshape(nc, K, M).transpose(0, 2, 1)
    Bm = bv.reshape(nc, K, N).transpose(0, 2, 1)
    Cm = cv.reshape(nc, N, M).transpose(0, 2, 1) * scale[:, None, None]
    if td.kind == "float":
        ref = np.einsum("cmk,cnk->cmn", Am, Bm) + Cm
        bound = np.einsum("cmk,cnk->cmn", np.abs(Am), np.abs(Bm)) + np.abs(Cm)
    else:
        ref = np.einsum("cmk,cnk->cmn", Am.astype(np.int64), Bm.astype(np.int64)) + Cm.astype(np.int64)
        bound = np.zeros(ref.shape)
    ref = ref.transpose(0, 2, 1).reshape(nc, M * N)      # column-major, as the layouts index it
    bound = bound.transpose(0, 2, 1).reshape(nc, M * N)

    # Case data: the shared-memory image, A's tile (if A is in shared memory) then B's.
    a_bytes = 0 if a_rs else (M // 8) * SBO
    b_bytes = (N // 8) * SBO
    chunk = 4 * block
    smem = -(-(a_bytes + b_bytes) // chunk) * chunk
    img = np.zeros((nc, smem // ta.bytes), dtype=np.uint64)
    if not a_rs:
        img[:, kmajor_offsets(M, K, ta.bytes) // ta.bytes] = A
    img[:, (a_bytes + kmajor_offsets(N, K, tb.bytes)) // tb.bytes] = B

    in_rec, out_rec = Record(), Record()
    plan_inputs(entry, in_rec, skip=("b",) if a_rs else ("a", "b"))
    out_rec.add("d", value_type(ops["d"]), int(ops["d"]["values"]))
    recs, data, out_size = host_buffers(nc, block, in_rec, out_rec, data_bytes=smem)
    data[:, :smem] = nx.to_bytes(ta, img)
    f = in_rec.fields["c"]
    recs[:, thr, f.offset:f.offset + f.size] = nx.to_bytes(tc, C[:, idx["c"]])
    f = in_rec.fields["scale_d"]
    recs[:, :, f.offset] = scale[:, None]
    if a_rs:
        f = in_rec.fields["a"]
        recs[:, thr, f.offset:f.offset + f.size] = nx.to_bytes(ta, A[:, idx["a"]])

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, block, in_rec, out_rec, data_bytes=smem, smem_bytes=smem, smem_align=1024)
    for j in range(smem // chunk):
        off = k.mul(k.add(k.tid, k.i32(j * block)), k.i32(4))
        k.store(k.load(k.gep_value(k.data_ptr(), off), "i32"), k.smem_at_value(off))
    # The tiles were written through the generic proxy; wgmma reads them through the async proxy.
    emit_instruction(b, name, helpers["fence.proxy.async.shared_cta"], {})
    k.barrier()
    base = k.smem_address()
    desc = {"leading_byte_offset": LBO, "stride_byte_offset": SBO, "swizzle": 0}
    overrides = {"b": emit_instruction(b, name, helpers["wgmma.make_smem_desc"],
                                       {"addr": [k.add(base, k.i32(a_bytes))]}, desc)["desc"]}
    if not a_rs:
        overrides["a"] = emit_instruction(b, name, helpers["wgmma.make_smem_desc"], {"addr": [base]}, desc)["desc"]
    emit_instruction(b, name, helpers["wgmma.fence"], {})
    res = k.emit(name, entry, attrs, overrides)
    emit_instruction(b, name, helpers["wgmma.commit_group"], {})
    emit_instruction(b, name, helpers["wgmma.wait_group"], {}, {"n": 0})
    k.write("d", res["d"])
    k.end()

    tol = tolerance(ta, td, K)

    def check(out: np.ndarray):
        got_raw = out_rec.get(out_records(out, nc, block, out_rec), "d")[:, thr, :]
        got = nx.decode(td, nx.from_bytes(td, got_raw))          # (cases, T, values)
        exp = ref[:, idx["d"]]
        bad = nx.mismatches(td, got, exp, tol, bound[:, idx["d"]])
        if not bad.any():
            return PASS, (f"{RANDOM_CASES + 1} random cases (one with scale_d false) and {K} one-hot-row cases each "
                          "for A and B match the reference" + (f" within rtol {tol:.1e}" if tol else " exactly"))
        return FAIL, _diagnose(cases, bad, got, exp, idx, thr, M, N, K, a_rs)

    return gpu.Probe(str(b), kname, nc, block, in_image(recs, data), out_size, check)




def _diagnose(cases, bad, got, exp, idx, thr, M, N, K, a_rs) -> str:
    nbad = int(bad.any(axis=(1, 2)).sum())
    i = int(np.argmax(bad.any(axis=(1, 2))))
    kind, shift, scale = cases[i]
    ts, vs = np.nonzero(bad[i])
    where = []
    for t, v in list(zip(ts, vs))[:3]:
        pos = int(idx["d"][t, v])
        where.append(f"D({pos % M},{pos // M}) [thread {int(thr[t])} value {int(v)}]: got {got[i, t, v]:g}, "
                     f"expected {exp[i, t, v]:g}")
    msg = f"{nbad} of {len(cases)} cases differ; first: "
    if kind == "random":
        return msg + f"random case {i} (scale_d {'true' if scale else 'false'}): " + "; ".join(where)
    # The first wrong D(m, n) names the lone non-zero A (row m) or B (column n) element it was made from.
    pos = int(idx["d"][ts[0], vs[0]])
    m, n = pos % M, pos // M
    if kind == "A":
        k = (m + shift) % K
        src = "registers" if a_rs else "shared memory (descriptor)"
        holder = ""
        if a_rs:
            tv = [(int(thr[t]), int(v)) for t, v in zip(*np.nonzero(idx["a"] == m + M * k))]
            holder = f", held by (thread, value) {tv[:1]} per the manifest's A layout"
        msg += f"one-hot-row case for A (shift {shift}), A({m},{k}) from {src}{holder}: "
    else:
        k = (n + shift) % K
        msg += f"one-hot-row case for B (shift {shift}), B({n},{k}) from shared memory (descriptor): "
    return msg + "; ".join(where)


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
