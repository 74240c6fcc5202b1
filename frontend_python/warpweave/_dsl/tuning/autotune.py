"""Autotuning (cute.testing.autotune_jit and cute.testing.tune): a search over compile-time parameters.

Every candidate of the search space (the product of params_dict's value lists) is compiled, several at a time on
threads, as a pipeline: tracing runs one candidate at a time (jit.py's trace lock, under the GIL), so does the
compiler's MLIR/LLVM stage (the core's pipeline mutex, outside the GIL), and the cubin tool (nvJitLink or ptxas)
runs for several at once. For the Ampere tensorop GEMM (trace ~0.17 s, MLIR/LLVM ~0.44 s, cubin ~0.53 s) that
bounds the gain at ~2.6x whatever the cores. With processes=N (WARPWEAVE_AUTOTUNE_PROCESSES) worker processes
compile the candidates first, every stage in parallel, and hand them over through the JIT cache
(autotune_workers.py); a worker costs an interpreter start, so this pays on many cores and large kernels.
benchmarks/python/bench_autotune.py measures both. A candidate that does not compile is reported (a
CandidateWarning naming it and the error) and left out. Each compiled candidate is then run once from the same
inputs and its results are compared with the reference candidate's (the function's defaults when they are in the
space, else the first that compiled), so that a fast wrong configuration is never picked; then it is timed with
warm-up on fresh copies of the arguments (enough of them that the L2 cache does not serve the inputs). The
arguments the caller passed are restored afterwards, so that tuning a kernel that accumulates into its output
leaves no trace in it.

The winner is kept in memory and on disk, in the JIT cache's folder (`<cache dir>/autotune/`), one JSON file per
key: the kernel (its code, closure and defaults and the text of the file that defines it), the search space, the
device (name, compute capability, SM count) and the arguments (tensors by element type, shape and strides, the
update_on_change arguments by value). The next process with the same key starts tuned. WARPWEAVE_DISABLE_CACHE
turns the table off; WARPWEAVE_LOG_AUTOTUNE=1 (or CuTe DSL's CUTE_DSL_LOG_AUTOTUNE) logs each configuration's
time and the choice; WARPWEAVE_AUTOTUNE_WORKERS sets the compile threads (default up to 4).

Without a GPU (WARPWEAVE_ARCH, or a `python -m warpweave run --compile-only` session) the search compiles every
candidate, reports those that fail, and uses the reference configuration: nothing is timed or stored.
"""
from __future__ import annotations

import inspect
import itertools
import os
import time
from typing import Callable

from ... import _core
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..call import function_cache
from ..call.jit import BoundJitFunction, JitFunction, compile_function
from ..registry import compile_only
from ..registry.target import select_target
from ..values.runtime import RuntimeTensor
from . import autotune_workers
from .argument_copies import arrays_among, clone_tree, restorer, sync_torch
from .benchmark import JitArguments, benchmark, get_workspace_count
from .candidate_search import (
    SearchResult, Trial, compile_all, config_text, default_workers, log_info, no_candidate, pick, reference_index,
    search, search_space, table_entry,
)
from .tuning_table import TuningTable, arguments_identity, device_identity, kernel_identity, space_identity, tensor_view


def compile_only_run(args=(), kwargs=None) -> bool:
    """Whether this search compiles without running: no device, a compile-only session, or fake tensors
    (make_fake_tensor) among the arguments, which can be compiled for on any machine but never run."""
    if compile_only.current() is not None or device_identity() is None:
        return True
    values = list(args) + list((kwargs or {}).values())
    return any(isinstance(v, RuntimeTensor) and v.device == "fake" for v in values)


def time_call(fn, workspaces: list, warmup: int, iterations: int, stream) -> float:
    """Median microseconds of fn(*w.args, **w.kwargs), rotating the workspaces (testing.benchmark)."""
    it = itertools.cycle(workspaces)
    return benchmark(fn, workspace_generator=lambda: next(it), workspace_count=len(workspaces),
                     warmup_iterations=warmup, iterations=iterations, stream=stream)


def workspace_count(args_values, warmup: int, iterations: int) -> int:
    """How many fresh copies of the arguments the timing rotates through (bounded to 1 GiB of copies)."""
    nbytes = sum(t.numel() * t.element_size() if hasattr(t, "numel") else t.nbytes for t in arrays_among(args_values))
    if nbytes == 0:
        return 1
    n = get_workspace_count(nbytes, warmup, iterations)
    return max(1, min(n, (1 << 30) // nbytes))


# --- cute.testing.tune ---------------------------------------------------------------------------------------------

def _defaults_of(fn, names) -> dict:
    try:
        sig = inspect.signature(getattr(fn, "fn", fn))
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in sig.parameters.items()
            if n in names and p.default is not inspect.Parameter.empty}


def tune(func: Callable, params_dict: dict | None = None, kernel_arguments=None, warmup_iterations: int = 10,
         iterations: int = 100, stream=None, *, check: Callable | None = None, workers: int | None = None,
         use_table: bool = True) -> dict:
    """The best configuration of params_dict for func: func(*kernel_arguments.args, **kernel_arguments.kwargs,
    **config) builds (compiles) a candidate and returns a callable of no arguments that runs it. Each candidate
    is built (on several threads), run once from the same argument values and compared with the reference
    configuration's results (check(ref_tensors, tensors) -> None/True or a reason replaces the comparison), timed
    (warmup_iterations, then the median of iterations) and the fastest returned. The arguments' tensors hold their
    original values afterwards."""
    kernel_arguments = kernel_arguments if kernel_arguments is not None else JitArguments()
    if not callable(func):
        raise DSLTypeError(f"tune: func is a callable that builds a candidate, got {type(func).__name__}",
                           user_location(2))
    space = search_space(params_dict)
    label = getattr(func, "__qualname__", type(func).__name__)
    args, kwargs = tuple(kernel_arguments.args), dict(kernel_arguments.kwargs)
    clash = sorted(set(kwargs) & set(space[0]))
    if clash:
        raise DSLValueError(f"tune: {', '.join(clash)} is tuned (params_dict) and also given in kernel_arguments",
                            user_location(2))
    defaults = _defaults_of(func, space[0])
    named = [(str(i), v) for i, v in enumerate(args)]
    tuner = _Tuner(label, func, space, defaults, use_table)
    key = tuner.key(named, kwargs, by_value=True)
    hit = tuner.cached(key)
    if hit is not None:
        # Chosen before (this process, or the tuning table of an earlier one): the arguments still end as one run
        # of that configuration leaves them, as after a search; a program that tunes and then checks its outputs
        # passes the second time too.
        if not compile_only_run(args, kwargs) or compile_only.current() is not None:
            func(*args, **kwargs, **hit)()
            sync_torch()
        return dict(hit)

    def compile_one(cfg):
        return func(*args, **kwargs, **cfg)

    trials = [Trial(c) for c in space]
    t0 = time.perf_counter()
    compile_all(trials, compile_one, workers or default_workers(len(trials)), label)
    ref = reference_index(trials, defaults)
    if ref is None:
        raise no_candidate(label, trials)
    if compile_only_run(args, kwargs):
        if compile_only.current() is not None:
            # A search runs the candidates on the arguments: in a compile-only run, the reference's call reaches
            # its launch (not made), as the program's own next launch would; a program that checks the
            # arguments' results after tuning ends there.
            trials[ref].compiled()
        return dict(trials[ref].config)
    tensors, restore = restorer((args, kwargs))

    def run_once(t):
        t.compiled()
        sync_torch()
        return tensors

    def timer(t):
        return time_call(t.compiled, [JitArguments()], warmup_iterations, iterations, stream)

    search(label, trials, run_once, timer, restore, ref, check)
    result = tuner.finish(key, trials, t0)
    # The search ran the candidates on the arguments and restored them; they end as one run of the chosen
    # configuration leaves them, as a program that tunes and then reads its outputs expects.
    next(t for t in trials if t.config == result.best).compiled()
    sync_torch()
    return dict(result.best)


# --- cute.testing.autotune_jit ---------------------------------------------------------------------------------------

class _Tuner:
    """Keys, the in-memory and on-disk tables of one tuned function."""

    def __init__(self, label, fn, space, defaults, use_table):
        self.label, self.fn, self.space, self.defaults = label, fn, space, defaults
        self.memory: dict = {}
        self.use_table = use_table
        self.last: SearchResult | None = None
        self.why_no_table = None
        try:
            self.kernel = kernel_identity(fn)
        except Exception as e:  # noqa: BLE001 - Unstable, or a callable without a source file
            self.kernel, self.why_no_table = None, str(e)

    def key(self, named_args, kwargs, by_value) -> str | None:
        device = device_identity()
        if device is None:
            return None
        names = {n for n, _ in named_args} | set(kwargs) if by_value is True else set(by_value or ())
        args_id = arguments_identity(named_args, kwargs, names)
        return TuningTable.key(self.kernel or f"unkeyed:{id(self.fn)}", device, args_id, space_identity(self.space))

    def table(self) -> TuningTable | None:
        if not self.use_table or self.kernel is None or TuningTable.disabled():
            return None
        return TuningTable()

    def cached(self, key) -> dict | None:
        if key is None:
            return None
        if key in self.memory:
            self.last = SearchResult(self.memory[key], source="memory")
            return self.memory[key]
        table = self.table()
        cfg = table.lookup(key, self.space) if table is not None else None
        if cfg is not None:
            log_info("Using cached best configuration: %s", config_text(cfg))
            self.memory[key] = cfg
            self.last = SearchResult(cfg, source="table")
        return cfg

    def finish(self, key, trials, t0) -> SearchResult:
        best = pick(trials)
        if best is None:
            raise no_candidate(self.label, trials)
        result = SearchResult(best.config, trials, True, best.time_us, time.perf_counter() - t0)
        log_info("Best configuration: %s, execution time: %s us", config_text(best.config), best.time_us)
        log_info("Total tuning time: %s s", result.seconds)
        self.last = result
        if key is not None:
            self.memory[key] = best.config
            table = self.table()
            if table is not None:
                table.store(key, table_entry(result, self.space, trials.index(best), self.label,
                                             device_identity() or ""))
        return result


class AutotunedFunction:
    """A @cute.jit function under @cute.testing.autotune_jit: a call tunes the parameters of params_dict for its
    arguments (once per key: the function, the device, the tensors' types and shapes and the update_on_change
    arguments' values), then runs the fastest configuration. `last_search` describes the latest choice."""

    def __init__(self, jf, params_dict, update_on_change, warmup_iterations, iterations, check, workers, use_table,
                 processes=None):
        if not isinstance(jf, (JitFunction, BoundJitFunction)):
            if callable(jf) and hasattr(jf, "__code__"):
                jf = JitFunction(jf)
            else:
                raise DSLTypeError("autotune_jit decorates a @cute.jit function", user_location(3))
        self.jit_function = jf
        self.space = search_space(params_dict)
        params = jf.signature.parameters
        unknown = [n for n in list(self.space[0]) + list(update_on_change or ()) if n not in params]
        if unknown:
            raise DSLValueError(f"autotune_jit: {jf.__name__} has no parameter {', '.join(map(repr, unknown))} "
                                f"(its parameters: {', '.join(params)})", user_location(3))
        self.update_on_change = tuple(update_on_change or ())
        self.warmup_iterations, self.iterations = warmup_iterations, iterations
        self.check, self.workers = check, workers
        self.processes = processes
        self._tuner = _Tuner(jf.__name__, jf, self.space, _defaults_of(jf, self.space[0]), use_table)
        self._compiled: dict = {}
        self._fast: dict = {}
        self._names = [n for n, p in params.items() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self.__name__ = jf.__name__
        self.__doc__ = jf.__doc__
        self.__wrapped__ = jf

    @property
    def last_search(self) -> SearchResult | None:
        return self._tuner.last

    @property
    def __ww_jit__(self):
        """What cute.compile(autotuned, *args, **params) compiles: the @cute.jit function itself (the parameters
        as given, else its defaults), as CuTe DSL's tune examples compile an autotuned function."""
        return self.jit_function

    def _bind(self, args, kwargs):
        sig = self.jit_function.signature
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise DSLTypeError(f"{self.__name__}(): {e}", user_location(3)) from None
        return bound

    def best_config(self, *args, **kwargs) -> dict:
        """The configuration a call with these arguments runs (tuning first if it is not known yet)."""
        return dict(self._choose(args, kwargs)[0])

    def _choose(self, args, kwargs):
        if not kwargs and len(args) <= len(self._names):  # the common call: positional, no signature binding
            arguments = dict(zip(self._names, args))
        else:
            arguments = self._bind(args, kwargs).arguments
        if any(n in arguments for n in self.space[0]):
            return {}, None  # the caller chose the parameters: no tuning
        fast = self._fast_key(arguments)
        known = self._fast.get(fast) if fast is not None else None
        if known is not None:  # a call like an earlier one of this process: no key to hash
            self._tuner.last = SearchResult(known[0], source="memory")
            return known
        bound = self._bind(args, kwargs)
        chosen = self._choose_slow(bound, args, kwargs)
        if fast is not None and chosen[1] is not None:
            self._fast[fast] = chosen
        return chosen

    def _fast_key(self, arguments):
        """A cheap in-process key of what the full key hashes (None when some argument has none)."""
        parts = [_current_device(_core)]
        for name, v in arguments.items():
            t = tensor_view(v)
            if t is not None:
                parts.append(t)
            elif name == "self":  # by what it holds, as the full key (it may change between calls)
                try:
                    parts.append(function_cache.stable(v))
                except function_cache.Unstable:
                    return None
            elif name in self.update_on_change:
                try:
                    hash(v)
                except TypeError:
                    return None
                parts.append((name, type(v), v))
            elif isinstance(v, (list, tuple)):
                return None
            else:
                parts.append(type(v))
        return tuple(parts)

    def _choose_slow(self, bound, args, kwargs):
        named = list(bound.arguments.items())
        params = list(self.jit_function.signature.parameters)
        by_value = set(self.update_on_change)
        if params and params[0] == "self":  # a method: what the object holds configures the kernel
            by_value.add("self")
        key = self._tuner.key(named, {}, by_value)
        target = select_target()
        hit = self._tuner.cached(key)
        if hit is not None:
            compiled = self._compiled.get((key, config_text(hit)))
            if compiled is None:  # found in the table: compile the winner (a JIT cache hit, usually)
                compiled = self._compiled[(key, config_text(hit))] = compile_function(
                    self.jit_function, args, {**kwargs, **hit}, target=target)
            return hit, compiled

        def compile_one(cfg):
            return compile_function(self.jit_function, args, {**kwargs, **cfg}, target=target)

        trials = [Trial(c) for c in self.space]
        t0 = time.perf_counter()
        label = self.__name__
        self._precompile_in_processes(args, kwargs, target, label)
        compile_all(trials, compile_one, self.workers or default_workers(len(trials)), label)
        ref = reference_index(trials, self._tuner.defaults)
        if ref is None:
            raise no_candidate(label, trials)
        if key is None or compile_only_run(args, kwargs):
            self._tuner.last = SearchResult(trials[ref].config, trials, source="compile-only")
            return trials[ref].config, trials[ref].compiled
        tensors, restore = restorer((args, kwargs))
        n = workspace_count((args, kwargs), self.warmup_iterations, self.iterations)
        spaces = [JitArguments(*clone_tree(args), **clone_tree(kwargs)) for _ in range(n)]

        def run_once(t):
            t.compiled(*args, **kwargs, **t.config)
            sync_torch()
            return tensors

        def timer(t):
            # positionally, so that each call takes the compiled function's fast path (host time between the
            # timing events would count as the kernel's)
            ws = [JitArguments(*a, **k) for a, k in (self._positional(w.args, w.kwargs, t.config) for w in spaces)]
            return time_call(t.compiled, ws, self.warmup_iterations, self.iterations, None)

        search(label, trials, run_once, timer, restore, ref, self.check)
        del spaces
        result = self._tuner.finish(key, trials, t0)
        best = next(t for t in trials if t.config is result.best)
        self._compiled[(key, config_text(best.config))] = best.compiled
        return best.config, best.compiled

    def _precompile_in_processes(self, args, kwargs, target, label) -> None:
        """Workers compile the candidates into the JIT cache first (autotune_workers.py), when asked to."""
        n = self.processes
        if n is None:
            env = os.environ.get("WARPWEAVE_AUTOTUNE_PROCESSES", "").strip()
            n = int(env) if env.isdigit() else 0
        if n < 2 or len(self.space) < 2:
            return
        try:
            payload = autotune_workers.plan(self.jit_function, args, kwargs, target)
        except autotune_workers.NotShippable as e:
            log_info("autotune %s: compiling on threads only (%s)", label, e)
            return
        results = autotune_workers.run_workers(payload, self.space, n)
        log_info("autotune %s: %d of %d candidates compiled in %d processes", label, sum(r["ok"] for r in results),
              len(results), min(n, len(results)))

    def _positional(self, args, kwargs, cfg):
        bound = self.jit_function.signature.bind(*args, **kwargs, **cfg)
        bound.apply_defaults()
        return bound.args, bound.kwargs

    def __call__(self, *args, **kwargs):
        cfg, compiled = self._choose(args, kwargs)
        if compiled is None:
            return self.jit_function(*args, **kwargs, **cfg)
        a, k = self._positional(args, kwargs, cfg)
        return compiled(*a, **k)

    def __get__(self, obj, objtype=None):
        """As a method (a kernel class's __call__): the object is the first argument, keyed by its value."""
        if obj is None:
            return self
        return _BoundAutotuned(self, obj)


def _current_device(core):
    try:
        return core.current_device() if core.driver_available() else None
    except RuntimeError:
        return None


class _BoundAutotuned:
    def __init__(self, tuned: AutotunedFunction, obj):
        self.tuned, self.obj = tuned, obj
        self.__name__ = tuned.__name__

    def __call__(self, *args, **kwargs):
        return self.tuned(self.obj, *args, **kwargs)

    def best_config(self, *args, **kwargs) -> dict:
        return self.tuned.best_config(self.obj, *args, **kwargs)

    @property
    def last_search(self):
        return self.tuned.last_search

    @property
    def __ww_jit__(self):
        return self.tuned.jit_function.__get__(self.obj, type(self.obj))


def autotune_jit(params_dict: dict | None = None, update_on_change=None, warmup_iterations: int = 10,
                 iterations: int = 100, *, check: Callable | None = None, workers: int | None = None,
                 use_table: bool = True, processes: int | None = None):
    """@cute.testing.autotune_jit(params_dict={...}, update_on_change=[...]) over a @cute.jit function: see
    AutotunedFunction. workers: compile threads (WARPWEAVE_AUTOTUNE_WORKERS); processes: worker processes that
    compile the candidates first (WARPWEAVE_AUTOTUNE_PROCESSES; autotune_workers.py)."""
    for what, n in (("warmup_iterations", warmup_iterations), ("iterations", iterations)):
        if not isinstance(n, int) or isinstance(n, bool) or n < (0 if what == "warmup_iterations" else 1):
            raise DSLValueError(f"autotune_jit: {what} must be a {'non-negative' if what[0] == 'w' else 'positive'} "
                                f"integer, got {n!r}", user_location(2))
    if isinstance(update_on_change, str):
        update_on_change = [update_on_change]

    def decorate(jf):
        return AutotunedFunction(jf, params_dict, update_on_change, warmup_iterations, iterations, check, workers,
                                 use_table, processes)
    return decorate
