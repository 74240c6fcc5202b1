"""Compiling a traced module: the disk cache, WARPWEAVE_KEEP dumps, and compile errors at the user's line."""
from __future__ import annotations

import hashlib
import os
import re
import warnings

from ... import _core
from ..._version import __version__
from ..base.errors import CompilationError
from ..registry.target import plugins_digest

_cache = None


def jit_cache():
    """The disk cache of compiled modules (and of the function cache's entries), made on first use."""
    global _cache
    if _cache is None:
        _cache = _core.JitCache(os.environ.get("WARPWEAVE_CACHE_DIR", ""))
    return _cache


def keep_requested() -> set[str]:
    """What WARPWEAVE_KEEP asks to dump (ir, ptx, cubin, sass, c)."""
    return {k.strip() for k in os.environ.get("WARPWEAVE_KEEP", "").split(",") if k.strip()}


_core_identity = None


def compiler_identity() -> str:
    """The compiler's build (the core extension's size and time) and the cubin tool asked for: a rebuilt compiler
    may make different code from the same module, so its cubins must not come from an older build's cache."""
    global _core_identity
    if _core_identity is None:
        st = os.stat(_core.__file__)
        _core_identity = f"{st.st_size}:{st.st_mtime_ns}"
    return _core_identity + ":" + os.environ.get("WARPWEAVE_CUBIN_TOOL", "")


def key_of(parts) -> str:
    """The core's cache key of these strings (_core.cache_key: SHA-256 of each part's UTF-8 length, 8 bytes little
    endian, then its bytes), hashed by Python's hashlib: a GEMM's module text is 1-2 MB, which the core's portable
    SHA-256 takes ~10 ms over in every first compile, hashlib ~2 ms."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def cache_key(module_text: str, target, opts) -> str:
    return key_of([module_text, target.name, target.llvm_cpu, target.ptx_features, target.jit_arch,
                   repr(opts), __version__, plugins_digest(target), compiler_identity()])


# Module names dumped by this process, with how many modules took each: a second module whose first kernel has the
# same name (two compiled functions each with a `kernel`) gets its own files (name_2.ptx, ...) instead of
# overwriting the first's.
_dumped: dict[str, int] = {}


def dump_name(name: str) -> str:
    n = _dumped[name] = _dumped.get(name, 0) + 1
    return name if n == 1 else f"{name}_{n}"


def _dump(name: str, ext: str, data) -> None:
    d = os.environ.get("WARPWEAVE_DUMP_DIR", "warpweave_dump")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{name}.{ext}")
    mode = "wb" if isinstance(data, (bytes, bytearray)) else "w"
    with open(path, mode) as f:
        f.write(data)


def _asm_pattern(asm: str):
    """A regex of an inline asm string as NVPTX prints it: $n, ${n} and ${n:m} become registers or immediates, $$ a
    dollar, and runs of white space any white space."""
    out, i = [], 0
    for m in re.finditer(r"\$(?:\$|\d+|\{\d+(?::[a-zA-Z]+)?\})|\s+", asm):
        out.append(re.escape(asm[i:m.start()]))
        tok = m.group(0)
        out.append(r"\s*" if tok.isspace() else re.escape("$") if tok == "$$" else r"[^\s,;{}\[\]]+")
        i = m.end()
    out.append(re.escape(asm[i:]))
    return re.compile(r"\s*".join(["", "".join(out), ""]))


def user_asm_at(ptx: str, line: int, asm_sites) -> tuple[str, int] | None:
    """The user's line of the inline asm op whose text holds PTX line `line` (1-based), if a user's op made it: NVPTX
    writes each inline asm between `// begin inline asm` and `// end inline asm`."""
    lines = ptx.splitlines()
    if not 1 <= line <= len(lines):
        return None
    begin = next((i for i in range(line - 1, -1, -1) if "// begin inline asm" in lines[i]), None)
    end = next((i for i in range(line - 1, len(lines)) if "// end inline asm" in lines[i]), None)
    if begin is None or end is None or any("// end inline asm" in x for x in lines[begin:line - 1]):
        return None
    block = "\n".join(lines[begin + 1:end])
    for asm, where, _ in asm_sites:
        if where is not None and _asm_pattern(asm).fullmatch(block):
            return where
    return None


def _raise_compile_error(e, module_text=None, target=None, opts=None, asm_sites=()) -> None:
    diags = list(getattr(e, "diagnostics", []) or [])
    located = [d for d in diags if d[0] and d[1]]
    loc = (located[0][0], located[0][1]) if located else None
    lines = [f"{d[0]}:{d[1]}: {d[3]}" if d[0] else d[3] for d in diags] or [str(e)]
    log = getattr(e, "log", "")
    msg = f"the compiler refused the kernel ({getattr(e, 'stage', '?')} stage):\n  " + "\n  ".join(lines)
    ptx_lines = [d for d in located if d[0] == "<ptx>"]
    if asm_sites and ptx_lines and module_text is not None:
        # The assembler names a PTX line; an inline asm op of the user's is named by its own line. The PTX is made
        # again (no cubin): only a failed compile pays for it.
        ptx = _core.compile(module_text, target.as_dict(), opt_level=opts.opt_level, want_cubin=False)["ptx"]
        where = user_asm_at(ptx, ptx_lines[0][1], asm_sites)
        if where is not None:
            loc = where
            msg = f"the assembler refused this inline asm (PTX line {ptx_lines[0][1]}):\n  " + "\n  ".join(lines)
    immediates = [where for _, where, suspect in asm_sites if suspect and where is not None]
    refused_immediate = re.compile(r"inline asm constraint|constraint '[in]' expects")  # LLVM's words for 'i', 'n'
    if loc is None and immediates and any(refused_immediate.search(line) for line in lines):
        # LLVM names no op when an operand of an immediate constraint ('i', 'n') is not a constant; the first user
        # op that gave one a value the DSL did not make as a constant is the one.
        loc = immediates[0]
        msg = ("an operand of this inline asm's immediate constraint ('i' or 'n') is not a constant at compile "
               "time:\n  " + "\n  ".join(lines))
    if log:
        msg += "\n" + log.strip()
    raise CompilationError(msg, loc) from None


def _warn_tool_warnings(log: str, name: str) -> None:
    # The cubin tool's warnings (e.g. a register split it ignored) change how the kernel runs: say so once, here,
    # rather than leave them in a log nobody reads. A cache hit does not repeat them.
    for line in log.splitlines():
        if line.startswith("warning:") or "ptxas warning" in line:
            warnings.warn(f"{name}: {line.strip()}", RuntimeWarning, stacklevel=4)


def compile_module(module_text: str, target, opts, kernel_names, asm_sites=()):
    """(cubin, info) for a traced module; info holds the PTX when it was compiled here and the timings. asm_sites:
    (asm string, user's location) of the user's inline asm ops, where an assembler error is reported."""
    keep = keep_requested()
    name = kernel_names[0] if kernel_names else "module"
    # A resource report (ptxas -v) is asked of the assembler, so such a compile does not come from the cache.
    use_cache = not _core.JitCache.disabled_by_env() and not keep and "-v" not in opts.ptxas_options
    key = cache_key(module_text, target, opts)
    if use_cache:
        hit = jit_cache().load(key)
        if hit is not None:
            return hit[0], {"cache": "hit", "key": key}
    if keep:
        name = dump_name(name)
    if "ir" in keep:
        _dump(name, "mlir", module_text)
    try:
        r = _core.compile(module_text, target.as_dict(), opt_level=opts.opt_level, line_info=opts.line_info,
                          ptxas_options=list(opts.ptxas_options), verbose_ptxas=bool(keep))
    except _core.CompileError as e:
        _raise_compile_error(e, module_text, target, opts, asm_sites)
    cubin = r["cubin"]
    _warn_tool_warnings(r["jit_log"], name)
    info = {"cache": "miss", "key": key, "ptx": r["ptx"], "jit_log": r["jit_log"], "timings": r["timings"],
            "cubin_tool": r["cubin_tool"]}
    if "ptx" in keep:
        _dump(name, "ptx", r["ptx"])
    if "cubin" in keep:
        _dump(name, "cubin", cubin)
    if "sass" in keep:
        try:
            _dump(name, "sass", _core.disassemble_sass(cubin))
        except RuntimeError as e:
            _dump(name, "sass", f"// no SASS: {e}\n")
    if keep and r["jit_log"]:
        _dump(name, "ptxas.log", r["jit_log"])
    if use_cache:
        jit_cache().store(key, cubin, name)
    return cubin, info
