"""Every example program of CuTe DSL that times itself with cute.testing.benchmark, run unmodified by CuTe DSL and
by warpweave, each of its benchmark calls timed by one timer shared by both sides.

    python benchmarks/python/bench_same_source.py /path/to/cutlass --cutedsl-python PY --benchmark-calls \
        [--only sgemm.py,dense_gemm.py] [--timeout 150] [--budget S] [--json out.json]

(or this file, with the same arguments but --benchmark-calls). The programs: every program of the example set
(examples/python/CuTeDSL of the checkout, read there, never copied) whose source calls the testing module's
`benchmark` and whose target (cutedsl_examples.program_target, the rule the example-set runs use) is sm_80 or
sm_90a, the targets a Hopper GPU runs: Blackwell's and the distributed programs are left out by that rule.

Each program runs once per side (--rounds N: N times, the order alternating), in a process of its own, with the
same command line: `PY DRIVER prog.py ARGS` (CuTe DSL) and `python -m warpweave run DRIVER prog.py ARGS`
(warpweave). DRIVER (BENCHMARK_CALLS_DRIVER below, the same text for both) replaces `benchmark` in the public
testing modules (cutlass.testing, where CuTe DSL defines it, and cutlass.cute.testing, which re-exports it; under
warpweave's alias the same two names) before the program runs, so that `testing.benchmark(...)`, `cute.testing.benchmark(...)` and `from cutlass.cute.testing import benchmark`
all reach the replacement; then it runs the program as `__main__` with its arguments, as `python prog.py ARGS` does.
The program's own reference check runs, and a side passes only when its program exits with status 0.

The shared timer: the program's workspaces (workspace_generator called workspace_count times, at least twice, or
its fixed kernel_arguments), a warm-up (one call per workspace, at least 5), then 10 rounds of 20 back-to-back
calls rotating through the workspaces between two CUDA events (torch's, on the program's stream); the median
round's time per call, in microseconds, is returned to the program (as benchmark returns it) and recorded, with the
host's time per call to submit the calls of a round (host_us, median; at or above the GPU's, the GPU waited for the
host). The program's warmup and iteration counts are not used (both sides then time the same calls). use_cuda_graphs
is not honoured (the calls are timed without a graph) and recorded. A call made from inside the library (an
autotuner timing its candidates) keeps that side's own benchmark. At the end the driver prints
`WW_TIMING {"calls": [...]}`.

Table: program, each side's time (the first benchmark call's; a program with several calls has one row each), the
ratio warpweave speed / CuTe DSL speed, each side's pass/fail; the geometric mean of the ratios over the programs
both sides ran (a program's ratio: the geometric mean of its calls').
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_same_source import side_command  # noqa: E402
from cutedsl_examples import ALL_ROOT, all_programs, program_target  # noqa: E402

TARGETS = ("sm_80", "sm_90a")

# Arguments a program needs beyond its defaults, only where without them it never calls benchmark: these time
# themselves only when asked (`--benchmark`, a flag whose default is off).
EXTRA_ARGS = {
    "cute/ampere/kernel/elementwise/elementwise_add.py": ["--benchmark"],
    "cute/ampere/kernel/elementwise/elementwise_apply.py": ["--benchmark"],
    "cute/hopper/kernel/cta_norm/cta_norm.py": ["--benchmark"],
    "dsl_tutorials/programmatic_dependent_launch.py": ["--benchmark"],
}

BENCHMARK_CALLS_DRIVER = r'''
"""Runs a program (argv[1], its arguments after it) as __main__ with the testing modules' benchmark replaced by one
timer; prints WW_TIMING with every call the program made of it."""
import importlib, json, os, runpy, statistics, sys, time

CALLS, ROUNDS = 20, 10
recorded = []
library_benchmark = None


def shared_benchmark(callable_, **kw):
    caller = sys._getframe(1).f_globals.get("__name__", "")
    if caller.split(".")[0] in ("cutlass", "warpweave"):
        return library_benchmark(callable_, **kw)  # the library timing for itself (an autotuner): its own timer
    import torch  # here, not above: the driver itself needs no torch until a program times something

    generator, count = kw.get("workspace_generator"), kw.get("workspace_count", 1)
    if generator is not None:
        workspaces = [generator() for _ in range(max(2, count))]
    else:
        workspaces = [kw.get("kernel_arguments")]
    state = dict(n=0)

    def call():
        w = workspaces[state["n"] % len(workspaces)]
        state["n"] += 1
        if w is None:
            callable_()
        else:
            callable_(*w.args, **w.kwargs)

    stream = kw.get("stream")
    handle = getattr(stream, "cuda_stream", stream)  # a torch stream's, else a CUstream (int() of it) or an int
    handle = None if handle is None else int(handle)
    on = torch.cuda.ExternalStream(handle) if handle else None  # None: the current stream (the default one)
    for _ in range(max(5, len(workspaces))):
        call()
    torch.cuda.synchronize()
    rounds, host = [], []
    for _ in range(ROUNDS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(on)
        t0 = time.perf_counter()
        for _ in range(CALLS):
            call()
        t1 = time.perf_counter()
        end.record(on)
        torch.cuda.synchronize()
        rounds.append(start.elapsed_time(end) * 1e3 / CALLS)
        host.append((t1 - t0) * 1e6 / CALLS)
    us = statistics.median(rounds)
    # host_us: the host's time per call to submit the round (at or above us, the GPU waited for the host)
    recorded.append(dict(us=us, rounds_us=[round(r, 3) for r in rounds], host_us=round(statistics.median(host), 3),
                         workspaces=len(workspaces),
                         cuda_graphs_requested=bool(kw.get("use_cuda_graphs", False)),
                         program_iterations=[kw.get("warmup_iterations"), kw.get("iterations")]))
    return us


modules = [importlib.import_module(name) for name in ("cutlass.testing", "cutlass.cute.testing")]
library_benchmark = modules[0].benchmark
for module in modules:
    module.benchmark = shared_benchmark
program, sys.argv = sys.argv[1], sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(program))  # as `python program` has it (not the driver's folder)
try:
    runpy.run_path(program, run_name="__main__")
finally:
    print("WW_TIMING " + json.dumps(dict(calls=recorded)), flush=True)
'''


# --- the programs ---------------------------------------------------------------------------------------------------

def calls_benchmark(source: str) -> bool:
    """Whether the source calls the testing module's benchmark: `<...>.testing.benchmark(...)`, or a name bound by
    `from cutlass[.cute].testing import benchmark [as name]`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    bound = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             and (n.module or "").endswith("testing") and (n.module or "").startswith("cutlass")
             for a in n.names if a.name == "benchmark"}
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Attribute) and f.attr == "benchmark" and (
                isinstance(f.value, ast.Name) and f.value.id == "testing" or
                isinstance(f.value, ast.Attribute) and f.value.attr == "testing"):
            return True
        if isinstance(f, ast.Name) and f.id in bound:
            return True
    return False


def discover(cutlass: str, targets=TARGETS) -> list[str]:
    """The programs of the example set (paths under examples/python/CuTeDSL) that call benchmark and whose target is
    one of `targets`."""
    found = []
    for rel in all_programs(cutlass):
        with open(os.path.join(cutlass, ALL_ROOT, rel), encoding="utf-8", errors="replace") as f:
            source = f.read()
        if program_target(rel, source) in targets and calls_benchmark(source):
            found.append(rel)
    return found


# --- one side -------------------------------------------------------------------------------------------------------

def run_side(python: str, driver: str, path: str, args, warpweave: bool, timeout: float, root=None,
             extra_env=None, wrapper=()) -> dict:
    """{ok, calls, wall_s, detail, variant_lines}: ok when the program exited with status 0 (its own checks passed);
    calls: each benchmark call's record from WW_TIMING; variant_lines: the WW_VARIANT lines a patched driver
    printed (same_source_variants.py). extra_env: variables added to the side's environment; wrapper: a command
    the side runs under (a profiler's, ending where the side's own begins), whose stdout is then kept whole."""
    cmd, env = side_command(python, driver, [path, *args], warpweave, root)
    cmd = [*wrapper, *cmd]
    env.update(extra_env or {})
    t0 = time.perf_counter()
    # A session of its own, so that a timeout ends whatever the program started too (a process still holding the
    # output pipes would keep the wait for them going).
    p = subprocess.Popen(cmd, cwd=os.path.dirname(path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
        return dict(ok=False, calls=[], wall_s=round(time.perf_counter() - t0, 1),
                    detail=f"timed out after {timeout:.0f} s", tail=(stdout + stderr)[-3000:])
    out = stdout + stderr
    calls = []
    for line in stdout.splitlines():
        if line.startswith("WW_TIMING "):
            calls = json.loads(line[len("WW_TIMING "):])["calls"]
    errors = [l for l in out.splitlines() if l[:1].isalpha() and ("Error" in l.split(":")[0] or
                                                                  "Exception" in l.split(":")[0])]
    detail = "exit 0" if p.returncode == 0 else (errors[-1] if errors else (out.strip().splitlines() or ["?"])[-1])
    return dict(ok=p.returncode == 0, rc=p.returncode, calls=calls, wall_s=round(time.perf_counter() - t0, 1),
                detail=detail[:200], tail=out[-3000:],
                variant_lines=[l for l in stdout.splitlines() if l.startswith("WW_VARIANT ")],
                **(dict(stdout=stdout) if wrapper else {}))


# --- both sides -----------------------------------------------------------------------------------------------------

def combine_rounds(runs: list) -> dict:
    """One side's result over several rounds: it passes when every round passed; each benchmark call's time (and its
    host's time per call) is the median of its rounds' (the other fields of a call are the first round's)."""
    first = runs[0]
    if not all(r["ok"] for r in runs):
        bad = next(r for r in runs if not r["ok"])
        return dict(bad, rounds=len(runs))
    n = min(len(r["calls"]) for r in runs)
    calls = [dict(first["calls"][i], us=statistics.median(r["calls"][i]["us"] for r in runs),
                  us_rounds=[r["calls"][i]["us"] for r in runs]) for i in range(n)]
    for i, call in enumerate(calls):  # the host's time per call likewise, where the driver recorded it
        if all("host_us" in r["calls"][i] for r in runs):
            call["host_us"] = statistics.median(r["calls"][i]["host_us"] for r in runs)
    return dict(first, calls=calls, rounds=len(runs), wall_s=round(sum(r["wall_s"] for r in runs), 1))


def compare(cutlass: str, programs, cd_python: str, ww_python: str, timeout: float, budget: float | None = None,
            root=None, report=print, rounds: int = 1) -> dict:
    """{program: {args, cutedsl, warpweave}}, the sides run in turn, `rounds` times, the order alternating between
    rounds (CuTe DSL first, then warpweave first, ...): a GPU's clocks settle lower over back-to-back runs at full
    load, which a fixed order would charge to the second side. Past `budget` seconds in all a program is not
    started (its sides say so) and a running side's timeout is cut to what is left."""
    fd, driver = tempfile.mkstemp(suffix="_benchmark_calls.py")
    with os.fdopen(fd, "w") as f:
        f.write(BENCHMARK_CALLS_DRIVER)
    t0 = time.perf_counter()
    rows = {}
    sides = (("cutedsl", cd_python, False), ("warpweave", ww_python, True))
    try:
        for rel in programs:
            path = os.path.join(cutlass, ALL_ROOT, rel)
            args = EXTRA_ARGS.get(rel, [])
            row = rows[rel] = dict(args=args)
            runs = {"cutedsl": [], "warpweave": []}
            for r in range(max(1, rounds)):
                for side, python, ww in (sides if r % 2 == 0 else sides[::-1]):
                    left = timeout if budget is None else min(timeout, budget - (time.perf_counter() - t0))
                    if left < 1:
                        runs[side].append(dict(ok=False, calls=[], detail="not run: the time budget was spent"))
                        continue
                    runs[side].append(run_side(python, driver, path, args, ww, left, root))
                if not all(runs[s][-1]["ok"] for s in runs):
                    break  # a failing side fails every round alike: no more rounds of it
            for side in runs:
                row[side] = combine_rounds(runs[side])
            report(f"{rel}: " + " | ".join(f"{s} {'pass' if row[s]['ok'] else 'FAIL'} "
                                           f"{[round(c['us'], 1) for c in row[s]['calls']]} {row[s]['detail']}"
                                           for s in ("cutedsl", "warpweave")), flush=True)
    finally:
        os.unlink(driver)
    return rows


def ratios(row) -> list[float]:
    """warpweave speed / CuTe DSL speed of each benchmark call both sides made (by order), when both passed."""
    cd, ww = row["cutedsl"], row["warpweave"]
    if not (cd["ok"] and ww["ok"]):
        return []
    return [c["us"] / w["us"] for c, w in zip(cd["calls"], ww["calls"]) if c["us"] > 0 and w["us"] > 0]


def print_table(rows, report=print) -> float | None:
    """The table; returns the geometric mean of the programs' ratios (None when no program ran on both)."""
    report(f"\n{'program':62} {'CuTe DSL us':>12} {'warpweave us':>12} {'ww/CD speed':>11}  CuTe DSL / warpweave")
    per_program = []
    for rel, row in rows.items():
        cd, ww = row["cutedsl"], row["warpweave"]
        n = max(len(cd["calls"]), len(ww["calls"]), 1)
        rs = ratios(row)
        for i in range(n):
            name = rel if n == 1 else f"{rel}[{i}]"

            def us(side):
                return f"{side['calls'][i]['us']:.1f}" if i < len(side["calls"]) else "-"

            def status(side):
                return "pass" if side["ok"] else "FAIL: " + side["detail"][:60]
            graphs = " (graphs asked, timed without)" if any(
                c.get("cuda_graphs_requested") for c in cd["calls"][i:i + 1] + ww["calls"][i:i + 1]) else ""
            r = f"{rs[i]:.3f}" if i < len(rs) else "-"
            report(f"{name:62} {us(cd):>12} {us(ww):>12} {r:>11}  {status(cd)} / {status(ww)}"
                   + ("" if i else graphs))
        if rs:
            per_program.append(statistics.geometric_mean(rs))
    g = statistics.geometric_mean(per_program) if per_program else None
    report(f"\ngeomean ww/CD speed over {len(per_program)} of {len(rows)} programs both ran: "
           + (f"{g:.3f}" if g else "-"))
    return g


def run(cutlass: str, cd_python: str, ww_python: str, only: str = "", timeout: float = 150,
        budget: float | None = None, json_path: str | None = None, root=None, rounds: int = 1) -> int:
    cutlass = os.path.abspath(cutlass)
    programs = discover(cutlass)
    if only:  # paths under the set, or file names
        names = set(only.split(","))
        programs = [p for p in programs if p in names or os.path.basename(p) in names]
    print(f"{len(programs)} programs call benchmark (targets {', '.join(TARGETS)}): {', '.join(programs)}",
          flush=True)
    rows = compare(cutlass, programs, cd_python, ww_python, timeout, budget, root, rounds=rounds)
    g = print_table(rows)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(dict(programs=rows, geomean=g), f, indent=1)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cutlass", help="a checkout of NVIDIA/cutlass (its examples/python/CuTeDSL)")
    ap.add_argument("--cutedsl-python", required=True, help="an interpreter with CuTe DSL and torch")
    ap.add_argument("--ww-python", default=sys.executable, help="an interpreter with torch for warpweave's side")
    ap.add_argument("--only", default="", help="comma-separated programs (paths under the set, or file names)")
    ap.add_argument("--timeout", type=float, default=150, help="seconds per program and side")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run")
    ap.add_argument("--ww-root", default=None, help="the warpweave checkout to run (default: this one)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="runs of each side, the order alternating; each call's time is the median of its rounds'")
    ap.add_argument("--json", default=None)
    ns = ap.parse_args(argv)
    return run(ns.cutlass, ns.cutedsl_python, ns.ww_python, ns.only, ns.timeout, ns.budget, ns.json, ns.ww_root,
               ns.rounds)


if __name__ == "__main__":
    sys.exit(main())
