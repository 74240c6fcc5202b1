"""GEMM speed beside CuTe DSL itself and cuBLAS, in one process on the GPU, as ratios.

    PYTHONPATH=<dir with CuTe DSL's packages>:... python benchmarks/python/bench_vs_cutedsl.py \
        --cutedsl-examples <NVIDIA/cutlass checkout>/examples/python/CuTeDSL [--shapes 4096,4096,4096 ...] \
        [--dtypes Float16,BFloat16] [--json out.json]

For each (M, N, K) shape and input type, in this order: cuBLAS (torch.matmul), CuTe DSL's own Hopper example kernels
(`dense_gemm` 128x256 with clusters 1x1 and 2x1, `dense_gemm_persistent` 128x256 1x1 and 2x1; fp16 and 8-bit only,
as those examples accept), warpweave's Hopper examples (`frontend_python/examples/hopper/`, every configuration in
WW_CONFIGS, the persistent one when it exists), and cuBLAS again (clocks settle in long runs). With --ampere, the
mma.sync `tensorop_gemm` of both projects instead (CuTe DSL's one configuration, warpweave's WW_TENSOROP). The
best of each project per shape is reported and the sweep's geomean of warpweave-best / CuTe-DSL-best.

Both projects' kernels take the same torch tensors (K-major A and B, N-major C, fp32 accumulate, C of the input type),
each through its own `from_dlpack`; CuTe DSL's examples run unmodified (imported from --cutedsl-examples, never
copied). Timing is one method for all: CUDA events around `--launches` back-to-back launches (operands alternating
between two sets), warm-up first, median of `--reps`, so host launch costs do not enter the figure. Every kernel's C
is poisoned (NaN) and checked against a float32 reference of that shape before it is timed.

Without CuTe DSL on the path (no `cutlass` package with `cutlass.cute`) its rows are left out and the table says so.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
EXAMPLES = os.path.join(ROOT, "frontend_python", "examples")
HOPPER_EXAMPLES = os.path.join(EXAMPLES, "hopper")

SWEEP = [(4096, 4096, 4096), (8192, 8192, 8192), (2048, 2048, 2048), (6144, 6144, 6144), (8192, 8192, 1024),
         (16384, 2048, 8192), (2048, 16384, 8192), (4096, 4096, 16384), (12288, 12288, 512)]
# warpweave's configurations: (example, tile_shape_mn, cluster_shape_mn[, swizzle_size])
WW_CONFIGS = [("dense_gemm", (128, 256), (1, 1)), ("dense_gemm", (128, 256), (2, 1)),
              ("dense_gemm", (128, 256), (1, 2)), ("dense_gemm_persistent", (128, 256), (1, 1)),
              ("dense_gemm_persistent", (128, 256), (1, 2)), ("dense_gemm_persistent", (128, 256), (2, 1), 8)]
CD_CONFIGS = [("dense_gemm", (128, 256), (1, 1)), ("dense_gemm", (128, 256), (2, 1)),
              ("dense_gemm_persistent", (128, 256), (1, 1)), ("dense_gemm_persistent", (128, 256), (2, 1))]
# --ampere: the mma.sync GEMMs. CuTe DSL's tensorop_gemm has one configuration (128x128x32, 2x2x1 atoms, 4 stages);
# warpweave's: (cta_tiler, atom_layout_mnk, num_stages)
WW_TENSOROP = [((128, 128, 32), (2, 2, 1), 4), ((128, 128, 32), (2, 2, 1), 3), ((128, 256, 32), (2, 4, 1), 4)]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def time_launches(torch, launch, launches, reps, warmup=3):
    """Median milliseconds of one launch: CUDA events around `launches` back-to-back calls of launch(i)."""
    for i in range(warmup):
        launch(i)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for i in range(launches):
            launch(i)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / launches)
    return statistics.median(times)


class Operands:
    """Two sets of K-major A (M, K), B (N, K) and N-major C (M, N) of one type, and C's float32 reference."""

    def __init__(self, torch, m, n, k, tdt):
        self.torch = torch
        self.sets = []
        for _ in range(2):
            a = (torch.rand(m, k, device="cuda") * 4 - 2).to(tdt)
            b = (torch.rand(n, k, device="cuda") * 4 - 2).to(tdt)
            c = torch.empty(m, n, device="cuda", dtype=tdt)
            self.sets.append((a, b, c))
        a, b, _ = self.sets[0]
        self.ref = torch.matmul(a.float(), b.float().t())
        self.scale = self.ref.abs().max().item()

    def check(self, what, run_first):
        c = self.sets[0][2]
        c.fill_(float("nan"))
        run_first()
        self.torch.cuda.synchronize()
        err = ((c.float() - self.ref).abs().max() / self.scale).item()
        if not err < 1e-2:   # NaN (a tile left unwritten) fails too
            raise AssertionError(f"{what}: relative error {err} against the float32 reference")
        return err


def bench_cublas(torch, ops, args):
    def launch(i):
        a, b, c = ops.sets[i % 2]
        torch.matmul(a, b.t(), out=c)
    return time_launches(torch, launch, args.launches, args.reps)


def bench_warpweave(torch, ops, dtype_name, example, tile, cluster, args, swizzle=1):
    import warpweave as cutlass
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    path = os.path.join(HOPPER_EXAMPLES, example + ".py")
    if not os.path.exists(path):
        return None
    sys.path.insert(0, HOPPER_EXAMPLES)
    mod = sys.modules.get("ww_" + example) or _load("ww_" + example, path)
    ab = cutlass.dtype(dtype_name)
    if example == "dense_gemm":
        gemm = mod.HopperDenseGemm(cutlass.Float32, tile, cluster)
    else:
        gemm = mod.HopperPersistentDenseGemm(cutlass.Float32, tile, cluster, swizzle_size=swizzle)
    mark = getattr(mod, "_mark", None) or sys.modules["ww_dense_gemm"]._mark

    def rt(t):
        return mark(from_dlpack(t.view(1, *t.shape).permute(1, 2, 0), assumed_align=16), False, ab)

    targs = [tuple(rt(t) for t in s) for s in ops.sets]
    compiled = cute.compile(gemm, *targs[0])
    err = ops.check(f"warpweave {example} {tile} {cluster}", lambda: compiled(*targs[0]))
    return time_launches(torch, lambda i: compiled(*targs[i % 2]), args.launches, args.reps), err


def cutedsl_available():
    try:
        import cutlass.cute  # noqa: F401
    except ImportError:
        return False
    import cutlass

    return not getattr(cutlass, "__name__", "").startswith("warpweave")


def bench_cutedsl(torch, ops, dtype_name, example, tile, cluster, args):
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import from_dlpack

    if dtype_name == "BFloat16":
        return None                     # CuTe DSL's Hopper examples do not accept bf16
    path = os.path.join(args.cutedsl_examples, "cute", "hopper", "kernel", "dense_gemm", example + ".py")
    mod = sys.modules.get("cd_" + example) or _load("cd_" + example, path)
    ab = getattr(cutlass, dtype_name)

    def rt(t):
        x = from_dlpack(t.view(1, *t.shape).permute(1, 2, 0), assumed_align=16)
        x.element_type = ab
        return x.mark_layout_dynamic(leading_dim=1)

    targs = [tuple(rt(t) for t in s) for s in ops.sets]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    if example == "dense_gemm":
        gemm = mod.HopperWgmmaGemmKernel(cutlass.Float32, tile, cluster)
        compiled = cute.compile(gemm, *targs[0], stream)
    else:
        gemm = mod.HopperWgmmaGemmPersistentKernel(cutlass.Float32, tile, cluster, 1, True)
        clusters = cutlass.utils.HardwareInfo().get_max_active_clusters(cluster[0] * cluster[1])
        compiled = cute.compile(gemm, *targs[0], clusters, stream)
    err = ops.check(f"CuTe DSL {example} {tile} {cluster}", lambda: compiled(*targs[0], stream))
    return time_launches(torch, lambda i: compiled(*targs[i % 2], stream), args.launches, args.reps), err


def bench_warpweave_tensorop(torch, ops, dtype_name, tiler, atoms, stages, args):
    import warpweave as cutlass
    import warpweave.cute as cute

    mod = sys.modules.get("ww_tensorop_gemm") or _load("ww_tensorop_gemm", os.path.join(EXAMPLES, "tensorop_gemm.py"))
    ab = cutlass.dtype(dtype_name)
    gemm = mod.TensorOpGemm(ab, ab, cutlass.Float32, atoms, tiler, stages)
    targs = [tuple(mod._as_runtime(t.view(1, *t.shape).permute(1, 2, 0), False, ab) for t in st) for st in ops.sets]
    compiled = cute.compile(gemm, *targs[0])
    err = ops.check(f"warpweave tensorop_gemm {tiler} {atoms} {stages}", lambda: compiled(*targs[0]))
    return time_launches(torch, lambda i: compiled(*targs[i % 2]), args.launches, args.reps), err


def bench_cutedsl_tensorop(torch, ops, dtype_name, args):
    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute

    path = os.path.join(args.cutedsl_examples, "cute", "ampere", "kernel", "dense_gemm", "tensorop_gemm.py")
    mod = sys.modules.get("cd_tensorop_gemm") or _load("cd_tensorop_gemm", path)
    ab = getattr(cutlass, dtype_name)

    # The example's own preparation: its bmm wrapper takes A (L, M, K), B (L, K, N) and C (L, M, N); here A and C are
    # contiguous in their last mode and B in its middle one (K-major), marked dynamic as its run() marks them.
    def rt(st):
        a, b, c = st
        return mod.mark_dynamic_layout(a.view(1, *a.shape), b.view(1, *b.shape).permute(0, 2, 1), c.view(1, *c.shape),
                                       2, 1, 2, ab, ab)

    targs = [rt(st) for st in ops.sets]
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    m, k = ops.sets[0][0].shape
    compiled = mod.compile_bmm((m, ops.sets[0][1].shape[0], k, 1), *targs[0], ab, ab, cutlass.Float32, (2, 2, 1))
    err = ops.check("CuTe DSL tensorop_gemm", lambda: compiled(*targs[0], stream))
    return time_launches(torch, lambda i: compiled(*targs[i % 2], stream), args.launches, args.reps), err


def kernels_of(args, with_cd, dt):
    """(project, example, label, thunk(torch, ops)) of every kernel timed at one shape."""
    out = []
    if args.ampere:
        if with_cd:
            out.append(("cutedsl", "tensorop_gemm", ((128, 128, 32), (2, 2, 1), 4),
                        lambda torch, ops: bench_cutedsl_tensorop(torch, ops, dt, args)))
        for tiler, atoms, stages in WW_TENSOROP:
            out.append(("warpweave", "tensorop_gemm", (tiler, atoms, stages),
                        lambda torch, ops, c=(tiler, atoms, stages): bench_warpweave_tensorop(torch, ops, dt, *c,
                                                                                              args)))
        return out
    if with_cd:
        for ex, tile, cl in CD_CONFIGS:
            out.append(("cutedsl", ex, (tile, cl),
                        lambda torch, ops, c=(ex, tile, cl): bench_cutedsl(torch, ops, dt, *c, args)))
    for ex, tile, cl, *swz in WW_CONFIGS:
        out.append(("warpweave", ex, (tile, cl, *swz),
                    lambda torch, ops, c=(ex, tile, cl), z=swz: bench_warpweave(torch, ops, dt, *c, args, *z)))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cutedsl-examples", default=None, help="CuTe DSL's examples/python/CuTeDSL directory")
    p.add_argument("--shapes", nargs="*", default=None, help="M,N,K ... (default: the sweep)")
    p.add_argument("--dtypes", default="Float16,BFloat16")
    p.add_argument("--launches", type=int, default=20)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--ampere", action="store_true", help="the mma.sync tensorop GEMMs instead of the Hopper ones")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import torch

    sys.path.insert(0, os.path.join(ROOT, "frontend_python"))
    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shapes] if args.shapes else (
        [(4096, 4096, 4096), (8192, 8192, 8192)] if args.ampere else SWEEP)
    with_cd = bool(args.cutedsl_examples) and cutedsl_available()
    if not with_cd:
        print("CuTe DSL rows left out: " + ("no --cutedsl-examples" if not args.cutedsl_examples else
                                            "no CuTe DSL `cutlass` package on the path"))
    results = {"device": torch.cuda.get_device_name(), "rows": []}
    tdts = {"Float16": torch.float16, "BFloat16": torch.bfloat16}
    ratios = {}
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            ops = Operands(torch, m, n, k, tdts[dt])
            flops = 2 * m * n * k
            row = {"shape": [m, n, k], "dtype": dt, "kernels": []}
            row["cublas_ms"] = bench_cublas(torch, ops, args)

            for project, example, config, thunk in kernels_of(args, with_cd, dt):
                try:
                    r = thunk(torch, ops)
                except Exception as e:  # noqa: BLE001 - one failing kernel must not hide the others
                    row.setdefault("errors", []).append(f"{project} {example} {config}: {type(e).__name__}: {e}")
                    continue
                if r is None:
                    continue
                ms, err = r
                row["kernels"].append({"project": project, "example": example, "config": config, "ms": ms,
                                       "tflops": flops / ms / 1e9, "vs_cublas": row["cublas_ms"] / ms,
                                       "max_rel_err": err})
            row["cublas_ms_after"] = bench_cublas(torch, ops, args)
            cub = flops / row["cublas_ms"] / 1e9
            for kr in row["kernels"]:
                print(f"{dt} {m}x{n}x{k} {kr['project']:9s} {kr['example']:22s} {str(kr['config']):34s}: "
                      f"{kr['tflops']:6.0f} TFLOP/s {kr['vs_cublas']:.2f}x cuBLAS ({cub:.0f})")
            for err in row.get("errors", []):
                print(f"{dt} {m}x{n}x{k} ERROR {err}")
            best = {}
            for project in ("warpweave", "cutedsl"):
                ks = [kr for kr in row["kernels"] if kr["project"] == project]
                if ks:
                    best[project] = max(ks, key=lambda r: r["tflops"])
            row["best"] = best
            if "warpweave" in best and "cutedsl" in best:
                r = best["warpweave"]["tflops"] / best["cutedsl"]["tflops"]
                ratios.setdefault(dt, []).append(r)
                row["ww_vs_cutedsl"] = r
            line = "  ".join(f"{pj} {b['tflops']:.0f} ({b['vs_cublas']:.2f}x cuBLAS)" for pj, b in best.items())
            print(f"best {dt} {m}x{n}x{k}: {line}" + (f"  warpweave/CuTe DSL {row['ww_vs_cutedsl']:.3f}"
                                                      if "ww_vs_cutedsl" in row else ""), flush=True)
            results["rows"].append(row)
            del ops
            torch.cuda.empty_cache()
    for dt, rs in ratios.items():
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        results.setdefault("geomean_ww_vs_cutedsl", {})[dt] = g
        print(f"geomean warpweave-best / CuTe-DSL-best {dt} over {len(rs)} shapes: {g:.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
