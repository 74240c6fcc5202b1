"""Host cost of a call whose host code branches, computes and loops over a runtime bound, launching a kernel at
each trip (the native fast path runs the host program in C++, bindings/host_program_run.cpp), against raw launches
of the same kernel, as many as the call makes:

| path | what runs per call |
| --- | --- |
| compiled, host loop | host_loop_axpy(a, b, c, alpha, parts): parts launches (1 to 4), their count and sizes computed |
| compiled, direct | the same call written out in the timing loop (no lambda unpacking the views per call) |
| compiled, Python path | the same call on the general Python path (prepare + launch), what such calls took before |
| raw Launcher x parts | the kernel's _core.Launcher called `parts` times from Python, parameters packed once each |
| raw C x parts | cuLaunchKernel `parts` times in a C loop, parameters packed once: the driver's own cost (GPU only) |

    python benchmarks/python/bench_host_loop_overhead.py [--calls 20000] [--json out.json]
    python benchmarks/python/bench_host_loop_overhead.py --stub    # without a GPU: the stand-in driver

The goal: the compiled call within 1.2x of `parts` raw launches on the GPU (raw C x parts). --stub runs on any
machine against the stand-in driver of tests/python/data/mock_libcuda.c, whose cuLaunchKernel returns at once, so
the figures there are the host side alone (compiled for WARPWEAVE_ARCH, default sm_90a).
"""
from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_launch_overhead import (  # noqa: E402
    RawLaunch, best_per_call, parse_args, python_loop, report_stub, rerun_on_stand_in, round_robin)

N = 1 << 16
PARTS = (1, 2, 4)


def host_loop_function():
    """A @cute.jit function whose host side, at each call, splits the problem into `parts` chunks (a division and
    a branch on the result), and launches the kernel once per chunk in a loop over the runtime extent."""
    import warpweave as cutlass
    import warpweave.cute as cute

    @cute.kernel
    def axpy_part(gA: cute.Tensor, gB: cute.Tensor, gC: cute.Tensor, alpha: cutlass.Float32, start: cutlass.Int32,
                  count: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * 128 + tidx
        if i < count:
            gC[start + i] = alpha * gA[start + i] + gB[start + i]

    @cute.jit
    def host_loop_axpy(mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, alpha: cutlass.Float32,
                       parts: cutlass.Int32):
        n = cute.size(mA)
        per = (n + parts - 1) // parts
        if per < 128:
            per = 128
        for start in range(0, n, per):
            count = min(per, n - start)
            axpy_part(mA, mB, mC, alpha * 0.5, start, count).launch(grid=((count + 127) // 128, 1, 1),
                                                                     block=(128, 1, 1))

    return host_loop_axpy


def _raw_launchers(compiled, views, parts):
    """The call's launches ([(launcher, grid, stream, params)]), each packed once, as the Python call packs them."""
    from warpweave import _core

    out = []
    for f, grid, block, cluster, smem, stream, params, offsets in (l[:8] for l in compiled.prepare(*views, 2.0,
                                                                                                    parts)):
        out.append((_core.Launcher(f, list(block), list(cluster), int(smem), list(offsets)), tuple(grid), stream,
                    params))
    assert len(out) == parts, (len(out), parts)
    return out


def _python_path(compiled, views, parts):
    from warpweave import _core

    def call():
        for launch in compiled.prepare(*views, 2.0, parts):
            _core.launch(*launch)
    return call


def _direct(compiled, views, parts, clock):
    """timed(n): microseconds per call of n calls written out in the loop, compiled(a, b, c, 2.0, parts), as a
    user's own loop makes them (the other compiled figures call through a lambda that unpacks the views)."""
    a, b, c = views

    def timed(n):
        t0 = clock()
        for _ in range(n):
            compiled(a, b, c, 2.0, parts)
        return (clock() - t0) / n * 1e6
    return timed


def _raw_python(raws):
    def call():
        for launcher, (gx, gy, gz), stream, params in raws:
            launcher(gx, gy, gz, stream, params)
    return call


def measure(calls: int) -> dict:
    import torch

    import warpweave as cutlass
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    a = torch.randn(N, device="cuda")
    b, c = torch.randn_like(a), torch.empty_like(a)
    views = [from_dlpack(t).mark_layout_dynamic() for t in (a, b, c)]
    compiled = cute.compile(host_loop_function(), *views, cutlass.Float32(2.0), cutlass.Int32(2))
    out, paths = {}, {}
    for parts in PARTS:
        c.zero_()
        compiled(*views, 2.0, parts)
        compiled(*views, 2.0, parts)  # the native path
        torch.cuda.synchronize()
        torch.testing.assert_close(c, a + b)
        raws = _raw_launchers(compiled, views, parts)
        raw = RawLaunch(compiled, compiled.prepare(*views, 2.0, parts)[0])
        c_loop = raw.c_loop()
        paths[f"raw_c_x{parts}_us"] = lambda n, t=c_loop, p=parts: t(n * p) * p
        paths[f"raw_python_x{parts}_us"] = python_loop(_raw_python(raws))
        paths[f"compiled_host_loop_{parts}_us"] = python_loop(lambda p=parts: compiled(*views, 2.0, p))
        paths[f"compiled_direct_{parts}_us"] = _direct(compiled, views, parts, time.perf_counter)
        paths[f"python_path_{parts}_us"] = python_loop(_python_path(compiled, views, parts))
    stats0 = compiled._native.stats
    for k, (lo, sh) in round_robin(paths, torch.cuda.synchronize, max(calls // 5, 100)).items():
        out[k], out["short_" + k] = lo, sh
    stats = compiled._native.stats
    out["native_calls"], out["native_fallbacks"] = stats[0] - stats0[0], stats[1] - stats0[1]
    return out


def measure_stub(calls: int) -> dict:
    """Against the stand-in driver: microseconds of this process's CPU time per call (the machine's other work
    does not count), best of 5 batches."""
    import numpy as np

    import warpweave as cutlass
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack

    arrays = [np.zeros(N, np.float32) for _ in range(3)]
    views = [from_dlpack(x).mark_layout_dynamic() for x in arrays]
    compiled = cute.compile(host_loop_function(), *views, cutlass.Float32(2.0), cutlass.Int32(2))

    def best(fn):
        return best_per_call(fn, calls, time.process_time, warmup=500)

    r = {"empty_call_us": best(lambda: None)}
    for parts in PARTS:
        compiled(*views, 2.0, parts)
        raws = _raw_launchers(compiled, views, parts)
        r[f"raw_python_x{parts}_us"] = best(_raw_python(raws))
        r[f"compiled_host_loop_{parts}_us"] = best(lambda p=parts: compiled(*views, 2.0, p))
        direct = _direct(compiled, views, parts, time.process_time)
        r[f"compiled_direct_{parts}_us"] = min(direct(calls // 5) for _ in range(5))
        r[f"python_path_{parts}_us"] = best(_python_path(compiled, views, parts))
    r["native_calls"], r["native_fallbacks"] = compiled._native.stats
    return r


def run_stub(calls: int, json_path) -> int:
    """measure_stub in a process of its own whose driver is the stand-in (built here with the C compiler)."""
    rc = rerun_on_stand_in(__file__, calls, json_path)
    if rc is not None:
        return rc
    r = measure_stub(calls)
    report_stub(r, json_path)
    for parts in PARTS:
        print(f"parts={parts}: compiled / raw Launcher x{parts} = "
              f"{r[f'compiled_host_loop_{parts}_us'] / r[f'raw_python_x{parts}_us']:.2f}")
    return 0


def main(argv=None) -> int:
    args = parse_args(__doc__, argv)
    if args.stub:
        return run_stub(args.calls, args.json)
    r = measure(args.calls)
    print(f"{'path':<28} {'us/call':>8} {'x raw C':>8} {'short':>8} {'x raw C':>8}   (short: 100 calls in a row)")
    for parts in PARTS:
        floor, short_floor = r[f"raw_c_x{parts}_us"], r[f"short_raw_c_x{parts}_us"]
        for k in (f"raw_c_x{parts}_us", f"raw_python_x{parts}_us", f"compiled_host_loop_{parts}_us",
                  f"compiled_direct_{parts}_us", f"python_path_{parts}_us"):
            lo, sh = r[k], r["short_" + k]
            print(f"{k:<28} {lo:8.2f} {lo / floor:8.2f} {sh:8.2f} {sh / short_floor:8.2f}")
    print(f"native calls {r['native_calls']}, fallbacks {r['native_fallbacks']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
