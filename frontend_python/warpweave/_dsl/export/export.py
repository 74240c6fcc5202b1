"""Ahead-of-time export of a compiled function: compiled.export_to_c(file_path=, file_name=, function_prefix=).

It writes {file_path}/{file_name}.h (what a C or C++ program calls, export_c.py says what it declares) and
{file_path}/{file_name}.o (the cubin embedded, the wrapper that checks the arguments and launches the kernels). A
program links the object with -lcuda alone: no Python, LLVM or plugin runs then. The object is built by the
system's C compiler ($CC, else cc, gcc or clang), the one that will link it. With WARPWEAVE_KEEP holding `c` the
C source is kept too, as {file_name}.c.

Host arguments that a backend computes at each call (a TMA tensor map) can be exported only where the backend
gives a C form of them (HostArgument's producer.export_c); where it gives none, export_to_c says which kernel
parameter of which argument cannot be exported, instead of writing a wrapper that would launch without it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from ..base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location
from ..call.compiled_function import JitCompiledFunction
from . import export_c

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def c_compiler() -> str:
    cc = os.environ.get("CC")
    if cc:
        return cc
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    raise DSLRuntimeError("export_to_c builds the object with a C compiler, and none was found: install one or set "
                          "CC", user_location(3))


def _check_destination(file_path, file_name, function_prefix):
    if not isinstance(file_path, (str, os.PathLike)):
        raise DSLTypeError(f"export_to_c: file_path is a directory path, got {type(file_path).__name__}",
                           user_location(3))
    file_path = os.fspath(file_path)
    if not os.path.isdir(file_path):
        raise DSLValueError(f"export_to_c: file_path {file_path!r} is not an existing directory", user_location(3))
    if not os.access(file_path, os.W_OK | os.X_OK):
        raise DSLValueError(f"export_to_c: the directory {file_path!r} is not writable", user_location(3))
    if not isinstance(file_name, str) or not _NAME.match(file_name) or file_name in (".", ".."):
        raise DSLValueError(f"export_to_c: file_name is a base name of letters, digits and _.+- (no directory), got "
                            f"{file_name!r}", user_location(3))
    prefix = file_name if function_prefix is None else function_prefix
    if not isinstance(prefix, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", prefix) \
            or prefix.startswith("ww_"):
        what = "function_prefix" if function_prefix is not None else "file_name (the default function_prefix)"
        raise DSLValueError(f"export_to_c: {what} {prefix!r} must be a C identifier of up to 64 characters "
                            "(letters, digits, _; not starting with a digit or ww_)", user_location(3))
    return file_path, prefix


def export_to_c(compiled, file_path, file_name, function_prefix=None) -> tuple[str, str]:
    """Writes the header and the object of `compiled`; returns their paths."""
    if not isinstance(compiled, JitCompiledFunction):
        raise DSLTypeError(f"export_to_c exports a compiled function (what cute.compile returns), got "
                           f"{type(compiled).__name__}", user_location(2))
    file_path, prefix = _check_destination(file_path, file_name, function_prefix)
    export_c.check_exportable(compiled)
    args = export_c.c_arguments(compiled)
    guard = re.sub(r"[^A-Za-z0-9]", "_", file_name).upper() + "_WARPWEAVE_H"
    header_name = file_name + ".h"
    h_text = export_c.header(compiled, args, prefix, guard)
    c_text = export_c.source(compiled, args, prefix, header_name)
    cc = c_compiler()
    with tempfile.TemporaryDirectory(prefix="ww_export_") as tmp:
        h_tmp, c_tmp, o_tmp = (os.path.join(tmp, file_name + ext) for ext in (".h", ".c", ".o"))
        with open(h_tmp, "w") as f:
            f.write(h_text)
        with open(c_tmp, "w") as f:
            f.write(c_text)
        keep_c = "c" in os.environ.get("WARPWEAVE_KEEP", "").split(",")
        if keep_c:
            shutil.copyfile(c_tmp, os.path.join(file_path, file_name + ".c"))
        # -U_FORTIFY_SOURCE: compilers that fortify by default (Ubuntu's) would make the object need glibc's
        # checked variants (__snprintf_chk); the object asks only for the C library's plain functions.
        cmd = [cc, "-std=c11", "-O2", "-U_FORTIFY_SOURCE", "-D_FORTIFY_SOURCE=0", "-fPIC", "-fvisibility=default",
               "-Wall", "-Wno-unused-function",
               "-I", tmp, "-c", c_tmp, "-o", o_tmp]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise DSLRuntimeError(f"export_to_c: cannot run the C compiler {cc!r}: {e}", user_location(2)) from None
        if p.returncode != 0:
            raise DSLRuntimeError(f"export_to_c: the C compiler refused the generated wrapper (a warpweave bug; "
                                  f"WARPWEAVE_KEEP=c keeps its source):\n{p.stderr[-4000:]}", user_location(2))
        h_out = os.path.join(file_path, header_name)
        o_out = os.path.join(file_path, file_name + ".o")
        try:
            shutil.copyfile(h_tmp, h_out)
            shutil.copyfile(o_tmp, o_out)
        except OSError as e:
            raise DSLValueError(f"export_to_c: cannot write into {file_path!r}: {e}", user_location(2)) from None
    return h_out, o_out
