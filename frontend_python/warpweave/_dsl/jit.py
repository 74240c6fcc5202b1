"""@cute.jit, @cute.kernel, cute.compile and compiled functions.

Compiling a jit function traces it once with host-side stand-ins for its arguments: tensors become layouts over a
placeholder pointer, runtime integers become symbols of the layout algebra. Each `kernel(...).launch(...)` traces
that kernel into the same MLIR module, with the pointers and the symbols it needs as parameters, and records the
launch (grid, block and shared memory are expressions of the symbols). The module is compiled (or found in the
disk cache), and a call evaluates the recorded launches with the actual arguments: the host side needs no
compiled code of its own.
"""
from __future__ import annotations

import builtins
import inspect
import os
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import _core
from . import ast_rewrite, trace
from .errors import CompilationError, DSLError, DSLRuntimeError, DSLTypeError, DSLValueError, as_dsl_error, user_location
from .numeric import (Boolean, Float32, HostRef, Int32, Int64, IRVal, Numeric, SymInt)
from .runtime import RuntimeTensor, from_dlpack, is_torch_tensor, satisfies
from .target import Target, select_target
from .tensor import ComposedLayout, GMEM, Layout, Pointer, Tensor


class Constexpr:
    """Annotation of a parameter whose value is part of the compiled code (a compile-time constant)."""

    def __class_getitem__(cls, item):
        return cls


def _is_constexpr(annotation) -> bool:
    return annotation is Constexpr or (isinstance(annotation, str) and annotation.split(".")[-1].startswith("Constexpr"))


# --- host-side stand-ins for runtime arguments ------------------------------------------------------------------

class HostStream:
    """The stream argument of a jit function (its handle is read at each call)."""

    def __init__(self, arg_index):
        self.arg_index = arg_index


def _stream_handle(x) -> int:
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(x, attr, None)
        if v is not None:
            return int(v)
    try:
        return int(x)
    except (TypeError, ValueError):
        raise DSLTypeError(f"cannot use a {type(x).__name__} as a CUDA stream", user_location(3)) from None


def _is_stream(x) -> bool:
    name = type(x).__name__
    return name in ("Stream", "ExternalStream", "CUstream") and not isinstance(x, (int, float))


def _runtime_view(value):
    """The RuntimeTensor of a tensor argument (a torch tensor passed directly gets a dynamic layout)."""
    if isinstance(value, RuntimeTensor):
        return value
    if is_torch_tensor(value):
        return from_dlpack(value).mark_layout_dynamic()
    return None


@dataclass
class ArgPlan:
    """How one argument of a jit function is read at each call."""
    kind: str                 # "tensor", "int", "scalar", "stream", "const"
    index: int
    name: str
    spec: Any
    dtype: Any = None
    symbols: list = field(default_factory=list)  # (symbol id, "shape"/"stride", mode) for tensors; id for ints


def _make_host_arg(st: trace.TraceState, index: int, name: str, value, annotation):
    """(host stand-in, ArgPlan) for one jit argument."""
    if _is_constexpr(annotation):
        return value, ArgPlan("const", index, name, ("const", _const_key(value)))
    rt = _runtime_view(value)
    if rt is not None:
        plan = ArgPlan("tensor", index, name, rt.spec(), rt.element_type)
        shape, stride = [], []
        cosize = 1 + sum((s - 1) * abs(d) for s, d in zip(rt.shape, rt.stride))
        wide = cosize >= (1 << 31)
        bits = 64 if wide else 32
        for k, (s, dyn) in enumerate(zip(rt.shape, rt.dynamic_shape)):
            if dyn:
                div = plan.spec[2][k][1]
                sym = st.new_host_symbol(index, ("shape", k), bits, div, f"{name}.shape[{k}]")
                plan.symbols.append((int(_sym_id(sym)), "shape", k))
                shape.append(sym)
            else:
                shape.append(s)
        for k, (d, dyn) in enumerate(zip(rt.stride, rt.dynamic_stride)):
            if dyn:
                div = plan.spec[3][k][1]
                sym = st.new_host_symbol(index, ("stride", k), bits, div, f"{name}.stride[{k}]")
                plan.symbols.append((int(_sym_id(sym)), "stride", k))
                stride.append(sym)
            else:
                stride.append(d)
        layout = _core.make_layout(tuple(shape), stride=tuple(stride)) if shape else _core.make_layout(1)
        ptr = Pointer(None, rt.element_type, GMEM, rt.assumed_align, host=index, wide=wide)
        return Tensor(ptr, layout, rt.element_type), plan
    if _is_stream(value) or annotation is not inspect.Parameter.empty and getattr(annotation, "__name__", "") == "CUstream":
        return HostStream(index), ArgPlan("stream", index, name, ("stream",))
    if isinstance(value, bool) or isinstance(value, Boolean):
        return Boolean._wrap(HostRef(index, name)), ArgPlan("scalar", index, name, ("scalar", "Boolean"), Boolean)
    if isinstance(value, Numeric):
        t = type(value)
        if t.is_integer and t.width in (32, 64):
            sym = st.new_host_symbol(index, ("value",), t.width, 1, name)
            return t._wrap(sym), ArgPlan("int", index, name, ("int", t.__name__), t, [int(_sym_id(sym))])
        return t._wrap(HostRef(index, name)), ArgPlan("scalar", index, name, ("scalar", t.__name__), t)
    if isinstance(value, int):
        t = Int32 if -(1 << 31) <= value < (1 << 31) else Int64
        sym = st.new_host_symbol(index, ("value",), t.width, 1, name)
        return t._wrap(sym), ArgPlan("int", index, name, ("int", t.__name__), t, [int(_sym_id(sym))])
    if isinstance(value, float):
        return Float32._wrap(HostRef(index, name)), ArgPlan("scalar", index, name, ("scalar", "Float32"), Float32)
    # Layouts, tuples, atoms and other Python objects are compile-time values.
    return value, ArgPlan("const", index, name, ("const", _const_key(value)))


def _sym_id(sym: SymInt) -> int:
    ids = _core.symbols_of(sym)
    return ids[0]


def _const_key(value):
    try:
        hash(value)
        return (type(value).__qualname__, value)
    except TypeError:
        return (type(value).__qualname__, id(value))


# --- kernels ----------------------------------------------------------------------------------------------------

@dataclass
class Param:
    kind: str       # "ptr" (jit argument index), "sym" (symbol id), "scalar" (jit argument index)
    source: int
    ir_type: str
    fmt: str        # struct format of the value


@dataclass
class Launch:
    kernel: str
    params: list
    grid: tuple
    block: tuple
    cluster: tuple | None
    smem: Any
    stream: Any
    max_dynamic_smem: int = 0

    def __post_init__(self):
        static = lambda d: all(isinstance(x, int) for x in d)  # noqa: E731
        self.static_grid = list(self.grid) if static(self.grid) and all(g > 0 for g in self.grid) else None
        self.static_block = list(self.block) if static(self.block) else None


def _collect(obj, ptrs: dict, syms: set, scalars: dict, depth=0):
    if depth > 32:
        return
    if isinstance(obj, Tensor):
        it = obj.iterator
        if isinstance(it, Pointer):
            if it.host is not None:
                ptrs.setdefault(it.host, it)
            if not isinstance(it.offset, int):
                syms.update(_core.symbols_of(it.offset))
        elif hasattr(it, "base") and not isinstance(it.base, int):
            syms.update(_core.symbols_of(it.base))
        syms.update(_core.symbols_of(obj.layout))
    elif isinstance(obj, (Layout, ComposedLayout)):
        syms.update(_core.symbols_of(obj))
    elif isinstance(obj, SymInt):
        syms.update(_core.symbols_of(obj))
    elif isinstance(obj, Numeric):
        if isinstance(obj._v, SymInt):
            syms.update(_core.symbols_of(obj._v))
        elif isinstance(obj._v, HostRef):
            scalars.setdefault(obj._v.arg_index, type(obj))
        elif isinstance(obj._v, IRVal):
            raise DSLTypeError("a value computed in device code cannot be passed to a kernel launch",
                               user_location(4))
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            _collect(x, ptrs, syms, scalars, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            _collect(x, ptrs, syms, scalars, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not callable(obj):
        for x in vars(obj).values():
            _collect(x, ptrs, syms, scalars, depth + 1)


def _to_device(obj, ptr_values: dict, scalar_values: dict, depth=0):
    """The kernel-side object for a host-side argument: pointers and scalars become kernel parameters."""
    if isinstance(obj, Tensor):
        it = obj.iterator
        if isinstance(it, Pointer) and it.host is not None:
            return Tensor(it.with_base(ptr_values[it.host]), obj.layout, obj.element_type)
        return obj
    if isinstance(obj, Numeric) and isinstance(obj._v, HostRef):
        return scalar_values[obj._v.arg_index]
    if isinstance(obj, tuple):
        return tuple(_to_device(x, ptr_values, scalar_values, depth + 1) for x in obj)
    if isinstance(obj, list):
        return [_to_device(x, ptr_values, scalar_values, depth + 1) for x in obj]
    return obj


_SCALAR_FMT = {"i1": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "f16": "e", "f32": "f", "f64": "d",
               "bf16": "H"}


class _Decorated:
    """What @cute.kernel and @cute.jit functions share: the rewritten function (made once, on first use) and,
    as methods, binding to their object (`bound`: the class of the bound form)."""

    bound: type

    def __init__(self, fn: Callable):
        self.fn = fn
        self._rewritten = None
        self.name_prefix = ""
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @property
    def rewritten(self):
        if self._rewritten is None:
            self._rewritten = ast_rewrite.rewrite(self.fn)
        return self._rewritten

    def set_name_prefix(self, prefix: str):
        self.name_prefix = prefix

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return self.bound(self, obj)


class KernelFunction(_Decorated):
    """A @cute.kernel: device code, launched from a @cute.jit function with kernel(...).launch(...)."""

    def __call__(self, *args, **kwargs):
        st = trace.current_or_none()
        if st is None:
            raise DSLRuntimeError(f"the kernel {self.fn.__name__} is launched from a @cute.jit function: "
                                  f"{self.fn.__name__}(...).launch(grid=..., block=...)", user_location(1))
        if st.kernel is not None:
            raise DSLTypeError(f"a kernel cannot launch the kernel {self.fn.__name__}; call a @cute.jit helper "
                               "instead", user_location(1))
        return KernelLaunch(self, args, kwargs)


class _BoundKernel:
    """A @cute.kernel method of an object: the object is a compile-time argument."""

    def __init__(self, kernel: KernelFunction, obj):
        self.kernel = kernel
        self.obj = obj

    def __call__(self, *args, **kwargs):
        return self.kernel(self.obj, *args, **kwargs)


def _dims(x, what):
    if x is None:
        return None
    if isinstance(x, (int, SymInt, Numeric)) or hasattr(x, "__ww_int__"):
        x = [x]
    out = []
    for v in list(x):
        if isinstance(v, Numeric):
            if isinstance(v._v, HostRef):
                raise DSLTypeError(f"{what} must be an integer expression of the arguments", user_location(3))
            v = v._v
        elif hasattr(v, "__ww_int__"):
            v = v.__ww_int__()
        out.append(v)
    while len(out) < 3:
        out.append(1)
    if len(out) > 3:
        raise DSLValueError(f"{what} has more than 3 dimensions", user_location(3))
    return tuple(out)


class KernelLaunch:
    def __init__(self, kernel: KernelFunction, args, kwargs):
        self.kernel = kernel
        self.args = args
        self.kwargs = kwargs

    def launch(self, *, grid, block, smem=0, stream=None, cluster=None, shared_memory=None, **kwargs):
        st = trace.current()
        grid_d, block_d, cluster_d = _dims(grid, "grid"), _dims(block, "block"), _dims(cluster, "cluster")
        smem = shared_memory if shared_memory is not None else smem
        if isinstance(smem, Numeric):
            smem = smem._v
        name = trace_kernel(st, self.kernel, self.args, self.kwargs, block_d, cluster_d)
        params = st.kernel_params[name]
        carved = st.kernel_smem.get(name, 0)
        if carved and isinstance(smem, int):
            # The launch gives at least what the kernel's allocators carved (a run-time smem= is the caller's).
            smem = max(smem, carved)
        st.launches.append(Launch(name, params, grid_d, block_d, cluster_d, smem, stream))


def trace_kernel(st: trace.TraceState, kernel: KernelFunction, args, kwargs, block, cluster) -> str:
    ptrs: dict = {}
    syms: set = set()
    scalars: dict = {}
    _collect((args, kwargs), ptrs, syms, scalars)
    host_syms = sorted(s for s in syms if s in st.host_symbols)
    params: list[Param] = []
    for idx, p in sorted(ptrs.items()):
        params.append(Param("ptr", idx, "!llvm.ptr<1>", "Q"))
    for sid in host_syms:
        hs = st.host_symbols[sid]
        t = "i64" if hs.bits == 64 else "i32"
        params.append(Param("sym", sid, t, _SCALAR_FMT[t]))
    for idx, t in sorted(scalars.items()):
        ir = "i8" if t.is_boolean else t.ir_type
        params.append(Param("scalar", idx, ir, _SCALAR_FMT[ir]))
    base = (kernel.name_prefix + "_" if kernel.name_prefix else "") + kernel.fn.__name__
    name = st.unique_kernel_name(base)
    attrs = ["nvvm.kernel"]
    if block is not None and all(isinstance(x, int) for x in block):
        attrs.append(f"nvvm.reqntid = array<i32: {block[0]}, {block[1]}, {block[2]}>")
    if cluster is not None and all(isinstance(x, int) for x in cluster):
        attrs.append(f"nvvm.cluster_dim = array<i32: {cluster[0]}, {cluster[1]}, {cluster[2]}>")
    arg_attrs = []
    for p in params:
        if p.kind == "ptr":
            arg_attrs.append(f"llvm.align = {ptrs[p.source].base_align} : i64")
        else:
            arg_attrs.append("")
    b = st.builder
    loc = user_location(1)
    if loc:
        b.set_location(loc[0], loc[1], 1)
    values = b.begin_function(name, [p.ir_type for p in params], ", ".join(attrs), arg_attrs)
    st.kernel = trace.KernelState(name, values)
    try:
        ptr_values, scalar_values = {}, {}
        with trace.at_entry():  # parameters are visible everywhere, the entry's prologue included
            for p, v in zip(params, values):
                if p.kind == "ptr":
                    ptr_values[p.source] = v
                elif p.kind == "sym":
                    b.bind_symbol(p.source, v)
                else:
                    t = scalars[p.source]
                    if t.is_boolean:
                        v = b.op1("arith.trunci", [v], "i1")
                    scalar_values[p.source] = t.from_ir(v)
        dargs = _to_device(tuple(args), ptr_values, scalar_values)
        dkwargs = {k: _to_device(x, ptr_values, scalar_values) for k, x in kwargs.items()}
        kernel.rewritten(*dargs, **dkwargs)
        b.end_function()
        st.kernel_smem[name] = st.kernel.smem_bytes
    finally:
        st.kernel = None
    st.kernel_params[name] = params
    return name


# --- jit functions ----------------------------------------------------------------------------------------------

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
        key = (target.name, _spec_key(self, args, kwargs))
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
        key = (target.name, _spec_key(jf, full, kwargs))
        compiled = jf._compiled.get(key)
        if compiled is None:
            compiled = compile_function(jf, full, kwargs, target=target)
            compiled.bound_self = (self.obj,)
            jf._compiled[key] = compiled
        return compiled(*args, **kwargs)


KernelFunction.bound = _BoundKernel
JitFunction.bound = BoundJitFunction


def _spec_key(jf: JitFunction, args, kwargs):
    bound = jf.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    key = []
    for name, value in bound.arguments.items():
        ann = jf.signature.parameters[name].annotation
        if _is_constexpr(ann):
            key.append(_const_key(value))
            continue
        rt = _runtime_view(value)
        if rt is not None:
            key.append(rt.spec())
        elif isinstance(value, (bool, int, float, Numeric)) or _is_stream(value):
            key.append(type(value).__name__)
        else:
            key.append(_const_key(value))
    return tuple(key)


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
    target = target or select_target()
    opts = CompileOptions.parse(options)
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
    with trace.tracing(st), assumptions:
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
    return JitCompiledFunction(jf, plans, st, module, cubin, info, assumptions,
                               {"trace_s": t1 - t0, "compile_s": t2 - t1})


class JitCompiledFunction:
    """A compiled jit function: call it with arguments of the same specialisation."""

    def __init__(self, jf, plans, st, module, cubin, info, assumptions, timings):
        self.jit_function = jf
        self.plans = plans
        self.host_symbols = st.host_symbols
        self.launches = st.launches
        self.ir = module
        self.cubin = cubin
        self.info = info
        self.assumptions = assumptions
        self.timings = timings
        self.target = st.target
        self._module = None
        self._functions = {}
        self._has_assumptions = len(assumptions) > 0
        self._fast = None
        self.bound_self = ()  # the object of a @cute.jit method, passed before the caller's arguments
        self._packers = {l.kernel: _packer(l.params) for l in self.launches}
        params = list(jf.signature.parameters.values())
        self._nargs = len(params)
        defaults = []
        for p in reversed(params):
            if p.default is inspect.Parameter.empty or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY):
                break
            defaults.insert(0, p.default)
        self._defaults = tuple(defaults)

    @property
    def ptx(self):
        return self.info.get("ptx")

    def _load(self):
        if self._module is None:
            self._module = _core.Module.load(self.cubin)
            for l in self.launches:
                f = self._module.function(l.kernel)
                self._functions[l.kernel] = f
        return self._module

    def _bind(self, args, kwargs):
        n = len(args)
        if not kwargs:
            if n == self._nargs:
                return args
            if self._nargs - len(self._defaults) <= n < self._nargs:
                return args + self._defaults[n - self._nargs:]
        bound = self.jit_function.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.values())

    def prepare(self, *args, **kwargs):
        """The driver launches of a call: (function, grid, block, cluster, smem, stream, params, offsets) each."""
        values = self._bind(self.bound_self + args, kwargs)
        env, ptrs, scalars, streams = {}, {}, {}, {}
        for plan in self.plans:
            v = values[plan.index]
            kind = plan.kind
            if kind == "tensor":
                rt = v if isinstance(v, RuntimeTensor) else _runtime_view(v)
                if rt is None:
                    raise DSLTypeError(f"argument '{plan.name}' must be a tensor, got {type(v).__name__}", None)
                if rt.spec() != plan.spec and not satisfies(rt.spec(), plan.spec):
                    _spec_mismatch(plan, rt)
                if rt.device == "fake":
                    raise DSLValueError(f"argument '{plan.name}' is a fake tensor (make_fake_tensor): it can be "
                                        "compiled for but not run on", None)
                ptrs[plan.index] = rt.data_ptr
                shape, stride = rt.shape, rt.stride
                for sid, what, k in plan.symbols:
                    env[sid] = shape[k] if what == "shape" else stride[k]
            elif kind == "int":
                env[plan.symbols[0]] = int(v.value if isinstance(v, Numeric) else v)
            elif kind == "scalar":
                scalars[plan.index] = v.value if isinstance(v, Numeric) else v
            elif kind == "stream":
                streams[plan.index] = _stream_handle(v)
            elif _const_key(v) != plan.spec[1]:
                raise DSLValueError(f"argument '{plan.name}' is a compile-time constant: compiled with "
                                    f"{plan.spec[1][1]!r}, called with {v!r}; compile again for this value", None)
        if self._has_assumptions:
            failed = self.assumptions.failed(env)
            if failed:
                raise DSLValueError("the arguments break what the compiled kernel assumes about them:\n  " +
                                    "\n  ".join(failed), None)
        self._load()
        out = []
        for l in self.launches:
            packer, offsets = self._packers[l.kernel]
            vals = []
            for p in l.params:
                if p.kind == "ptr":
                    vals.append(ptrs[p.source])
                elif p.kind == "sym":
                    vals.append(env[p.source])
                else:
                    x = scalars[p.source]
                    vals.append(int(x) if p.fmt in "bBhiq" else x)
            grid = l.static_grid if l.static_grid is not None else [_eval_dim(x, env) for x in l.grid]
            if l.static_grid is None and any(g <= 0 for g in grid):
                continue  # an empty problem: nothing to launch
            block = l.static_block if l.static_block is not None else [_eval_dim(x, env) for x in l.block]
            cluster = [_eval_dim(x, env) for x in l.cluster] if l.cluster else []
            smem = _eval_dim(l.smem, env)
            if isinstance(l.stream, HostStream):
                stream = streams[l.stream.arg_index]
            else:
                stream = _stream_handle(l.stream)
            f = self._functions[l.kernel]
            if smem > 48 * 1024 and l.max_dynamic_smem < smem:
                f.set_max_dynamic_shared_memory(int(smem))
                l.max_dynamic_smem = smem
            out.append((f, grid, block, cluster, smem, stream, packer.pack(*vals), offsets))
        return out

    def __call__(self, *args, **kwargs):
        fast = self._fast
        if fast and not kwargs:
            return fast(*self.bound_self, *args) if self.bound_self else fast(*args)
        # The first call goes the general way (checks everything, loads the module), later ones the fast one.
        for launch in self.prepare(*args, **kwargs):
            _core.launch(*launch)
        if fast is None:
            self._fast = self._build_fast_call()

    def _build_fast_call(self):
        """A Python function specialised to this compiled function's arguments and launches: it reads only what
        the launches need and packs it in one struct call (the hot path of a launch)."""
        self._load()
        if any(l.static_block is None or not isinstance(l.smem, int) for l in self.launches):
            return False
        env = {"RT": RuntimeTensor, "view": _runtime_view, "satisfies": satisfies, "mismatch": _spec_mismatch,
               "plans": self.plans, "Numeric": Numeric, "stream_of": _stream_handle, "const_key": _const_key,
               "const_mismatch": _const_mismatch, "asm": self.assumptions, "assumption_error": _assumption_error}
        n = self._nargs
        nreq = n - len(self._defaults)
        sig = ", ".join(f"a{i}" if i < nreq else f"a{i}=D{i}" for i in range(n))
        for i in range(nreq, n):
            env[f"D{i}"] = self._defaults[i - nreq]
        body = []
        for plan in self.plans:
            i = plan.index
            if plan.kind == "tensor":
                env[f"S{i}"] = plan.spec
                body += [f"t = a{i} if type(a{i}) is RT else view(a{i})",
                         "sp = t._spec or t.spec()",
                         f"if sp is not S{i} and sp != S{i} and not satisfies(sp, S{i}): mismatch(plans[{i}], t)",
                         f"p{i} = t.data_ptr"]
                for sid, what, k in plan.symbols:
                    body.append(f"s{sid} = t._{'shape' if what == 'shape' else 'strides'}[{k}]")
            elif plan.kind == "int":
                body.append(f"s{plan.symbols[0]} = int(a{i}.value if isinstance(a{i}, Numeric) else a{i})")
            elif plan.kind == "scalar":
                body.append(f"x{i} = a{i}.value if isinstance(a{i}, Numeric) else a{i}")
            elif plan.kind == "stream":
                body.append(f"q{i} = stream_of(a{i})")
            else:
                env[f"K{i}"] = plan.spec[1]
                body.append(f"if const_key(a{i}) != K{i}: const_mismatch(plans[{i}], a{i})")
        if self._has_assumptions:
            syms = sorted({sid for p in self.plans for sid in _plan_symbols(p)})
            body.append("f = asm.failed({" + ", ".join(f"{sid}: s{sid}" for sid in syms) + "})")
            body.append("if f: assumption_error(f)")
        for k, l in enumerate(self.launches):
            packer, offsets = self._packers[l.kernel]
            env[f"L{k}"] = _core.Launcher(self._functions[l.kernel], list(l.static_block),
                                          [int(c) for c in l.cluster] if l.cluster else [], int(l.smem), offsets)
            env[f"P{k}"] = packer.pack
            if l.smem > 48 * 1024:
                self._functions[l.kernel].set_max_dynamic_shared_memory(int(l.smem))
            vals = []
            for p in l.params:
                if p.kind == "ptr":
                    vals.append(f"p{p.source}")
                elif p.kind == "sym":
                    vals.append(f"s{p.source}")
                else:
                    vals.append(f"int(x{p.source})" if p.fmt in "bBhiq" else f"x{p.source}")
            grid = [_core.python_expr(g, "s") if not isinstance(g, int) else str(g) for g in l.grid]
            if isinstance(l.stream, HostStream):
                stream = f"q{l.stream.arg_index}"
            else:
                stream = str(_stream_handle(l.stream))
            call = f"L{k}({', '.join(grid)}, {stream}, P{k}({', '.join(vals)}))"
            if l.static_grid is None:
                body.append(f"g = ({', '.join(grid)})")
                body.append(f"if g[0] > 0 and g[1] > 0 and g[2] > 0: L{k}(g[0], g[1], g[2], {stream}, "
                            f"P{k}({', '.join(vals)}))")
            else:
                body.append(call)
        src = f"def fast_call({sig}):\n" + "\n".join("    " + line for line in body) + "\n"
        ns: dict = {}
        exec(builtins.compile(src, f"<warpweave call of {self.jit_function.fn.__name__}>", "exec"), env, ns)
        self._fast_source = src
        return ns["fast_call"]

    def __repr__(self):
        names = ", ".join(l.kernel for l in self.launches)
        return f"<compiled {self.jit_function.fn.__name__}: {names} for {self.target['name']}>"


def _packer(params):
    """A struct packing the parameters in C layout (each aligned to its size), and each one's offset."""
    fmt, offsets, size = "=", [], 0
    for p in params:
        n = struct.calcsize("=" + p.fmt)
        pad = (-size) % n
        fmt += "x" * pad + p.fmt
        size += pad
        offsets.append(size)
        size += n
    return struct.Struct(fmt), offsets


def _eval_dim(x, env):
    if isinstance(x, int):
        return x
    return int(_core.evaluate(x, env))


def _plan_symbols(plan):
    if plan.kind == "tensor":
        return [sid for sid, _, _ in plan.symbols]
    return list(plan.symbols)


def _const_mismatch(plan, v):
    raise DSLValueError(f"argument '{plan.name}' is a compile-time constant: compiled with {plan.spec[1][1]!r}, "
                        f"called with {v!r}; compile again for this value", None)


def _assumption_error(failed):
    raise DSLValueError("the arguments break what the compiled kernel assumes about them:\n  " + "\n  ".join(failed),
                        None)


def _spec_mismatch(plan, rt):
    raise DSLValueError(f"argument '{plan.name}' does not match the compiled specialisation: compiled for "
                        f"{plan.spec}, called with {rt.spec()}; call the @cute.jit function itself to compile "
                        "for these arguments", None)


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
