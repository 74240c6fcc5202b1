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
| `KeepSASS` | `--keep-sass` | the SASS (disassembled cubin) is written there too |
| `DumpDir("dir")` | `--dump-dir dir` | where this compilation's kept files go, instead of WARPWEAVE_DUMP_DIR |

An option type may be given as the class (`GenerateLineInfo`) or an instance (`GenerateLineInfo(True)`).
A string that is not one of these options but looks like one (`-v`, `-lineinfo`, `-O2`) is passed to the cubin
tool, which refuses what it does not know. Each option object's setting is its `value` (CuTe DSL's name), and
`OptionList(options)` is CuTe DSL's `CompileOptions(options)`: options given once and passed as `options=`.
`EnableAssertions` / `--enable-assertions` compiles the run-time checks of cute.testing.assert_ into the kernels
(without it they are left out, as CuTe DSL leaves them).
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
    keep: frozenset = field(default_factory=frozenset)   # of "ptx", "cubin", "sass"
    dump_dir: str | None = None   # where kept files go (WARPWEAVE_DUMP_DIR otherwise)
    gpu_arch: str | None = None
    tvm_ffi: bool = False   # called through TVM FFI (the kernels are the same)
    profile: tuple | None = None   # warpweave.profile.Profile: the event buffer kernels record into
    assertions: bool = False   # cute.testing.assert_'s run-time checks are compiled into the kernels

    @staticmethod
    def parse(options) -> "CompileOptions":
        return merge(CompileOptions(), options)


class CompileOption:
    """Base of the option types of cute.compile[...]; `value` is the option's setting."""

    def apply(self, opts: CompileOptions) -> CompileOptions:  # pragma: no cover - each option defines it
        raise NotImplementedError

    @property
    def value(self):
        return self.val

    def __repr__(self):
        return f"{type(self).__name__}({self.val!r})"


class BooleanCompileOption(CompileOption):
    """An option that is on or off (on when given as its class)."""

    def __init__(self, val: bool = True):
        self.val = bool(val)


class StringCompileOption(CompileOption):
    """An option whose setting is a string."""

    def __init__(self, val: str = ""):
        if not isinstance(val, str):
            raise DSLTypeError(f"{type(self).__name__} takes a string, got {type(val).__name__}", user_location(2))
        self.val = val


class OptLevel(CompileOption):
    def __init__(self, val: int):
        if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= 3:
            raise DSLValueError(f"OptLevel: the level is an integer in [0, 3], got {val!r}", user_location(2))
        self.val = val

    level = property(lambda self: self.val)

    def apply(self, opts):
        return replace(opts, opt_level=self.val)


class GenerateLineInfo(BooleanCompileOption):
    def apply(self, opts):
        return replace(opts, line_info=self.val)


class _Keep(BooleanCompileOption):
    what = ""

    def apply(self, opts):
        return replace(opts, keep=opts.keep | {self.what} if self.val else opts.keep - {self.what})


class KeepPTX(_Keep):
    what = "ptx"


class KeepCUBIN(_Keep):
    what = "cubin"


class KeepSASS(_Keep):
    what = "sass"


class PtxasOptions(StringCompileOption):
    def apply(self, opts):
        return replace(opts, ptxas_options=opts.ptxas_options + tuple(shlex.split(self.val)))


class GPUArch(StringCompileOption):
    def __init__(self, val: str):
        if not isinstance(val, str) or not val.startswith("sm_"):
            raise DSLValueError(f"GPUArch: a target name such as 'sm_90a', got {val!r}", user_location(2))
        self.val = val

    arch = property(lambda self: self.val)

    def apply(self, opts):
        return replace(opts, gpu_arch=self.val)


class DumpDir(StringCompileOption):
    def apply(self, opts):
        return replace(opts, dump_dir=self.val or None)


class EnableTVMFFI(BooleanCompileOption):
    def apply(self, opts):
        return replace(opts, tvm_ffi=self.val)


class EnableAssertions(BooleanCompileOption):
    def apply(self, opts):
        return replace(opts, assertions=self.val)


OPTION_TYPES = (OptLevel, GenerateLineInfo, KeepPTX, KeepCUBIN, KeepSASS, PtxasOptions, GPUArch, DumpDir, EnableTVMFFI,
                EnableAssertions)


def _parser() -> "argparse.ArgumentParser":
    import argparse  # here: only an options string needs it (~3 ms of every process's import otherwise)

    p = argparse.ArgumentParser(prog="cute.compile options", add_help=False, exit_on_error=False)
    p.add_argument("--opt-level", type=int)
    p.add_argument("--generate-line-info", "-lineinfo", action="store_true")
    p.add_argument("--keep-ptx", action="store_true")
    p.add_argument("--keep-cubin", action="store_true")
    p.add_argument("--keep-sass", action="store_true")
    p.add_argument("--dump-dir")
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
    if ns.keep_sass:
        out.append(KeepSASS())
    if ns.dump_dir:
        out.append(DumpDir(ns.dump_dir))
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
    if isinstance(spec, OptionList):
        return list(spec.options)
    raise DSLTypeError(f"cute.compile: {spec!r} is not a compile option (known: "
                       f"{', '.join(t.__name__ for t in OPTION_TYPES)}, or a string of options)", user_location(3))


def merge(opts: CompileOptions, spec) -> CompileOptions:
    for o in as_options(spec):
        opts = o.apply(opts)
    return opts


class OptionList:
    """Compile options given once (CuTe DSL's `CompileOptions((KeepPTX(), OptLevel(2)))`), passed as `options=` to
    cute.compile: the option objects, checked when made, and the settings they come to."""

    def __init__(self, options=None):
        self.options = tuple(as_options(options))
        self._settings = merge(CompileOptions(), self.options)

    opt_level = property(lambda self: self._settings.opt_level)
    generate_line_info = property(lambda self: self._settings.line_info)
    gpu_arch = property(lambda self: self._settings.gpu_arch or "")
    enable_tvm_ffi = property(lambda self: self._settings.tvm_ffi)
    enable_assertions = property(lambda self: self._settings.assertions)

    def to_str(self) -> str:
        """The options as cute.compile's string spelling."""
        s = self._settings
        out = [f"--opt-level {s.opt_level}"]
        out += ["--generate-line-info"] * s.line_info + ["--enable-tvm-ffi"] * s.tvm_ffi
        out += ["--enable-assertions"] * s.assertions + [f"--keep-{k}" for k in sorted(s.keep)]
        if s.gpu_arch:
            out.append(f"--gpu-arch {s.gpu_arch}")
        if s.dump_dir:
            out.append(f"--dump-dir {shlex.quote(s.dump_dir)}")
        if s.ptxas_options:
            out.append(f"--ptxas-options {shlex.quote(' '.join(s.ptxas_options))}")
        return " ".join(out)

    def __repr__(self):
        return f"CompileOptions({self.to_str()!r})"
