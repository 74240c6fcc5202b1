"""Registers, stack frame, spills and assembly time of the same kernels under each cubin tool.

The modules are MLIR files that warpweave dumped (WARPWEAVE_KEEP=ir); each is compiled in this process once per
tool (WARPWEAVE_CUBIN_TOOL), and its PTX is also given to the ptxas program with -v as the yardstick. Registers and
the stack frame are read from each cubin itself (its .nv.info attributes), spills from the tool's -v report; the
time is the compiler's own cubin step (median of --repeat runs).

    WARPWEAVE_KEEP=ir WARPWEAVE_DUMP_DIR=/tmp/d python -m warpweave run --compile-only --arch sm_100a prog.py
    python benchmarks/python/bench_cubin_tools.py /tmp/d/kernel.mlir:sm_100a --tools nvptxcompiler,ptxas,nvjitlink
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import struct
import subprocess
import tempfile
import time

from warpweave import _core
from warpweave._dsl.registry.target import target_named


def cubin_resources(elf: bytes) -> dict[str, dict[str, int]]:
    """{function: {"registers", "stack"}} from the cubin's .nv.info section (REGCOUNT 0x2f, FRAME_SIZE 0x11)."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3a)
    # (name, type, offset, size, link) of each section header
    secs = [struct.unpack_from("<II16xQQI", elf, shoff + i * shentsize) for i in range(shnum)]

    def cstr(base, off):
        return elf[base + off:elf.index(b"\0", base + off)].decode()

    names = [cstr(secs[shstrndx][2], s[0]) for s in secs]
    symtab = next(s for s in secs if s[1] == 2)
    strtab = secs[symtab[4]][2]
    out: dict[str, dict[str, int]] = {}
    info = secs[names.index(".nv.info")]
    at, end = info[2], info[2] + info[3]
    while at < end:
        fmt, attr = elf[at], elf[at + 1]
        size = struct.unpack_from("<H", elf, at + 2)[0] if fmt == 4 else 0
        if fmt == 4 and attr in (0x2f, 0x11) and size == 8:
            sym, value = struct.unpack_from("<II", elf, at + 4)
            fn = cstr(strtab, struct.unpack_from("<I", elf, symtab[2] + 24 * sym)[0])
            out.setdefault(fn, {})["registers" if attr == 0x2f else "stack"] = value
        at += 4 + size
    return out


def spills(log: str) -> dict[str, tuple[int, int]]:
    """{function: (spill store bytes, spill load bytes)} from a ptxas -v report, whose line after "Function
    properties for F" gives F's stack frame and spills."""
    pattern = r"Function properties for (\S+)\n[^\n]*?(\d+) bytes spill stores, (\d+) bytes spill loads"
    return {m.group(1): (int(m.group(2)), int(m.group(3))) for m in re.finditer(pattern, log)}


def ptxas_reference(ptx: str, arch: str) -> tuple[dict, dict, float]:
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        t = time.perf_counter()
        log = subprocess.run([shutil.which("ptxas") or "ptxas", f"-arch={arch}", "-O3", "-v", src, "-o", dst],
                             check=True, capture_output=True, text=True).stderr
        ms = (time.perf_counter() - t) * 1e3
        with open(dst, "rb") as f:
            return cubin_resources(f.read()), spills(log), ms


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("modules", nargs="+", help="MODULE.mlir:ARCH")
    p.add_argument("--tools", default="default,nvjitlink", help="comma-separated: default (automatic), "
                   "nvptxcompiler, ptxas, nvjitlink")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print(f"{'module':<28} {'tool':<22} {'regs':>5} {'stack':>6} {'spill st/ld':>12} {'cubin ms':>9}")
    for spec in args.modules:
        path, arch = spec.rsplit(":", 1)
        text = open(path).read()
        label = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        tools = args.tools.split(",")
        times: dict[str, list[float]] = {t: [] for t in tools}
        results = {}
        # The tools take turns within each repeat, so that a busy machine slows each of them alike.
        for _ in range(args.repeat):
            for tool in tools:
                os.environ["WARPWEAVE_CUBIN_TOOL"] = "" if tool == "default" else tool
                results[tool] = _core.compile(text, target_named(arch).as_dict(), verbose_ptxas=True)
                times[tool].append(results[tool]["timings"]["cubin_ms"])
        ptx = None
        for tool in tools:
            r = results[tool]
            ptx = r["ptx"]
            res, sp = cubin_resources(bytes(r["cubin"])), spills(r["jit_log"])
            for fn in sorted(sp):
                k = res.get(fn, {})
                print(f"{label:<28} {tool + ' (' + r['cubin_tool'] + ')':<22} {k.get('registers', '-'):>5} "
                      f"{k.get('stack', 0):>6} {'%d/%d' % sp[fn]:>12} {statistics.median(times[tool]):>9.0f}")
        if ptx is not None and shutil.which("ptxas"):
            res, sp, ms = ptxas_reference(ptx, arch)
            for fn in sorted(sp):
                k = res.get(fn, {})
                print(f"{label:<28} {'ptxas -v (program)':<22} {k.get('registers', '-'):>5} {k.get('stack', 0):>6} "
                      f"{'%d/%d' % sp[fn]:>12} {ms:>9.0f}")


if __name__ == "__main__":
    main()
