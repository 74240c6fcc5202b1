"""What the GPU benchmark scripts share: CUDA-event medians, compile times in fresh processes, and the host cost of
a call."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
for p in (os.path.join(ROOT, "frontend_python"), os.path.join(ROOT, "frontend_python", "examples")):
    if p not in sys.path:
        sys.path.insert(0, p)

# A fresh process's compile: the snippet body (after imports of sys/time/json, with `root` formatted in) sets t1
# (imports done), t2 (arguments ready), t3 (compiled) and t4 (first call done), and leaves the compiled function
# in `c`.
_COMPILE_FRAME = r"""
import sys, time, json
t0 = time.perf_counter()
sys.path.insert(0, {root!r} + "/frontend_python"); sys.path.insert(0, {root!r} + "/frontend_python/examples")
{body}
print(json.dumps({{"import_s": t1 - t0, "compile_s": t3 - t2, "trace_s": c.timings["trace_s"],
                  "first_call_s": t4 - t3, "cache": c.info["cache"]}}))
"""


def median_ms(fn, torch, warmup=5, reps=30):
    """Median of CUDA-event times of fn(), after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def compile_times(body: str) -> dict:
    """{"cold": ..., "warm": ...}: the snippet run twice in new processes sharing a new, empty JIT cache."""
    out = {}
    code = _COMPILE_FRAME.format(root=ROOT, body=body)
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, WARPWEAVE_CACHE_DIR=cache)
        env.pop("WARPWEAVE_DISABLE_CACHE", None)
        for label in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            out[label] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


def per_call_us(fn, torch, calls=20000):
    """Host time of one fn() (launches are asynchronous), median of 5 batches."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls // 5):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        samples.append((t1 - t0) / (calls // 5) * 1e6)
    return statistics.median(samples)
