"""Helpers of the ahead-of-time export tests: a stand-in CUDA driver (data/mock_libcuda.c), a C++ program that calls
an exported wrapper with numbers from its command line, and the launches a compiled function would make in Python
for the same arguments (its own launch plan, read without a driver)."""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def cxx() -> str | None:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


def cc() -> str | None:
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def cuda_stub_dir() -> str | None:
    """The CUDA toolkit's link stub of libcuda (the real driver's exported names), where there is one."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda", "/usr/local/cuda-13.0"]
    for r in roots:
        for sub in ("lib64/stubs", "lib/stubs", "targets/x86_64-linux/lib/stubs"):
            if r and os.path.isfile(os.path.join(r, sub, "libcuda.so")):
                return os.path.join(r, sub)
    return None


def build_mock_driver(tmp) -> str:
    """A directory holding the stand-in driver as libcuda.so.1 (and libcuda.so to link with -lcuda)."""
    d = os.path.join(tmp, "mockcuda")
    os.makedirs(d, exist_ok=True)
    so = os.path.join(d, "libcuda.so.1")
    subprocess.run([cc(), "-shared", "-fPIC", "-O1", "-o", so, "-Wl,-soname,libcuda.so.1",
                    os.path.join(HERE, "data", "mock_libcuda.c")], check=True)
    os.symlink("libcuda.so.1", os.path.join(d, "libcuda.so"))
    return d


def run_on_stand_in(tmp, name: str, program: str, args=(), **env) -> str:
    """The output of Python program text `program`, written to tmp/name and run in a process of its own whose
    driver is the stand-in (WARPWEAVE_ARCH sm_90a unless env says), with `args` and env added to its environment
    (a value None: removed); it must succeed."""
    import sys

    mock = os.path.join(str(tmp), "mockcuda")
    if not os.path.isfile(os.path.join(mock, "libcuda.so.1")):  # built once for the runs of a test
        mock = build_mock_driver(str(tmp))
    path = os.path.join(str(tmp), name)
    with open(path, "w") as f:
        f.write(program)
    e = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WARPWEAVE_ARCH="sm_90a")
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    r = subprocess.run([sys.executable, path, *args], capture_output=True, text=True, env=e, timeout=300,
                       cwd=str(tmp))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout


def harness_source(meta: dict, header: str) -> str:
    """A C++ program: loads the module, then calls the wrapper once per group of command-line numbers."""
    p = meta["prefix"]
    o = [f'#include "{header}"', "#include <cstdio>", "#include <cstdlib>", "",
         "[[maybe_unused]] static long long num(char **argv, int &i) { return std::strtoll(argv[i++], nullptr, 0); }",
         "[[maybe_unused]] static double real(char **argv, int &i) { return std::strtod(argv[i++], nullptr); }", "",
         "int main(int argc, char **argv) {", f"  {p}_Kernel_Module_t module;",
         f"  int32_t r = {p}_Kernel_Module_Load(&module);", '  std::printf("rc load %d\\n", (int)r);',
         "  if (r != 0) return 1;", "  int i = 1;", "  while (i < argc) {"]
    call = ["&module"]
    for a in meta["arguments"]:
        n = a["name"]
        if a["kind"] == "tensor":
            o.append(f"    {p}_Tensor_{n}_t {n};")
            o.append(f"    {n}.data = (void *)(uintptr_t)num(argv, i);")
            for j in range(len(a["shapes"])):
                o.append(f"    {n}.dynamic_shapes[{j}] = num(argv, i);")
            for j in range(len(a["strides"])):
                o.append(f"    {n}.dynamic_strides[{j}] = num(argv, i);")
            call.append(f"&{n}")
        elif a["kind"] in ("pointer", "stream", "event", "workspace"):
            t = {"stream": "CUstream", "event": "CUevent"}.get(a["kind"], "void *")
            o.append(f"    {t} {n} = ({t})(uintptr_t)num(argv, i);")
            call.append(n)
        elif a["kind"] == "scalar" and a["dtype"] in ("Float32", "Float64"):
            o.append(f"    double {n} = real(argv, i);")
            call.append(n)
        else:
            o.append(f"    long long {n} = num(argv, i);")
            call.append(n)
    if any(a["kind"] == "workspace" for a in meta["arguments"]):  # the bytes the call needs, printed first
        o.append("    uint64_t ww_bytes = 0;")
        sized = [c for c, a in zip(call[1:], meta["arguments"]) if a["kind"] != "workspace"]
        o.append(f"    r = {p}_Workspace_Size({', '.join(sized + ['&ww_bytes'])});")
        o.append('    std::printf("workspace %d %llu\\n", (int)r, (unsigned long long)ww_bytes);')
    o.append(f"    r = cute_dsl_{p}_wrapper({', '.join(call)});")
    o.append(f'    std::printf("rc call %d %s\\n", (int)r, r != 0 ? {p}_Last_Error() : "");')
    o.append("  }")
    o.append(f'  std::printf("rc unload %d\\n", (int){p}_Kernel_Module_Unload(&module));')
    o.append("  return 0;")
    o.append("}")
    return "\n".join(o) + "\n"


def call_numbers(meta: dict, values: dict) -> list[str]:
    """The harness's command-line numbers of one call: values maps an argument's C name to a RuntimeTensor, an
    int, a float, or an address."""
    out = []
    for a in meta["arguments"]:
        v = values[a["name"]]
        if a["kind"] == "tensor":
            out.append(str(v.data_ptr))
            out += [str(v.shape[k]) for k in a["shapes"]]
            out += [str(v.stride[k]) for k in a["strides"]]
        else:
            out.append(repr(v))
    return out


class _Function(str):
    """A kernel's name standing in for its driver function (the Python call sets its shared memory limit)."""

    def set_max_dynamic_shared_memory(self, n):
        pass


def python_launches(compiled, *args) -> list[dict]:
    """The launches the compiled function makes for these arguments in Python, read from its launch plan."""
    compiled._module = object()  # no driver here: the functions are named by their kernels
    compiled._functions = {l.kernel: _Function(l.kernel) for l in compiled.launches}
    out = []
    sizes = {l.kernel: [struct.calcsize("=" + p.fmt) for p in l.params] for l in compiled.launches}
    for launch in compiled.prepare(*args):
        f, grid, block, cluster, smem, stream, params, offsets = launch[:8]
        out.append({"kernel": str(f), "grid": list(grid), "block": list(block), "smem": int(smem), "stream": int(stream),
                    "cluster": list(cluster),
                    "params": [params[o:o + n].hex() for o, n in zip(offsets, sizes[f])]})
    return out


def parse_mock_output(text: str) -> dict:
    """{'load': ..., 'calls': [(rc, message, [launch, ...])], 'unload': rc} from the harness and the mock."""
    calls, launches, cur = [], [], None
    res = {"functions": [], "attributes": [], "tensormaps": []}
    for line in text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "launch":
            cur = {"kernel": w[1], "grid": [int(x) for x in w[3:6]], "block": [int(x) for x in w[7:10]],
                   "smem": int(w[11]), "stream": int(w[13]), "cluster": [], "params": [], "attrs": []}
            launches.append(cur)
        elif w[0] == "attr":
            cur["attrs"].append([int(x) for x in w[1:]])
            if int(w[1]) == 4:
                cur["cluster"] = [int(x) for x in w[2:5]]
        elif w[0] == "param":
            cur["params"].append(w[2] if len(w) > 2 else "")
        elif w[0] == "tensormap":
            m = {"dtype": int(w[2]), "rank": int(w[4]), "addr": int(w[6]), "dims": [], "strides": [], "box": [],
                 "elem": []}
            for key, val in zip(w[7::2], w[8::2]):
                lists = {"dim": "dims", "stride": "strides", "box": "box", "elem": "elem"}
                if key in lists:
                    m[lists[key]].append(int(val))
                else:
                    m[key] = int(val)
            res.setdefault("tensormaps", []).append(m)
        elif w[0] == "function":
            res["functions"].append(w[1])
        elif w[0] == "attribute":
            res["attributes"].append((w[1], int(w[2]), int(w[3])))
        elif w[0] == "workspace":
            res.setdefault("workspace", []).append((int(w[1]), int(w[2])))
        elif line.startswith("rc load"):
            res["load"] = int(w[2])
        elif line.startswith("rc call"):
            calls.append((int(w[2]), " ".join(w[3:]), launches))
            launches = []
        elif line.startswith("rc unload"):
            res["unload"] = int(w[2])
    res["calls"] = calls
    return res


def defined_symbols(obj: str) -> tuple[set, set]:
    """(global symbols the object defines, symbols it leaves undefined), read with nm."""
    out = subprocess.run(["nm", "-g", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        m = re.match(r"^\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z])\s+(\S+)$", line)
        if m:
            (undefined if m.group(1) == "U" else defined).add(m.group(2))
    return defined, undefined
