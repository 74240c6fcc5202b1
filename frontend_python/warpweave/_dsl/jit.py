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

import inspect
import time
from dataclasses import dataclass
from typing import Callable

from .. import _core
from . import function_cache, trace
from .arg_plan import Constexpr, _make_host_arg, spec_key  # noqa: F401 - Constexpr is public here too
from .compiled_function import JitCompiledFunction
from .errors import DSLError, DSLRuntimeError, DSLTypeError, as_dsl_error, user_location
from .kernel_trace import KernelFunction, _Decorated
from .target import Target, select_target


class JitFunction(_Decorated):
    """A @cute.jit function: host code that launches kernels. Calling it compiles (once per argument
    specialisation) and runs; cute.compile(fn, *args) compiles without running."""

    def __init__(self, fn: Callable):
        super().__init__(fn)
        self.signature = inspect.signature(fn)
        self._compiled: dict = {}

    def __call__(self, *args, **kwargs):
        if trace.current_or_none() is not None:
            return self.rewritten(*args, **kwargs)  # a helper called while tracing: inline it
        target = select_target()
        key = (target.name, spec_key(self.signature, args, kwargs))
        compiled = self._compiled.get(key)
        if compiled is None:
            compiled = compile_function(self, args, kwargs, target=target)
            self._compiled[key] = compiled
        return compiled(*args, **kwargs)


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
        jf = self.jit_function
        target = select_target()
        full = (self.obj,) + args
        key = (target.name, spec_key(jf.signature, full, kwargs))
        compiled = jf._compiled.get(key)
        if compiled is None:
            compiled = compile_function(jf, full, kwargs, target=target)
            compiled.bound_self = (self.obj,)
            jf._compiled[key] = compiled
        return compiled(*args, **kwargs)




JitFunction.bound = BoundJitFunction


@dataclass
class CompileOptions:
    line_info: bool = False
    opt_level: int = 3
    ptxas_options: tuple = ()

    @staticmethod
    def parse(options) -> "CompileOptions":
        o = CompileOptions()
        if options is None:
            return o
        if isinstance(options, str):
            options = options.split()
        extra = []
        for opt in options:
            if opt in ("--generate-line-info", "-lineinfo"):
                o.line_info = True
            elif opt.startswith("--opt-level=") or opt.startswith("-O"):
                o.opt_level = int(opt.split("=")[-1].lstrip("-O"))
            else:
                extra.append(opt)
        o.ptxas_options = tuple(extra)
        return o


def compile_function(jf: JitFunction, args, kwargs, *, target: Target | None = None, options=None):
    """Traces jf with the given arguments, compiles the module and returns the compiled function."""
    opts = CompileOptions.parse(options)
    fkey, compiled, fwhy = function_cache.lookup(jf, args, kwargs, target, opts)
    if compiled is not None:  # found before tracing: no trace, no MLIR
        return compiled
    target = target or select_target()
    st = trace.TraceState(target=target.as_dict())
    t0 = time.perf_counter()
    bound = jf.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    host_args, plans = [], []
    for i, (name, value) in enumerate(bound.arguments.items()):
        ann = jf.signature.parameters[name].annotation
        host, plan = _make_host_arg(st, i, name, value, ann)
        host_args.append(host)
        plans.append(plan)
    assumptions = _core.AssumptionScope()
    recording = function_cache.Recording()
    with trace.tracing(st), assumptions, recording:
        try:
            jf.rewritten(*host_args)
        except DSLError as e:
            raise as_dsl_error(e) from None
        except Exception as e:  # noqa: BLE001 - every mistake becomes a DSL error at the user's line
            raise as_dsl_error(e) from None
    if not st.launches:
        raise DSLRuntimeError(f"{jf.fn.__name__} launched no kernel", None)
    t1 = time.perf_counter()
    module = st.builder.__str__()
    from .compile_module import compile_module
    cubin, info = compile_module(module, target, opts, [l.kernel for l in st.launches])
    t2 = time.perf_counter()
    compiled = JitCompiledFunction(jf, plans, st, module, cubin, info, assumptions,
                                   {"trace_s": t1 - t0, "compile_s": t2 - t1})
    function_cache.remember(fkey, compiled, st, recording, fwhy)
    return compiled



# --- decorators -------------------------------------------------------------------------------------------------

def jit(fn=None, **kwargs):
    if fn is None:
        return lambda f: JitFunction(f)
    return JitFunction(fn)


def kernel(fn=None, **kwargs):
    if fn is None:
        return lambda f: KernelFunction(f)
    return KernelFunction(fn)


def compile(fn, *args, options=None, **kwargs):  # noqa: A001 - CuTe DSL's name
    """Compiles a @cute.jit function for these arguments and returns the callable compiled function."""
    if not isinstance(fn, (JitFunction, BoundJitFunction)):
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, JitFunction):
            fn = call.__get__(fn, type(fn))  # an object whose __call__ is a @cute.jit method
        elif callable(fn):
            fn = JitFunction(fn)
        else:
            raise DSLTypeError(f"cute.compile expects a @cute.jit function, got {type(fn).__name__}", user_location(1))
    if isinstance(fn, BoundJitFunction):
        compiled = compile_function(fn.jit_function, (fn.obj,) + args, kwargs, options=options)
        compiled.bound_self = (fn.obj,)
        return compiled
    return compile_function(fn, args, kwargs, options=options)
