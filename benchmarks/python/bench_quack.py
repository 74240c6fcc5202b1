"""QuACK's kernels timed under CuTe DSL itself and under warpweave, with one timer:

- the memory-bound ones: RMSNorm, LayerNorm, softmax and cross-entropy, forward and backward, bf16, at 32768x8192
  and 8192x32768 (--shapes). Each row gives both times, the ratio (CuTe DSL's time over warpweave's: above 1 is
  warpweave faster) and each one's bandwidth as a fraction of a device-to-device copy's, measured in the same
  process;
- its sm_90 GEMM (`gemm`: quack.gemm_interface.gemm, bf16 in and out, f32 accumulation, in the configuration QuACK
  picks without tuning, tuned=False) at 4096^3 and 8192^3 (--gemm-shapes, MxNxK), B handed k-major as a linear
  layer's weight is, beside cuBLAS (torch.matmul on the same operands in the same process, its batches taking
  turns with the GEMM's). Each row gives TFLOP/s for CuTe DSL, warpweave and cuBLAS, the ratio as above, and each
  implementation's rate over the cuBLAS of its own run. Untuned, because QuACK's autotuner would compile and time
  dozens of configurations per shape, and could pick a different one for each implementation.

    python benchmarks/python/bench_quack.py --warpweave-python PY_WW --cutedsl-python PY_REF --quack-src DIR \\
        [--shapes 32768x8192,8192x32768] [--gemm-shapes 4096x4096x4096,8192x8192x8192] \\
        [--kernels rmsnorm_fwd,...,gemm] [--json results.json]

Each implementation runs this same file with --inner in a process of its own (its interpreter reaches `cutlass`:
CuTe DSL's, or warpweave through the `cutlass` alias, which PY_WW must have, as benchmarks/python/quack_tests.py
checks), importing the same QuACK (--quack-src first on its path), with QuACK's disk cache of compiled kernels off:
its key names the `cutlass` version, which a rebuilt warpweave keeps, so a warm machine would hand a new build the
kernels of an old one. A kernel is compiled and checked on random data first (a wrong result is reported, not
timed): the norms against QuACK's own references, the GEMM against the f32 product, its output poisoned with NaN
before the call. Then it is timed with CUDA events over batches of calls after warm-up; the median of the batches
is kept. --rounds (2) runs each implementation that often, taking turns at going first; a row keeps its fastest
round. Needs a GPU and torch.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys

SHAPES = ((32768, 8192), (8192, 32768))
GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192))
NORM_KERNELS = ("rmsnorm_fwd", "rmsnorm_bwd", "layernorm_fwd", "layernorm_bwd", "softmax_fwd", "softmax_bwd",
                "cross_entropy_fwd", "cross_entropy_bwd")
KERNELS = NORM_KERNELS + ("gemm",)


def _cases(torch, quack_mods, M, N):
    """name -> (call, check, bytes moved): each call runs the kernel once on tensors made here."""
    rms, sm, ce = quack_mods
    dev, bf = "cuda", torch.bfloat16
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(M, N, device=dev, dtype=bf, generator=gen)
    dout = torch.randn(M, N, device=dev, dtype=bf, generator=gen)
    w = torch.randn(N, device=dev, dtype=torch.float32, generator=gen)
    target = torch.randint(0, N, (M,), device=dev, generator=gen)
    mn2 = M * N * 2
    out = {}

    def close(got, ref, atol):
        return torch.allclose(got.float(), ref.float(), atol=atol, rtol=1e-2)

    out["rmsnorm_fwd"] = (lambda: rms.rmsnorm_fwd(x, w, store_rstd=True),
                          lambda: close(rms.rmsnorm_fwd(x, w)[0], rms.rmsnorm_ref(x, w), 5e-2), 2 * mn2)
    _, _, rstd = rms.rmsnorm_fwd(x, w, store_rstd=True)
    out["rmsnorm_bwd"] = (lambda: rms.rmsnorm_bwd(x, w, dout, rstd),
                          lambda: close(rms.rmsnorm_bwd(x, w, dout, rstd)[0], rms.rmsnorm_bwd_ref(x, w, dout, rstd)[0],
                                        1e-1), 3 * mn2)
    lf = rms.layernorm_fwd(x, w, return_rstd=True, return_mean=True)
    out["layernorm_fwd"] = (lambda: rms.layernorm_fwd(x, w, return_rstd=True, return_mean=True),
                            lambda: close(lf[0], rms.layernorm_ref(x, w), 5e-2), 2 * mn2)
    out["layernorm_bwd"] = (lambda: rms.layernorm_bwd(x, w, dout, lf[1], lf[2], has_bias=False),
                            lambda: bool(torch.isfinite(rms.layernorm_bwd(x, w, dout, lf[1], lf[2],
                                                                          has_bias=False)[0].float()).all()),
                            3 * mn2)
    out["softmax_fwd"] = (lambda: sm.softmax_fwd(x),
                          lambda: close(sm.softmax_fwd(x), torch.softmax(x.float(), -1), 1e-2), 2 * mn2)
    y = sm.softmax_fwd(x)
    out["softmax_bwd"] = (lambda: sm.softmax_bwd(dout, y),
                          lambda: close(sm.softmax_bwd(dout, y), (y.float() * (dout.float() - (dout.float() * y.float())
                                                                                 .sum(-1, keepdim=True))), 5e-2),
                          3 * mn2)
    ref_loss = torch.nn.functional.cross_entropy(x.float(), target, reduction="none")
    out["cross_entropy_fwd"] = (lambda: ce.cross_entropy_fwd(x, target),
                                lambda: close(ce.cross_entropy_fwd(x, target), ref_loss, 5e-2), mn2)
    loss, lse = ce.cross_entropy_fwd(x, target, return_lse=True)
    dloss = torch.randn(M, device=dev, dtype=torch.float32, generator=gen)
    # its check: the gradient of the loss is softmax(x) minus the one-hot target, scaled by dloss
    ref_dx = (torch.softmax(x.float(), -1) - torch.nn.functional.one_hot(target, N).float()) * dloss[:, None]
    out["cross_entropy_bwd"] = (lambda: ce.cross_entropy_bwd(x, target, dloss, lse),
                                lambda: close(ce.cross_entropy_bwd(x, target, dloss, lse), ref_dx, 5e-2), 2 * mn2)
    return out


def parse_gemm_shapes(text: str) -> list[tuple[int, int, int]]:
    """'MxNxK,...' -> [(M, N, K), ...]; one extent alone is a cube."""
    shapes = []
    for item in text.split(","):
        dims = [int(v) for v in item.strip().split("x")]
        if len(dims) == 1:
            dims *= 3
        if len(dims) != 3 or min(dims) <= 0:
            raise ValueError(f"a GEMM shape is MxNxK (or one extent for a cube), not {item!r}")
        shapes.append(tuple(dims))
    return shapes


def shape_name(shape) -> str:
    return "x".join(str(v) for v in shape)


def tflops(M: int, N: int, K: int, seconds: float) -> float:
    """A GEMM's rate: a multiply and an add for each of the M*N*K products."""
    return 2 * M * N * K / seconds / 1e12


def gemm_within_tolerance(err: float, err_cublas: float, ref_max: float) -> bool:
    """The GEMM's largest deviation from the f32 product is at most twice cuBLAS's (both round f32 sums of the same
    products to bf16, so their deviations are alike; a kernel that drops, repeats or misplaces a k-block or a tile
    deviates by orders more) plus a thousandth of the product's largest magnitude. NaN (poison left in the output)
    fails."""
    return math.isfinite(err) and err <= 2 * err_cublas + 1e-3 * ref_max


def _gemm_config(gemm_module, M: int, N: int) -> str | None:
    """The tile configuration QuACK's GEMM ran for its last (M, N) output, read from the plan its eager path records
    (a private table of quack.gemm_interface: None where it is not there). Both implementations should report the
    same one: with tuned=False QuACK picks it from the device (and nvMatmulHeuristics where installed), not by
    timing."""
    plans = getattr(gemm_module, "_gemm_iface_plan_cache", None) or {}
    for plan in reversed(list(plans.values())):
        c = getattr(plan, "config", None)
        if c is not None and tuple(getattr(plan, "out_shape", ())) == (M, N):
            return (f"{c.tile_m}x{c.tile_n} cluster {c.cluster_m}x{c.cluster_n} "
                    f"{'pingpong' if c.pingpong else 'cooperative'}" + (" swap_ab" if c.swap_ab else ""))
    return None


def _gemm_case(torch, gemm_module, M: int, N: int, K: int):
    """(QuACK's call, cuBLAS's call, check) on bf16 operands made here, each call into an output of its own. The
    check returns (ok, QuACK's and cuBLAS's largest deviation from the f32 product, the product's largest
    magnitude)."""
    dev, bf = "cuda", torch.bfloat16
    torch.backends.cuda.matmul.allow_tf32 = False  # the f32 reference below in full f32 (torch's default)
    gen = torch.Generator(device=dev).manual_seed(0)
    a = torch.randn(M, K, device=dev, dtype=bf, generator=gen)
    b = torch.randn(N, K, device=dev, dtype=bf, generator=gen).mT  # (K, N), k-major
    d = torch.empty(M, N, device=dev, dtype=bf)
    d_cublas = torch.empty_like(d)

    def call():
        gemm_module.gemm(a, b, out=d, tuned=False)

    def cublas():
        torch.matmul(a, b, out=d_cublas)

    def check():
        d.fill_(float("nan"))
        call()
        cublas()
        exact = a.float() @ b.float()
        err = (d.float() - exact).abs().max().item()
        err_cublas = (d_cublas.float() - exact).abs().max().item()
        ref_max = exact.abs().max().item()
        return gemm_within_tolerance(err, err_cublas, ref_max), err, err_cublas, ref_max

    return call, cublas, check


def _time_interleaved(torch, fns, batches: int = 7, per_batch: int = 10, warmup: int = 3) -> list[float]:
    """For each of fns, the median over batches of the mean time of one call (seconds), by CUDA events. The
    functions' batches take turns, so that a drift of the clocks (a GEMM heats the chip) falls on each alike."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(batches):
        for fn, t in zip(fns, times):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(per_batch):
                fn()
            b.record()
            torch.cuda.synchronize()
            t.append(a.elapsed_time(b) / 1e3 / per_batch)
    return [sorted(t)[len(t) // 2] for t in times]


def _time(torch, fn, batches: int = 7, per_batch: int = 10) -> float:
    return _time_interleaved(torch, [fn], batches, per_batch)[0]


def _error_text(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


def _norm_rows(torch, impl, ns, kernels):
    import importlib

    # the modules themselves: `import quack.rmsnorm as rms` would give the function quack/__init__ exports as
    # quack.rmsnorm
    mods = tuple(importlib.import_module(f"quack.{m}") for m in ("rmsnorm", "softmax", "cross_entropy"))
    for shape in ns.shapes.split(","):
        M, N = (int(v) for v in shape.split("x"))
        src = torch.empty(M * N * 2, device="cuda", dtype=torch.uint8)
        dst = torch.empty_like(src)
        copy_s = _time(torch, lambda: dst.copy_(src))
        copy_bw = 2 * src.numel() / copy_s
        cases = _cases(torch, mods, M, N)
        for name in kernels:
            row = {"impl": impl, "kernel": name, "shape": shape}
            try:
                call, check, nbytes = cases[name]
                call()
                torch.cuda.synchronize()
                if not check():
                    row["error"] = "wrong result against QuACK's reference"
                else:
                    s = _time(torch, call)
                    row.update(us=round(s * 1e6, 2), bw_fraction_of_copy=round(nbytes / s / copy_bw, 3))
            except Exception as e:  # noqa: BLE001 - reported as the row's outcome
                row["error"] = _error_text(e)
            yield row
        del cases, src, dst


def _gemm_rows(torch, impl, ns):
    import importlib

    gemm_module = importlib.import_module("quack.gemm_interface")
    for M, N, K in parse_gemm_shapes(ns.gemm_shapes):
        row = {"impl": impl, "kernel": "gemm", "shape": shape_name((M, N, K))}
        try:
            call, cublas, check = _gemm_case(torch, gemm_module, M, N, K)
            ok, err, err_cublas, ref_max = check()
            row.update(config=_gemm_config(gemm_module, M, N), max_err=err, cublas_max_err=err_cublas,
                       ref_max=ref_max)
            if not ok:
                row["error"] = f"wrong result: largest deviation from the f32 product {err:.4g}, cuBLAS's " \
                               f"{err_cublas:.4g}"
            else:
                s, s_cublas = _time_interleaved(torch, [call, cublas], per_batch=20, warmup=20)
                row.update(us=round(s * 1e6, 2), tflops=round(tflops(M, N, K, s), 1),
                           cublas_us=round(s_cublas * 1e6, 2), cublas_tflops=round(tflops(M, N, K, s_cublas), 1))
        except Exception as e:  # noqa: BLE001 - reported as the row's outcome
            row["error"] = _error_text(e)
        yield row


def inner(ns) -> int:
    import torch

    sys.path.insert(0, ns.quack_src)
    import cutlass  # noqa: F401 - CuTe DSL's, or warpweave through the alias

    impl = "warpweave" if cutlass.__spec__.name == "warpweave" else "cutedsl"
    kernels = ns.kernels.split(",")
    norms = [k for k in kernels if k != "gemm"]
    rows = []
    groups = ([_norm_rows(torch, impl, ns, norms)] if norms else []) + \
        ([_gemm_rows(torch, impl, ns)] if "gemm" in kernels else [])
    for group in groups:
        for row in group:
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(ns.json, "w") as f:
        json.dump(rows, f)
    return 0


def _cell(r: dict, key: str) -> str:
    return f"{r[key]}" if key in r else (r.get("error", "-")[:60] if r else "-")


def norm_table(results: dict, shapes: list[str], kernels: list[str]) -> tuple[list[dict], list[str]]:
    """The memory-bound rows: (rows for the JSON, the markdown table's lines)."""
    lines = ["| kernel | shape | CuTe DSL µs | warpweave µs | ratio | CuTe DSL / copy BW | warpweave / copy BW |",
             "|---|---|---|---|---|---|---|"]
    table = []
    for shape in shapes:
        for name in kernels:
            c = results.get("cutedsl", {}).get((name, shape), {})
            w = results.get("warpweave", {}).get((name, shape), {})
            ratio = round(c["us"] / w["us"], 3) if "us" in c and "us" in w else None
            table.append({"kernel": name, "shape": shape, "cutedsl": c, "warpweave": w, "ratio": ratio})
            bw = lambda r: f"{r['bw_fraction_of_copy']}" if "us" in r else "-"  # noqa: E731
            lines.append(f"| {name} | {shape} | {_cell(c, 'us')} | {_cell(w, 'us')} | {ratio if ratio else '-'} | "
                         f"{bw(c)} | {bw(w)} |")
    return table, lines


def gemm_table(results: dict, shapes: list[str]) -> tuple[list[dict], list[str]]:
    """The GEMM rows: (rows for the JSON, the markdown table's lines). The ratio is CuTe DSL's time over warpweave's
    (above 1 is warpweave faster); each implementation is also given against the cuBLAS timed in its own run, which
    shows whether the two runs saw the same clocks."""
    lines = ["| kernel | shape | config | CuTe DSL TFLOP/s | warpweave TFLOP/s | ratio | cuBLAS TFLOP/s (CuTe DSL's "
             "run / warpweave's) | CuTe DSL / cuBLAS | warpweave / cuBLAS |",
             "|---|---|---|---|---|---|---|---|---|"]
    table = []
    for shape in shapes:
        c = results.get("cutedsl", {}).get(("gemm", shape), {})
        w = results.get("warpweave", {}).get(("gemm", shape), {})
        ratio = round(c["us"] / w["us"], 3) if "us" in c and "us" in w else None
        vs = lambda r: round(r["cublas_us"] / r["us"], 3) if "us" in r and "cublas_us" in r else None  # noqa: E731
        table.append({"kernel": "gemm", "shape": shape, "cutedsl": c, "warpweave": w, "ratio": ratio,
                      "cutedsl_vs_cublas": vs(c), "warpweave_vs_cublas": vs(w)})
        configs = [r["config"] for r in (c, w) if r.get("config")]
        config = " / ".join(dict.fromkeys(configs)) or "-"  # one where both ran the same
        cublas = " / ".join(f"{r['cublas_tflops']}" if "cublas_tflops" in r else "-" for r in (c, w))
        lines.append(f"| gemm | {shape} | {config} | {_cell(c, 'tflops')} | {_cell(w, 'tflops')} | "
                     f"{ratio if ratio else '-'} | {cublas} | {vs(c) or '-'} | {vs(w) or '-'} |")
    return table, lines


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warpweave-python")
    p.add_argument("--cutedsl-python")
    p.add_argument("--quack-src", required=True)
    p.add_argument("--shapes", default=",".join(f"{m}x{n}" for m, n in SHAPES), help="the memory-bound rows' MxN")
    p.add_argument("--gemm-shapes", default=",".join(shape_name(s) for s in GEMM_SHAPES),
                   help="the GEMM rows' MxNxK (one extent: a cube)")
    p.add_argument("--kernels", default=",".join(KERNELS), help=f"a subset of {','.join(KERNELS)}")
    p.add_argument("--json")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--rounds", type=int, default=2,
                   help="runs of each implementation, in alternating order; each row keeps its fastest run")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ns = p.parse_args(argv)
    unknown = sorted(set(ns.kernels.split(",")) - set(KERNELS))
    if unknown:
        p.error(f"unknown kernels {','.join(unknown)}: choose from {','.join(KERNELS)}")
    try:
        ns.gemm_shapes = ",".join(shape_name(s) for s in parse_gemm_shapes(ns.gemm_shapes))
    except ValueError as e:
        p.error(str(e))
    ns.quack_src = os.path.abspath(ns.quack_src)
    return ns


def _run_inner(ns, impl: str, py: str) -> list[dict]:
    """One implementation's rows, from a process of its own (--inner)."""
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench_quack_{impl}_{os.getpid()}.json")
    if os.path.exists(out):
        os.remove(out)  # a round's rows must not be an earlier round's
    cmd = [py, os.path.abspath(__file__), "--inner", "--quack-src", ns.quack_src, "--shapes", ns.shapes,
           "--gemm-shapes", ns.gemm_shapes, "--kernels", ns.kernels, "--json", out]
    env = dict(os.environ, QUACK_CACHE_ENABLED="0")  # each run compiles its own kernels (the docstring says why)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=ns.timeout, env=env)
    except subprocess.TimeoutExpired:
        print(f"{impl}: timed out after {ns.timeout} s")
        return []
    rows = json.load(open(out)) if os.path.exists(out) else []
    if r.returncode != 0 and not rows:
        print(f"{impl}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-500:]}")
    return rows


def main(argv=None) -> int:
    ns = parse_args(argv)
    if ns.inner:
        return inner(ns)
    results = {"cutedsl": {}, "warpweave": {}}
    impls = [(impl, py) for impl, py in (("cutedsl", ns.cutedsl_python), ("warpweave", ns.warpweave_python)) if py]
    for rnd in range(ns.rounds):
        # Odd rounds run warpweave first: whichever runs second finds the clocks as the first one's full-load run
        # left them, so a fixed order would charge that to one implementation.
        for impl, py in (impls if rnd % 2 == 0 else impls[::-1]):
            for row in _run_inner(ns, impl, py):
                key = (row["kernel"], row["shape"])
                best = results[impl].get(key)
                # A round without a time (a wrong result, an error) is what the row reports, whatever other
                # rounds measured; otherwise the fastest round's row, its cuBLAS time being of that same run.
                if best is None or ("us" in best and ("us" not in row or row["us"] < best["us"])):
                    results[impl][key] = dict(row, rounds=ns.rounds)
    kernels = ns.kernels.split(",")
    norms = [k for k in kernels if k != "gemm"]
    table = []
    if norms:
        rows, lines = norm_table(results, ns.shapes.split(","), norms)
        table += rows
        print("\n" + "\n".join(lines))
    if "gemm" in kernels:
        rows, lines = gemm_table(results, ns.gemm_shapes.split(","))
        table += rows
        print("\n" + "\n".join(lines))
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(table, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
