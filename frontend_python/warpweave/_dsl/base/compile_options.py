"""Compilation options of cute.compile, in CuTe DSL's two spellings:

    cute.compile[cute.GenerateLineInfo, cute.OptLevel(2), cute.KeepPTX](fn, *args)
    cute.compile(fn, *args, options="--generate-line-info --opt-level 2 --keep-ptx")

| option type | string | effect |
| --- | --- | --- |
| `OptLevel(n)` | `--opt-level n` (0..3) | LLVM's optimisation level for the kernels (default 3) |
| `GenerateLineInfo` | `--generate-line-info` | source line information in the PTX and cubin (profilers, compute-sanitizer) |
| `KeepPTX` | `--keep-ptx` | the PTX is written to WARPWEAVE_DUMP_DIR (default ./warpweave_dump) |
| `KeepCUBIN` | `--keep-cubin` | the cubin is written there too |
| `PtxasOptions("...")` | `--ptxas-options "..."` | options for the cubin tool (ptxas / nvJitLink) |
| `GPUArch("sm_90a")` | `--gpu-arch sm_90a` | the target, instead of the device's (or WARPWEAVE_ARCH) |
| `EnableTVMFFI` | `--enable-tvm-ffi` | the compiled function is called through Apache TVM FFI (tvm_ffi_call.py) |

An option type may be given as the class (`GenerateLineInfo`) or an instance (`GenerateLineInfo(True)`).
A string that is not one of these options but looks like one (`-v`, `-lineinfo`, `-O2`) is passed to the cubin
tool, which refuses what it does not know. `EnableAssertions` / `--enable-assertions` compiles the run-time checks
of cute.testing.assert_ into the kernels (without it they are left out, as CuTe DSL leaves them).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace

from .errors import DSLTypeError, DSLValueError, user_location


@dataclass(frozen=True)
class CompileOptions:
    line_info: bool = False
    opt_level: int = 3
    ptxas_options: tuple = ()
    keep: frozenset = field(default_factory=frozenset)   # of "ptx", "cubin"
    gpu_arch: str | None = None
    tvm_ffi: bool = False   # called through TVM FFI (the kernels are the same)
    profile: tuple | None = None   # warpweave.profile.Profile: the event buffer kernels record into
    assertions: bool = False   # cute.testing.assert_'s run-time checks are compiled into the kernels

    @staticmethod
    def parse(options) -> "CompileOptions":
        return merge(CompileOptions(), options)


class CompileOption:
    """Base of the option types of cute.compile[...]."""

    def apply(self, opts: CompileOptions) -> CompileOptions:  # pragma: no cover - each option defines it
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{v!r}' for v in vars(self).values())})"


class _Flag(CompileOption):
    def __init__(self, enabled: bool = True):
        self.enabled = bool(enabled)


class OptLevel(CompileOption):
    def __init__(self, level: int):
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 3:
            raise DSLValueError(f"OptLevel: the level is an integer in [0, 3], got {level!r}", user_location(2))
        self.level = level

    def apply(self, opts):
        return replace(opts, opt_level=self.level)


class GenerateLineInfo(_Flag):
    def apply(self, opts):
        return replace(opts, line_info=self.enabled)


class KeepPTX(_Flag):
    def apply(self, opts):
        return replace(opts, keep=opts.keep | {"ptx"} if self.enabled else opts.keep - {"ptx"})


class KeepCUBIN(_Flag):
    def apply(self, opts):
        return replace(opts, keep=opts.keep | {"cubin"} if self.enabled else opts.keep - {"cubin"})


class PtxasOptions(CompileOption):
    def __init__(self, options: str):
        if not isinstance(options, str):
            raise DSLTypeError(f"PtxasOptions takes a string, got {type(options).__name__}", user_location(2))
        self.options = options

    def apply(self, opts):
        return replace(opts, ptxas_options=opts.ptxas_options + tuple(shlex.split(self.options)))


class GPUArch(CompileOption):
    def __init__(self, arch: str):
        if not isinstance(arch, str) or not arch.startswith("sm_"):
            raise DSLValueError(f"GPUArch: a target name such as 'sm_90a', got {arch!r}", user_location(2))
        self.arch = arch

    def apply(self, opts):
        return replace(opts, gpu_arch=self.arch)


class EnableTVMFFI(_Flag):
    def apply(self, opts):
        return replace(opts, tvm_ffi=self.enabled)


class EnableAssertions(_Flag):
    def apply(self, opts):
        return replace(opts, assertions=self.enabled)


OPTION_TYPES = (OptLevel, GenerateLineInfo, KeepPTX, KeepCUBIN, PtxasOptions, GPUArch, EnableTVMFFI, EnableAssertions)


def _parser() -> "argparse.ArgumentParser":
    import argparse  # here: only an options string needs it (~3 ms of every process's import otherwise)

    p = argparse.ArgumentParser(prog="cute.compile options", add_help=False, exit_on_error=False)
    p.add_argument("--opt-level", type=int)
    p.add_argument("--generate-line-info", "-lineinfo", action="store_true")
    p.add_argument("--keep-ptx", action="store_true")
    p.add_argument("--keep-cubin", action="store_true")
    p.add_argument("--ptxas-options")
    p.add_argument("--gpu-arch")
    p.add_argument("--enable-tvm-ffi", action="store_true")
    p.add_argument("--enable-assertions", "--enable-device-assertions", action="store_true")
    return p


def _from_string(text: str) -> list[CompileOption]:
    import argparse

    tokens = shlex.split(text)
    # warpweave's earlier spelling -O<n> is CuTe DSL's --opt-level n.
    tokens = [t for tok in tokens for t in (["--opt-level", tok[2:]] if tok[:2] == "-O" and tok[2:].isdigit()
                                            else [tok])]
    try:
        ns, rest = _parser().parse_known_args(tokens)
    except argparse.ArgumentError as e:
        raise DSLValueError(f"cute.compile: invalid options {text!r}: {e}", user_location(3)) from None
    stray = [t for t in rest if not t.startswith("-")]
    if stray:
        raise DSLValueError(f"cute.compile: invalid options {text!r}: unexpected {' '.join(stray)!r}",
                            user_location(3))
    out: list[CompileOption] = []
    if ns.opt_level is not None:
        out.append(OptLevel(ns.opt_level))
    if ns.generate_line_info:
        out.append(GenerateLineInfo())
    if ns.keep_ptx:
        out.append(KeepPTX())
    if ns.keep_cubin:
        out.append(KeepCUBIN())
    if ns.ptxas_options:
        out.append(PtxasOptions(ns.ptxas_options))
    if ns.gpu_arch:
        out.append(GPUArch(ns.gpu_arch))
    if ns.enable_tvm_ffi:
        out.append(EnableTVMFFI())
    if ns.enable_assertions:
        out.append(EnableAssertions())
    if rest:
        out.append(PtxasOptions(" ".join(shlex.quote(t) for t in rest)))
    return out


def as_options(spec) -> list[CompileOption]:
    """Option objects of what cute.compile[...] or options= was given: a string, an option type or instance,
    or a sequence of them."""
    if spec is None:
        return []
    if isinstance(spec, str):
        return _from_string(spec)
    if isinstance(spec, type) and issubclass(spec, CompileOption):
        try:
            return [spec()]
        except TypeError:
            raise DSLTypeError(f"cute.compile: {spec.__name__} needs a value, e.g. {spec.__name__}(...)",
                               user_location(3)) from None
    if isinstance(spec, CompileOption):
        return [spec]
    if isinstance(spec, (tuple, list)):
        return [o for s in spec for o in as_options(s)]
    raise DSLTypeError(f"cute.compile: {spec!r} is not a compile option (known: "
                       f"{', '.join(t.__name__ for t in OPTION_TYPES)}, or a string of options)", user_location(3))


def merge(opts: CompileOptions, spec) -> CompileOptions:
    for o in as_options(spec):
        opts = o.apply(opts)
    return opts
