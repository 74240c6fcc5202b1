"""A compiled jit function: binds call arguments to the argument plans, checks them against the compiled
specialisation and launches through the launch plan (a general path for the first call, then a generated fast
path specialised to the arguments)."""
from __future__ import annotations

import builtins
import inspect

from ... import _core
from ..base.errors import DSLValueError, cuda_error, user_location
from ..host.host_actions import host_side
from ..host.host_guards import check as check_guards, divisor_error
from ..host.host_loop import launches_of_call
from ..host.host_program import HostProgram
from ..host.launch_plan import (NON_PORTABLE_CLUSTER_SIZE_ALLOWED, dim_source, eval_dim, has_dynamic_cluster,
                                launch_flag, needs_launch_options, needs_nonportable_cluster, packer)
from ..registry import compile_only
from ..registry.launch_limits import check_call_cluster, check_call_grid
from ..values.host_inputs import stream_handle
from ..values.runtime import runtime_view
from . import native_call, workspace as _workspace
from .arg_adapters import adapt_arguments
from .arg_kind import HostStream, fast_id
from .arg_tensor import SpecialisationMiss


def launch_dims(l, env):
    """A launch's grid, block, cluster and shared memory for a call's symbol values. An extent the arguments give
    no value (a division by a zero extent, an overflow) is refused naming the launch's line."""
    try:
        grid = l.static_grid if l.static_grid is not None else [eval_dim(x, env) for x in l.grid]
        block = l.static_block if l.static_block is not None else [eval_dim(x, env) for x in l.block]
        cluster = [eval_dim(x, env) for x in l.cluster] if l.cluster else []
        smem = eval_dim(l.smem, env)
    except (ValueError, ZeroDivisionError, OverflowError) as e:
        where = getattr(l, "where", None)  # read back from the function cache as a list
        raise DSLValueError(f"the launch of {l.kernel} has no grid for these arguments: {e}",
                            tuple(where) if where else None) from None
    if has_dynamic_cluster(l):
        where = getattr(l, "where", None)
        check_call_cluster(l.kernel, grid, cluster, getattr(l, "max_cluster_size", 0), tuple(where) if where else None)
    return grid, block, cluster, smem


class JitCompiledFunction(_core.CompiledFunctionBase):
    """A compiled jit function: call it with arguments of the same specialisation.

    A call goes straight to the native fast path (self._native, a FastCall built with the Python one) through the
    C base's vectorcall slot; what that path does not take goes to _call. No __call__ here: defining one would
    replace the inherited slot."""

    def __init__(self, jf, plans, st, module, cubin, info, assumptions, timings):
        self.jit_function = jf
        self.plans = plans
        self.host_symbols = st.host_symbols
        self.launches = st.launches
        self.host_arguments = st.host_arguments  # id -> HostArgument, computed at each call
        self.host_actions = list(st.host_actions)  # host-side work of the function (cute.printf), at each call
        self.host_guards = list(getattr(st, "host_guards", ()))  # host comparisons decided when compiled
        # What the host side computes from runtime values at each call (host_program.py), before its launches.
        self.host_program = getattr(st, "host_program", None) or HostProgram()
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
        self._native = None  # the native fast path (native_call.py), which __call__ tries first
        self.bound_self = ()  # the object of a @cute.jit method, passed before the caller's arguments
        # The argument counts a call of the fast path takes (set when it is built): trailing parameters with
        # defaults (e.g. a Constexpr) may be left out.
        self._call_nargs = self._call_min = self._omit_nargs = -1
        self._packers = {l.kernel: packer(l.params) for l in self.launches}
        self._takes_workspace = _workspace.takes_workspace(self)  # its call has one more, trailing argument
        # compile_function(args, kwargs) with this function's target and options (set by the compile), and the
        # functions it made for calls whose tensors divide less than the compiled ones (_call_sibling)
        self.compile_again = None
        self._siblings = {}
        params = list(jf.signature.parameters.values())
        self._nargs = len(params)
        # index -> value of each Constexpr-annotated argument (a call may leave them out, as in CuTe DSL)
        self._constexprs = {p.index: p.const_value for p in plans if p.constexpr}
        defaults = []
        for p in reversed(params):
            if p.default is inspect.Parameter.empty or p.kind not in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY):
                break
            defaults.insert(0, p.default)
        self._defaults = tuple(defaults)

    @property
    def bound_self(self):
        return self._bound_self

    @bound_self.setter
    def bound_self(self, value):
        self._bound_self = value
        self._native = None  # it holds the object it was built with

    @property
    def ptx(self):
        return self.info.get("ptx")

    def _load(self):
        if self._module is None and self.launches:
            self._module = _core.Module.load(self.cubin)
            for l in self.launches:
                f = self._module.function(l.kernel)
                self._functions[l.kernel] = f
                if needs_nonportable_cluster(l):
                    f.set_attribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)
        return self._module

    def _bind(self, args, kwargs):
        n = len(args)
        if not kwargs:
            if n == self._nargs:
                return args
            if self._constexprs and n == self._nargs - len(self._constexprs):
                # CuTe DSL calls a compiled function without its Constexpr arguments: they are compiled in.
                rest = iter(args)
                return tuple(self._constexprs[i] if i in self._constexprs else next(rest) for i in range(n + len(
                    self._constexprs)))
            if self._nargs - len(self._defaults) <= n < self._nargs:
                return args + self._defaults[n - self._nargs:]
        bound = self.jit_function.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return list(bound.arguments.values())

    def _read_call(self, args, kwargs):
        """A call's arguments read by the plans and checked against the assumptions and guards."""
        values = self._bind(self.bound_self + args, kwargs)
        env, ptrs, scalars, streams, tensors = {}, {}, {}, {}, {}
        read = (env, ptrs, scalars, streams, tensors)
        for plan in self.plans:
            plan.read(values[plan.index], read)
        if self._has_assumptions:
            failed = self.assumptions.failed(env)
            if failed:
                raise DSLValueError("the arguments break what the compiled kernel assumes about them:\n  " +
                                    "\n  ".join(failed), None)
        if self.host_program:
            self.host_program.run(values, env, scalars)
        if self.host_guards:
            check_guards(self.host_guards, env)
        return read, values

    def launch_grids(self, args, kwargs) -> list:
        """(launch, grid) of each launch a call with these arguments makes."""
        (env, _, scalars, _, _), values = self._read_call(args, kwargs)
        return [(l, launch_dims(l, env)[0]) for l in launches_of_call(self.launches, values, env, scalars)
                if not l.predicates or all(env[sid] for sid in l.predicates)]

    def get_aux_func(self, kind, **kwargs):
        """An auxiliary function of this compiled function (call/workspace.py: QueryDeviceWorkspaceFunc)."""
        return _workspace.aux_function(self, kind, **kwargs)

    def check_launches(self, *args, **kwargs) -> None:
        """What a call checks before it launches, without launching (a compile-only call): the arguments, and
        each launch's grid, block, cluster and shared memory evaluated for them."""
        if self._takes_workspace:
            args, ws = _workspace.split(self, args)
            _workspace.address(ws)
        grids = self.launch_grids(args, kwargs)
        for l, grid in grids:
            if l.static_grid is None:
                check_call_grid(l.kernel, grid)
        if self._takes_workspace:
            _workspace.check_size(ws, _workspace.needed_bytes(grids))

    def prepare(self, *args, **kwargs):
        """The driver launches of a call: (function, grid, block, cluster, smem, stream, params, offsets) each."""
        ws = None
        if self._takes_workspace:
            args, ws = _workspace.split(self, args)
            ws_address = _workspace.address(ws)
        (env, ptrs, scalars, streams, tensors), values = self._read_call(args, kwargs)
        if ws is not None:
            # Its address is a host argument; its size is checked once the call's grids are known (below), from
            # this one read of the arguments.
            tensors[_workspace.ARGUMENT] = ws_address
            grids = []
        hosts = {hid: h.value(tensors[h.tensor_index], env) for hid, h in self.host_arguments.items()}
        self._load()
        out = []
        for l in launches_of_call(self.launches, values, env, scalars):  # a launch in a host loop at each trip
            if l.predicates and not all(env[sid] for sid in l.predicates):
                continue  # under a host `if` whose branch this call does not take
            packer, offsets = self._packers[l.kernel]
            vals = []
            for p in l.params:
                if p.kind == "ptr":
                    vals.append(ptrs[p.source])
                elif p.kind == "sym":
                    vals.append(env[p.source])
                elif p.kind == "host":
                    vals.append(hosts[p.source])
                else:
                    x = scalars[tuple(p.source) if isinstance(p.source, list) else p.source]
                    vals.append(int(x) if p.fmt in "bBhiq" else x)
            grid, block, cluster, smem = launch_dims(l, env)
            if ws is not None:
                grids.append((l, grid))
            if l.static_grid is None and not check_call_grid(l.kernel, grid):
                continue  # an empty problem: nothing to launch (a warning says so)
            if isinstance(l.stream, HostStream):
                stream = streams[l.stream.arg_index]
            else:
                stream = stream_handle(l.stream)
            f = self._functions[l.kernel]
            if smem > 48 * 1024 and l.max_dynamic_smem < smem:
                f.set_max_dynamic_shared_memory(int(smem))
                l.max_dynamic_smem = smem
            launch = (f, grid, block, cluster, smem, stream, packer.pack(*vals), offsets)
            if needs_launch_options(l):  # cooperative, programmatic dependent launch, preferred cluster, events
                pc = getattr(l, "preferred_cluster", None)
                launch += (launch_flag(l, "cooperative", env), launch_flag(l, "pdl", env), list(pc) if pc else [])
                ce, pe = getattr(l, "launch_completion_event", None), getattr(l, "programmatic_event", None)
                if ce is not None or pe is not None:
                    launch += (streams[("event", ce.arg_index)] if ce is not None else 0,
                               getattr(l, "launch_completion_event_flags", 0),
                               streams[("event", pe.arg_index)] if pe is not None else 0,
                               getattr(l, "programmatic_event_flags", 0),
                               getattr(l, "programmatic_event_trigger_at_block_start", False))
            out.append(launch)
        if ws is not None:
            _workspace.check_size(ws, _workspace.needed_bytes(grids))
        return out

    def _call(self, *args, **kwargs):
        """The Python call: the generated fast path, or the general one (prepare) for the first call and for
        arguments the fast path does not take."""
        args, kwargs = adapt_arguments(args, kwargs)  # registered JIT argument adapters (arg_adapters.py)
        fast = self._fast
        if fast and not kwargs:
            n = len(args)
            if n == self._omit_nargs:
                # A CuTe DSL call leaves the Constexpr arguments out (they are compiled in): a second entry of the
                # fast path takes the others and sets those to their compiled values, as _bind does for the
                # general path (an omitted trailing Constexpr is its compiled value, not its default).
                fast = self._fast_omitting
            elif not self._call_min <= n <= self._call_nargs:
                fast = None
            if fast:
                try:
                    return fast(*self.bound_self, *args) if self.bound_self else fast(*args)
                except (ZeroDivisionError, SpecialisationMiss):
                    # a launch extent with no value for these arguments (the general way names its launch), or
                    # tensors that divide less than the compiled ones (the general way compiles for them)
                    pass
                except _core.CudaError as e:
                    raise cuda_error(e, user_location(2)) from None
        try:
            return self._call_general(fast, args, kwargs)
        except SpecialisationMiss:
            if self.compile_again is None:
                raise
            return self._call_sibling(args, kwargs)

    def _call_sibling(self, args, kwargs):
        """A call whose tensors have the compiled layout but divide less (a row stride of 120 where the compile saw
        128): the function compiled again for them, once per such specialisation. A library that keeps compiled
        functions by the layout a program declares (FlashAttention's cache, keyed as CuTe DSL's tensors are)
        calls one with any tensor of that layout."""
        values = self._bind(self.bound_self + args, kwargs)
        key = tuple(runtime_view(values[p.index]).spec() for p in self.plans if p.kind == "tensor")
        sibling = self._siblings.get(key)
        if sibling is None:
            sibling = self._siblings[key] = self.compile_again(tuple(values), {})
            sibling.bound_self = self.bound_self
        return sibling._call(*args, **kwargs)

    def _call_general(self, fast, args, kwargs):
        # The first call goes the general way (checks everything, loads the module), later ones the fast one.
        own = _workspace.split(self, args)[0] if self._takes_workspace else args
        if (self.host_actions or compile_only.current() is not None) and host_side(self, own, kwargs):
            self.check_launches(*args, **kwargs)
            return None  # a compile-only run: the launches are not made
        for launch in self.prepare(*args, **kwargs):
            try:
                _core.launch(*launch)
            except _core.CudaError as e:  # a launch the driver refused: CuTe DSL's error, its code to compare
                raise cuda_error(e, user_location(2)) from None
        if fast is None:
            self._fast = self._build_fast_call()

    def _build_fast_call(self):
        """A Python function specialised to this compiled function's arguments and launches: it reads only what
        the launches need and packs it in one struct call (the hot path of a launch). The native fast path
        (native_call.py) is built from the same plan."""
        self._native = None
        self._load()
        if not self.launches or self.host_actions or self._takes_workspace \
                or any(not g.divisor for g in self.host_guards) \
                or any(l.static_block is None or not isinstance(l.smem, int)
                       or has_dynamic_cluster(l) for l in self.launches):  # the fast paths launch fixed clusters
            return False
        if self.host_program or any(l.predicates or needs_launch_options(l) for l in self.launches) \
                or not all(p.fast_path for p in self.plans):
            # Host code with runtime values: the native path runs its program (bindings/fast_call.hpp); calls it
            # does not take go the general way, which runs it in Python. The native path alone gives the launch
            # attributes (cooperative=, use_pdl=, a preferred cluster, events) and reads event arguments.
            self._native = native_call.build(self, [self._launcher(l) for l in self.launches])
            return False
        self._call_nargs = self._nargs - len(self.bound_self)
        self._call_min = self._call_nargs - len(self._defaults)
        env = {"_check_call_grid": check_call_grid, "plans": self.plans, "asm": self.assumptions,
               "assumption_error": _assumption_error}
        n = self._nargs
        nreq = n - len(self._defaults)
        sig = ", ".join(f"a{i}" if i < nreq else f"a{i}=D{i}" for i in range(n))
        for i in range(nreq, n):
            env[f"D{i}"] = self._defaults[i - nreq]
        body, const_checks = [], set()   # const_checks: the lines checking a Constexpr argument
        hosted = {h.tensor_index for h in self.host_arguments.values()}
        for plan in self.plans:
            lines = plan.fast_lines(env, plan.index in hosted)
            if plan.index in self._constexprs:  # set to its compiled value by the omitting entry: no check there
                const_checks.update(range(len(body), len(body) + len(lines)))
            body += lines
        if self._has_assumptions:
            syms = sorted({sid for p in self.plans for sid in p.symbol_ids()})
            body.append("f = asm.failed({" + ", ".join(f"{sid}: s{sid}" for sid in syms) + "})")
            body.append("if f: assumption_error(f)")
        env["divisor_error"] = divisor_error
        for k, g in enumerate(self.host_guards):  # host divisions by runtime integers: never by zero
            env[f"V{k}"] = g
            body.append(f"if ({dim_source(g.diff)}) == 0: divisor_error(V{k})")
        for hid, h in self.host_arguments.items():
            env[f"H{hid}"] = h.value
            syms = ", ".join(f"{sid}: s{sid}" for sid in h.symbols)
            body.append(f"h{hid} = H{hid}(t{h.tensor_index}, {{{syms}}})")
        for k, l in enumerate(self.launches):
            packer, offsets = self._packers[l.kernel]
            env[f"L{k}"] = self._launcher(l)
            env[f"PK{k}"] = packer.pack   # (P<id> names the plans: fast_lines' checks report through them)
            vals = []
            for p in l.params:
                if p.kind == "ptr":
                    vals.append(f"p{p.source}")
                elif p.kind == "sym":
                    vals.append(f"s{p.source}")
                elif p.kind == "host":
                    vals.append(f"h{p.source}")
                else:
                    vals.append(f"int(x{fast_id(p.source)})" if p.fmt in "bBhiq" else f"x{fast_id(p.source)}")
            grid = [dim_source(g) for g in l.grid]
            if isinstance(l.stream, HostStream):
                stream = f"q{l.stream.arg_index}"
            else:
                stream = str(stream_handle(l.stream))
            call = f"L{k}({', '.join(grid)}, {stream}, PK{k}({', '.join(vals)}))"
            if l.static_grid is None:
                body.append(f"g = ({', '.join(grid)})")
                body.append(f"if g[0] > 0 and g[1] > 0 and g[2] > 0: L{k}(g[0], g[1], g[2], {stream}, "
                            f"PK{k}({', '.join(vals)}))")
                body.append(f"else: _check_call_grid({l.kernel!r}, g)")
            else:
                body.append(call)
        src = f"def fast_call({sig}):\n" + "\n".join("    " + line for line in body) + "\n"
        if self._constexprs:
            # The entry for calls that leave the Constexpr arguments out: those take their compiled values.
            for i, v in self._constexprs.items():
                env[f"C{i}"] = v
            kept = ", ".join(f"a{i}" for i in range(n) if i not in self._constexprs)
            src += (f"def fast_call_omitting({kept}):\n" +
                    "".join(f"    a{i} = C{i}\n" for i in self._constexprs) +
                    "\n".join("    " + line for k, line in enumerate(body) if k not in const_checks) + "\n")
        ns: dict = {}
        exec(builtins.compile(src, f"<warpweave call of {self.jit_function.fn.__name__}>", "exec"), env, ns)
        self._fast_source = src
        if self._constexprs:
            self._fast_omitting = ns["fast_call_omitting"]
            self._omit_nargs = n - len(self._constexprs) - len(self.bound_self)
        self._native = native_call.build(self, [env[f"L{k}"] for k in range(len(self.launches))])
        return ns["fast_call"]

    def _launcher(self, l):
        """The native launcher of launch l (static block and shared memory)."""
        packer, offsets = self._packers[l.kernel]
        if l.smem > 48 * 1024:
            self._functions[l.kernel].set_max_dynamic_shared_memory(int(l.smem))
        return _core.Launcher(self._functions[l.kernel], list(l.static_block),
                              [int(c) for c in l.cluster] if l.cluster else [], int(l.smem), offsets)

    def __repr__(self):
        names = ", ".join(l.kernel for l in self.launches)
        return f"<compiled {self.jit_function.fn.__name__}: {names} for {self.target['name']}>"


def _assumption_error(failed):
    raise DSLValueError("the arguments break what the compiled kernel assumes about them:\n  " + "\n  ".join(failed),
                        None)
