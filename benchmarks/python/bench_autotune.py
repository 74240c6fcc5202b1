"""Autotuning figures: how much compiling the candidates on threads saves, and what a search finds on the GPU.

  - compile: the 8 candidates of a tensorop GEMM search (4 tiles x 2 stage counts) compiled with 1, 2, 4 and 8
    threads, and with 2, 4 and 8 worker processes first (autotune_workers.py), each way in a fresh process with an
    empty JIT cache (no GPU needed: WARPWEAVE_ARCH=sm_80 then);
  - on a GPU: autotune_jit over elementwise_add's copy_bits at 8192^2 fp16, and tune over the tensorop GEMM's tile
    and stages at n^3 (fp16 -> fp32): the configuration found, its time against the default configuration's (timed
    again, independently), the search's wall time, and the time a new process takes to start tuned from the table.

    python benchmarks/python/bench_autotune.py [--n 4096] [--json out.json] [--compile-only]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import ROOT  # noqa: E402

SPACE = {"tile": [(128, 128, 32), (128, 256, 32), (256, 128, 32), (64, 128, 32)], "stages": [3, 4]}
ATOMS = {(128, 128, 32): (2, 2, 1), (128, 256, 32): (2, 4, 1), (256, 128, 32): (4, 2, 1), (64, 128, 32): (2, 2, 1)}

# The search's function: the tensorop GEMM with its tile and stage count as compile-time parameters, in a module of
# its own (worker processes import it by name).
_GEMM_MODULE = r"""
import warpweave as cutlass
import warpweave.cute as cute
import tensorop_gemm as tg

ATOMS = {atoms!r}


@cute.jit
def gemm(a, b, c, tile: cutlass.Constexpr = (128, 128, 32), stages: cutlass.Constexpr = 3):
    tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, ATOMS[tile], cta_tiler=tile,
                    num_stages=stages)(a, b, c)
"""

_COMPILE = r"""
import os, sys, time, json
sys.path.insert(0, {root!r} + "/frontend_python"); sys.path.insert(0, {root!r} + "/frontend_python/examples")
sys.path.insert(0, {moddir!r})
import warpweave as cutlass, warpweave.cute as cute
from warpweave._dsl.tuning import autotune, autotune_workers
from warpweave._dsl.call.jit import compile_function
from warpweave._dsl.registry.target import select_target
from warpweave.cute.runtime import make_fake_tensor
import ww_bench_gemm_search as m
SPACE = {space!r}
def fake(m0, m1):
    t = make_fake_tensor(cutlass.Float16, (m0, m1, 1), (m1, 1, m0 * m1), assumed_align=16)
    return t.mark_layout_dynamic(leading_dim=1).mark_compact_shape_dynamic(mode=1, stride_order=(2, 0, 1),
                                                                            divisibility=8)
args = (fake(4096, 4096), fake(4096, 4096), fake(4096, 4096))
target = select_target()
build = lambda cfg: compile_function(m.gemm, args, dict(cfg), target=target)  # noqa: E731
cute.compile(m.gemm, *args, stages=5)  # warm: libraries loaded, first-use costs paid (not a candidate)
space = autotune.search_space(SPACE)
trials = [autotune.Trial(x) for x in space]
t0 = time.perf_counter()
if {processes}:
    autotune_workers.run_workers(autotune_workers.plan(m.gemm, args, {{}}, target), space, {processes})
autotune.compile_all(trials, build, {workers}, "bench")
print(json.dumps({{"workers": {workers}, "processes": {processes}, "seconds": time.perf_counter() - t0,
                  "hits": sum(t.compiled is not None and t.compiled.info.get("level") == "function" for t in trials),
                  "failed": [autotune.config_text(t.config) for t in trials if t.error]}}))
"""


def compile_parallelism(arch):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "ww_bench_gemm_search.py"), "w") as f:
            f.write(_GEMM_MODULE.format(atoms=ATOMS))
        for workers, processes in ((1, 0), (2, 0), (4, 0), (8, 0), (1, 2), (1, 4), (1, 8)):
            cache = os.path.join(tmp, f"c{workers}{processes}")
            env = dict(os.environ, WARPWEAVE_PROGRESS="0", WARPWEAVE_CACHE_DIR=cache)
            env.pop("WARPWEAVE_DISABLE_CACHE", None)  # the workers hand their compilations over through the cache
            if arch:
                env["WARPWEAVE_ARCH"] = arch
            code = _COMPILE.format(root=ROOT, moddir=tmp, space=SPACE, workers=workers, processes=processes)
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-2000:])
            rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    base = rows[0]["seconds"]
    for row in rows:
        row["speedup"] = round(base / row["seconds"], 2)
        how = f"{row['processes']} processes" if row["processes"] else f"{row['workers']} thread(s)"
        print(f"compile 8 GEMM candidates, {how:<12}: {row['seconds']:6.2f} s  (x{row['speedup']:.2f})"
              f"{'  failed: ' + ', '.join(row['failed']) if row['failed'] else ''}")
    return {"cpus": os.cpu_count(), "rows": rows}


_TUNE_MODULE = r"""
import warpweave as cutlass
import warpweave.cute as cute
import tensorop_gemm as tg

ATOMS = {atoms!r}


def build(mA, mB, mC, tile=(128, 128, 32), stages=3):
    g = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, ATOMS[tile], cta_tiler=tile,
                        num_stages=stages)
    compiled = cute.compile(g, mA, mB, mC)
    return lambda: compiled(mA, mB, mC)
"""

_TUNE = r"""
import os, sys, time, json
sys.path.insert(0, {root!r} + "/frontend_python"); sys.path.insert(0, {root!r} + "/frontend_python/examples")
sys.path.insert(0, {moddir!r})
import torch
import warpweave as cutlass, warpweave.cute as cute
import tensorop_gemm as tg
from ww_bench_gemm_tune import build
SPACE, n = {space!r}, {n}
a = torch.randn(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
b = torch.randn(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
c = torch.empty(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
args = [tg._as_runtime(t, False, cutlass.Float16) for t in (a, b, c)]
t0 = time.perf_counter()
best = cute.testing.tune(build, SPACE, cute.testing.JitArguments(*args), warmup_iterations=5, iterations=20)
seconds = time.perf_counter() - t0
def timed(cfg):
    return cute.testing.benchmark(build(*args, **cfg), warmup_iterations=10, iterations=50)
out = {{"best": {{k: list(v) if isinstance(v, tuple) else v for k, v in best.items()}}, "search_s": seconds}}
if {measure}:
    out["best_us"], out["default_us"] = timed(best), timed({{}})
print(json.dumps(out))
"""


def gemm_search(n):
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "ww_bench_gemm_tune.py"), "w") as f:
            f.write(_TUNE_MODULE.format(atoms=ATOMS))
        env = dict(os.environ, WARPWEAVE_CACHE_DIR=os.path.join(tmp, "cache"), WARPWEAVE_PROGRESS="0")
        env.pop("WARPWEAVE_DISABLE_CACHE", None)
        for label, measure in (("first process", True), ("next process", False)):
            code = _TUNE.format(root=ROOT, moddir=tmp, space=SPACE, n=n, measure=measure)
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(r.stderr[-2000:])
            rows[label] = json.loads(r.stdout.strip().splitlines()[-1])
    first, nxt = rows["first process"], rows["next process"]
    flops = 2 * n ** 3
    print(f"tune tensorop_gemm {n}^3: best {first['best']} {first['best_us']:.1f} us "
          f"({flops / first['best_us'] / 1e6:.1f} TFLOP/s) against the default's {first['default_us']:.1f} us; "
          f"search {first['search_s']:.1f} s, next process starts tuned in {nxt['search_s']:.2f} s "
          f"(same choice: {nxt['best'] == first['best']})")
    return rows


def elementwise(torch):
    import warpweave.cute as cute
    from elementwise_add import elementwise_add

    M = N = 8192
    a, b = (torch.randn(M, N, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty_like(a)
    tuned = cute.testing.autotune_jit(params_dict={"copy_bits": [16, 32, 64, 128]}, warmup_iterations=20,
                                      iterations=100, use_table=False)(elementwise_add)
    t0 = time.perf_counter()
    tuned(a, b, c)
    seconds = time.perf_counter() - t0
    torch.testing.assert_close(c, a + b)
    s = tuned.last_search
    trials = {autotune_text(t.config): t.time_us for t in s.trials}
    print(f"autotune_jit elementwise_add 8192^2 fp16: {s.best} in {seconds:.2f} s; times (us) {trials}")
    return {"best": s.best, "trials_us": trials, "search_s": seconds}


def autotune_text(cfg):
    from warpweave._dsl.tuning.autotune import config_text

    return config_text(cfg)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--compile-only", action="store_true", help="only the compile figures (no GPU needed)")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "frontend_python"))
    sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples"))
    from warpweave import _core

    gpu = _core.driver_available() and _core.device_count() > 0
    out = {"compile": compile_parallelism(None if gpu else (os.environ.get("WARPWEAVE_ARCH") or "sm_80"))}
    if gpu and not args.compile_only:
        import torch

        out["elementwise"] = elementwise(torch)
        out["gemm"] = gemm_search(args.n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
