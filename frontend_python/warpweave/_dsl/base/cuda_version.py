"""The CUDA version of the toolchain that turns this process's PTX into machine code, and CuTe DSL's
`cutlass.target_version(...)` test of it: programs choose code tuned for a ptxas generation with it (register splits,
an optimisation level). The version is that of the tool the compiler picks, in the core's order
(core/compiler/compile.cpp): WARPWEAVE_CUBIN_TOOL's choice, else NVIDIA's PTX compiler library (the build's
libww_nvptxcompiler.so), else a ptxas on the search path, else libnvJitLink. Imported when first named (it needs
ctypes, which `import warpweave` does not load)."""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import glob
import os
import re
import shutil
import site
import subprocess
import sys

from .errors import DSLRuntimeError, DSLTypeError, DSLValueError, fail

_NVJITLINK = "libnvJitLink.so.13"
# Where the core looks (core/compiler/tools.cpp), in its order: the environment's choice, the loader's own search,
# a toolkit, then this interpreter's prefix and site-packages with the pip wheels' folders.
_WHEEL_DIRS = ("", "/lib", "/lib64", "/nvidia/cu13/lib", "/nvidia/nvjitlink/lib")


def _python_dirs() -> list[str]:
    dirs = [sys.prefix, os.path.join(sys.prefix, "bin")] + list(site.getsitepackages())
    dirs += glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages"))
    return dirs


def _nvjitlink_candidates() -> list[str]:
    out = [e if os.path.isfile(e) else os.path.join(e, _NVJITLINK)
           for e in os.environ.get("WARPWEAVE_NVJITLINK", "").split(":") if e]
    out.append(_NVJITLINK)
    if os.environ.get("CUDA_HOME"):
        out.append(os.path.join(os.environ["CUDA_HOME"], "lib64", _NVJITLINK))
    out.append("/usr/local/cuda/lib64/" + _NVJITLINK)
    out += [d + sub + "/" + _NVJITLINK for d in _python_dirs() for sub in _WHEEL_DIRS]
    return out


def _library_version(candidates, *symbols: str) -> tuple[int, int] | None:
    """(major, minor) from the first candidate library that loads and answers the first of `symbols` it has."""
    for candidate in candidates:
        if "/" in candidate and not os.path.isfile(candidate):
            continue
        try:
            lib = ctypes.CDLL(candidate)
        except OSError:
            continue
        query = next((getattr(lib, s) for s in symbols if hasattr(lib, s)), None)
        major, minor = ctypes.c_uint(), ctypes.c_uint()
        if query is not None and query(ctypes.byref(major), ctypes.byref(minor)) == 0:
            return major.value, minor.value
    return None


def _nvjitlink_version() -> tuple[int, int] | None:
    return _library_version(_nvjitlink_candidates(), "__nvJitLinkVersion_13_0", "nvJitLinkVersion")


def _ptxas_version() -> tuple[int, int] | None:
    path = os.pathsep.join([d + sub for d in _python_dirs() for sub in ("", "/bin", "/nvidia/cu13/bin")]
                           + [os.environ.get("PATH", ""), os.path.join(os.environ.get("CUDA_HOME", "/"), "bin"),
                              "/usr/local/cuda/bin"])
    tool = shutil.which("ptxas", path=path)
    if tool is None:
        return None
    text = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release (\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


_NVPTXCOMPILER = "libww_nvptxcompiler.so"


def _nvptxcompiler_version() -> tuple[int, int] | None:
    # Where the core looks (core/compiler/nvptxcompiler.cpp): the environment's choice, then beside the extension.
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    entries = [e for e in os.environ.get("WARPWEAVE_NVPTXCOMPILER", "").split(":") if e] + [package]
    candidates = [e if os.path.isfile(e) else os.path.join(e, _NVPTXCOMPILER) for e in entries]
    return _library_version(candidates, "nvPTXCompilerGetVersion")


_TOOLS = {"nvptxcompiler": _nvptxcompiler_version, "ptxas": _ptxas_version, "nvjitlink": _nvjitlink_version}


@functools.lru_cache(maxsize=None)
def cuda_version() -> tuple[int, int]:
    """(major, minor) of the cubin tool the compiler uses."""
    chosen = os.environ.get("WARPWEAVE_CUBIN_TOOL", "").strip().lower()
    order = [_TOOLS[chosen]] if chosen in _TOOLS else list(_TOOLS.values())
    version = next((v for v in (tool() for tool in order) if v is not None), None)
    if version is None:
        raise DSLRuntimeError(f"no CUDA cubin tool found ({_NVPTXCOMPILER}, ptxas or {_NVJITLINK}): the CUDA version "
                              "the DSL compiles with is unknown (set WARPWEAVE_NVJITLINK, or install "
                              "nvidia-nvjitlink-cu13)")
    return version


@dataclasses.dataclass(frozen=True, order=True)
class CudaVersion:
    """A CUDA version, major.minor (CuTe DSL's `cutlass.CUDA_VERSION`: programs read .major and .minor to pick code a
    toolchain generation supports), ordered as versions are."""
    major: int
    minor: int

    def __str__(self):
        return f"{self.major}.{self.minor}"


def cuda_version_object() -> CudaVersion:
    """`cutlass.CUDA_VERSION`: the version of the toolchain this process's PTX is compiled with (cuda_version())."""
    return CudaVersion(*cuda_version())


def _parse(name: str, value) -> tuple[int, int]:
    if not isinstance(value, str):
        fail(f"target_version: {name} must be a version string such as \"13.1\", not {type(value).__name__}",
             DSLTypeError)
    m = re.fullmatch(r"\s*(\d+)(?:\.(\d+))?\s*", value)
    if m is None:
        fail(f"target_version: {name}={value!r} is not a version such as \"13.1\"", DSLValueError)
    return int(m.group(1)), int(m.group(2) or 0)


def target_version(exact_version: str | None = None, *, min_version: str | None = None,
                   max_version: str | None = None) -> bool:
    """Whether the CUDA version the DSL compiles with is `exact_version`, or lies within [min_version, max_version]
    (either bound may be left out). Versions are strings "major.minor"; a compile-time Python bool."""
    if exact_version is None and min_version is None and max_version is None:
        fail("target_version: give exact_version, or min_version and/or max_version", DSLValueError)
    if exact_version is not None and (min_version is not None or max_version is not None):
        fail("target_version: exact_version and a min_version/max_version range exclude each other", DSLValueError)
    low = _parse("min_version", min_version) if min_version is not None else None
    high = _parse("max_version", max_version) if max_version is not None else None
    if low is not None and high is not None and low > high:
        fail(f"target_version: min_version {min_version} is above max_version {max_version}", DSLValueError)
    have = cuda_version()
    if exact_version is not None:
        return have == _parse("exact_version", exact_version)
    return (low is None or have >= low) and (high is None or have <= high)
