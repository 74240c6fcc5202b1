"""Framework-native calls through Apache TVM FFI: cute.compile(..., options="--enable-tvm-ffi").

The compiled function's exported C wrapper (export_c.py) gets a TVM FFI entry (`__tvm_ffi_<name>`, the ABI's
safe-call signature) that reads its arguments straight from TVM FFI values: tensors as DLPack tensors (torch
tensors convert in C, without a Python-side view), integers, floats, and streams. It checks each tensor's device
(CUDA), element type, rank and compiled-in extents and strides, then calls the wrapper, which checks divisibility
and alignment and launches. A stream argument given as None is the current stream of TVM FFI's environment for
the tensors' device (tvm_ffi.use_torch_stream, or torch's current stream where TVM FFI passes it). The entry is
built into a shared library once per compiled function (cached on disk by its source) and loaded with
tvm_ffi.load_module; cute.compile returns a TVMFFICompiledFunction whose call is that tvm_ffi.Function.

The ordinary call path is unchanged: without the option, cute.compile returns a JitCompiledFunction.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tempfile

from ..base.errors import DSLRuntimeError, DSLValueError, user_location
from ..registry import compile_only
from ..values.value_tree import argument_fields
from . import export_c, tvm_ffi_args
from . import tvm_ffi_spec as spec
from .export import c_compiler
from .exported_module import cache_dir, load_driver


def _tvm_ffi():
    try:
        import tvm_ffi
    except ImportError:
        raise DSLRuntimeError("options='--enable-tvm-ffi' needs the apache-tvm-ffi package (pip install "
                              "apache-tvm-ffi)", user_location(3)) from None
    return tvm_ffi


def _seq_checks(param, v: str, o: list) -> None:
    """The entry's checks of the parameters that no argument plan reads: a tuple's length and the elements compiled
    in (None, or the number compiled for), recursively; v is the C lvalue of the parameter's TVMFFIAny."""
    if isinstance(param, spec.Tuple):
        n = len(param.params)
        what = f"a {param.dataclass}" if param.dataclass else f"a tuple of {n} elements"
        o.append(f"  if (!ww_tvm_is_seq(&{v}, {n})) return ww_tvm_error(\"TypeError\", \"argument {param.name} must be "
                 f"{what}\");")
        for k, p in enumerate(param.params):
            _seq_checks(p, f"(*ww_tvm_elem(&{v}, {k}))", o)
    elif isinstance(param, spec.ConstNone):
        o.append(f"  if ({v}.type_index != kTVMFFINone) return ww_tvm_error(\"TypeError\", \"argument {param.name} "
                 "is compiled in: pass None\");")
    elif isinstance(param, spec.Const) and type(param.value) in (int, bool, float):
        x = param.value
        field, code = ("v_float64", "kTVMFFIFloat") if type(x) is float else ("v_int64", "kTVMFFIInt")
        lit = repr(float(x)) if type(x) is float else f"{int(x)}LL"
        o.append(f"  if ({v}.type_index != kTVMFFINone && !({v}.type_index == {code} || {v}.type_index == "
                 f"kTVMFFIBool) ) return ww_tvm_error(\"TypeError\", \"argument {param.name} is compiled in as "
                 f"{x!r}\");")
        o.append(f"  if ({v}.type_index != kTVMFFINone && {v}.{field} != {lit}) return ww_tvm_error(\"ValueError\", "
                 f"\"argument {param.name} is compiled in as {x!r}\");")


def _arity_text(compiled, params) -> str:
    """The entry's refusal of a call with another count of arguments, up to that count."""
    names = [p.name for p in params if p.positional]
    return f"{compiled.jit_function.fn.__name__}() takes {len(names)} arguments ({', '.join(names)}), got "


def _compiled_in(param) -> bool:
    if isinstance(param, spec.Tuple):
        return all(_compiled_in(p) for p in param.params)
    return isinstance(param, (spec.ConstNone, spec.Const, spec.Absent))


def _check_agrees(param, plan) -> None:
    """A parameter the converter gave must fit how its argument was traced (tvm_ffi_args.py)."""
    runtime = plan.passed_to_c
    if isinstance(param, spec.Tuple):
        children = getattr(plan, "children", None)
        if children is None and not runtime and _compiled_in(param):
            return  # a tuple traced as one compile-time value: each element compiled in, checked by the entry
        if children is None or len(children) != len(param.params):
            raise DSLValueError(f"--enable-tvm-ffi: argument '{param.name}' is a tuple for the TVM FFI converter, "
                                f"but it was traced as {plan.kind}", user_location(5))
        for p, c in zip(param.params, children):
            _check_agrees(p, c)
    elif isinstance(param, (spec.ConstNone, spec.Const, spec.Absent)) and runtime:
        raise DSLValueError(f"--enable-tvm-ffi: the TVM FFI converter makes argument '{param.name}' compile-time "
                            f"({type(param).__name__}), but it was traced as a runtime {plan.kind}; annotate it "
                            "cutlass.Constexpr to compile it in", user_location(5))
    elif not isinstance(param, (spec.ConstNone, spec.Const, spec.Absent)) and not runtime:
        raise DSLValueError(f"--enable-tvm-ffi: the TVM FFI converter makes argument '{param.name}' a runtime "
                            f"{type(param).__name__}, but its value was compiled in", user_location(5))


def entry_source(compiled, args, prefix: str, params) -> str:
    """The TVM FFI safe-call entry of the exported wrapper. `params`: the entry's parameter of each argument plan
    (tvm_ffi_args.argument_params)."""
    name = f"cute_dsl_{prefix}_wrapper"
    for p, plan in zip(params, compiled.plans):
        _check_agrees(p, plan)
    # each argument's position among the entry's parameters (None: it has none)
    position, k = {}, 0
    for p, plan in zip(params, compiled.plans):
        position[id(plan)] = k if p.positional else None
        k += p.positional
    n = k
    # where each wrapper parameter is read from: `<position>[_<element>...]`, or a name of its own (`env<j>`) for
    # a stream compiled for TVM FFI's environment stream
    where = []
    for a in args:
        pos = position.get(id(getattr(a, "top", a.plan)))
        if pos is None:
            where.append(f"env{len(where)}")
        else:
            where.append("_".join(str(x) for x in (pos,) + getattr(a, "path", ())))
    o = ["#include <tvm/ffi/c_api.h>", "#include <tvm/ffi/extra/c_env_api.h>", "",
         f"static {prefix}_Kernel_Module_t ww_tvm_module;", "static int ww_tvm_loaded, ww_tvm_device = -1;", "",
         "static int ww_tvm_error(const char *kind, const char *what) {",
         "  TVMFFIErrorSetRaisedFromCStr(kind, what);", "  return -1;", "}", "",
         "static DLTensor *ww_tvm_tensor(const TVMFFIAny *a) {",
         "  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor *)a->v_ptr;",
         "  if (a->type_index == kTVMFFITensor) return (DLTensor *)((char *)a->v_obj + sizeof(TVMFFIObject));",
         "  return NULL;", "}", "",
         # a tuple argument is a TVM FFI array (or list): its object header, then its sequence of values
         "static const TVMFFISeqCell *ww_tvm_seq(const TVMFFIAny *a) {",
         "  return (const TVMFFISeqCell *)((const char *)a->v_obj + sizeof(TVMFFIObject));", "}", "",
         "static int ww_tvm_is_seq(const TVMFFIAny *a, int64_t n) {",
         "  return (a->type_index == kTVMFFIArray || a->type_index == kTVMFFIList) && ww_tvm_seq(a)->size == n;",
         "}", "",
         "static const TVMFFIAny *ww_tvm_elem(const TVMFFIAny *a, int64_t k) {",
         "  return (const TVMFFIAny *)ww_tvm_seq(a)->data + k;", "}", "",
         f"int __tvm_ffi_{prefix}(void *self, const TVMFFIAny *args, int32_t num_args, TVMFFIAny *result) {{",
         "  char msg[512];", "  int device_id = -1;", "  int32_t r;", "  (void)self;",
         f"  if (num_args != {n}) {{",
         f'    snprintf(msg, sizeof msg, "{_arity_text(compiled, params)}%d", (int)num_args);',
         '    return ww_tvm_error("TypeError", msg);', "  }"]
    for p, plan in zip(params, compiled.plans):
        if p.positional:
            _seq_checks(p, f"args[{position[id(plan)]}]", o)
    call = ["&ww_tvm_module"]
    dims = {id(plan): p.dims for p, plan in zip(params, compiled.plans) if isinstance(p, spec.Tensor)}
    for w, a in zip(where, args):
        if a.plan.kind == "tensor":
            a.dlpack_dims = dims.get(id(a.plan))
        a.plan.tvm_lines(a, w, o, call, prefix)
    for w, a in zip(where, args):
        o += a.plan.tvm_after(a, w)
    # The module is loaded once, into the context current at the first call (the device of its tensors, as
    # torch makes it current); a later call with tensors of another device is refused rather than misdirected.
    o += ["  if (!ww_tvm_loaded) {",
          f"    if ((r = {prefix}_Kernel_Module_Load(&ww_tvm_module)) != 0) return ww_tvm_error(\"RuntimeError\", "
          f"{prefix}_Last_Error());",
          "    ww_tvm_loaded = 1;", "    ww_tvm_device = device_id;", "  }",
          "  if (device_id >= 0 && ww_tvm_device >= 0 && device_id != ww_tvm_device) {",
          '    snprintf(msg, sizeof msg, "the tensors are on CUDA device %d, the kernels were loaded for device %d '
          '(one compiled function per device)", device_id, ww_tvm_device);',
          '    return ww_tvm_error("ValueError", msg);', "  }",
          f"  r = {name}({', '.join(call)});",
          f"  if (r == 1) return ww_tvm_error(\"ValueError\", {prefix}_Last_Error());",
          f"  if (r != 0) return ww_tvm_error(\"RuntimeError\", {prefix}_Last_Error());",
          "  result->type_index = kTVMFFINone;", "  result->zero_padding = 0;", "  result->v_int64 = 0;",
          "  return 0;", "}", ""]
    return "\n".join(o)


def _entry_texts(compiled, prefix: str, params) -> tuple[str, str]:
    """(header, source) of the compiled function's exported wrapper with its TVM FFI entry `__tvm_ffi_<prefix>`."""
    export_c.check_exportable(compiled)
    args = export_c.c_arguments(compiled)
    header = export_c.header(compiled, args, prefix, "WW_TVM_FFI_H")
    source = "#define WW_WEAK_DRIVER 1\n" + export_c.source(compiled, args, prefix, "entry.h") + \
        entry_source(compiled, args, prefix, params)
    return header, source


def _compile_entry(header: str, source: str, dest: str, flags: list, what: str) -> None:
    """Compiles the entry (header and source) with the C compiler and these flags into dest."""
    with tempfile.TemporaryDirectory(prefix="ww_tvm_ffi_") as tmp:
        with open(os.path.join(tmp, "entry.h"), "w") as f:
            f.write(header)
        src = os.path.join(tmp, "entry.c")
        with open(src, "w") as f:
            f.write(source)
        out = os.path.join(tmp, "entry.out")
        cmd = [c_compiler(), "-std=c11", "-O2", "-fPIC", "-Wall", "-Wno-unused-function", "-I", tmp,
               "-I", _tvm_ffi().libinfo.find_include_path(), src, "-o", out] + flags
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise DSLRuntimeError(f"{what} failed (a warpweave bug):\n{p.stderr[-3000:]}", user_location(4))
        # into place atomically: a concurrent build of the same entry writes the same bytes
        staged = f"{dest}.{os.getpid()}.part"
        shutil.move(out, staged)
        os.replace(staged, dest)


def build(compiled, params, prefix: str = "ww_fn") -> str:
    """The shared library of the compiled function's TVM FFI entry (built, or found in the cache)."""
    tvm_ffi = _tvm_ffi()
    header, source = _entry_texts(compiled, prefix, params)
    inc = tvm_ffi.libinfo.find_include_path()
    lib = tvm_ffi.libinfo.find_libtvm_ffi()
    key = hashlib.sha256((header + source + inc + lib).encode()).hexdigest()[:32]
    so = os.path.join(cache_dir("tvm_ffi"), f"{key}.so")
    if not os.path.isfile(so):
        _compile_entry(header, source, so, ["-shared", "-L", os.path.dirname(lib), "-ltvm_ffi",
                                            f"-Wl,-rpath,{os.path.dirname(lib)}"],
                       "--enable-tvm-ffi: building the call entry")
    return so


def export_object(compiled, params, object_path, function_name: str) -> str:
    """The compiled function's TVM FFI export as an object file: `__tvm_ffi_<function_name>`, the ABI's symbol,
    which tvm_ffi.load_module finds once the object is linked into a shared library (with the libraries of
    cute.runtime.find_runtime_libraries(enable_tvm_ffi=True))."""
    if not isinstance(function_name, str) or not function_name.isidentifier():
        raise DSLValueError(f"export_to_c: function_name must be a C identifier, got {function_name!r}",
                            user_location(3))
    if not isinstance(object_path, (str, os.PathLike)):
        raise DSLValueError(f"export_to_c: the object file's path, got {object_path!r}", user_location(3))
    object_path = os.fspath(object_path)
    if os.path.dirname(object_path) and not os.path.isdir(os.path.dirname(object_path)):
        raise DSLValueError(f"export_to_c: no folder {os.path.dirname(object_path)!r}", user_location(3))
    header, source = _entry_texts(compiled, function_name, params)
    _compile_entry(header, source, object_path, ["-c"], "export_to_c: building the TVM FFI export")
    return object_path


class TVMFFICompiledFunction:
    """A compiled function called through TVM FFI: compiled(torch tensors..., stream or None). `params`: the
    entry's parameter of each argument (tvm_ffi_args.py)."""

    def __init__(self, compiled, params):
        tvm_ffi = _tvm_ffi()
        self.compiled = compiled
        self.params = params
        self.ffi_object = None  # a compile-only run's stand-in for the entry (wrap)
        if not compiled.launches:
            # Host code only (it printed while tracing): its call takes the arguments and does nothing, as the
            # compiled function's own call does.
            self.module, self.function = None, tvm_ffi.convert(lambda *args: None)
            return
        load_driver()  # its entry points bind to a driver already in the process, where there is one
        self.module = tvm_ffi.load_module(build(compiled, params))
        self.function = self.module["ww_fn"]

    def __call__(self, *args):
        return self.function(*args)

    def __tvm_ffi_object__(self):
        """What TVM FFI takes for this object where it is passed to a TVM FFI function (jax_tvm_ffi's
        register_ffi_target): the entry itself, so that its calls from there run no Python."""
        return self.function if self.ffi_object is None else self.ffi_object

    def export_to_c(self, file_path=None, file_name=None, function_prefix=None, *, function_name=None,
                    object_file_path=None):
        """export_to_c(object_file_path, function_name=...): the TVM FFI export (export_object); with a folder
        and a file name, the C wrapper as any compiled function's export_to_c writes it."""
        if function_name is not None or object_file_path is not None:
            return export_object(self.compiled, self.params, object_file_path or file_path,
                                 function_name or file_name)
        return self.compiled.export_to_c(file_path, file_name, function_prefix)

    def __getattr__(self, name):  # cubin, ptx, launches, export_to_c ... of the compiled function
        if name == "compiled":
            raise AttributeError(name)
        return getattr(self.compiled, name)

    def __repr__(self):
        return f"<TVM FFI {self.compiled!r}>"


def _passes_dataclass(param) -> bool:
    return isinstance(param, spec.Tuple) and (param.dataclass or any(_passes_dataclass(p) for p in param.params))


def _compiled_field(param, x):
    """A dataclass field as the entry reads it: a field compiled in as another object than a number (an enumeration,
    a string) is checked here, where its value is, and passed as None; a number compiled in, the entry checks."""
    if not isinstance(param, spec.Const) or type(param.value) in (int, bool, float):
        return x
    try:
        same = x is param.value or bool(x == param.value)
    except Exception:  # an object whose comparison is not a truth value: only itself is itself
        same = False
    if not same:
        raise ValueError(f"argument {param.name} is compiled in as {param.value!r}, got {x!r}; compile again for it")
    return None


def _as_passed(param, v):
    """The value the entry reads for a caller's v at a tuple parameter holding a dataclass: its argument fields as a
    tuple (TVM FFI passes a dataclass as an opaque Python object), at any depth."""
    if param.dataclass and dataclasses.is_dataclass(v) and not isinstance(v, type):
        v = tuple(_compiled_field(p, getattr(v, f)) for p, f in zip(param.params, argument_fields(v)))
    if isinstance(v, (tuple, list)) and len(v) == len(param.params):
        return tuple(_as_passed(p, x) if _passes_dataclass(p) else x for p, x in zip(param.params, v))
    return v  # the entry refuses it, naming the argument


def _dataclass_call(function, params):
    """The call of an entry some of whose arguments are dataclasses (a Python step before TVM FFI's), or the
    entry itself where none is."""
    at = [(k, p) for k, p in enumerate(p for p in params if p.positional) if _passes_dataclass(p)]
    if not at:
        return function

    def call(*args):
        args = list(args)
        for k, p in at:
            if k < len(args):
                args[k] = _as_passed(p, args[k])
        return function(*args)
    return call


def wrap(compiled, values):
    """The TVM FFI function of `compiled`, traced with these argument values (bound to its parameters, in order).
    Its call is the tvm_ffi.Function itself, set as the __call__ of a class of its own: no Python frame between the
    caller and TVM FFI (a method forwarding to it costs ~0.2 us per call)."""
    f = TVMFFICompiledFunction(compiled, tvm_ffi_args.argument_params(compiled, values))
    session = compile_only.current()
    if session is not None and compiled.launches:
        # A compile-only run: the entry is built (so it is checked) but its launches are not made; the call goes to
        # the session as any compiled function's does (ending the program, or returning None to go on), after the
        # entry's first check, its count of arguments, which needs no GPU.
        n = sum(p.positional for p in f.params)
        refusal = _arity_text(compiled, f.params)

        def reached(*args):
            if len(args) != n:
                raise TypeError(f"{refusal}{len(args)}")
            return session.launch_reached(compiled)
        call = staticmethod(reached)
        f.ffi_object = _tvm_ffi().convert(call.__func__)
    else:
        call = staticmethod(_dataclass_call(f.function, f.params))
    cls = type("TVMFFICompiledFunction", (TVMFFICompiledFunction,), {"__call__": call})
    f.__class__ = cls
    return f
