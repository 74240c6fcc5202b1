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
import json
import os
import shutil
import struct
import subprocess
import tempfile

from ..base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location

_CTYPES = {"bool": ctypes.c_bool, "int8_t": ctypes.c_int8, "int16_t": ctypes.c_int16, "int32_t": ctypes.c_int32,
           "int64_t": ctypes.c_int64, "uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16,
           "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "float": ctypes.c_float,
           "double": ctypes.c_double}

_driver_loaded: bool | None = None


def _load_driver() -> bool:
    """Loads libcuda.so.1 (or WARPWEAVE_LIBCUDA) with global symbols, which the wrappers' driver calls bind to."""
    global _driver_loaded
    if _driver_loaded is None:
        try:
            ctypes.CDLL(os.environ.get("WARPWEAVE_LIBCUDA") or "libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
            _driver_loaded = True
        except OSError:
            _driver_loaded = False
    return _driver_loaded


def _tuples(x):
    return tuple(_tuples(v) for v in x) if isinstance(x, list) else x


def load_module(path, enable_tvm_ffi: bool = False) -> "ExportedModule":
    if enable_tvm_ffi:
        raise DSLValueError("load_module(enable_tvm_ffi=True): exported modules are called through their C "
                            "wrapper; compile with options='--enable-tvm-ffi' for TVM FFI calls", user_location(2))
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
            from .export import c_compiler

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
        _load_driver()
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
        from .export_c import ABI_VERSION

        if meta.get("abi") != ABI_VERSION:
            raise DSLValueError(f"load_module: {meta.get('prefix')} was exported with wrapper ABI {meta.get('abi')}, "
                                f"this warpweave reads {ABI_VERSION}; export it again", user_location(3))
        self.meta = meta
        prefix = meta["prefix"]
        self.name = prefix
        self.parameters = [n for n in meta["parameters"] if n not in meta["constants"]]
        self.arguments = meta["arguments"]
        nk = len(dict.fromkeys(meta["kernels"]))

        class Module(ctypes.Structure):
            _fields_ = [("module", ctypes.c_void_p), ("context", ctypes.c_void_p),
                        ("functions", ctypes.c_void_p * nk), ("max_dynamic_smem", ctypes.c_int32 * nk),
                        ("retained", ctypes.c_int32)]

        self._module = Module()
        self._loaded = False
        self._structs = {}
        argtypes = [ctypes.POINTER(Module)]
        for a in self.arguments:
            if a["kind"] == "tensor":
                it = ctypes.c_int64 if a["bits"] == 64 else ctypes.c_int32
                fields = [("data", ctypes.c_void_p)]
                if a["shapes"]:
                    fields.append(("dynamic_shapes", it * len(a["shapes"])))
                if a["strides"]:
                    fields.append(("dynamic_strides", it * len(a["strides"])))
                a["_spec"] = _tuples(a["spec"])
                self._structs[a["name"]] = type(f"{prefix}_Tensor_{a['name']}_t", (ctypes.Structure,),
                                                {"_fields_": fields})
                argtypes.append(ctypes.POINTER(self._structs[a["name"]]))
            elif a["kind"] in ("pointer", "stream"):
                argtypes.append(ctypes.c_void_p)
            elif a["kind"] == "int":
                argtypes.append(ctypes.c_int64 if a["bits"] == 64 else ctypes.c_int32)
            else:
                from .export_c import _SCALAR_CTYPE

                argtypes.append(_CTYPES[_SCALAR_CTYPE[a["dtype"]][0]])
        self._wrapper = getattr(lib, f"cute_dsl_{prefix}_wrapper")
        self._wrapper.argtypes = argtypes
        self._wrapper.restype = ctypes.c_int32
        self._load_fn = getattr(lib, f"{prefix}_Kernel_Module_Load")
        self._load_fn.argtypes = [ctypes.POINTER(Module)]
        self._load_fn.restype = ctypes.c_int32
        self._error = getattr(lib, f"{prefix}_Last_Error")
        self._error.restype = ctypes.c_char_p

    def _fail(self, what, rc):
        text = self._error().decode(errors="replace")
        raise DSLRuntimeError(f"{self.name}: {what} returned {rc}: {text}", user_location(3))

    def convert(self, *args, **kwargs) -> list:
        """The C wrapper's arguments for a call (checked against what was compiled), module first."""
        from ..call.arg_plan import runtime_view, stream_handle
        from ..values.numeric import Numeric
        from ..values.runtime import satisfies

        values = self._bind(args, kwargs)
        out = [ctypes.byref(self._module)]
        flat = []
        for name in self.parameters:
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
                kind = a["kind"]
                if kind == "tensor":
                    rt = runtime_view(x)
                    if rt is None:
                        raise DSLTypeError(f"{self.name}: argument '{a['python_name']}' must be a tensor, got "
                                           f"{type(x).__name__}", user_location(3))
                    if rt.spec() != a["_spec"] and not satisfies(rt.spec(), a["_spec"]):
                        raise DSLValueError(f"{self.name}: argument '{a['python_name']}' does not match what was "
                                            f"exported: compiled for {a['_spec']}, called with {rt.spec()}",
                                            user_location(3))
                    s = self._structs[a["name"]]()
                    s.data = rt.data_ptr
                    for j, k in enumerate(a["shapes"]):
                        s.dynamic_shapes[j] = rt.shape[k]
                    for j, k in enumerate(a["strides"]):
                        s.dynamic_strides[j] = rt.stride[k]
                    out.append(ctypes.byref(s))
                elif kind == "pointer":
                    from ..values.runtime import RuntimePointer

                    if not isinstance(x, RuntimePointer) or x.spec() != _tuples(a["spec"]):
                        raise DSLValueError(f"{self.name}: argument '{a['python_name']}' must be a pointer like the "
                                            f"one exported ({_tuples(a['spec'])}), got {x!r}", user_location(3))
                    out.append(x.address)
                elif kind == "stream":
                    out.append(stream_handle(x))
                elif kind == "int":
                    n = int(x.value if isinstance(x, Numeric) else x)
                    lim = 1 << (a["bits"] - 1)
                    if not -lim <= n < lim:
                        raise DSLValueError(f"{self.name}: argument '{a['python_name']}' = {n} does not fit the "
                                            f"{a['bits']}-bit integer it was compiled as", user_location(3))
                    out.append(n)
                else:
                    x = x.value if isinstance(x, Numeric) else x
                    out.append(_scalar(a, x))
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
        cargs = self.convert(*args, **kwargs)
        if not self._loaded:
            if not _load_driver():
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


def _scalar(a, x):
    fmt = a["fmt"]
    if fmt == "e":
        import numpy as np

        return int(np.array(x, dtype=np.float16).view(np.uint16))
    if fmt == "H":  # bfloat16: the upper half of the float32, rounded to nearest even
        bits = struct.unpack("<I", struct.pack("<f", float(x)))[0]
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    if fmt in "fd":
        return float(x)
    return int(x)
