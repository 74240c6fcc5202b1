"""QuACK's own test suite under warpweave and under CuTe DSL: the same fixed sample of each test file, run by each
implementation with pytest-xdist, and a table of passed / failed / errors per file and implementation.

    python benchmarks/python/quack_tests.py --warpweave-python PY_WW --cutedsl-python PY_REF \\
        [--quack-src DIR | --version 0.6.5] [--files test_softmax.py,...] [--every 4] [--workers 8] \\
        [--timeout 1800] [--chunk N] [--json results.json] [--install-alias]

- QuACK's sources are the sdist from PyPI (fetched with pip into build/quack-cache unless --quack-src names an
  unpacked one); both implementations import that same `quack` (its folder first on PYTHONPATH) and run its tests/.
- PY_WW must reach warpweave through the supported `cutlass` alias: the .pth that `python -m warpweave alias
  --install` writes (--install-alias runs it), so pytest-xdist's workers have the alias too. It is checked before
  anything runs. PY_REF is an environment with CuTe DSL (nvidia-cutlass-dsl) itself. Both need torch with CUDA,
  pytest and pytest-xdist (without xdist a file runs in one process, and the table says so).
- The sample: each file's tests as the reference implementation collects them (PY_REF; PY_WW where no PY_REF is
  given), every N-th in collection order (--every, 4 by default), written to one list that both runs select with
  the same pytest plugin; a test that one implementation does not collect is reported as missing there.
- Each (file, implementation) is one pytest process with its own time limit (--timeout seconds); a run that passes
  it is killed (its whole process group) and reported as a timeout with what it had finished. --chunk N runs the
  sample N tests per process instead (each chunk with that limit), for libraries whose tests keep more in memory
  than one process can hold (FlashAttention's CPU references in a compile-only run).
- --compile-only [ARCH]: no GPU needed (quack_compile_only_plugin.py): CUDA tensors are made on the CPU, torch
  reports a device of ARCH (sm_90a by default), and a test passes when its kernels trace, compile and assemble up
  to its first launch, which is not made (under CuTe DSL, with CUTE_DSL_ARCH=ARCH: which fails on the CPU tensor
  or the missing device).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_FILES = ["test_rmsnorm.py", "test_softmax.py", "test_cross_entropy.py", "test_layernorm.py",
                 "test_topk.py", "test_rotary.py", "test_gemm_functional.py"]

# A pytest plugin both runs load: it keeps the tests listed in QUACK_SAMPLE_FILE (node ids, one a line) and
# deselects the rest, so that both implementations run the very same tests.
PLUGIN = '''
import os

def pytest_collection_modifyitems(config, items):
    path = os.environ.get("QUACK_SAMPLE_FILE")
    if not path:
        return
    with open(path) as f:
        keep = {line.strip() for line in f if line.strip()}
    chosen = [it for it in items if it.nodeid in keep]
    dropped = [it for it in items if it.nodeid not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = chosen
'''


def fetch_sdist(version: str) -> str:
    cache = os.path.join(ROOT, "build", "quack-cache")
    src = os.path.join(cache, f"quack_kernels-{version}")
    if os.path.isdir(os.path.join(src, "quack")):
        return src
    os.makedirs(cache, exist_ok=True)
    sdist = os.path.join(cache, f"quack_kernels-{version}.tar.gz")
    if not os.path.exists(sdist):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "--disable-pip-version-check", f"quack-kernels=={version}", "-d", cache], check=True,
                       timeout=300)
    with tarfile.open(sdist) as t:
        t.extractall(cache, filter="data")
    return src


def has_module(py: str, module: str) -> bool:
    return subprocess.run([py, "-c", f"import {module}"], capture_output=True).returncode == 0


def check_alias(py: str, install: bool) -> None:
    """PY must import warpweave as `cutlass` in every process (the .pth alias), not CuTe DSL."""
    if install:
        subprocess.run([py, "-m", "warpweave", "alias", "--install"], check=True)
    probe = "import cutlass, sys; sys.stdout.write(cutlass.__spec__.name)"
    p = subprocess.run([py, "-c", probe], capture_output=True, text=True, cwd=tempfile.gettempdir())
    if p.returncode != 0 or p.stdout.strip() != "warpweave":
        sys.exit(f"{py}: `import cutlass` gives {p.stdout.strip() or p.stderr.strip()[-300:]!r}, not warpweave: "
                 f"install the alias with `{py} -m warpweave alias --install` (or pass --install-alias)")


def check_reference(py: str) -> None:
    probe = "import cutlass, sys; sys.stdout.write(cutlass.__spec__.name)"
    p = subprocess.run([py, "-c", probe], capture_output=True, text=True, cwd=tempfile.gettempdir())
    if p.returncode != 0 or p.stdout.strip() != "cutlass":
        sys.exit(f"{py}: `import cutlass` gives {p.stdout.strip() or p.stderr.strip()[-300:]!r}, not CuTe DSL")


def _flat(test_file: str) -> str:
    """A test file's path under tests/ (a library may keep them in a subfolder: cute/test_x.py) as one log name."""
    return test_file.replace(os.sep, "_")


COMPILE_ONLY_PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "quack_compile_only_plugin.py")


def environment(src: str, plugin_dir: str, sample: str | None, arch: str | None = None) -> dict:
    env = dict(os.environ)
    if arch:  # compile-only: warpweave's target and the device QuACK dispatches for (its QUACK_ARCH override)
        env.update(WARPWEAVE_ARCH=arch, CUTE_DSL_ARCH=arch, QUACK_ARCH=arch)
    env["PYTHONPATH"] = os.pathsep.join([src, plugin_dir] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if sample:
        env["QUACK_SAMPLE_FILE"] = sample
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    return env


def run_group(cmd, cwd, env, timeout):
    """(return code or None on timeout, stdout+stderr, seconds): the process and its children in a group of
    their own, so that a timeout kills the xdist workers too."""
    t0 = time.time()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out, time.time() - t0
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out, time.time() - t0


def plugins(arch):
    return ["-p", "quack_compile_only_plugin"] if arch else []


def collect(py, src, test_file, plugin_dir, timeout, arch=None):
    """The node ids a file's tests collect to under `py`, in collection order (None and the output if it fails)."""
    cmd = [py, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"] + plugins(arch) + \
        [os.path.join("tests", test_file)]
    rc, out, _ = run_group(cmd, src, environment(src, plugin_dir, None, arch), timeout)
    ids = [line.strip() for line in out.splitlines() if "::" in line and not line.startswith(("<", " "))]
    if rc not in (0, 5) or not ids:
        return None, out
    return ids, out


def junit_counts(path):
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    ran = set()
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None, ran
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        ran.add(name)
        if "error" in kinds:
            counts["errors"] += 1
        elif "failure" in kinds:
            counts["failed"] += 1
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, ran


def run_file(impl, py, src, test_file, sample_path, n_sample, plugin_dir, workers, timeout, log_dir, arch=None,
             chunk=0):
    """One implementation over one file's sample: one pytest process, or with chunk > 0 one process per `chunk`
    tests of the sample in turn (each with the time limit), so that what a library's tests keep in memory (their
    reference data, every kernel they compiled) is given back between chunks."""
    with open(sample_path) as f:
        ids = [ln.strip() for ln in f if ln.strip()]
    parts = [ids[i:i + chunk] for i in range(0, len(ids), chunk)] if chunk > 0 and len(ids) > chunk else [None]
    xdist = workers > 1 and has_module(py, "xdist")
    rc, outs, secs, counts = 0, [], 0.0, None
    for k, part in enumerate(parts):
        stem = f"{impl}-{_flat(test_file)}" + (f"-{k}" if part is not None else "")
        path = sample_path
        if part is not None:
            path = os.path.join(log_dir, f"sample-{stem}.txt")
            with open(path, "w") as f:
                f.write("\n".join(part) + "\n")
        junit = os.path.join(log_dir, f"{stem}.xml")
        cmd = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "quack_sample_plugin"] + plugins(arch) + \
            ["--junitxml", junit, "-o", "junit_family=xunit2", os.path.join("tests", test_file)]
        if xdist:
            cmd[3:3] = ["-n", str(workers)]
        rc_k, out, s = run_group(cmd, src, environment(src, plugin_dir, path, arch), timeout)
        outs.append(out)
        secs += s
        rc = None if rc_k is None or rc is None else max(rc, rc_k)
        got, _ = junit_counts(junit)
        if got is not None:
            counts = got if counts is None else {key: counts[key] + got[key] for key in counts}
    out = "\n".join(outs)
    with open(os.path.join(log_dir, f"{impl}-{_flat(test_file)}.log"), "w") as f:
        f.write(out)
    row = {"impl": impl, "file": test_file, "sample": n_sample, "seconds": round(secs, 1), "xdist": xdist,
           "status": "timeout" if rc is None else f"rc={rc}"}
    if counts is None:
        note = f"timed out after {timeout} s" if rc is None else _last_error(out)
        row.update(passed=0, failed=0, errors=0, skipped=0, note=note)
    else:
        row.update(counts)
        missing = n_sample - sum(counts.values())
        if missing > 0:
            row["note"] = f"{missing} of the sample not run" + ("" if rc is not None else " (timeout)")
    return row


def _last_error(out: str) -> str:
    lines = [ln for ln in out.splitlines() if "Error" in ln or "error" in ln]
    return (lines[-1] if lines else out.strip().splitlines()[-1] if out.strip() else "no output")[:160]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warpweave-python", required=True, help="interpreter with warpweave and its cutlass alias")
    p.add_argument("--cutedsl-python", help="interpreter with CuTe DSL itself (the reference)")
    p.add_argument("--quack-src", help="an unpacked quack-kernels sdist (holds quack/ and tests/)")
    p.add_argument("--version", default="0.6.5", help="quack-kernels version to fetch when --quack-src is not given")
    p.add_argument("--files", default=",".join(DEFAULT_FILES), help="comma-separated test files of tests/")
    p.add_argument("--every", type=int, default=4, help="run every N-th test of each file (1: all)")
    p.add_argument("--workers", type=int, default=8, help="pytest-xdist workers per run (1: no xdist)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per (file, implementation) run")
    p.add_argument("--chunk", type=int, default=0,
                   help="run each file's sample N tests per pytest process (0: one process for the sample)")
    p.add_argument("--collect-timeout", type=int, default=600)
    p.add_argument("--json", help="also write the rows here")
    p.add_argument("--logs", help="folder for each run's output and junit xml (default: a new temporary one)")
    p.add_argument("--install-alias", action="store_true",
                   help="run `PY -m warpweave alias --install` for --warpweave-python first")
    p.add_argument("--compile-only", nargs="?", const="sm_90a", metavar="ARCH",
                   help="without a GPU: each test traced and compiled for ARCH up to its first launch")
    ns = p.parse_args(argv)
    arch = ns.compile_only

    src = os.path.abspath(ns.quack_src) if ns.quack_src else fetch_sdist(ns.version)
    if not os.path.isdir(os.path.join(src, "tests")):
        sys.exit(f"{src} has no tests/ folder: is it an unpacked quack-kernels sdist?")
    check_alias(ns.warpweave_python, ns.install_alias)
    impls = [("warpweave", ns.warpweave_python)]
    if ns.cutedsl_python:
        check_reference(ns.cutedsl_python)
        impls.insert(0, ("cutedsl", ns.cutedsl_python))
    log_dir = ns.logs or tempfile.mkdtemp(prefix="quack_tests_")
    os.makedirs(log_dir, exist_ok=True)
    plugin_dir = os.path.join(log_dir, "plugin")
    os.makedirs(plugin_dir, exist_ok=True)
    with open(os.path.join(plugin_dir, "quack_sample_plugin.py"), "w") as f:
        f.write(PLUGIN)
    if arch:
        shutil.copy(COMPILE_ONLY_PLUGIN, plugin_dir)
    reference_py = impls[0][1]

    rows = []
    for test_file in [x.strip() for x in ns.files.split(",") if x.strip()]:
        ids, out = collect(reference_py, src, test_file, plugin_dir, ns.collect_timeout, arch)
        note = ""
        if ids is None:
            # kept whole: the last line of a failed collection says only that it failed
            with open(os.path.join(log_dir, f"collect-{impls[0][0]}-{_flat(test_file)}.log"), "w") as f:
                f.write(out)
            note = f"{impls[0][0]} cannot collect it: {_last_error(out)}"
            # the other implementation's collection gives the sample, so that both still run it (the one that
            # cannot collect the file then fails it test by test, in its column)
            for _, py in impls[1:]:
                ids, _ = collect(py, src, test_file, plugin_dir, ns.collect_timeout, arch)
                if ids is not None:
                    break
        if ids is None:
            for impl, _ in impls:
                rows.append({"impl": impl, "file": test_file, "sample": 0, "status": "not collected",
                             "passed": 0, "failed": 0, "errors": 0, "skipped": 0, "note": note})
            continue
        sample = ids[::ns.every]
        sample_path = os.path.join(log_dir, f"sample-{_flat(test_file)}.txt")
        with open(sample_path, "w") as f:
            f.write("\n".join(sample) + "\n")
        for impl, py in impls:
            row = run_file(impl, py, src, test_file, sample_path, len(sample), plugin_dir, ns.workers, ns.timeout,
                           log_dir, arch, ns.chunk)
            if note and impl == impls[0][0]:
                row["note"] = note + " (sample collected by another implementation)"
            rows.append(row)
            print(f"{test_file:28s} {impl:10s} {row['passed']:4d} passed {row['failed']:4d} failed "
                  f"{row['errors']:4d} errors {row.get('skipped', 0):4d} skipped  ({row['status']}, "
                  f"{row.get('seconds', 0)} s)", flush=True)

    print()
    print(f"QuACK {os.path.basename(src)}: 1 test in {ns.every} of each file (collection order), logs in {log_dir}"
          + (f"; compile-only for {arch}: a pass is a test whose kernels compiled up to its first launch" if arch
             else ""))
    print("| test file | sample | " + " | ".join(f"{impl} pass / fail / err" for impl, _ in impls) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in impls) + " |")
    for test_file in dict.fromkeys(r["file"] for r in rows):
        cells, n = [], 0
        for impl, _ in impls:
            r = next(x for x in rows if x["file"] == test_file and x["impl"] == impl)
            n = max(n, r["sample"])
            cell = f"{r['passed']} / {r['failed']} / {r['errors']}"
            if r["status"] not in ("rc=0", "rc=1"):
                cell += f" ({r['status']})"
            cells.append(cell)
        print(f"| {test_file} | {n} | " + " | ".join(cells) + " |")
    notes = [r for r in rows if r.get("note")]
    for r in notes:
        print(f"  {r['file']} [{r['impl']}]: {r['note']}")
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
