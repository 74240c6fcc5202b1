"""QuACK's memory-bound kernels timed under CuTe DSL itself and under warpweave, with one timer: RMSNorm, LayerNorm,
softmax and cross-entropy, forward and backward, bf16, at 32768x8192 and 8192x32768. Each row gives both times, the
ratio (CuTe DSL's time over warpweave's: above 1 is warpweave faster) and each one's bandwidth as a fraction of a
device-to-device copy's, measured in the same process.

    python benchmarks/python/bench_quack.py --warpweave-python PY_WW --cutedsl-python PY_REF --quack-src DIR \\
        [--shapes 32768x8192,8192x32768] [--kernels rmsnorm_fwd,...] [--json results.json]

Each implementation runs this same file with --inner in a process of its own (its interpreter reaches `cutlass`:
CuTe DSL's, or warpweave through the `cutlass` alias, which PY_WW must have, as benchmarks/python/quack_tests.py
checks), importing the same QuACK (--quack-src first on its path). A kernel is compiled and checked against
QuACK's own reference on random data first (a wrong result is reported, not timed), then timed with CUDA events
over a batch of calls after warm-up; the median of several batches is kept. Needs a GPU and torch.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SHAPES = ((32768, 8192), (8192, 32768))
KERNELS = ("rmsnorm_fwd", "rmsnorm_bwd", "layernorm_fwd", "layernorm_bwd", "softmax_fwd", "softmax_bwd",
           "cross_entropy_fwd", "cross_entropy_bwd")


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


def _time(torch, fn, batches: int = 7, per_batch: int = 10) -> float:
    """Median over batches of the mean time of one call (seconds), by CUDA events."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(batches):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(per_batch):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3 / per_batch)
    return sorted(times)[len(times) // 2]


def inner(ns) -> int:
    import torch

    sys.path.insert(0, ns.quack_src)
    import importlib

    import cutlass  # noqa: F401 - CuTe DSL's, or warpweave through the alias

    # the modules themselves: `import quack.rmsnorm as rms` would give the function quack/__init__ exports as
    # quack.rmsnorm
    rms, sm, ce = (importlib.import_module(f"quack.{m}") for m in ("rmsnorm", "softmax", "cross_entropy"))

    impl = "warpweave" if cutlass.__spec__.name == "warpweave" else "cutedsl"
    rows = []
    for shape in ns.shapes.split(","):
        M, N = (int(v) for v in shape.split("x"))
        src = torch.empty(M * N * 2, device="cuda", dtype=torch.uint8)
        dst = torch.empty_like(src)
        copy_s = _time(torch, lambda: dst.copy_(src))
        copy_bw = 2 * src.numel() / copy_s
        cases = _cases(torch, (rms, sm, ce), M, N)
        for name in ns.kernels.split(","):
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
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(ns.json, "w") as f:
        json.dump(rows, f)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warpweave-python")
    p.add_argument("--cutedsl-python")
    p.add_argument("--quack-src", required=True)
    p.add_argument("--shapes", default=",".join(f"{m}x{n}" for m, n in SHAPES))
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--json")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ns = p.parse_args(argv)
    ns.quack_src = os.path.abspath(ns.quack_src)
    if ns.inner:
        return inner(ns)
    results = {}
    for impl, py in (("cutedsl", ns.cutedsl_python), ("warpweave", ns.warpweave_python)):
        if not py:
            continue
        out = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"bench_quack_{impl}_{os.getpid()}.json")
        cmd = [py, os.path.abspath(__file__), "--inner", "--quack-src", ns.quack_src, "--shapes", ns.shapes,
               "--kernels", ns.kernels, "--json", out]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=ns.timeout)
            rows = json.load(open(out)) if os.path.exists(out) else []
            if r.returncode != 0 and not rows:
                print(f"{impl}: exit {r.returncode}: {(r.stderr or r.stdout).strip()[-500:]}")
        except subprocess.TimeoutExpired:
            rows = []
            print(f"{impl}: timed out after {ns.timeout} s")
        results[impl] = {(row["kernel"], row["shape"]): row for row in rows}
    print("\n| kernel | shape | CuTe DSL µs | warpweave µs | ratio | CuTe DSL / copy BW | warpweave / copy BW |")
    print("|---|---|---|---|---|---|---|")
    table = []
    for shape in ns.shapes.split(","):
        for name in ns.kernels.split(","):
            c = results.get("cutedsl", {}).get((name, shape), {})
            w = results.get("warpweave", {}).get((name, shape), {})
            ratio = round(c["us"] / w["us"], 3) if "us" in c and "us" in w else None
            table.append({"kernel": name, "shape": shape, "cutedsl": c, "warpweave": w, "ratio": ratio})
            cell = lambda r: f"{r['us']}" if "us" in r else (r.get("error", "-")[:60] if r else "-")  # noqa: E731
            bw = lambda r: f"{r['bw_fraction_of_copy']}" if "us" in r else "-"  # noqa: E731
            print(f"| {name} | {shape} | {cell(c)} | {cell(w)} | {ratio if ratio else '-'} | {bw(c)} | {bw(w)} |")
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(table, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
