"""Execute probe of kind "mma": a warp-level MMA (mma.sync) with register operands a, b, c -> d.

Each thread's fragments are placed by the manifest's A/B/C layouts ((thread, value) -> column-major index of
the (M,K), (N,K), (M,N) tiles) and D is read back through the D layout, so a wrong layout shows up as a wrong
result. Cases, one thread block each, all in one launch:
  - random: A, B, C random (never zero), D compared with a float64 / int64 matmul;
  - one-hot A: A zero but for (m0,k0), B random, C zero: D must be x * B[:,k0] in row m0 and zero elsewhere, for
    every (m0,k0); likewise one-hot B for every (n0,k0), and one-hot C (A = B = 0) for every (m0,n0), so each
    element of each layout is confirmed by the hardware.
Tolerances per type: inputs are exactly representable with short mantissas, so products are exact; only the
accumulation may round (f16 accumulators, reduced-precision fp8 accumulation).

Packed 1-bit MMAs (mma ... .b1.b1 .and.popc / .xor.popc) are described with element_type "b32" for A and B:
each value is one 32-bit register holding 32 packed bits, K counts those words, and the product of two words
is popcount(a & b) (and.popc) or popcount(a ^ b) (xor.popc). The bit operation comes from python_params
"bit_op" ("and_popc" / "xor_popc"), else from the PTX template.
"""
from __future__ import annotations

import re

import numpy as np

from warpweave import _core

from .. import gpu, numerics as nx
from ..kernels import (ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, out_records, plan_inputs,
                       value_type)
from . import FAIL, PASS, SKIP, block_for, execute_probe, kernel_name, layout_table, parse_shape, thread_ids

RANDOM_CASES = 3
MAX_ONE_HOT = 8192


def bit_op(entry: dict) -> str | None:
    op = (entry.get("python_params") or {}).get("bit_op", "")
    if op in ("and_popc", "xor_popc"):
        return op
    m = re.search(r"\.(and|xor)\.popc\b", entry.get("ptx_template", ""))
    return f"{m.group(1)}_popc" if m else None


def rtol(td: nx.ElementType, ta: nx.ElementType, k: int) -> float:
    """Error allowed relative to |C| + sum |a b|: one rounding (or truncation, as tensor cores align addends to
    the largest one) per addend of the accumulator's precision. Missing or misplaced elements cost about 1/K."""
    if td.kind != "float":
        return 0.0
    if td.name == "f64":
        return (k + 1) * 2.0 ** -52
    if td.name == "f16":
        return (k + 1) * 2.0 ** -11
    if ta.name in ("e4m3", "e5m2"):
        return (k + 1) * 2.0 ** -14    # fp8 tensor cores keep about 14 bits of the f32 sum
    return (k + 1) * 2.0 ** -22


def reference(a, b, c, M, N, K, ta, td, op):
    """D = A B^T + C per case, from column-major flattened tiles; returns (D, bound) flattened the same way."""
    n = a.shape[0]
    A = a.reshape(n, K, M).transpose(0, 2, 1)
    B = b.reshape(n, K, N).transpose(0, 2, 1)
    C = c.reshape(n, N, M).transpose(0, 2, 1)
    if op is not None:
        x = A[:, :, None, :].astype(np.uint64)
        y = B[:, None, :, :].astype(np.uint64)
        prod = nx.popcount(x & y if op == "and_popc" else x ^ y).sum(axis=3)
        D = C.astype(np.int64) + prod
        bound = np.zeros(D.shape)
    elif td.kind == "float":
        D = np.einsum("cmk,cnk->cmn", A.astype(np.float64), B.astype(np.float64)) + C
        bound = np.einsum("cmk,cnk->cmn", np.abs(A), np.abs(B)) + np.abs(C)
    else:
        D = np.einsum("cmk,cnk->cmn", A.astype(np.int64), B.astype(np.int64)) + C.astype(np.int64)
        bound = np.zeros(D.shape)
    flat = lambda X: X.transpose(0, 2, 1).reshape(n, M * N)  # noqa: E731
    return flat(D), flat(bound)


def prepare(backend, entry: dict, seed: int | None = None, one_hot: bool = True):
    name = getattr(backend, "name", backend)
    ops = {o["name"]: o for o in entry.get("operands", [])}
    for o in entry.get("operands", []):
        if o["name"] not in ("a", "b", "c", "d") or o["role"] != "REGISTERS":
            return SKIP, (f"the mma probe takes register operands a, b, c -> d; {o['name']} is a "
                          f"{o['role']} operand (this atom needs a probe of its own kind)")
    for n in ("a", "b", "d"):
        if n not in ops:
            return SKIP, f"the mma probe needs an operand named {n}"
    if not is_result(ops["d"]):
        return SKIP, "the mma probe needs d to be a result"
    for n, o in ops.items():
        if not o.get("layout_tv"):
            return SKIP, f"operand {n} has no layout_tv to place its fragment with"
        if o.get("element_type") not in nx.TYPES:
            return SKIP, f"operand {n}: element type {o.get('element_type')} is not supported by the mma probe"
    try:
        M, N, K = parse_shape(entry.get("shape_mnk", ""))
    except ValueError:
        return FAIL, f"shape_mnk {entry.get('shape_mnk')!r} is not (M,N,K)"
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem
    ta, tb, td = (nx.element_type(ops[n]["element_type"]) for n in ("a", "b", "d"))
    tc = nx.element_type(ops["c"]["element_type"]) if "c" in ops else td
    op = None
    if ta.kind == "bits" or tb.kind == "bits":
        op = bit_op(entry)
        if op is None:
            return SKIP, "A/B of bit type: the probe cannot tell the bit operation (python_params bit_op)"
        if td.kind == "float":
            return SKIP, "bit-packed A/B with a floating-point D"
    thr = thread_ids(entry)
    T = len(thr)
    block = block_for(thr)
    idx = {n: layout_table(o["layout_tv"], T) for n, o in ops.items()}
    tiles = {"a": M * K, "b": N * K, "c": M * N, "d": M * N}
    for n, t in idx.items():
        if t.min() < 0 or t.max() >= tiles[n]:
            return FAIL, f"operand {n}: layout reaches {t.max()}, outside the {tiles[n]}-element tile"
        if t.shape[1] != int(ops[n]["values"]):
            return FAIL, f"operand {n}: layout has {t.shape[1]} values per thread, the operand {ops[n]['values']}"

    rng = np.random.default_rng(seed)
    small = td.kind != "float"
    cases = [("random", None)] * RANDOM_CASES
    if one_hot and (M * K + N * K + M * N) <= MAX_ONE_HOT:
        cases += [("A", p) for p in range(M * K)] + [("B", p) for p in range(N * K)] + [("C", p) for p in range(M * N)]
    n = len(cases)
    A = nx.random_codes(ta, (n, M * K), rng)
    B = nx.random_codes(tb, (n, N * K), rng)
    C = nx.random_codes(tc, (n, M * N), rng, small_ints=small)
    for i, (kind, p) in enumerate(cases):
        if kind == "A":
            x = A[i, p]
            A[i] = 0
            A[i, p] = x
            C[i] = 0
        elif kind == "B":
            x = B[i, p]
            B[i] = 0
            B[i, p] = x
            C[i] = 0
        elif kind == "C":
            A[i] = 0
            B[i] = 0
            x = C[i, p]
            C[i] = 0
            C[i, p] = x
    av, bv, cv = nx.decode(ta, A), nx.decode(tb, B), nx.decode(tc, C)
    ref, bound = reference(av, bv, cv, M, N, K, ta, td, op)

    in_rec, out_rec = Record(), Record()
    plan_inputs(entry, in_rec)
    out_rec.add("d", value_type(ops["d"]), int(ops["d"]["values"]))
    recs, data, out_size = host_buffers(n, block, in_rec, out_rec)
    for nm, codes, t in (("a", A, ta), ("b", B, tb), ("c", C, tc)):
        if nm in ops:
            recs[:, thr, in_rec.fields[nm].offset:in_rec.fields[nm].offset + in_rec.fields[nm].size] = \
                nx.to_bytes(t, codes[:, idx[nm]])

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, block, in_rec, out_rec)
    res = k.emit(name, entry, attrs)
    k.write("d", res["d"])
    k.end()

    tol = rtol(td, ta, K)

    def check(out: np.ndarray):
        got_raw = out_rec.get(out_records(out, n, block, out_rec), "d")[:, thr, :]
        got = nx.decode(td, nx.from_bytes(td, got_raw))            # (cases, T, Vd)
        exp = ref[:, idx["d"]]
        bad = nx.mismatches(td, got, exp, tol, bound[:, idx["d"]])
        if not bad.any():
            hot = len(cases) - RANDOM_CASES
            return PASS, (f"{RANDOM_CASES} random cases and {hot} one-hot cases (A {M * K}, B {N * K}, C {M * N}) "
                          f"match the reference" + (f" within rtol {tol:.1e}" if tol else " exactly"))
        return FAIL, _diagnose(cases, bad, got, exp, idx, thr, M, N, op)

    return gpu.Probe(str(b), kname, n, block, in_image(recs, data), out_size, check,
                     in_rec=in_rec, out_rec=out_rec)


def _diagnose(cases, bad, got, exp, idx, thr, M, N, op) -> str:
    failing = bad.any(axis=(1, 2))
    nbad = int(failing.sum())
    # A one-hot case names the element that went astray, so it is the more useful one to show.
    hot = [i for i in np.nonzero(failing)[0] if cases[i][0] != "random"]
    i = int(hot[0]) if hot else int(np.argmax(failing))
    kind, p = cases[i]
    ts, vs = np.nonzero(bad[i])
    where = []
    for t, v in list(zip(ts, vs))[:3]:
        pos = int(idx["d"][t, v])
        where.append(f"D({pos % M},{pos // M}) [thread {int(thr[t])} value {int(v)}]: got {got[i, t, v]:g}, "
                     f"expected {exp[i, t, v]:g}")
    msg = f"{nbad} of {len(cases)} cases differ; first: "
    if kind == "random":
        msg += f"random case {i}: " + "; ".join(where)
        return msg
    name = kind.lower()
    rows = {"a": M, "b": N, "c": M}[name]
    holders = [(int(thr[t]), int(v)) for t, v in zip(*np.nonzero(idx[name] == p))]
    coord = f"({p % rows},{p // rows})"
    msg += f"one-hot {kind}{coord} from (thread, value) {holders[:2]}: " + "; ".join(where)
    if op != "xor_popc":
        nz = [(int(idx['d'][t, v]) % M, int(idx['d'][t, v]) // M) for t, v in zip(*np.nonzero(got[i] != 0))]
        axis = {"a": "rows", "b": "columns", "c": "positions"}[name]
        landed = sorted({r for r, _ in nz}) if name == "a" else sorted({c for _, c in nz}) if name == "b" else nz[:4]
        msg += f"; its products landed in D {axis} {landed}"
    return msg


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
