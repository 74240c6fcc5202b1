"""CuTe DSL's example programs run unmodified under warpweave with named variants of warpweave applied from outside
(same_source_variant_patches.py: each undoes one change, or tries one thing CuTe DSL's compile does otherwise),
timed by the one timer of same_source_benchmark_calls.py beside the unpatched build and CuTe DSL itself.

On the GPU machine, one line (the build and CuTe DSL's packages set up by gpu_job.sh, as for same_source_calls;
without CuTe DSL's packages the step runs with --no-cutedsl):
    WW_STEP_TIMEOUT=590 scripts/gpu_job.sh same_source_variants
  which runs (WW_VARIANTS_ARGS adds or overrides arguments; WW_VARIANTS_BUDGET the budget):
    python3 benchmarks/python/same_source_variants.py /tmp/cutedsl --cutedsl-python /tmp/cdpy --record-launches \
        --ncu dense_gemm_persistent.py,dense_gemm_fp8_gelu_persistent.py --budget 540 \
        --json $OUT/same_source_variants.json
  Each program and variant runs in a process of its own (`python -m warpweave run DRIVER prog.py ARGS`, DRIVER the
  shared timer's driver with the variant's patches applied first), each variant with a JIT cache folder of its own;
  --rounds N (default 2) runs every side N times, the order reversed every other round (the GPU's clocks settle
  over back-to-back runs). A side's time is the median over its rounds of the timer's median; the table gives each
  variant's time, its speed relative to the unpatched build (baseline / variant: above 1 is faster) and to CuTe
  DSL, how often its patched code was reached (hits; 0: the variant changed nothing in that program) and the
  baseline's spread over its rounds (the noise a ratio is read against).
  --record-launches (GPU): one untimed run of CuTe DSL and of the baseline with launch_recorder.c preloaded (built
  with the machine's cc): every launch's grid, block, dynamic shared memory, launch attributes and kernel
  attributes, every tensor map's fields (interleave, swizzle, L2 promotion, out-of-bounds fill, box) and every
  cluster occupancy query's answer, side by side. The table's host column is the host's time per call to submit a
  round (at or above the GPU's time, the GPU waited for the host).
  --ncu PROGRAMS (GPU): after the timing, with what is left of --budget, the GEMM kernel of each named program
  profiled under Nsight Compute on CuTe DSL's side and the baseline's (one untimed run each), the metrics that
  differ listed.

Without a GPU (--compile-only): each variant's program compiled (`python -m warpweave run --compile-only --arch A`,
its PTX and SASS kept); the table says which variants change a kernel's PTX or SASS and how (instruction counts,
main-loop size, opcode counts that differ). Needs no CuTe DSL.

    python benchmarks/python/same_source_variants.py /path/to/cutlass --compile-only [--arch sm_90a] \
        [--only dense_gemm_persistent.py] [--variants all]
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_same_source import main_loop, opcode, parse_sass, ww_env  # noqa: E402
from cutedsl_examples import ALL_ROOT  # noqa: E402
from same_source_benchmark_calls import (  # noqa: E402
    BENCHMARK_CALLS_DRIVER, EXTRA_ARGS, combine_rounds, discover, run_side,
)
import same_source_variant_patches as patches  # noqa: E402

PROGRAMS = "dense_gemm_persistent.py,dense_gemm_fp8_gelu_persistent.py"
# The default set, sized for one 10-minute device command with both programs and 2 rounds: the calls the Python way
# (as before the native path took these programs' host code), the test data as CuTe DSL's, the changes since
# 10af8d9 together and the L2 promotion alone (the one host-side change), and the loop unrolling and the cache
# policy of CuTe DSL's compile.
DEFAULT_VARIANTS = ("baseline,python_call_path,cutedsl_random_fill,before_10af8d9_python,l2_promotion_none,"
                    "runtime_loops_unroll_2,tma_cache_hint_zero")

PRELUDE = '''
import atexit as _atexit, json as _json, sys as _sys
_sys.path.insert(0, {here!r})
import same_source_variant_patches as _variants
_sys.path.remove({here!r})
_variants.apply({names!r})
_atexit.register(lambda: print("WW_VARIANT " + _json.dumps(dict(names={names!r}, hits=_variants._HITS)), flush=True))
'''


def driver_text(variant: str | None) -> str:
    """The shared timer's driver, with the variant's patches applied before the program runs (None: CuTe DSL's
    side, the driver as it is)."""
    if variant is None or variant == "baseline":
        return BENCHMARK_CALLS_DRIVER
    return PRELUDE.format(here=HERE, names=[variant]) + BENCHMARK_CALLS_DRIVER


def variant_record(lines) -> dict:
    """{names, hits} that the variant's process printed (its WW_VARIANT line among `lines`), or {}."""
    for line in lines:
        if line.startswith("WW_VARIANT "):
            return json.loads(line[len("WW_VARIANT "):])
    return {}


def select_programs(cutlass: str, only: str) -> list[str]:
    names = {s.strip() for s in only.split(",") if s.strip()}
    found = [p for p in discover(cutlass) if p in names or os.path.basename(p) in names]
    missing = [n for n in names if not any(p == n or os.path.basename(p) == n for p in found)]
    if missing:
        raise SystemExit(f"not among the example set's programs that call benchmark: {', '.join(sorted(missing))}")
    return found


# --- the GPU half ---------------------------------------------------------------------------------------------

def build_recorder(work: str) -> str | None:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    so = os.path.join(work, "launch_recorder.so")
    p = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", so, os.path.join(HERE, "launch_recorder.c"), "-ldl"],
                       capture_output=True, text=True)
    return so if p.returncode == 0 else None


def recorded_lines(path: str) -> list[str]:
    """The distinct lines of a launch log with their counts, torch's own kernels left out."""
    if not os.path.isfile(path):
        return []
    out = []
    for line in open(path):
        line = line.rstrip("\n")
        if not line.startswith("count "):
            continue
        m = re.search(r" kernel (\S+)", line)
        if m and m.group(1).startswith(("_Z", "void ")):
            continue
        out.append(line[len("count "):])
    return out


def record_launches(cutlass, programs, sides, args_of, timeout, root, work, report=print) -> dict:
    recorder = build_recorder(work)
    if recorder is None:
        report("record-launches: no C compiler here (cc), nothing recorded")
        return {}
    logs = {}
    for rel in programs:
        path = os.path.join(cutlass, ALL_ROOT, rel)
        for name, python, variant in sides:
            if variant not in (None, "baseline"):
                continue
            log = os.path.join(work, f"launches_{len(logs)}.log")
            driver = os.path.join(work, f"driver_record_{len(logs)}.py")
            with open(driver, "w") as f:
                f.write(driver_text(variant))
            env = {"LD_PRELOAD": recorder, "WW_LAUNCH_LOG": log}
            if variant is not None:
                env["WARPWEAVE_CACHE_DIR"] = os.path.join(work, "cache", variant)
            r = run_side(python, driver, path, args_of(rel), variant is not None, timeout, root, extra_env=env)
            logs[f"{rel} {name}"] = dict(ok=r["ok"], detail=r["detail"], lines=recorded_lines(log))
            report(f"\nlaunches of {rel} under {name} ({'pass' if r['ok'] else 'FAIL: ' + r['detail']}):")
            for line in logs[f"{rel} {name}"]["lines"]:
                report("  " + line)
    return logs


NCU_SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis", "SchedulerStats",
                "WarpStateStats")


def ncu_metrics(stdout: str) -> dict:
    """{section / metric (unit): value} of the one profiled kernel in ncu's --csv --page details output."""
    import csv
    rows = [r for r in csv.reader(l for l in stdout.splitlines() if l.startswith('"'))]
    if not rows:
        return {}
    head = rows[0]
    try:
        sec, name, unit, value = (head.index(k) for k in ("Section Name", "Metric Name", "Metric Unit",
                                                           "Metric Value"))
    except ValueError:
        return {}
    return {f"{r[sec]} / {r[name]}" + (f" ({r[unit]})" if r[unit] else ""): r[value] for r in rows[1:]
            if len(r) == len(head)}


def profile_ncu(cutlass, programs, sides, args_of, timeout, root, work, report=print) -> dict:
    """One untimed run of each side under Nsight Compute, its GEMM kernel's launch after the reference check and
    the timer's warm-up profiled (NCU_SECTIONS), the metrics of both sides side by side where they differ."""
    ncu = shutil.which("ncu")
    if ncu is None:
        report("ncu: not found here, nothing profiled")
        return {}
    wrapper = [ncu, "--target-processes", "all", "--kernel-name", "regex:kernel_cutlass_kernel", "--launch-skip", "6",
               "--launch-count", "1", "--csv", "--page", "details"]
    for section in NCU_SECTIONS:
        wrapper += ["--section", section]
    out = {}
    for rel in programs:
        path = os.path.join(cutlass, ALL_ROOT, rel)
        got = {}
        for name, python, variant in sides:
            if variant not in (None, "baseline"):
                continue
            driver = os.path.join(work, f"driver_ncu_{name}.py")
            with open(driver, "w") as f:
                f.write(driver_text(variant))
            env = None if variant is None else {"WARPWEAVE_CACHE_DIR": os.path.join(work, "cache", variant)}
            r = run_side(python, driver, path, args_of(rel), variant is not None, timeout, root, extra_env=env,
                         wrapper=wrapper)
            got[name] = ncu_metrics(r.get("stdout", ""))
            if not got[name]:
                report(f"ncu {rel} {name}: no metrics ({r['detail']})")
        out[rel] = got
        if len(got) == 2:
            a, b = got.values()
            report(f"\nncu of {rel}: {' | '.join(got)} (metrics that differ)")
            for key in a:
                if key in b and a[key] != b[key]:
                    report(f"  {key:90} {a[key]:>16} {b[key]:>16}")
    return out


def time_variants(cutlass, programs, sides, args_of, rounds, timeout, budget, root, work, report=print) -> dict:
    """{program: {side name: combined side result}}, every side run `rounds` times, the order reversed every other
    round. Past `budget` seconds no more side is started (its rounds say so)."""
    t0 = time.perf_counter()
    drivers = {}
    for name, _, variant in sides:
        drivers[name] = os.path.join(work, f"driver_{len(drivers)}.py")
        with open(drivers[name], "w") as f:
            f.write(driver_text(variant))
    rows = {}
    for rel in programs:
        path = os.path.join(cutlass, ALL_ROOT, rel)
        runs = {name: [] for name, _, _ in sides}
        for r in range(max(1, rounds)):
            for name, python, variant in (sides if r % 2 == 0 else sides[::-1]):
                left = timeout if budget is None else min(timeout, budget - (time.perf_counter() - t0))
                if left < 1:
                    runs[name].append(dict(ok=False, calls=[], detail="not run: the time budget was spent"))
                    continue
                env = None if variant is None else {"WARPWEAVE_CACHE_DIR": os.path.join(work, "cache", variant)}
                side = run_side(python, drivers[name], path, args_of(rel), variant is not None, left, root,
                                extra_env=env)
                side["variant"] = variant_record(side.get("variant_lines", []))
                runs[name].append(side)
                us = [round(c["us"], 1) for c in side["calls"]]
                report(f"{rel} round {r} {name}: {'pass' if side['ok'] else 'FAIL ' + side['detail']} {us}",
                       flush=True)
        rows[rel] = {}
        for name in runs:
            done = [x for x in runs[name] if x["ok"]]
            combined = combine_rounds(done or runs[name])
            combined["hits"] = (done or runs[name])[0].get("variant", {}).get("hits", {})
            combined["rounds_ok"] = len(done)
            rows[rel][name] = combined
    return rows


def first_us(side) -> float | None:
    return side["calls"][0]["us"] if side.get("ok") and side.get("calls") else None


def print_timing_table(rows, report=print) -> None:
    """Per program and side: the time per call (us), baseline / side and CuTe DSL / side (speeds relative to the
    unpatched build's and CuTe DSL's: above 1 is faster), the host's time to submit a call (host), each round's time,
    the variant's hits; then the baseline's spread over its rounds."""
    report(f"\n{'program':34} {'side':26} {'us':>8} {'vs base':>8} {'vs CD':>7} {'host':>6} {'rounds us':24} hits")
    for rel, sides in rows.items():
        base = first_us(sides.get("baseline", {}))
        cd = first_us(sides.get("cutedsl", {}))
        for name, side in sides.items():
            us = first_us(side)
            call = side["calls"][0] if us else {}
            rounds_us = [round(c, 1) for c in (call.get("us_rounds") or [])]
            host = call.get("host_us")
            hits = side.get("hits") or {}
            report(f"{os.path.basename(rel):34} {name:26} "
                   + (f"{us:8.1f} " if us else f"{'FAIL':>8} ")
                   + (f"{base / us:8.3f} " if us and base else f"{'-':>8} ")
                   + (f"{cd / us:7.3f} " if us and cd else f"{'-':>7} ")
                   + (f"{host:6.1f} " if host is not None else f"{'-':>6} ")
                   + f"{str(rounds_us):24} " + (" ".join(f"{k}={v}" for k, v in hits.items()) if hits else
                                                ("" if name in ("cutedsl", "baseline") else "-"))
                   + ("" if side.get("ok") else "  " + side.get("detail", "")[:80]))
        b = sides.get("baseline", {})
        rounds_b = b.get("calls", [{}])[0].get("us_rounds") if b.get("ok") else None
        if rounds_b and len(rounds_b) > 1:
            spread = (max(rounds_b) - min(rounds_b)) / statistics.median(rounds_b)
            report(f"{'':34} baseline spread over rounds: {spread:.3%}")


# --- the compile-only half ----------------------------------------------------------------------------------------

def compile_variant(cutlass, rel, variant, arch, args, work, timeout, python, root) -> dict:
    path = os.path.join(cutlass, ALL_ROOT, rel)
    dump = os.path.join(work, "dump", re.sub(r"\W", "_", f"{rel}_{variant}"))
    os.makedirs(dump, exist_ok=True)
    driver = os.path.join(dump, "driver.py")
    with open(driver, "w") as f:
        f.write(driver_text(variant))
    env = ww_env({"WARPWEAVE_KEEP": "ptx,sass", "WARPWEAVE_DUMP_DIR": dump, "WARPWEAVE_DISABLE_CACHE": "1"}, root)
    p = subprocess.run([python, "-m", "warpweave", "run", "--compile-only", "--arch", arch, driver, path, *args],
                       cwd=os.path.dirname(path), env=env, capture_output=True, text=True, timeout=timeout)
    out = dict(ok=p.returncode == 0, detail=(p.stdout + p.stderr)[-1500:],
               variant=variant_record(p.stdout.splitlines()), kernels={})
    for sass_path in sorted(glob.glob(os.path.join(dump, "*.sass"))):
        ptx_path = sass_path[:-len(".sass")] + ".ptx"
        ptx = open(ptx_path).read() if os.path.isfile(ptx_path) else ""
        for kernel, insns in parse_sass(open(sass_path).read()).items():
            body = [b for _, _, b, _ in insns]
            loop = main_loop([i for i in insns if i[1] != "NOP"])
            out["kernels"][kernel] = dict(
                instructions=len(insns), sass_digest=hashlib.sha1("\n".join(body).encode()).hexdigest()[:12],
                ptx_digest=hashlib.sha1(ptx.encode()).hexdigest()[:12] if ptx else None,
                loop_instructions=sum(1 for a, *_ in insns if loop and loop[0] <= a <= loop[1]),
                opcodes=dict(Counter(opcode(op) for _, op, _, _ in insns)))
    return out


def print_compile_table(results, report=print) -> None:
    report(f"\n{'program':34} {'variant':26} {'kernel':22} {'insns':>6} {'loop':>5} {'PTX':>9} {'SASS':>9}  "
           "opcodes that differ from the baseline's (+/-), hits")
    for rel, by_variant in results.items():
        base = by_variant.get("baseline", {}).get("kernels", {})
        for variant, r in by_variant.items():
            hits = " ".join(f"{k}={v}" for k, v in (r.get("variant", {}).get("hits") or {}).items())
            if not r["ok"]:
                report(f"{os.path.basename(rel):34} {variant:26} FAILED: {r['detail'].strip().splitlines()[-1][:90]}")
                continue
            for kernel, k in r["kernels"].items():
                b = base.get(kernel)
                same_ptx = "same" if b and b["ptx_digest"] == k["ptx_digest"] else "differs"
                same_sass = "same" if b and b["sass_digest"] == k["sass_digest"] else "differs"
                diff = ""
                if b and variant != "baseline":
                    ops = set(b["opcodes"]) | set(k["opcodes"])
                    diff = " ".join(f"{o}{k['opcodes'].get(o, 0) - b['opcodes'].get(o, 0):+d}" for o in sorted(ops)
                                    if k["opcodes"].get(o, 0) != b["opcodes"].get(o, 0))
                report(f"{os.path.basename(rel):34} {variant:26} {kernel[:22]:22} {k['instructions']:>6} "
                       f"{k['loop_instructions']:>5} {same_ptx:>9} {same_sass:>9}  {diff} {hits}")


# --- main -----------------------------------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cutlass", help="a checkout of NVIDIA/cutlass (its examples/python/CuTeDSL)")
    ap.add_argument("--cutedsl-python", default=None, help="an interpreter with CuTe DSL and torch (its column)")
    ap.add_argument("--no-cutedsl", action="store_true", help="no CuTe DSL column (variants against the baseline)")
    ap.add_argument("--ww-python", default=sys.executable, help="an interpreter with torch for warpweave's sides")
    ap.add_argument("--ww-root", default=None, help="the warpweave checkout to run (default: this one)")
    ap.add_argument("--only", default=PROGRAMS, help="comma-separated programs (file names or paths under the set)")
    ap.add_argument("--variants", default=DEFAULT_VARIANTS,
                    help=f"comma-separated, 'all' for every one: {', '.join(patches.VARIANTS)}, cubin_ptxas@DIR "
                         "(baseline is always run)")
    ap.add_argument("--args", default="", help="arguments added to every program's command line (one string)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=150, help="seconds per program and side")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for the whole run: past it no timed side is started (its rounds say so)")
    ap.add_argument("--record-launches", action="store_true", help="GPU: record each side's launches and tensor "
                                                                    "maps (launch_recorder.c) in one untimed run")
    ap.add_argument("--ncu", default="", help="GPU: comma-separated programs whose GEMM kernel is profiled under "
                                              "Nsight Compute on CuTe DSL's side and the baseline's (one untimed run "
                                              "each), the metrics that differ listed")
    ap.add_argument("--compile-only", action="store_true", help="no GPU: which variants change the kernels' code")
    ap.add_argument("--arch", default="sm_90a", help="--compile-only: the target")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="keep the drivers, logs, dumps and caches in this folder")
    ns = ap.parse_args(argv)
    try:
        ns.variant_names = patches.parse(ns.variants)
    except patches.VariantError as e:
        ap.error(str(e))
    if "baseline" not in ns.variant_names:
        ns.variant_names.insert(0, "baseline")
    if not ns.compile_only and not ns.no_cutedsl and not ns.cutedsl_python:
        ap.error("--cutedsl-python is needed for the CuTe DSL column (or --no-cutedsl, or --compile-only)")
    return ns


def main(argv=None) -> int:
    ns = parse_args(argv)
    cutlass = os.path.abspath(ns.cutlass)
    programs = select_programs(cutlass, ns.only)
    extra = ns.args.split()

    def args_of(rel):
        return EXTRA_ARGS.get(rel, []) + extra

    t_start = time.perf_counter()
    work = ns.keep or tempfile.mkdtemp(prefix="same_source_variants_")
    os.makedirs(work, exist_ok=True)
    result = dict(programs=programs, variants=ns.variant_names)
    try:
        if ns.compile_only:
            results = {}
            for rel in programs:
                results[rel] = {v: compile_variant(cutlass, rel, v, ns.arch, args_of(rel), work, ns.timeout,
                                                   ns.ww_python, ns.ww_root) for v in ns.variant_names}
            print_compile_table(results)
            result["compile"] = results
        else:
            sides = [] if ns.no_cutedsl else [("cutedsl", ns.cutedsl_python, None)]
            sides += [(v, ns.ww_python, v) for v in ns.variant_names]
            if ns.record_launches:
                result["launches"] = record_launches(cutlass, programs, sides, args_of, ns.timeout, ns.ww_root,
                                                     work)
            def left():
                return None if ns.budget is None else ns.budget - (time.perf_counter() - t_start)
            rows = time_variants(cutlass, programs, sides, args_of, ns.rounds, ns.timeout, left(), ns.ww_root, work)
            print_timing_table(rows)
            for sides_of in rows.values():
                for side in sides_of.values():
                    side.pop("tail", None)
                    side.pop("variant_lines", None)
            result["timing"] = rows
            # After the timing, with what is left of the budget (its runs are the ones to keep if time is short).
            wanted = {n for n in ns.ncu.split(",") if n}
            ncu_programs = [p for p in programs if p in wanted or os.path.basename(p) in wanted]
            if ncu_programs and (left() is None or left() > 60):
                timeout = ns.timeout if left() is None else min(ns.timeout, left() / (2 * len(ncu_programs)))
                result["ncu"] = profile_ncu(cutlass, ncu_programs, sides, args_of, timeout, ns.ww_root, work)
            elif ncu_programs:
                print(f"ncu: not run, {left():.0f} s of the budget left")
    finally:
        if ns.json:
            with open(ns.json, "w") as f:
                json.dump(result, f, indent=1)
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
