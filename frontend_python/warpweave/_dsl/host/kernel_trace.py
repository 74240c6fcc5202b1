"""@cute.kernel functions and their launches: tracing a kernel into the module being built, with the pointers,
symbols and scalars it uses as its parameters."""
from __future__ import annotations

import copy
import enum
import inspect
from typing import Callable

from ... import _core
from ..tracing import ast_rewrite
from ..tracing.reach_recording import note_reached
from ..registry import launch_limits
from ..base import trace
from ..base.constexpr import is_constexpr
from ..base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location
from ..atoms.host_arguments import DeviceHostArgument, HostArgument
from ..base.launch_config import launch_config
from . import host_program
from .host_values import ReadAddress
from ..base.entry_name import entry_name
from .launch_plan import BOOL_FMT, Launch, Param, SCALAR_FMT
from ..values.host_inputs import HostEvent
from ..values.numeric import HostRef, IRVal, Numeric, SymInt
from ..registry.plugins import Backend
from ..values.tensor import ComposedLayout, Layout, Pointer, Tensor, full_layout
from ..device.array import array_argument


# What a kernel argument's walk stops at: values that hold no parameter, and a backend (its manifest is thousands
# of strings, reached through the atoms an argument holds).
_LEAVES = (str, bytes, int, float, bool, type(None), type, enum.Enum, Backend)


def _collect(obj, ptrs: dict, syms: set, scalars: dict, hosts: dict, depth=0):
    if depth > 32 or isinstance(obj, _LEAVES):
        return
    if isinstance(obj, HostArgument):
        hosts.setdefault(obj.id, obj)
    elif isinstance(obj, Tensor):
        it = obj.iterator
        if isinstance(it, Pointer):
            if isinstance(it.host, ReadAddress):
                raise it.host.error(user_location(4))
            if it.host is not None:
                ptrs.setdefault(it.host, it)
            if not isinstance(it.offset, int):
                syms.update(_core.symbols_of(it.offset))
        elif hasattr(it, "base") and not isinstance(it.base, int):
            syms.update(_core.symbols_of(it.base))
        syms.update(_core.symbols_of(full_layout(obj)))
    elif isinstance(obj, Pointer):  # a pointer argument (cute.runtime.make_ptr) passed to the kernel as it is
        if isinstance(obj.host, ReadAddress):
            raise obj.host.error(user_location(4))
        if obj.host is not None:
            ptrs.setdefault(obj.host, obj)
        if not isinstance(obj.offset, int):
            syms.update(_core.symbols_of(obj.offset))
    elif isinstance(obj, (Layout, ComposedLayout)):
        syms.update(_core.symbols_of(obj))
    elif isinstance(obj, SymInt):
        syms.update(_core.symbols_of(obj))
    elif isinstance(obj, Numeric):
        if isinstance(obj._v, SymInt):
            syms.update(_core.symbols_of(obj._v))
        elif isinstance(obj._v, HostRef):
            scalars.setdefault(_scalar_key(obj), type(obj))
        elif isinstance(obj._v, IRVal):
            raise DSLTypeError("a value computed in device code cannot be passed to a kernel launch",
                               user_location(4))
    elif isinstance(obj, (tuple, list)):
        for x in obj:
            _collect(x, ptrs, syms, scalars, hosts, depth + 1)
    elif isinstance(obj, dict):
        for x in obj.values():
            _collect(x, ptrs, syms, scalars, hosts, depth + 1)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not callable(obj):
        for x in vars(obj).values():
            _collect(x, ptrs, syms, scalars, hosts, depth + 1)


def _scalar_key(x: Numeric):
    """The kernel parameter of a runtime scalar of the host side: its argument's index, or ("derived", id) for a
    value the host program computes at each call (host_program.py), e.g. a scale from a Float32 argument."""
    v = x._v
    if v.arg_index is not None:
        return v.arg_index
    st = trace.current()
    keys = st.__dict__.setdefault("derived_scalars", {})
    if id(v) not in keys:
        sid = host_program.derive_id(x, user_location(5), "passed to a kernel launch (it is computed from tensor "
                                     "elements: pass the tensor and read it in the kernel)")
        keys[id(v)] = ("derived", sid)
    return keys[id(v)]


def _to_device(obj, ptr_values: dict, scalar_values: dict, depth=0):
    """The kernel-side object for a host-side argument: pointers, scalars and host arguments become kernel
    parameters."""
    if isinstance(obj, HostArgument):
        return DeviceHostArgument(obj, ptr_values[("host", obj.id)])
    if isinstance(obj, Tensor):
        it = obj.iterator
        if isinstance(it, Pointer) and it.host is not None:
            return Tensor(it.with_base(ptr_values[it.host]), full_layout(obj), obj.element_type)
        return obj
    if isinstance(obj, Pointer) and obj.host is not None:
        return obj.with_base(ptr_values[obj.host])
    if isinstance(obj, Numeric) and isinstance(obj._v, HostRef):
        return scalar_values[_scalar_key(obj)]
    if isinstance(obj, (tuple, list)):
        items = [_to_device(x, ptr_values, scalar_values, depth + 1) for x in obj]
        if all(d is x for d, x in zip(items, obj)):
            return obj  # nothing in it becomes a parameter
        if hasattr(obj, "_fields"):
            return type(obj)(*items)  # a NamedTuple keeps its type and field names
        return tuple(items) if isinstance(obj, tuple) else items
    if hasattr(obj, "__dict__") and not isinstance(obj, type) and depth <= 32:
        # An object carrying a host argument (e.g. an atom with its tensor map), or objects that do (a TmaInfo
        # holding such an atom, a tensor of the arguments): the kernel sees a copy that carries the parameters
        # instead. Objects with nothing to convert are passed as they are.
        fields = vars(obj)
        if callable(obj):  # only its own host arguments (as _collect walks no callable)
            changed = {k: DeviceHostArgument(x, ptr_values[("host", x.id)]) for k, x in fields.items()
                       if isinstance(x, HostArgument)}
        else:
            changed = {}
            for k, x in fields.items():
                dx = _to_device(x, ptr_values, scalar_values, depth + 1)
                if dx is not x:
                    changed[k] = dx
        if changed:
            dev = copy.copy(obj)
            for k, x in changed.items():
                object.__setattr__(dev, k, x)  # a frozen dataclass too
            return dev
    return obj



class Decorated:
    """What @cute.kernel and @cute.jit functions share: the rewritten function (made once, on first use) and,
    as methods, binding to their object (`bound`: the class of the bound form)."""

    bound: type

    def __init__(self, fn: Callable):
        self.fn = fn
        self._rewritten = None
        self.name_prefix = ""
        # the function's identity, as functools.wraps gives it, and its defaults (QuACK fingerprints its helpers by
        # module and qualified name, by their source through __wrapped__ and by their defaults)
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__module__ = getattr(fn, "__module__", None)
        self.__doc__ = fn.__doc__
        self.__defaults__ = getattr(fn, "__defaults__", None)
        self.__kwdefaults__ = getattr(fn, "__kwdefaults__", None)
        self.__wrapped__ = fn

    @property
    def rewritten(self):
        note_reached(self)  # the trace reaches this function: the function cache's entry depends on it
        if self._rewritten is None:
            self._rewritten = ast_rewrite.rewrite(self.fn)
        return self._rewritten

    def set_name_prefix(self, prefix: str):
        self.name_prefix = prefix

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return self.bound(self, obj)


class KernelFunction(Decorated):
    """A @cute.kernel: device code, launched from a @cute.jit function with kernel(...).launch(...)."""

    def __call__(self, *args, **kwargs):
        st = trace.current_or_none()
        if st is None:
            raise DSLRuntimeError(f"the kernel {self.fn.__name__} is launched from a @cute.jit function: "
                                  f"{self.fn.__name__}(...).launch(grid=..., block=...)", user_location(1))
        if st.kernel is not None:
            raise DSLTypeError(f"a kernel cannot launch the kernel {self.fn.__name__}; call a @cute.jit helper "
                               "instead", user_location(1))
        _check_constexpr_arguments(self.fn, args, kwargs)
        return KernelLaunch(self, args, kwargs)


def _check_constexpr_arguments(fn, args, kwargs):
    """A kernel parameter annotated cutlass.Constexpr takes a value known while tracing; a runtime value there
    would be used as whatever it traces to, silently."""
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise DSLTypeError(f"{fn.__name__}(): {e}", user_location(2)) from None
    for name, value in bound.arguments.items():
        if not is_constexpr(sig.parameters[name].annotation):
            continue
        if isinstance(value, SymInt) or isinstance(value, Numeric) and not value.is_static:
            raise DSLTypeError(f"argument '{name}' of the kernel {fn.__name__} is cutlass.Constexpr, so its value "
                               f"must be known while tracing, but it is a runtime {type(value).__name__}; pass a "
                               "Python value (or a Constexpr of the jit function), or drop the annotation",
                               user_location(2))


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

    def launch(self, **kwargs):
        """Records the launch; its keywords (grid, block, smem, stream, cluster, min_blocks_per_mp, use_pdl,
        cooperative, fallback_cluster, or config=LaunchConfig) are described in launch_config.py."""
        c = launch_config(kwargs)
        st = trace.current()
        for what in ("grid", "block", "cluster"):
            launch_limits.check_raw_extents(getattr(c, what), what)
        grid_d, block_d = _dims(c.grid, "grid"), _dims(c.block, "block")
        cluster_d = _dims(c.cluster, "cluster")
        fallback_d = _dims(c.fallback_cluster, "fallback_cluster")
        if fallback_d is not None and any(not isinstance(x, int) for x in cluster_d + fallback_d):
            raise DSLValueError("launch(): cluster and fallback_cluster must be known while tracing", user_location(2))
        smem, stream = c.smem, c.stream
        if isinstance(smem, Numeric):
            smem = smem._v
        # With a fallback, the kernel is not compiled for one cluster shape: the driver picks it per launch.
        top = c.max_number_threads
        if top is not None and all(isinstance(x, int) for x in block_d) and \
                block_d[0] * block_d[1] * block_d[2] > top[0] * top[1] * top[2]:
            raise DSLValueError(f"launch(): the block {tuple(block_d)} has more threads than "
                                f"max_number_threads={top}", user_location(2))
        name = trace_kernel(st, self.kernel, self.args, self.kwargs, block_d,
                            cluster_d if fallback_d is None else None, min_blocks_per_mp=c.min_blocks_per_mp,
                            merge_branch_allocs=c.smem_merge_branch_allocs, max_threads=top)
        params = st.kernel_params[name]
        carved = st.kernel_smem.get(name, 0)
        # Against the target's limits (its backend's manifest), at this line: the driver would refuse them only
        # at run time, and some (a cluster on a target without clusters) not at all.
        launch_limits.check_launch(st.target, self.kernel.fn.__name__, grid_d, block_d,
                                   cluster_d if fallback_d is None else fallback_d, smem, carved)
        if carved and isinstance(smem, int):
            # The launch gives at least what the kernel's allocators carved (a run-time smem= is the caller's).
            smem = max(smem, carved)
        launch = Launch(name, params, grid_d, block_d, cluster_d if fallback_d is None else fallback_d, smem, stream)
        for flag, value in (("cooperative", c.cooperative), ("pdl", c.use_pdl)):
            setattr(launch, flag, _launch_flag(launch, flag, value))
        for name in ("launch_completion_event", "programmatic_event"):
            ev = getattr(c, name)
            if ev is not None:
                if not isinstance(ev, HostEvent):
                    raise DSLTypeError(f"launch({name}=...) takes an event argument of the @cute.jit function "
                                       f"(a CUevent, cudaEvent_t or torch.cuda.Event), got {type(ev).__name__}",
                                       user_location(2))
                setattr(launch, name, ev)
                setattr(launch, name + "_flags", getattr(c, name + "_flags"))
        if c.programmatic_event is not None:
            launch.programmatic_event_trigger_at_block_start = bool(c.programmatic_event_trigger_at_block_start)
        launch.preferred_cluster = cluster_d if fallback_d is not None else None
        launch.where = user_location(2)  # a call whose arguments give this launch no grid is refused naming it
        launch.function = f"{self.kernel.fn.__module__}.{self.kernel.fn.__qualname__}"
        if launch.kernel in st.kernel_workspace:  # bytes per CTA; the call passes it (call/workspace.py)
            launch.workspace = st.kernel_workspace[launch.kernel]
        if any(not isinstance(x, int) for x in launch.cluster or ()):  # checked at each call against it
            launch.max_cluster_size = launch_limits.target_limits(st.target).get("max_cluster_size", 0)
        st.launches.append(launch)


def _launch_flag(launch, name: str, value) -> bool:
    """use_pdl= or cooperative= of a launch: a Python bool, a Boolean known while tracing, or a Boolean of the
    arguments (CuTe DSL's `use_pdl: bool` parameter of a jit function), which becomes a derived symbol read at each
    call (launch_plan.launch_flag): the launch then may have the attribute, and only calls where it holds do."""
    keyword = "use_pdl" if name == "pdl" else name
    if isinstance(value, bool):
        return value
    if isinstance(value, Numeric) and type(value).is_boolean:
        if value.is_static:
            return bool(value._v)
        sid = host_program.derive_id(value, user_location(3), f"given to launch({keyword}=...)")
        setattr(launch, name + "_symbol", sid)
        return True
    raise DSLTypeError(f"launch({keyword}=...) is True, False or a Boolean, got {value!r}", user_location(3))


def _host_order(item):
    """Arguments in order; an element of a list argument is keyed (index, k) and follows index's place; values
    of the host program come last, in the order they were made."""
    key = item[0]
    if isinstance(key, tuple) and key[0] == "derived":
        return (1 << 40, key[1])
    return key if isinstance(key, tuple) else (key,)


def _as_annotated(fn, args, kwargs):
    """The kernel's arguments as their parameters' annotations ask (a tensor seen as a cutlass.Array)."""
    params = list(inspect.signature(fn).parameters.values())
    args = tuple(array_argument(a, params[i].annotation) if i < len(params) else a for i, a in enumerate(args))
    by_name = {p.name: p.annotation for p in params}
    return args, {k: array_argument(v, by_name.get(k)) for k, v in kwargs.items()}


def trace_kernel(st: trace.TraceState, kernel: KernelFunction, args, kwargs, block, cluster,
                 min_blocks_per_mp: int | None = None, merge_branch_allocs: bool = False, max_threads=None) -> str:
    ptrs: dict = {}
    syms: set = set()
    scalars: dict = {}
    hosts: dict = {}
    _collect((args, kwargs), ptrs, syms, scalars, hosts)
    host_syms = sorted(s for s in syms if s in st.host_symbols)
    params: list[Param] = []
    for idx, p in sorted(ptrs.items(), key=_host_order):
        params.append(Param("ptr", idx, "!llvm.ptr<1>", "Q"))
    for sid in host_syms:
        hs = st.host_symbols[sid]
        t = "i64" if hs.bits == 64 else "i32"
        unsigned = tuple(hs.path[:1]) in (("derived",), ("value",)) and len(hs.path) > 1 and str(hs.path[1])[:1] == "u"
        params.append(Param("sym", sid, t, SCALAR_FMT[t].upper() if unsigned else SCALAR_FMT[t]))
    for idx, t in sorted(scalars.items(), key=_host_order):
        if t.is_boolean:  # a byte (a parameter has no 1-bit type), its low bit taken below
            params.append(Param("scalar", idx, "i8", BOOL_FMT))
        else:
            params.append(Param("scalar", idx, t.ir_type, SCALAR_FMT[t.ir_type]))
    for hid, h in sorted(hosts.items()):
        params.append(Param("host", hid, "!llvm.ptr", f"{h.size}s"))
    prefix = kernel.name_prefix or st.name_prefix
    base = (prefix + "_" if prefix else "") + kernel.fn.__name__
    name = st.unique_kernel_name(entry_name(base))
    attrs = ["nvvm.kernel"]
    if block is not None and all(isinstance(x, int) for x in block):
        attrs.append(f"nvvm.reqntid = array<i32: {block[0]}, {block[1]}, {block[2]}>")
    elif max_threads is not None:
        # (a block known while tracing is the exact count, which bounds it already)
        attrs.append(f"nvvm.maxntid = array<i32: {max_threads[0]}, {max_threads[1]}, {max_threads[2]}>")
    # A known cluster of several blocks is compiled in (the assembler then knows the cluster's extents). One of a
    # single block is not: the launch still gives it (1, 1, 1), as CuTe DSL's launches do, but the module is not
    # made a cluster kernel for it, as CuTe DSL's are not (the code is the same either way; only the cubin's
    # cluster attributes, which the driver reads, differed).
    if cluster is not None and all(isinstance(x, int) for x in cluster) and cluster[0] * cluster[1] * cluster[2] > 1:
        attrs.append(f"nvvm.cluster_dim = array<i32: {cluster[0]}, {cluster[1]}, {cluster[2]}>")
    if min_blocks_per_mp is not None:
        attrs.append(f"nvvm.minctasm = {int(min_blocks_per_mp)} : i32")
    arg_attrs = []
    for p in params:
        if p.kind == "ptr":
            arg_attrs.append(f"llvm.align = {ptrs[p.source].base_align} : i64")
        elif p.kind == "host":
            arg_attrs.append(_by_value(hosts[p.source]))
        else:
            arg_attrs.append("")
    b = st.builder
    loc = user_location(1)
    if loc:
        b.set_location(loc[0], loc[1], 1)
    values = b.begin_function(name, [p.ir_type for p in params], ", ".join(attrs), arg_attrs)
    st.kernel = trace.KernelState(name, values, merge_branch_allocs=merge_branch_allocs)

    def add_parameter(h: HostArgument):
        # appended after the others, in the function's arguments and in the launch's parameters alike
        params.append(Param("host", h.id, "!llvm.ptr", f"{h.size}s"))
        return b.add_function_argument("!llvm.ptr", _by_value(h))

    st.kernel.add_parameter = add_parameter
    st.kernel.tensor_arguments = [(idx, p) for idx, p in sorted(ptrs.items(), key=_host_order)]
    try:
        ptr_values, scalar_values = {}, {}
        with trace.at_entry():  # parameters are visible everywhere, the entry's prologue included
            for p, v in zip(params, values):
                if p.kind == "ptr":
                    ptr_values[p.source] = v
                elif p.kind == "host":
                    ptr_values[("host", p.source)] = v
                elif p.kind == "sym":
                    b.bind_symbol(p.source, v)
                else:
                    t = scalars[p.source]
                    if t.is_boolean:
                        v = b.op1("arith.trunci", [v], "i1")
                    scalar_values[p.source] = t.from_ir(v)
        dargs = _to_device(tuple(args), ptr_values, scalar_values)
        dkwargs = {k: _to_device(x, ptr_values, scalar_values) for k, x in kwargs.items()}
        dargs, dkwargs = _as_annotated(kernel.fn, dargs, dkwargs)
        kernel.rewritten(*dargs, **dkwargs)
        b.end_function()
        st.kernel_smem[name] = st.kernel.smem_bytes
        if st.kernel.workspace:
            st.kernel_workspace[name] = sum(st.kernel.workspace)
    finally:
        st.kernel = None
    st.kernel_params[name] = params
    return name


def _by_value(h: HostArgument) -> str:
    """A host argument's parameter attributes: passed by value and read in place (grid-constant), its address
    being what instructions take."""
    return (f"llvm.byval = !llvm.array<{h.size} x i8>, llvm.align = {h.producer.align} : i64, "
            "nvvm.grid_constant")


KernelFunction.bound = _BoundKernel
