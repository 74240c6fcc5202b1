"""Checks an installed warpweave wheel from the inside: run by the interpreter of a fresh virtual environment that
has only the wheel (and its dependencies) installed, from a folder outside the checkout (scripts/test_wheel.sh).

    <venv>/bin/python check_installed.py --checkout /path/to/checkout

Each check states a property of the installed package, not of the checkout it was built from: everything imports
from site-packages, the package holds no links (a wheel cannot carry them; a build tree's plugin packages are links
into backends/), every in-tree backend is found relative to the package, and a kernel compiles (PTX and cubin) for
each of their targets without a GPU. Exits non-zero with the failed check named.
"""
import argparse
import importlib
import json
import os
import subprocess
import sys
import sysconfig

import warpweave  # where it comes from is the first check
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def under(path, root):
    path, root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([path, root]) == root


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkout", required=True, help="the source tree the wheel was built from")
    ap.add_argument("--skip-main", action="store_true", help="leave out `python -m warpweave main`")
    args = ap.parse_args()
    site = sysconfig.get_paths()["platlib"]
    check(not under(os.getcwd(), args.checkout), f"runs outside the checkout (cwd {os.getcwd()})")

    # --- everything imports from the environment's site-packages --------------------------------------------
    for name in ("warpweave", "warpweave._core", "warpweave.cute", "warpweave.pipeline", "warpweave_pipelines",
                 "warpweave_conformance"):
        mod = importlib.import_module(name)
        check(under(mod.__file__, site) and not under(mod.__file__, args.checkout),
              f"{name} imports from site-packages ({mod.__file__})")
    pkg = os.path.dirname(warpweave.__file__)
    links = [os.path.join(d, f) for d, ds, fs in os.walk(pkg) for f in ds + fs if os.path.islink(os.path.join(d, f))]
    check(not links, f"the installed package holds no links ({links[:3]})")
    check(os.path.isfile(os.path.join(pkg, "libprotobuf.so.32")), "libprotobuf.so.32 sits beside the extension")

    # --- the backends, found relative to the package ---------------------------------------------------------
    env = {k: v for k, v in os.environ.items() if k != "WARPWEAVE_PLUGIN_PATH"}
    out = subprocess.run([sys.executable, "-m", "warpweave", "plugins", "--json"], capture_output=True, text=True,
                         env=env)
    check(out.returncode == 0, f"python -m warpweave plugins --json exits 0 ({out.stderr.strip()[-300:]})")
    listed = json.loads(out.stdout) if out.returncode == 0 else []
    loaded = {p["name"]: p for p in listed if "name" in p and p.get("path")}
    for name in ("ampere", "hopper", "blackwell", "blackwell_geforce"):
        p = loaded.get(name)
        if not check(p is not None, f"backend {name} is loaded from the installed package"):
            continue
        check(under(p["path"], os.path.join(pkg, "plugins")), f"{name}'s plugin lies in warpweave/plugins ({p['path']})")
        pydir = os.path.splitext(p["path"])[0] + ".python"
        if os.path.exists(pydir) or name in ("hopper", "blackwell"):
            check(os.path.isdir(pydir) and not os.path.islink(pydir)
                  and os.path.isfile(os.path.join(pydir, "__init__.py")),
                  f"{name}'s Python package is a real folder beside its plugin ({pydir})")
    refused = [p for p in listed if "refused" in p]
    check(not refused, f"no plugin file is refused ({refused[:2]})")
    # A backend's Python package, mounted from its copy in the wheel.
    hh = importlib.import_module("warpweave.utils.hopper_helpers")
    check(under(hh.__file__, os.path.join(pkg, "plugins")), f"warpweave.utils.hopper_helpers from the wheel ({hh.__file__})")

    # --- a kernel compiles for every shipped target, without a GPU -------------------------------------------
    @cute.kernel
    def scale_kernel(gX: cute.Tensor, gY: cute.Tensor, n: warpweave.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * 128 + tidx
        if i < n:
            gY[i] = gX[i] * 2.0 + 1.0

    @cute.jit
    def scale(mX: cute.Tensor, mY: cute.Tensor, n: warpweave.Int32):
        scale_kernel(mX, mY, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1])

    for arch in ("sm_80", "sm_90a", "sm_100a", "sm_120a"):
        os.environ["WARPWEAVE_ARCH"] = arch
        x = make_fake_tensor(warpweave.Float32, (cute.sym_int(),))
        try:
            compiled = cute.compile(scale, x, x, 1000)
        except Exception as e:  # noqa: BLE001 - reported as the failed check
            check(False, f"a kernel compiles for {arch} ({type(e).__name__}: {e})")
            continue
        ptx = compiled.ptx if isinstance(compiled.ptx, str) else compiled.ptx()
        check(f".target {arch}" in ptx and bytes(compiled.cubin[:4]) == b"\x7fELF",
              f"a kernel compiles for {arch}: PTX for that target and an ELF cubin of {len(compiled.cubin)} bytes")
    del os.environ["WARPWEAVE_ARCH"]

    # --- the command-line entry points -------------------------------------------------------------------------
    if not args.skip_main:
        r = subprocess.run([sys.executable, "-m", "warpweave", "main"], capture_output=True, text=True, env=env)
        check(r.returncode == 0 and "compiled" in r.stdout,
              f"python -m warpweave main exits 0 and compiles the examples ({(r.stdout + r.stderr)[-400:]})")
    r = subprocess.run([sys.executable, "-m", "warpweave", "conformance", "--tier", "compile", "--quiet",
                        "--family-sample", "16"], capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"python -m warpweave conformance --tier compile exits 0 ({(r.stdout + r.stderr)[-400:]})")
    r = subprocess.run([sys.executable, "-m", "warpweave", "sdk", "--cmake-dir"], capture_output=True, text=True)
    cmake_dir = r.stdout.strip()
    check(r.returncode == 0 and os.path.isfile(os.path.join(cmake_dir, "warpweaveConfig.cmake"))
          and under(cmake_dir, pkg), f"python -m warpweave sdk --cmake-dir names the package's SDK ({cmake_dir})")

    print(f"\n{len(failures)} check(s) failed" if failures else "\nevery check passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
