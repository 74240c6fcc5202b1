"""CuTe DSL's GEMM and attention example programs run for real at shapes that are not multiples of their tiles, under
warpweave and under the reference implementation, with a pass/fail table: the residue paths (predicated copies,
masked rows and columns, partial last tiles) that the default arguments never reach.

    python benchmarks/python/odd_shape_runs.py /path/to/cutlass --python PY [--reference-pythonpath P] [--jobs 4]

Each program checks its own result against its own reference; a run passes when it exits 0. A row counts against
warpweave only where the reference passes the same run. Needs a GPU (sm_90 runs every row; sm_80 the Ampere ones).
"""
from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cutedsl_examples import ALL_ROOT, run_real  # noqa: E402

_AMPERE = "cute/ampere/kernel"
_HOPPER = "cute/hopper/kernel"
# (program under the example set, its arguments): three shapes each, every one leaving a partial tile in M, N and
# (for the GEMMs) K or (for attention) the key length, with causal masks and batch or head counts above one.
CASES = [
    (f"{_AMPERE}/dense_gemm/sgemm.py", "--mnk 1000,777,333"),
    (f"{_AMPERE}/dense_gemm/sgemm.py", "--mnk 129,65,17 --a_major k --c_major m"),
    (f"{_AMPERE}/dense_gemm/sgemm.py", "--mnk 4097,31,255"),
    (f"{_AMPERE}/dense_gemm/tensorop_gemm.py", "--mnkl 1000,776,328,1"),
    (f"{_AMPERE}/dense_gemm/tensorop_gemm.py", "--mnkl 136,200,520,3 --ab_dtype BFloat16 --c_dtype BFloat16"),
    (f"{_AMPERE}/dense_gemm/tensorop_gemm.py", "--mnkl 4104,72,1032,2"),
    (f"{_HOPPER}/dense_gemm/dense_gemm.py", "--mnkl 1000,776,328,1"),
    (f"{_HOPPER}/dense_gemm/dense_gemm.py", "--mnkl 136,200,520,3 --a_major m --c_major m"),
    (f"{_HOPPER}/dense_gemm/dense_gemm.py", "--cluster_shape_mn 2,1 --mnkl 1000,776,328,1"),
    (f"{_HOPPER}/dense_gemm/dense_gemm_persistent.py", "--mnkl 1000,776,328,1"),
    (f"{_HOPPER}/dense_gemm/dense_gemm_persistent.py", "--mnkl 136,200,520,3 --cluster_shape_mn 2,1"),
    (f"{_HOPPER}/dense_gemm/dense_gemm_persistent.py", "--mnkl 4104,2056,1032,1"),
    (f"{_AMPERE}/attention/flash_attention_v2.py", "--batch_size 2 --seqlen_q 1000 --seqlen_k 777 --num_head 4"),
    (f"{_AMPERE}/attention/flash_attention_v2.py", "--batch_size 1 --seqlen_q 129 --seqlen_k 4097 --num_head 8 "
                                                   "--is_causal"),
    (f"{_AMPERE}/attention/flash_attention_v2.py", "--batch_size 3 --seqlen_q 333 --seqlen_k 333 --num_head 2 "
                                                   "--head_dim 64"),
    # hstu asks for seqlen_kv >= seqlen_q, and a multiple of 8 (its bias tensor's rows are 16-byte aligned)
    (f"{_AMPERE}/attention/hstu_attention.py", "--batch_size 2 --seqlen_q 1000 --seqlen_kv 1000"),
    (f"{_AMPERE}/attention/hstu_attention.py", "--batch_size 1 --seqlen_q 129 --seqlen_kv 136 --is_causal"),
    (f"{_AMPERE}/attention/hstu_attention.py", "--batch_size 3 --seqlen_q 333 --seqlen_kv 520 --num_head 2"),
    (f"{_HOPPER}/attention/fmha.py", "--q_shape 1,1000,16,128 --k_shape 1,777,16,128"),
    (f"{_HOPPER}/attention/fmha.py", "--q_shape 2,129,8,64 --k_shape 2,4097,8,64 --is_causal"),
    (f"{_HOPPER}/attention/fmha.py", "--q_shape 3,333,4,128 --k_shape 3,333,4,128 --is_persistent"),
]


def cell(result) -> str:
    if result is None:
        return "-"
    ok, detail, seconds = result
    return f"pass ({seconds:.0f} s)" if ok else f"FAIL: {detail}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cutlass", help="a checkout of NVIDIA/cutlass (holds examples/python/CuTeDSL)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter to run the programs with")
    ap.add_argument("--reference-pythonpath", help="PYTHONPATH under which the reference implementation is found")
    ap.add_argument("--jobs", type=int, default=4, help="runs at once (they share the GPU)")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--only", default="", help="comma-separated substrings of the program paths to keep")
    ns = ap.parse_args(argv)
    cases = [c for c in CASES if not ns.only or any(s in c[0] for s in ns.only.split(","))]

    def both(case):
        rel, args = case
        path = os.path.join(ns.cutlass, ALL_ROOT, rel)
        ref = run_real(ns.python, path, ns.timeout, ns.reference_pythonpath, args.split()) \
            if ns.reference_pythonpath else None
        return rel, args, run_real(ns.python, path, ns.timeout, args=args.split()), ref

    with ThreadPoolExecutor(max(1, ns.jobs)) as pool:
        rows = list(pool.map(both, cases))
    print("| program | arguments | warpweave | reference |\n|---|---|---|---|")
    for rel, args, ww, ref in rows:
        print(f"| {rel.split('/kernel/')[-1]} | {args} | {cell(ww)} | {cell(ref)} |")
    ref_pass = [r for r in rows if r[3] and r[3][0]]
    kept = sum(1 for r in ref_pass if r[2][0])
    print(f"\n{sum(r[2][0] for r in rows)} of {len(rows)} pass under warpweave; of the {len(ref_pass)} that pass "
          f"under the reference, {kept} pass under warpweave")
    return 0 if kept == len(ref_pass) else 1


if __name__ == "__main__":
    sys.exit(main())
