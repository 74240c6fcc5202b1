"""Figures of the DSL on the GPU: elementwise_add bandwidth against a device copy measured in the same run, cold
and warm compile time (fresh processes), and the host cost of a launch against a trivial torch op.

    python benchmarks/python/bench_dsl.py [--size-gb 3] [--json out.json]

Prints a table last. Timings: CUDA events, warm-up first, medians; inputs rotate so the L2 cache does not serve
them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import compile_times, median_ms, per_call_us  # noqa: E402


def bandwidth(size_gb: float):
    import torch
    from warpweave.cute.runtime import from_dlpack
    import elementwise_add as ew

    # Three tensors of size_gb/3 each, two sets to rotate.
    n = int(size_gb * (1 << 30) / 3 / 4)
    cols = 16384
    rows = n // cols
    sets = []
    for _ in range(2):
        a = torch.randn(rows, cols, device="cuda")
        b = torch.randn(rows, cols, device="cuda")
        c = torch.empty_like(a)
        sets.append((a, b, c, [from_dlpack(t).mark_layout_dynamic() for t in (a, b, c)]))
    compiled = __import__("warpweave.cute", fromlist=["compile"]).compile(ew.elementwise_add, *sets[0][3])
    a, b, c, args = sets[0]
    compiled(*args)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b), "elementwise_add is wrong at the benchmark size"
    k = [0]

    def run_ww():
        compiled(*sets[k[0] % 2][3])
        k[0] += 1

    def run_copy():
        x = sets[k[0] % 2]
        x[2].copy_(x[0])
        k[0] += 1

    def run_torch_add():
        x = sets[k[0] % 2]
        torch.add(x[0], x[1], out=x[2])
        k[0] += 1

    ww_ms = median_ms(run_ww, torch)
    copy_ms = median_ms(run_copy, torch)
    add_ms = median_ms(run_torch_add, torch)
    nbytes_add = 3 * rows * cols * 4
    nbytes_copy = 2 * rows * cols * 4
    return {
        "elements": rows * cols,
        "ww_add_ms": ww_ms, "ww_add_GBps": nbytes_add / ww_ms / 1e6,
        "copy_ms": copy_ms, "copy_GBps": nbytes_copy / copy_ms / 1e6,
        "torch_add_ms": add_ms, "torch_add_GBps": nbytes_add / add_ms / 1e6,
    }


_COMPILE_BODY = r"""
import torch
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
import elementwise_add as ew
t1 = time.perf_counter()
a = torch.randn(1024, 1024, device="cuda")
args = [from_dlpack(t).mark_layout_dynamic() for t in (a, a.clone(), torch.empty_like(a))]
t2 = time.perf_counter()
c = cute.compile(ew.elementwise_add, *args)
t3 = time.perf_counter()
c(*args); torch.cuda.synchronize()
t4 = time.perf_counter()
"""


def launch_overhead(calls=20000):
    import torch
    from warpweave import _core
    from warpweave.cute.runtime import from_dlpack
    import warpweave.cute as cute
    import elementwise_add as ew

    a = torch.randn(128, 128, device="cuda")
    b, c = a.clone(), torch.empty_like(a)
    args = [from_dlpack(t).mark_layout_dynamic() for t in (a, b, c)]
    compiled = cute.compile(ew.elementwise_add, *args)
    compiled(*args)
    torch.cuda.synchronize()


    ww_us = per_call_us(lambda: compiled(*args), torch, calls)
    torch_us = per_call_us(lambda: torch.add(a, b, out=c), torch, calls)
    # The same launch with its arguments already packed: the driver call underneath, the floor on this VM.
    packed = compiled.prepare(*args)
    raw_us = per_call_us(lambda: [_core.launch(*p) for p in packed], torch, calls)
    return {"ww_call_us": ww_us, "torch_add_us": torch_us, "raw_launch_us": raw_us}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--size-gb", type=float, default=3.0)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    results = {"bandwidth": bandwidth(args.size_gb), "compile": compile_times(_COMPILE_BODY), "launch": launch_overhead()}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    bw, cp, ln = results["bandwidth"], results["compile"], results["launch"]
    print("\n== warpweave DSL figures ==")
    print(f"elementwise_add f32, {bw['elements'] / 1e6:.0f} M elements: {bw['ww_add_ms']:.3f} ms, "
          f"{bw['ww_add_GBps']:.0f} GB/s = {bw['ww_add_GBps'] / bw['copy_GBps']:.3f} of the device copy "
          f"({bw['copy_GBps']:.0f} GB/s); torch.add {bw['torch_add_GBps']:.0f} GB/s")
    print(f"compile elementwise_add: cold {cp['cold']['compile_s'] * 1e3:.0f} ms (trace "
          f"{cp['cold']['trace_s'] * 1e3:.0f} ms, cache {cp['cold']['cache']}), warm {cp['warm']['compile_s'] * 1e3:.0f} ms "
          f"(cache {cp['warm']['cache']}); import {cp['cold']['import_s'] * 1e3:.0f} ms")
    print(f"launch overhead: compiled call {ln['ww_call_us']:.2f} us, torch.add {ln['torch_add_us']:.2f} us, raw "
          f"_core.launch {ln['raw_launch_us']:.2f} us")


if __name__ == "__main__":
    main()
