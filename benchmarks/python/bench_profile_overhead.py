"""What intra-kernel profiling costs: the same GEMM compiled with and without warpweave.profile, timed alike.

  - tensorop_gemm (mma.sync, fp16 -> fp32, every warp marks its mainloop and epilogue) at n^3;
  - on sm_90, dense_gemm_persistent (the TMA warp marks each tile's loads, the consumer warps each tile's
    mainloop and epilogue).

For each: the median kernel time unprofiled and profiled (CUDA events, warm-up first, alternating runs so that
clock drift hits both alike), the overhead, the events recorded per run, and the trace of the last profiled run
(--trace-dir, default the working directory) for ui.perfetto.dev.

    python benchmarks/python/bench_profile_overhead.py [--n 4096] [--json out.json] [--trace-dir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import ROOT, median_ms  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples", "hopper"))


def _alternating(torch, plain, profiled, rounds=7):
    """Medians over rounds of (plain, profiled) timings, interleaved."""
    a, b = [], []
    for _ in range(rounds):
        a.append(median_ms(plain, torch, warmup=3, reps=20))
        b.append(median_ms(profiled, torch, warmup=3, reps=20))
    return statistics.median(a), statistics.median(b)


def _report(name, t_plain, t_prof, prof, trace_path):
    data = prof.read()
    trace = prof.write_trace(trace_path)
    spans = sum(e["ph"] == "X" for e in trace["traceEvents"])
    row = {"kernel": name, "plain_ms": round(t_plain, 4), "profiled_ms": round(t_prof, 4),
           "overhead_pct": round(100 * (t_prof / t_plain - 1), 2), "events": len(data.events), "regions": spans,
           "dropped": data.total_dropped, "problems": trace["otherData"]["problems"][:3], "trace": trace_path}
    print(f"{name:<28} plain {t_plain * 1e3:9.1f} us  profiled {t_prof * 1e3:9.1f} us  overhead "
          f"{row['overhead_pct']:+6.2f}%  {len(data.events)} events, {spans} regions -> {trace_path}")
    return row


def tensorop(torch, n, trace_dir):
    import warpweave as cutlass
    import warpweave.cute as cute
    import warpweave.profile as wp
    import tensorop_gemm as tg

    a = torch.randn(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    b = torch.randn(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    c = torch.empty(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    args = [tg._as_runtime(t, False, cutlass.Float16) for t in (a, b, c)]
    gemm = tg.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
    plain = cute.compile(gemm, *args)
    ctas = (-(-n // 128)) ** 2
    prof = wp.Profiler(max_warps=ctas * 4, events_per_warp=4)
    profiled = prof.compile(gemm, *args)
    t_plain, t_prof = _alternating(torch, lambda: plain(*args), lambda: profiled(*args))
    prof.reset()
    profiled(*args)
    return _report(f"tensorop_gemm {n}^3", t_plain, t_prof, prof, os.path.join(trace_dir, "tensorop_gemm.json"))


def persistent(torch, n, trace_dir):
    import warpweave as cutlass
    import warpweave.cute as cute
    import warpweave.profile as wp
    from warpweave.cute.runtime import from_dlpack
    import dense_gemm_persistent as dg

    a = torch.randn(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    b = torch.randn(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    c = torch.empty(1, n, n, device="cuda", dtype=torch.float16).permute(1, 2, 0)
    args = [dg._mark(from_dlpack(t, assumed_align=16), False, cutlass.Float16) for t in (a, b, c)]
    gemm = dg.HopperPersistentDenseGemm(cutlass.Float32, (128, 256), (1, 1), 1, True)
    plain = cute.compile(gemm, *args)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles = -(-n // 128) * -(-n // 256)
    prof = wp.Profiler(max_warps=sms * gemm.num_threads // 32, events_per_warp=4 * -(-tiles // sms) + 4)
    profiled = prof.compile(gemm, *args)
    t_plain, t_prof = _alternating(torch, lambda: plain(*args), lambda: profiled(*args))
    prof.reset()
    profiled(*args)
    return _report(f"dense_gemm_persistent {n}^3", t_plain, t_prof, prof,
                   os.path.join(trace_dir, "dense_gemm_persistent.json"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--trace-dir", default=".")
    args = p.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("bench_profile_overhead: needs a GPU")
        return 0
    os.makedirs(args.trace_dir, exist_ok=True)
    rows = [tensorop(torch, args.n, args.trace_dir)]
    if torch.cuda.get_device_capability() == (9, 0):
        rows.append(persistent(torch, args.n, args.trace_dir))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
