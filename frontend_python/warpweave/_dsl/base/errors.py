"""Errors of the DSL. A user's mistake raises an exception that names the user's file and line; it never aborts.

Each DSL error class also derives from the matching built-in (DSLTypeError is a TypeError, ...), so code that
catches built-in exceptions keeps working.
"""
from __future__ import annotations

import functools
import os
import site
import sys
import traceback
from types import TracebackType

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class DSLError(Exception):
    """A mistake in a warpweave kernel or host function, reported at the user's source line."""

    def __init__(self, message: str, location: tuple[str, int] | None = None):
        self.location = location
        self.bare_message = message
        if location is not None:
            message = f"{location[0]}:{location[1]}: {message}"
        super().__init__(message)


class DSLTypeError(DSLError, TypeError):
    pass


class DSLValueError(DSLError, ValueError):
    pass


class DSLAttributeError(DSLError, AttributeError):
    """A name a DSL module does not have (an op of a dialect that has none such): `hasattr` reads it as absent."""


class DSLRuntimeError(DSLError, RuntimeError):
    pass


class DSLNotImplementedError(DSLError, NotImplementedError):
    pass


class DSLCudaRuntimeError(DSLRuntimeError):
    """A CUDA call that failed: a launch the driver refused, or a cuda-bindings call that checkCudaErrors read.
    `error_code` is the error as cuda-bindings names it (a CUresult member, which compares equal to the runtime's
    cudaError_t of the same number, as a launch's errors have: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE and
    cudaErrorCooperativeLaunchTooLarge are both 720); without cuda-bindings it is the number where known, else
    None. `error_name` is the error's name."""

    def __init__(self, message: str, location=None, error_code=None, error_name: str | None = None):
        super().__init__(message, location)
        self.error_code = error_code
        self.error_name = error_name


def cuda_error(e: Exception, location=None) -> DSLCudaRuntimeError:
    """The DSL error of a driver error the runtime raised (its text names the entry point and the error:
    `cuLaunchKernelEx failed: CUDA_ERROR_... (the driver's sentence); the launch`)."""
    text = str(e)
    name = next((w.strip("():;,") for w in text.split() if w.startswith("CUDA_ERROR_")), None)
    code = None
    if name is not None:
        try:
            from cuda.bindings import driver
            code = getattr(driver.CUresult, name)  # an enum or a plain class, by cuda-bindings version
        except (ImportError, AttributeError):
            code = None
    return DSLCudaRuntimeError(text, location, code, name)


class DSLAssertionError(DSLError, AssertionError):
    """cute.testing.assert_ of a condition known false when compiling."""


class CompilationError(DSLError, RuntimeError):
    """The compiler (MLIR, LLVM, ptxas) refused the traced kernel."""


# Library code whose frames are never the user's: the package itself, and what registers here (the pipelines
# component, each backend's Python package), so that a mistake caught inside a library names the user's line.
_LIBRARY_DIRS = [_PACKAGE_DIR + os.sep]


def register_library_dir(path: str) -> None:
    d = os.path.abspath(path).rstrip(os.sep) + os.sep
    if d not in _LIBRARY_DIRS:
        _LIBRARY_DIRS.append(d)
        real = os.path.realpath(d).rstrip(os.sep) + os.sep
        if real != d and real not in _LIBRARY_DIRS:
            _LIBRARY_DIRS.append(real)
        is_user_file.cache_clear()
        _LIBRARY_MODULES.clear()


def library_dirs() -> tuple:
    """The folders whose code is the DSL's (the package first, then the libraries registered), each ending in a
    separator."""
    return tuple(_LIBRARY_DIRS)


@functools.lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[list[str], list[str]]:
    """Python's own library (a mistake found in a callback that re or functools runs is not there), and the
    site-packages that an interpreter without a virtual environment keeps inside it (user code may live there).
    sysconfig's stdlib / platstdlib and purelib / platlib, worked out without importing sysconfig, which costs a
    process's first compile ~10 ms: the folder of the os module and <exec prefix>/<platlibdir>/pythonX.Y, and
    site's site-packages."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    own = {os.path.dirname(os.path.abspath(os.__file__))}
    for prefix in {sys.exec_prefix, sys.base_exec_prefix}:
        own.add(os.path.join(os.path.abspath(prefix), getattr(sys, "platlibdir", "lib"), version))
    try:
        sites = list(site.getsitepackages())
    except AttributeError:  # an old virtualenv's site module
        sites = []
    sites += [os.path.join(d, "site-packages") for d in own]
    norm = lambda d: os.path.abspath(d).rstrip(os.sep) + os.sep  # noqa: E731
    return sorted({norm(d) for d in own}), sorted({norm(d) for d in sites})


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    # Asked for every traced operation (its source location): cached per file name, since a relative name is
    # resolved against the working directory, which a tracer does not change.
    if not filename or filename.startswith("<frozen") or filename.startswith("<string"):
        return False
    path = os.path.abspath(filename)
    if any(path.startswith(d) for d in _LIBRARY_DIRS):
        return False
    own, sites = _stdlib_dirs()
    return not (any(path.startswith(d) for d in own) and not any(path.startswith(d) for d in sites))


# (id of a code object, instruction offset) -> (the code object, line). A frame's f_lineno scans its code's line
# table from the start, and the tracer asks for the user's line at every operation it emits, mostly from the same
# few places of a large kernel function: remembered, a location costs a dictionary lookup. Keyed by id (a code
# object's own hash walks its bytecode); the entry holds the code object, so that its id is not reused meanwhile.
_LINES: dict = {}
_LINES_LIMIT = 1 << 16

# Module name -> whether its file is the DSL's or Python's own. The frames between an emitted operation and the
# user's line are the DSL's (a GEMM's ~7000 operations, 4 to 15 frames each): they are passed over by the name of
# their function's module, which sys._getframemodulename reads without making a frame object of each (f_back does,
# and a frame object then costs its function's return a copy of its locals too).
_LIBRARY_MODULES: dict = {}
_frame_module = getattr(sys, "_getframemodulename", None)


def _library_module(name: str) -> bool:
    file = getattr(sys.modules.get(name), "__file__", None)
    library = _LIBRARY_MODULES[name] = isinstance(file, str) and not is_user_file(file)
    return library


def user_location(skip_frames: int = 1) -> tuple[str, int] | None:
    """The innermost frame of user code on the current stack."""
    depth = skip_frames
    if _frame_module is not None:
        libraries = _LIBRARY_MODULES
        while True:
            name = _frame_module(depth)
            if name is None or name == "__main__":  # __main__ is the runner's module, then the program's
                break
            library = libraries.get(name)
            if library is None:
                library = _library_module(name)
            if not library:
                break
            depth += 1
    try:
        f = sys._getframe(depth)
    except ValueError:  # the stack ended in library frames
        return None
    while f is not None:
        code = f.f_code
        if is_user_file(code.co_filename):
            key = (id(code), f.f_lasti)
            hit = _LINES.get(key)
            if hit is not None and hit[0] is code:
                return (code.co_filename, hit[1])
            line = f.f_lineno
            if len(_LINES) >= _LINES_LIMIT:
                _LINES.clear()
            _LINES[key] = (code, line)
            return (code.co_filename, line)
        f = f.f_back
    return None


def location_in_traceback(tb: TracebackType | None) -> tuple[str, int] | None:
    """The innermost user frame of an exception's traceback."""
    loc = None
    for frame, lineno in traceback.walk_tb(tb):
        if is_user_file(frame.f_code.co_filename):
            loc = (frame.f_code.co_filename, lineno)
    return loc


def _matching_class(exc: BaseException) -> type[DSLError]:
    if isinstance(exc, TypeError):
        return DSLTypeError
    if isinstance(exc, ValueError):
        return DSLValueError
    if isinstance(exc, NotImplementedError):
        return DSLNotImplementedError
    return DSLRuntimeError


def as_dsl_error(exc: BaseException) -> DSLError:
    """An exception raised while tracing, restated at the user's line (DSL errors pass through unchanged)."""
    if isinstance(exc, DSLError) and exc.location is not None:
        return exc
    loc = location_in_traceback(exc.__traceback__)
    if isinstance(exc, DSLError):
        err = type(exc)(exc.bare_message, loc)
    else:
        err = _matching_class(exc)(f"{type(exc).__name__}: {exc}", loc)
    err.__cause__ = exc
    return err


def fail(message: str, cls: type[DSLError] = DSLTypeError) -> None:
    """Raises cls(message) at the user's current line."""
    raise cls(message, user_location(2))
