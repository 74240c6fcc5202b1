"""cute.runtime.load_module(path): an exported function (export.py) called from Python again.

`path` is the object file export_to_c wrote, or a shared library linked from one or more of them. An object is
linked into a shared library first (with the C compiler), which is loaded with ctypes; `module.<function_prefix>`
is then a callable taking the arguments of the @cute.jit function (compile-time constants left out, as a compiled
function takes them): tensors (torch tensors, from_dlpack views), integers, scalars, pointers, streams. Each call
checks the arguments against what was compiled, as a compiled function does, and runs the exported C wrapper,
which launches the kernels through the CUDA driver; an error of the wrapper becomes a DSLRuntimeError.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile

from ..base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location
from ..call import workspace as _workspace
from ..call.arg_plan import kind_named
from ..registry import compile_only
from .export import c_compiler
from .export_c import ABI_VERSION

_driver_loaded: bool | None = None


def load_driver() -> bool:
    """Loads libcuda.so.1 (or WARPWEAVE_LIBCUDA) with global symbols, which the wrappers' driver calls bind to."""
    global _driver_loaded
    if _driver_loaded is None:
        try:
            ctypes.CDLL(os.environ.get("WARPWEAVE_LIBCUDA") or "libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
            _driver_loaded = True
        except OSError:
            _driver_loaded = False
    return _driver_loaded


def load_module(path, enable_tvm_ffi: bool = False):
    """The functions exported to `path` (an object or a shared library): through their C wrappers, or with
    enable_tvm_ffi=True, the TVM FFI functions of a library linked from TVM FFI exports (export_to_c(...,
    function_name=) of a function compiled with --enable-tvm-ffi), called with torch tensors."""
    if enable_tvm_ffi:
        return _load_tvm_ffi(path)
    if not isinstance(path, (str, os.PathLike)):
        raise DSLTypeError(f"load_module: a path to an exported .o or .so, got {type(path).__name__}",
                           user_location(2))
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DSLValueError(f"load_module: no file {path!r}", user_location(2))
    with open(path, "rb") as f:
        head = f.read(18)
    if head[:4] != b"\x7fELF" or len(head) < 18:
        raise DSLValueError(f"load_module: {path!r} is not an object file or shared library (export_to_c writes "
                            "one)", user_location(2))
    elf_type = struct.unpack_from("<H", head, 16)[0]  # 1: relocatable object, 3: shared object
    tmp = None
    try:
        if elf_type == 1:
            tmp = tempfile.mkdtemp(prefix="ww_load_")
            so = os.path.join(tmp, "module.so")
            p = subprocess.run([c_compiler(), "-shared", "-o", so, path], capture_output=True, text=True)
            if p.returncode != 0:
                raise DSLRuntimeError(f"load_module: linking {path!r} failed:\n{p.stderr[-2000:]}", user_location(2))
        elif elf_type == 3:
            so = os.path.abspath(path)
        else:
            raise DSLValueError(f"load_module: {path!r} is neither an object file nor a shared library",
                                user_location(2))
        load_driver()
        try:
            lib = ctypes.CDLL(so, mode=os.RTLD_LAZY | os.RTLD_LOCAL)
        except OSError as e:
            raise DSLRuntimeError(f"load_module: cannot load {path!r}: {e}", user_location(2)) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # mapped already
    return ExportedModule(path, lib)


class ExportedModule:
    """The exported functions of one object or library, by function_prefix: module.<prefix>(...)."""

    def __init__(self, path, lib):
        self._path = path
        self._lib = lib
        self._functions = {}

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        f = self._functions.get(name)
        if f is None:
            try:
                meta_fn = getattr(self._lib, f"{name}_Metadata")
            except AttributeError:
                raise AttributeError(f"{self._path} exports no function with prefix {name!r}") from None
            meta_fn.restype = ctypes.c_char_p
            meta_fn.argtypes = []
            f = self._functions[name] = ExportedFunction(self._lib, json.loads(meta_fn().decode()))
        return f

    def __repr__(self):
        return f"<exported module {self._path}>"


class ExportedFunction:
    """One exported function: module load on the first call, then the C wrapper at each call."""

    def __init__(self, lib, meta):
        if meta.get("abi") != ABI_VERSION:
            raise DSLValueError(f"load_module: {meta.get('prefix')} was exported with wrapper ABI {meta.get('abi')}, "
                                f"this warpweave reads {ABI_VERSION}; export it again", user_location(3))
        self.meta = meta
        prefix = meta["prefix"]
        self.name = prefix
        self.parameters = [n for n in meta["parameters"] if n not in meta["constants"]]
        self.arguments = meta["arguments"]
        # a device workspace: the last argument, as the compiled function takes it
        self._workspace = next((a["python_name"] for a in self.arguments if a["kind"] == "workspace"), None)
        if self._workspace is not None:
            self.parameters.append(self._workspace)
        nk = len(dict.fromkeys(meta["kernels"]))

        class Module(ctypes.Structure):
            _fields_ = [("module", ctypes.c_void_p), ("context", ctypes.c_void_p),
                        ("functions", ctypes.c_void_p * nk), ("max_dynamic_smem", ctypes.c_int32 * nk),
                        ("retained", ctypes.c_int32)]

        self._module = Module()
        self._loaded = False
        self.structs = {}  # a tensor parameter's struct type, by its name
        argtypes = [ctypes.POINTER(Module)]
        for a in self.arguments:
            argtypes.append(kind_named(a["kind"]).ctypes_type(a, self, ctypes))
        self._wrapper = getattr(lib, f"cute_dsl_{prefix}_wrapper")
        self._wrapper.argtypes = argtypes
        self._wrapper.restype = ctypes.c_int32
        self._load_fn = getattr(lib, f"{prefix}_Kernel_Module_Load")
        self._load_fn.argtypes = [ctypes.POINTER(Module)]
        self._load_fn.restype = ctypes.c_int32
        self._error = getattr(lib, f"{prefix}_Last_Error")
        self._error.restype = ctypes.c_char_p
        if self._workspace is not None:
            self._workspace_size = getattr(lib, f"{prefix}_Workspace_Size")
            self._workspace_size.argtypes = argtypes[1:-1] + [ctypes.POINTER(ctypes.c_uint64)]
            self._workspace_size.restype = ctypes.c_int32

    def _fail(self, what, rc):
        text = self._error().decode(errors="replace")
        raise DSLRuntimeError(f"{self.name}: {what} returned {rc}: {text}", user_location(3))

    def convert(self, *args, **kwargs) -> list:
        """The C wrapper's arguments for a call (checked against what was compiled), module first."""
        return self._convert(self._bind(args, kwargs))

    def workspace_size(self, *args, **kwargs) -> "_workspace.AllocationRequirement":
        """The device workspace a call with these arguments (all but the workspace) needs, as the compiled
        function's QueryDeviceWorkspaceFunc answers it: from the exported C (prefix_Workspace_Size)."""
        if self._workspace is None:
            return _workspace.AllocationRequirement(0, _workspace.ALIGN)
        values = self._bind(args + (None,), kwargs) if self._workspace not in kwargs else self._bind(args, kwargs)
        return _workspace.AllocationRequirement(self._needed(values), _workspace.ALIGN)

    def _needed(self, values) -> int:
        size = ctypes.c_uint64(0)
        rc = self._workspace_size(*self._convert(values, workspace=False)[1:], ctypes.byref(size))
        if rc != 0:
            self._fail("the workspace size query", rc)
        return size.value

    def _convert(self, values, workspace=True) -> list:
        out = [ctypes.byref(self._module)]
        flat = []
        for name in self.parameters:
            if workspace or name != self._workspace:
                flat.append((name, values[name]))
        by_python = {}
        for a in self.arguments:
            by_python.setdefault(a["python_name"].split("[")[0], []).append(a)
        for name, v in flat:
            for a in by_python.get(name, ()):
                x = v
                if isinstance(a["index"], list):  # an element of a list or tuple of tensors
                    for k in a["index"][1:]:
                        x = x[k]
                out.append(kind_named(a["kind"]).ctypes_value(a, x, self, ctypes))
        return out

    def _bind(self, args, kwargs) -> dict:
        if len(args) > len(self.parameters):
            raise DSLTypeError(f"{self.name}() takes {len(self.parameters)} arguments "
                               f"({', '.join(self.parameters)}), got {len(args)}", user_location(4))
        values = dict(zip(self.parameters, args))
        for k, v in kwargs.items():
            if k in values or k not in self.parameters:
                raise DSLTypeError(f"{self.name}() got an unexpected or repeated argument {k!r}", user_location(4))
            values[k] = v
        missing = [p for p in self.parameters if p not in values]
        if missing:
            raise DSLTypeError(f"{self.name}() misses the arguments {', '.join(missing)}", user_location(4))
        return values

    def __call__(self, *args, **kwargs):
        values = self._bind(args, kwargs)
        cargs = self._convert(values)
        if self._workspace is not None:  # a buffer that tells its size is checked as the compiled function does
            _workspace.check_size(values[self._workspace], self._needed(values), 3)
        if not self._loaded:
            if not load_driver():
                raise DSLRuntimeError(f"{self.name}: no CUDA driver (libcuda.so.1) to run the exported function on",
                                      user_location(2))
            rc = self._load_fn(ctypes.byref(self._module))
            if rc != 0:
                self._fail("loading the module", rc)
            self._loaded = True
        rc = self._wrapper(*cargs)
        if rc != 0:
            self._fail("the call", rc)

    def __repr__(self):
        return f"<exported {self.meta['function']} as {self.name} for {self.meta['target']}>"


def cache_dir(kind: str) -> str:
    """The folder of warpweave's cached build products of this kind (under WARPWEAVE_CACHE_DIR)."""
    base = os.environ.get("WARPWEAVE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "warpweave")
    d = os.path.join(base, kind)
    os.makedirs(d, exist_ok=True)
    return d


def _linked_object(path: str, tvm_ffi) -> str:
    """The shared library of a TVM FFI export's object file (export_to_c(object_file_path, function_name=)):
    tvm_ffi loads only shared libraries, so the object is linked with its runtime library, once per content
    (caches such as QuACK's keep the object and load it in every later process)."""
    with open(path, "rb") as f:
        data = f.read()
    lib = tvm_ffi.libinfo.find_libtvm_ffi()
    key = hashlib.sha256(data + lib.encode()).hexdigest()[:32]
    so = os.path.join(cache_dir("tvm_ffi"), f"object_{key}.so")
    if not os.path.isfile(so):
        staged = f"{so}.{os.getpid()}.part"
        libdir = os.path.dirname(lib)
        p = subprocess.run([c_compiler(), "-shared", "-o", staged, path, "-L", libdir, "-ltvm_ffi",
                            f"-Wl,-rpath,{libdir}"], capture_output=True, text=True)
        if p.returncode != 0:
            raise DSLRuntimeError(f"load_module(enable_tvm_ffi=True): linking {path!r} failed:\n{p.stderr[-2000:]}",
                                  user_location(4))
        os.replace(staged, so)  # atomically: a concurrent load of the same object links the same bytes
    return so


def _load_tvm_ffi(path):
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(os.fspath(path)):
        raise DSLValueError(f"load_module(enable_tvm_ffi=True): no shared library {path!r}", user_location(3))
    try:
        import tvm_ffi
    except ImportError:
        raise DSLRuntimeError("load_module(enable_tvm_ffi=True) needs the apache-tvm-ffi package", user_location(3)) \
            from None
    path = os.path.abspath(os.fspath(path))
    with open(path, "rb") as f:
        head = f.read(18)
    if head[:4] == b"\x7fELF" and len(head) == 18 and struct.unpack_from("<H", head, 16)[0] == 1:
        path = _linked_object(path, tvm_ffi)  # a relocatable object: linked first
    load_driver()  # the exports' driver calls bind to a driver already in the process
    module = tvm_ffi.load_module(path)
    session = compile_only.current()
    return module if session is None else _CompileOnlyModule(module, session)


class _CompileOnlyModule:
    """A TVM FFI module loaded in a compile-only run: its functions exist, but a call would launch kernels, so it
    ends the program there (or is skipped), as a compiled function's call does."""

    def __init__(self, module, session):
        self._module, self._session = module, session

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        self._module[name]  # noqa: B018 - the function must exist (an unknown name fails here, as it would)
        stand_in = lambda *args, **kwargs: self._session.call_reached(name, (), "exported function")  # noqa: E731
        stand_in.exported_function = name  # what a JAX FFI target registered with it calls (compile_only.py)
        return stand_in

    def __getitem__(self, name):
        return self.__getattr__(name)


def _loaded_driver_path() -> str | None:
    """Where the dynamic loader finds libcuda.so.1 for this process (loading it, as load_driver does), read from
    /proc/self/maps: containers put the driver in folders no fixed list names (/usr/local/nvidia/lib64, ...)."""
    if not load_driver():
        return None
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith("libcuda.so") and "/stubs/" not in path:
                    return path
    except OSError:
        pass
    return None


def find_runtime_libraries(enable_tvm_ffi: bool = False) -> list:
    """The shared libraries an exported object links against: the CUDA driver (the one this process loads, else
    the CUDA toolkit's stub, which the real one replaces at load time) and, for TVM FFI exports, libtvm_ffi.
    Libraries load these with RTLD_GLOBAL before loading exports (FlashAttention's kernel cache does): the stub
    named where a driver is installed would then answer every driver call with CUDA_ERROR_STUB_LIBRARY."""
    out = []
    found = os.environ.get("WARPWEAVE_LIBCUDA") or _loaded_driver_path()
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"):
        if found is None and os.path.isfile(os.path.join(d, "libcuda.so.1")):
            found = os.path.join(d, "libcuda.so.1")
    if found is None:
        nvcc = shutil.which("nvcc")
        roots = [os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))] if nvcc else []
        roots += [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"]
        for r in roots:
            for sub in ("lib64/stubs", "targets/x86_64-linux/lib/stubs"):
                stub = os.path.join(r, sub, "libcuda.so")
                if r and os.path.isfile(stub):
                    found = stub
                    break
            if found:
                break
    if found:
        out.append(found)
    if enable_tvm_ffi:
        try:
            import tvm_ffi
        except ImportError:
            raise DSLRuntimeError("find_runtime_libraries(enable_tvm_ffi=True) needs the apache-tvm-ffi package",
                                  user_location(3)) from None
        out.append(tvm_ffi.libinfo.find_libtvm_ffi())
    return out
