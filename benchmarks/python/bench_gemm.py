"""GEMM figures on the GPU, against cuBLAS (torch.matmul) in the same process, as ratios:

  - tensorop_gemm (mma.sync, fp16/bf16 in, fp32 accumulate) at 4096^3 and 8192^3, for each tile configuration
    given (the best one is reported per size), against cuBLAS of the same types;
  - sgemm (SIMT fp32) at 4096^3 against cuBLAS fp32 with TF32 off;
  - the cold compile of tensorop_gemm (a new process, an empty cache) and a warm one (a new process, cache hit);
  - the host cost of calling the compiled tensorop_gemm, against the raw driver launch of the same kernel.

    python benchmarks/python/bench_gemm.py [--sizes 4096,8192] [--json out.json] [--quick]

Timing: CUDA events around each launch, warm-up first, median; operands rotate over two sets. The kernel results
are checked against cuBLAS at every benchmarked size before timing.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compile_times, median_ms, per_call_us  # noqa: E402

# (cta_tiler, atom_layout_mnk, num_stages)
TENSOROP_CONFIGS = [((128, 128, 32), (2, 2, 1), 4), ((128, 128, 32), (2, 2, 1), 3), ((128, 256, 32), (2, 4, 1), 4),
                    ((128, 256, 32), (2, 4, 1), 3), ((256, 128, 32), (4, 2, 1), 4)]


def _tensorop_operands(torch, n, dtype):
    """Two sets of K-major A, B (torch's (M,K) @ (N,K).T layout) and an N-major C, as (M|N, K, 1) views."""
    sets = []
    for _ in range(2):
        a = torch.randn(n, n, device="cuda").to(dtype)
        b = torch.randn(n, n, device="cuda").to(dtype)
        c = torch.empty(n, n, device="cuda", dtype=dtype)
        sets.append((a, b, c))
    return sets


def tensorop(torch, n, ab_name, configs):
    import warpweave as cutlass
    import warpweave.cute as cute
    import tensorop_gemm as tg

    ab = cutlass.dtype(ab_name)
    tdt = {"Float16": torch.float16, "BFloat16": torch.bfloat16}[ab_name]
    sets = _tensorop_operands(torch, n, tdt)

    def rt(t):
        return tg._as_runtime(t.unsqueeze(2), False, ab)

    args = [(rt(a), rt(b), rt(c)) for a, b, c in sets]
    k = [0]

    def run_cublas():
        a, b, c = sets[k[0] % 2]
        torch.matmul(a, b.t(), out=c)
        k[0] += 1

    cublas_ms = median_ms(run_cublas, torch)
    flops = 2 * n ** 3
    out = {"n": n, "dtype": ab_name, "cublas_ms": cublas_ms, "cublas_tflops": flops / cublas_ms / 1e9, "configs": []}
    ref = None
    for tile, atoms, stages in configs:
        gemm = tg.TensorOpGemm(ab, ab, cutlass.Float32, atoms, tile, stages)
        compiled = cute.compile(gemm, *args[0])
        a, b, c = sets[0]
        c.fill_(float("nan"))
        compiled(*args[0])
        torch.cuda.synchronize()
        if ref is None:
            ref = torch.matmul(a.float(), b.float().t())
        err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
        assert err < 1e-2, f"tensorop_gemm {tile} {atoms} {stages} is wrong at {n}: relative error {err}"

        def run_ww():
            compiled(*args[k[0] % 2])
            k[0] += 1

        ms = median_ms(run_ww, torch)
        out["configs"].append({"tile": tile, "atoms": atoms, "stages": stages, "ms": ms,
                               "tflops": flops / ms / 1e9, "ratio": cublas_ms / ms, "max_rel_err": err})
    cublas_ms2 = median_ms(run_cublas, torch)  # again: clocks settle during long runs
    out["cublas_ms_after"] = cublas_ms2
    best = max(out["configs"], key=lambda r: r["tflops"])
    out["best"] = best
    return out


def sgemm_bench(torch, n):
    import warpweave.cute as cute
    import sgemm as sg

    torch.backends.cuda.matmul.allow_tf32 = False
    sets = []
    for _ in range(2):
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        sets.append((a, b, torch.empty(n, n, device="cuda")))
    args = [(sg._runtime(a, False), sg._runtime(b, False), sg._runtime(c, False)) for a, b, c in sets]
    compiled = cute.compile(sg.SGemm(), *args[0])
    a, b, c = sets[0]
    c.fill_(float("nan"))
    compiled(*args[0])
    torch.cuda.synchronize()
    ref = a.double() @ b.double().t()
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    assert err < 1e-4, f"sgemm is wrong at {n}: relative error {err}"
    k = [0]

    def run_ww():
        compiled(*args[k[0] % 2])
        k[0] += 1

    def run_cublas():
        x, y, z = sets[k[0] % 2]
        torch.matmul(x, y.t(), out=z)
        k[0] += 1

    cublas_ms = median_ms(run_cublas, torch)
    ms = median_ms(run_ww, torch)
    flops = 2 * n ** 3
    return {"n": n, "ms": ms, "tflops": flops / ms / 1e9, "cublas_ms": cublas_ms,
            "cublas_tflops": flops / cublas_ms / 1e9, "ratio": cublas_ms / ms, "max_rel_err": err}


_COMPILE_BODY = r"""
import torch
import warpweave as cutlass
import warpweave.cute as cute
import tensorop_gemm as tg
t1 = time.perf_counter()
a = torch.randn(512, 512, device="cuda", dtype=torch.float16).unsqueeze(2)
args = [tg._as_runtime(t, False, cutlass.Float16) for t in (a, a.clone(), torch.empty_like(a))]
gemm = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
t2 = time.perf_counter()
c = cute.compile(gemm, *args)
t3 = time.perf_counter()
c(*args); torch.cuda.synchronize()
t4 = time.perf_counter()
"""


def launch_overhead(torch, calls=20000):
    import warpweave as cutlass
    import warpweave.cute as cute
    from warpweave import _core
    import tensorop_gemm as tg

    a = torch.randn(128, 128, device="cuda", dtype=torch.float16).unsqueeze(2)
    args = [tg._as_runtime(t, False, cutlass.Float16) for t in (a, a.clone(), torch.empty_like(a))]
    compiled = cute.compile(tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1)), *args)
    compiled(*args)
    torch.cuda.synchronize()


    ww_us = per_call_us(lambda: compiled(*args), torch, calls)
    packed = compiled.prepare(*args)
    raw_us = per_call_us(lambda: [_core.launch(*p) for p in packed], torch, calls)
    return {"ww_call_us": ww_us, "raw_launch_us": raw_us}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="4096,8192")
    p.add_argument("--dtypes", default="BFloat16,Float16")
    p.add_argument("--sgemm-size", type=int, default=4096)
    p.add_argument("--quick", action="store_true", help="only the first tile configuration")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import torch

    configs = TENSOROP_CONFIGS[:1] if args.quick else TENSOROP_CONFIGS
    results = {"tensorop": [], "device": torch.cuda.get_device_name()}
    for n in (int(x) for x in args.sizes.split(",")):
        for dt in args.dtypes.split(","):
            r = tensorop(torch, n, dt, configs)
            results["tensorop"].append(r)
            print(json.dumps(r), flush=True)
    results["sgemm"] = sgemm_bench(torch, args.sgemm_size)
    print(json.dumps(results["sgemm"]), flush=True)
    results["compile"] = compile_times(_COMPILE_BODY)
    results["launch"] = launch_overhead(torch)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)

    print(f"\n== warpweave GEMM figures on {results['device']} ==")
    print(f"{'kernel':<34} {'size':>6} {'ms':>8} {'TFLOP/s':>8} {'cuBLAS':>8} {'ratio':>6}")
    for r in results["tensorop"]:
        for c in r["configs"]:
            name = f"tensorop {r['dtype']} {c['tile'][0]}x{c['tile'][1]}x{c['tile'][2]} s{c['stages']}"
            print(f"{name:<34} {r['n']:>6} {c['ms']:>8.3f} {c['tflops']:>8.1f} {r['cublas_tflops']:>8.1f} "
                  f"{c['ratio']:>6.3f}")
    s = results["sgemm"]
    print(f"{'sgemm Float32 (TF32 off)':<34} {s['n']:>6} {s['ms']:>8.3f} {s['tflops']:>8.1f} {s['cublas_tflops']:>8.1f} "
          f"{s['ratio']:>6.3f}")
    cp, ln = results["compile"], results["launch"]
    print(f"tensorop_gemm compile: cold {cp['cold']['compile_s'] * 1e3:.0f} ms (trace {cp['cold']['trace_s'] * 1e3:.0f} "
          f"ms, cache {cp['cold']['cache']}), warm {cp['warm']['compile_s'] * 1e3:.0f} ms (cache {cp['warm']['cache']}); "
          f"import {cp['cold']['import_s'] * 1e3:.0f} ms")
    print(f"launch: compiled tensorop_gemm call {ln['ww_call_us']:.2f} us, raw _core.launch {ln['raw_launch_us']:.2f} us")


if __name__ == "__main__":
    main()
