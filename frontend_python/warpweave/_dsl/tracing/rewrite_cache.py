"""The preprocessor's results kept beside Python's own bytecode, so that a new process does not rewrite again.

Rewriting a @cute.jit / @cute.kernel function (ast_rewrite.rewrite: read and tokenize its source, parse, check,
transform, compile) costs a GEMM example ~20 ms in every process that compiles it, also when the kernel's cubin is
cached. Like a .pyc, the compiled code of the rewritten function depends only on the source file and on the
rewriter, so it is kept next to the module's .pyc (importlib.util.cache_from_source: __pycache__, or
sys.pycache_prefix) in one file per module: `<module>.<tag>.ww-rewrite`, a marshal of
{"key": ..., "functions": {(qualname, first line, free variables, flags): code}}.

The key is what a .pyc checks plus the rewriter: the source file's size and modification time, and those of this
module and of ast_rewrite.py, the methods libraries patched onto the preprocessor (ast_rewrite.preprocessor_extensions)
and the interpreter's cache tag; any change drops the whole file's entries. Reading
and writing follow Python's bytecode rules (nothing is written under sys.dont_write_bytecode); WARPWEAVE_DISABLE_CACHE
turns both off. Any problem with the file (unreadable, corrupt, another format) reads as a miss.
"""
from __future__ import annotations

import importlib.util
import marshal
import os
import sys

from ... import _core

_FORMAT = 1
_rewriter_stat = None


def _stat_key(path: str):
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns)


def _rewriter_key():
    global _rewriter_stat
    if _rewriter_stat is None:
        here = os.path.dirname(os.path.abspath(__file__))
        _rewriter_stat = tuple(_stat_key(os.path.join(here, f)) for f in ("ast_rewrite.py", "rewrite_cache.py"))
    return _rewriter_stat


def source_key(path: str):
    """A source file's state as the key holds it (None for a file that cannot be read: never equal to a stat)."""
    try:
        return _stat_key(path)
    except OSError:
        return None


def _enabled() -> bool:
    return not _core.JitCache.disabled_by_env()


def _locate(fn, extensions=()):
    """(cache file, file key, function key) for fn, or None when its source is no plain file."""
    filename = fn.__code__.co_filename
    if not filename.endswith(".py") or not os.path.isfile(filename):
        return None
    try:
        pyc = importlib.util.cache_from_source(filename)
    except (NotImplementedError, ValueError):
        return None
    path = pyc[:-len(".pyc")] + ".ww-rewrite" if pyc.endswith(".pyc") else pyc + ".ww-rewrite"
    file_key = (_FORMAT, sys.implementation.cache_tag, _stat_key(filename), _rewriter_key(), extensions)
    code = fn.__code__
    fn_key = (fn.__qualname__, code.co_firstlineno, tuple(code.co_freevars), code.co_flags)
    return path, file_key, fn_key


def _read(path: str, file_key) -> dict:
    try:
        with open(path, "rb") as f:
            data = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or data.get("key") != file_key or not isinstance(data.get("functions"), dict):
        return {}
    return data["functions"]


def load(fn, extensions=()):
    """The code object of fn's rewritten module from an earlier process, or None."""
    if not _enabled():
        return None
    try:
        where = _locate(fn, extensions)
    except OSError:
        return None
    if where is None:
        return None
    path, file_key, fn_key = where
    code = _read(path, file_key).get(fn_key)
    return code if type(code) is type(fn.__code__) else None


def store(fn, code, extensions=()) -> None:
    """Keeps fn's rewritten module code for later processes (quietly nothing where that cannot be written)."""
    if not _enabled() or sys.dont_write_bytecode:
        return
    try:
        where = _locate(fn, extensions)
        if where is None:
            return
        path, file_key, fn_key = where
        functions = _read(path, file_key)
        functions[fn_key] = code
        data = marshal.dumps({"key": file_key, "functions": functions})
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)   # readers see the old file or the new one, never half of one
    except (OSError, ValueError):
        try:
            os.unlink(tmp)  # noqa: F821 - set when the write got that far
        except (OSError, NameError, UnboundLocalError):
            pass
