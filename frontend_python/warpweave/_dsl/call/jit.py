"""@cute.jit, @cute.kernel and cute.compile.

Compiling a jit function traces it once with host-side stand-ins for its arguments: tensors become layouts over a
placeholder pointer, runtime integers become symbols of the layout algebra. Each `kernel(...).launch(...)` traces
that kernel into the same MLIR module, with the pointers and the symbols it needs as parameters, and records the
launch (grid, block and shared memory are expressions of the symbols). The module is compiled (or found in the
disk cache), and a call evaluates the recorded launches with the actual arguments: the host side needs no
compiled code of its own.

The parts live beside this module: arg_plan (argument stand-ins and how a call reads them), kernel_trace
(@cute.kernel and its launches), launch_plan (recorded launches and parameter packing), compiled_function (the
callable result).
"""
from __future__ import annotations

import gc
import inspect
import os
import threading
import time
from typing import Callable

from ... import _core
from ..base import trace
from ..base.compile_options import (  # noqa: F401 - CompileOptions is public here
    CompileOptions, as_options, merge as merge_options,
)
from ..base.errors import DSLError, DSLRuntimeError, DSLTypeError, as_dsl_error, user_location
from ..host.host_guards import GuardMismatch
from ..host.kernel_trace import Decorated, KernelFunction
from ..registry import compile_only
from ..registry.backend_python import ensure_loaded_for_trace
from ..registry.target import Target, select_target, target_named
from ..tracing.reach_recording import Recording
from . import compile_warmup, function_cache
from .arg_adapters import adapt_arguments
from .arg_plan import Constexpr, check_arguments, make_host_arg, spec_key  # noqa: F401 - Constexpr is public here too
from .compile_module import compile_module
from .compiled_function import JitCompiledFunction


_TRACE_LOCK = threading.RLock()


class JitFunction(Decorated):
    """A @cute.jit function: host code that launches kernels. Calling it compiles (once per argument
    specialisation) and runs; cute.compile(fn, *args) compiles without running."""

    def __init__(self, fn: Callable):
        super().__init__(fn)
        self.signature = inspect.signature(fn)
        self._compiled: dict = {}

    def __call__(self, *args, **kwargs):
        if trace.current_or_none() is not None:
            return self.rewritten(*args, **kwargs)  # a helper called while tracing: inline it
        args, kwargs = adapt_arguments(args, kwargs)  # registered JIT argument adapters (arg_adapters.py)
        if "no_cache" in kwargs and "no_cache" not in self.signature.parameters:
            # CuTe DSL's call option: compile for this call, and keep the result neither here nor in the
            # on-disk function cache (the cubin cache, keyed by the module's text, may still supply the cubin).
            no_cache = kwargs.pop("no_cache")
            if not isinstance(no_cache, bool):
                raise DSLTypeError(f"{self.fn.__name__}(no_cache=...) takes True or False, got {no_cache!r}",
                                   user_location(2))
            if no_cache:
                check_arguments(self.fn.__name__, self.signature, args, kwargs)
                return compile_function(self, args, kwargs, use_cache=False)(*args, **kwargs)
        check_arguments(self.fn.__name__, self.signature, args, kwargs)
        target = select_target()
        key = (target.name, spec_key(self.signature, args, kwargs))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = compile_function(self, args, kwargs, target=target)
            self._compiled[key] = compiled
        try:
            return compiled(*args, **kwargs)
        except GuardMismatch:  # host code branches otherwise for these arguments: compile for them
            compiled = self._compiled[key] = compile_function(self, args, kwargs, target=target)
            return compiled(*args, **kwargs)

    def export_to_c(self, *args, **kwargs):
        raise DSLTypeError(f"{self.fn.__name__} is a @cute.jit function, not a compiled one: export what "
                           f"cute.compile({self.fn.__name__}, ...) returns", user_location(2))


class BoundJitFunction:
    """A @cute.jit method of an object (e.g. a kernel class's __call__): the object is a compile-time argument,
    and what it holds configures the compilation."""

    def __init__(self, jf: JitFunction, obj):
        self.jit_function = jf
        self.obj = obj
        self.__name__ = jf.__name__
        self.__doc__ = jf.__doc__

    def __call__(self, *args, **kwargs):
        if trace.current_or_none() is not None:
            return self.jit_function.rewritten(self.obj, *args, **kwargs)
        args, kwargs = adapt_arguments(args, kwargs)
        jf = self.jit_function
        target = select_target()
        full = (self.obj,) + args
        key = (target.name, spec_key(jf.signature, full, kwargs))
        compiled = jf._compiled.get(key)
        if compiled is None:
            compiled = compile_function(jf, full, kwargs, target=target)
            compiled.bound_self = (self.obj,)
            jf._compiled[key] = compiled
        try:
            return compiled(*args, **kwargs)
        except GuardMismatch:  # host code branches otherwise for these arguments: compile for them
            compiled = jf._compiled[key] = compile_function(jf, full, kwargs, target=target)
            compiled.bound_self = (self.obj,)
            return compiled(*args, **kwargs)

    def set_name_prefix(self, prefix: str):
        """The method's, shared by every object of the class (as the decorated function is)."""
        self.jit_function.set_name_prefix(prefix)




JitFunction.bound = BoundJitFunction


def compile_function(jf: JitFunction, args, kwargs, *, target: Target | None = None, options=None,
                     use_cache: bool = True):
    """Traces jf with the given arguments, compiles the module and returns the compiled function (use_cache=False:
    without looking in or storing into the function cache)."""
    args, kwargs = adapt_arguments(args, kwargs)
    check_arguments(jf.fn.__name__, jf.signature, args, kwargs)
    opts = options if isinstance(options, CompileOptions) else merge_options(CompileOptions(), options)
    if opts.gpu_arch:
        target = target_named(opts.gpu_arch)
    # Tracing runs one compilation at a time (its recording of the code it reaches is process-wide); the
    # compile itself runs outside the lock, so that threads compiling several candidates overlap (autotune).
    with _TRACE_LOCK:
        if use_cache:
            fkey, compiled, fwhy = function_cache.lookup(jf, args, kwargs, target, opts)
        else:
            fkey, compiled, fwhy = None, None, "no_cache=True"
        if compiled is not None:  # found before tracing: no trace, no MLIR
            compiled.compile_again = _again(jf, target, options)
            session = compile_only.current()
            if session is not None:
                session.note_compiled(compiled)
            return compiled
        target = target or select_target()
        # The compiler warms up on another core while this trace runs (once per process and target).
        compile_warmup.start(target, opts)
        st = trace.TraceState(target=target.as_dict(), profile=opts.profile, assertions=opts.assertions,
                              name_prefix=jf.name_prefix, declared_facts_only=opts.tvm_ffi)
        t0 = time.perf_counter()
        bound = jf.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        host_args, plans = [], []
        for i, (name, value) in enumerate(bound.arguments.items()):
            ann = jf.signature.parameters[name].annotation
            host, plan = make_host_arg(st, i, name, value, ann)
            host_args.append(host)
            plans.append(plan)
        assumptions = _core.AssumptionScope()
        recording = Recording()
        # A trace allocates objects by the hundred thousand and frees nearly all of them by reference count; the
        # cyclic collector's passes over the process's heap meanwhile cost a GEMM example 10-20 ms. It runs again
        # after the trace (cycles made here are collected then).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            with trace.tracing(st), assumptions, recording:
                try:
                    # The target's backend packages, before any name is looked up: what they register replaces
                    # what an earlier trace of another target found without them.
                    ensure_loaded_for_trace()
                    jf.rewritten(*host_args)
                except DSLError as e:
                    raise as_dsl_error(e) from None
                except Exception as e:  # noqa: BLE001 - every mistake becomes a DSL error at the user's line
                    raise as_dsl_error(e) from None
        finally:
            if gc_was_enabled:
                gc.enable()
        t1 = time.perf_counter()
        module = st.builder.__str__()
    if st.launches:
        cubin, info = _compile_kernels(module, target, opts, [l.kernel for l in st.launches], st.asm_sites)
    else:  # a host-only function (it prints, computes layouts): nothing to compile for the device
        cubin, info = None, {"cache": "none"}
    t2 = time.perf_counter()
    compiled = JitCompiledFunction(jf, plans, st, module, cubin, info, assumptions,
                                   {"trace_s": t1 - t0, "compile_s": t2 - t1})
    compiled.compile_again = _again(jf, target, options)
    # The entry records host decisions on argument values (checked before a hit is used) and launch attributes;
    # what it cannot record (host prints, host arguments) is not stored, and info["function_cache"] says so.
    function_cache.remember(fkey, compiled, st, recording, fwhy)
    session = compile_only.current()
    if session is not None:
        session.note_compiled(compiled)
    return compiled


def _again(jf, target, options):
    return lambda args, kwargs: compile_function(jf, args, kwargs, target=target, options=options)


def _compile_kernels(module, target, opts, kernel_names, asm_sites=()):
    if not opts.keep:
        return compile_module(module, target, opts, kernel_names, asm_sites)
    # KeepPTX / KeepCUBIN / KeepSASS (and DumpDir): the WARPWEAVE_KEEP dumps, for this compilation only.
    saved = {k: os.environ.get(k) for k in ("WARPWEAVE_KEEP", "WARPWEAVE_DUMP_DIR")}
    kept = {k for k in (saved["WARPWEAVE_KEEP"] or "").split(",") if k} | set(opts.keep)
    os.environ["WARPWEAVE_KEEP"] = ",".join(sorted(kept))
    if opts.dump_dir:
        os.environ["WARPWEAVE_DUMP_DIR"] = opts.dump_dir
    try:
        return compile_module(module, target, opts, kernel_names, asm_sites)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v



# --- decorators -------------------------------------------------------------------------------------------------

def _decorate(cls, fn, preprocessor: bool):
    d = cls(fn)
    if not preprocessor:  # CuTe DSL's preprocessor=False: Python control flow stays Python (no IR if/for)
        d._rewritten = fn
    return d


def jit(fn=None, *, preprocessor: bool = True):
    """@cute.jit / @cute.jit(preprocessor=False): a host function that compiles and launches kernels."""
    if fn is None:
        return lambda f: _decorate(JitFunction, f, preprocessor)
    return _decorate(JitFunction, fn, preprocessor)


def kernel(fn=None, *, preprocessor: bool = True):
    """@cute.kernel / @cute.kernel(preprocessor=False): device code, launched with kernel(...).launch(...)."""
    if fn is None:
        return lambda f: _decorate(KernelFunction, f, preprocessor)
    return _decorate(KernelFunction, fn, preprocessor)


# What cute.compile(..., options="--enable-tvm-ffi") returns for a compiled function: set by the export layer
# (warpweave/cute/export_entries.py) when warpweave.cute is imported, as the call path does not reach up into it.
tvm_ffi_wrapper: Callable | None = None


class _Compile:
    """cute.compile(fn, *args, options=...) compiles a @cute.jit function for these arguments and returns the
    callable compiled function; cute.compile[Option, ...](fn, *args) is the same with compile options
    (compile_options.py)."""

    def __init__(self, preset=()):
        self._preset = tuple(preset)

    def __getitem__(self, options):
        return _Compile(self._preset + tuple(as_options(options)))

    def __repr__(self):
        return f"cute.compile[{', '.join(map(repr, self._preset))}]" if self._preset else "cute.compile"

    def __call__(self, fn, *args, options=None, **kwargs):
        opts = merge_options(merge_options(CompileOptions(), list(self._preset)), options)
        fn = getattr(fn, "__ww_jit__", fn)  # an autotuned function (autotune.py) compiles its @cute.jit function
        if not isinstance(fn, (JitFunction, BoundJitFunction)):
            call = getattr(type(fn), "__call__", None)
            if isinstance(call, JitFunction):
                fn = call.__get__(fn, type(fn))  # an object whose __call__ is a @cute.jit method
            elif callable(fn):
                fn = JitFunction(fn)
            else:
                raise DSLTypeError(f"cute.compile expects a @cute.jit function, got {type(fn).__name__}",
                                   user_location(1))
        jf, all_args = (fn.jit_function, (fn.obj,) + args) if isinstance(fn, BoundJitFunction) else (fn, args)
        compiled = compile_function(jf, all_args, kwargs, options=opts)
        if isinstance(fn, BoundJitFunction):
            compiled.bound_self = (fn.obj,)
        if opts.tvm_ffi:  # called through TVM FFI (export/tvm_ffi_call.py); the kernels are the same
            if tvm_ffi_wrapper is None:
                raise DSLRuntimeError("options='--enable-tvm-ffi': the export layer is not loaded (import "
                                      "warpweave.cute)", user_location(1))
            bound = jf.signature.bind(*all_args, **kwargs)
            bound.apply_defaults()
            return tvm_ffi_wrapper(compiled, list(bound.arguments.values()))
        return compiled


compile = _Compile()  # noqa: A001 - CuTe DSL's name
