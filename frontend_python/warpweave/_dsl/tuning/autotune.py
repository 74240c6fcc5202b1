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

import hashlib
import inspect
import itertools
import json
import logging
import os
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from ..base.errors import DSLError, DSLTypeError, DSLValueError, user_location
from ..values.runtime import RuntimeTensor, is_torch_tensor

_FORMAT = 1
log = logging.getLogger("warpweave.autotune")
# Warnings name the user's line: the first frame outside the warpweave package.
_OURS = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,)


class CandidateWarning(UserWarning):
    """A configuration of an autotuning search was left out (it did not compile, failed, or computed otherwise)."""


def _logging_on() -> bool:
    # CUTE_DSL_LOG_AUTOTUNE too: CuTe DSL programs run through `python -m warpweave run` set that one
    return any(os.environ.get(v, "").strip() not in ("", "0") for v in ("WARPWEAVE_LOG_AUTOTUNE",
                                                                           "CUTE_DSL_LOG_AUTOTUNE"))


def _info(msg, *args):
    if _logging_on():
        if not log.handlers and not logging.getLogger().handlers:
            h = logging.StreamHandler()
            h.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
            log.addHandler(h)
            log.setLevel(logging.INFO)
        log.info(msg, *args)


# --- the search space --------------------------------------------------------------------------------------------

def search_space(params_dict) -> list[dict]:
    """The configurations of params_dict ({name: [values]}), in the order of its names and values."""
    if params_dict is None:
        return [{}]
    if not isinstance(params_dict, dict) or not all(isinstance(k, str) for k in params_dict):
        raise DSLTypeError(f"params_dict maps parameter names to lists of values, got {params_dict!r}",
                           user_location(3))
    names = list(params_dict)
    values = []
    for n in names:
        v = params_dict[n]
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise DSLTypeError(f"params_dict[{n!r}] is a list of values to try, got {v!r}", user_location(3))
        v = list(v)
        if not v:
            raise DSLValueError(f"params_dict[{n!r}] has no value to try", user_location(3))
        values.append(v)
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def config_text(config: dict) -> str:
    return "{" + ", ".join(f"{k!r}: {_value_text(v)}" for k, v in config.items()) + "}"


def _value_text(v) -> str:
    if isinstance(v, type):
        return v.__name__
    return repr(v)


# --- keys ----------------------------------------------------------------------------------------------------------

def _sha(parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def kernel_identity(fn) -> str:
    """The tuned function's identity: its code, closure, defaults and module constants (function_cache's), and the
    text of the file that defines it (its kernels and helpers usually live there). Unstable when it has none."""
    from ..call import function_cache
    from ..host.kernel_trace import Decorated as _Decorated

    if isinstance(fn, _Decorated):
        fn = fn.fn
    fn = inspect.unwrap(fn)
    if not hasattr(fn, "__code__"):
        call = getattr(type(fn), "__call__", None)
        fn = getattr(call, "fn", call)
        if not hasattr(fn, "__code__"):
            raise function_cache.Unstable(f"{type(fn).__name__} has no code to key")
    ident = function_cache.function_identity(fn)
    path = fn.__code__.co_filename
    try:
        with open(path, "rb") as f:
            source = hashlib.sha256(f.read()).hexdigest()
    except OSError as e:
        raise function_cache.Unstable(f"the source of {fn.__qualname__} cannot be read ({e})") from None
    return _sha([fn.__module__, fn.__qualname__, ident, source])


def device_identity() -> str | None:
    """Name, compute capability and SM count of the current device; None without one."""
    from ... import _core

    try:
        if not _core.driver_available() or _core.device_count() == 0:
            return None
        d = _core.device_info(_core.current_device())
    except RuntimeError:
        return None
    major, minor = d["compute_capability"]
    return f"{d['name']} sm_{major}{minor} x{d['multiprocessor_count']}"


def _tensor_view(v):
    """(element type, shape, strides) of a tensor argument, or None."""
    if is_torch_tensor(v):
        return ("torch", str(v.dtype), tuple(v.shape), tuple(v.stride()), v.data_ptr() % 16)
    if isinstance(v, RuntimeTensor):
        return ("tensor", v.element_type.__name__, tuple(v._shape), tuple(v._strides))
    return None


def arguments_identity(args, kwargs, names_by_value=()) -> str:
    """Tensors by element type, shape and strides (and address alignment); the arguments named in
    names_by_value by value; every other argument by type."""
    from ..call import function_cache

    parts = []

    def one(name, v):
        t = _tensor_view(v)
        if t is not None:
            parts.append(f"{name}={t}")
        elif name in names_by_value:
            try:
                parts.append(f"{name}={function_cache.stable(v)}")
            except function_cache.Unstable:
                parts.append(f"{name}={v!r}")
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                one(f"{name}[{i}]", x)
        else:
            parts.append(f"{name}:{type(v).__qualname__}")

    for name, v in args:
        one(name, v)
    for name, v in sorted(kwargs.items()):
        one(name, v)
    return _sha(parts)


def space_identity(space: list[dict]) -> str:
    from ..call import function_cache

    try:
        return _sha([function_cache.stable(c) for c in space])
    except function_cache.Unstable:
        return _sha([config_text(c) for c in space])


# --- the on-disk table ---------------------------------------------------------------------------------------------

class TuningTable:
    """The winners of past searches: `<dir>/<key[:2]>/<key>.json`, written atomically (a concurrent writer of the
    same key replaces the file whole). An entry records the candidate by its index in the space and by its text,
    and is used only when both still agree."""

    def __init__(self, directory: str | None = None):
        if directory is None:
            from ..call.compile_module import jit_cache as _jit_cache

            directory = os.path.join(_jit_cache().dir, "autotune")
        self.dir = directory

    @staticmethod
    def disabled() -> bool:
        from ... import _core

        return _core.JitCache.disabled_by_env()

    @staticmethod
    def key(kernel: str, device: str, arguments: str, space: str) -> str:
        return _sha([f"warpweave autotune {_FORMAT}", kernel, device, arguments, space])

    def path(self, key: str) -> str:
        return os.path.join(self.dir, key[:2], key + ".json")

    def load(self, key: str) -> dict | None:
        try:
            with open(self.path(key), encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != _FORMAT or entry.get("key") != key:
            return None
        return entry

    def store(self, key: str, entry: dict) -> None:
        entry = dict(entry, format=_FORMAT, key=key)
        d = os.path.dirname(self.path(key))
        try:
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, indent=1)
            os.replace(tmp, self.path(key))
        except OSError as e:  # a read-only cache folder: the search result is kept in memory only
            warnings.warn(f"autotune: the table entry cannot be written to {d} ({e})", RuntimeWarning,
                          skip_file_prefixes=_OURS)

    def lookup(self, key: str, space: list[dict]) -> dict | None:
        """The stored configuration of `key`, when its index and text still name the same candidate."""
        entry = self.load(key)
        if entry is None:
            return None
        i = entry.get("index")
        if not isinstance(i, int) or not 0 <= i < len(space) or config_text(space[i]) != entry.get("config"):
            return None
        return space[i]


# --- the search ----------------------------------------------------------------------------------------------------

@dataclass
class Trial:
    config: dict
    compiled: Any = None
    error: str | None = None
    time_us: float | None = None
    compile_s: float = 0.0


@dataclass
class SearchResult:
    best: dict
    trials: list = field(default_factory=list)
    timed: bool = False
    best_time_us: float | None = None
    seconds: float = 0.0
    source: str = "search"     # "search", "memory", "table"

    def report(self) -> str:
        lines = []
        for t in self.trials:
            what = f"{t.time_us:.2f} us" if t.time_us is not None else (t.error or "compiled")
            lines.append(f"  {config_text(t.config)}: {what}")
        return "\n".join(lines)


def compile_only_run(args=(), kwargs=None) -> bool:
    """Whether this search compiles without running: no device, a compile-only session, or fake tensors
    (make_fake_tensor) among the arguments, which can be compiled for on any machine but never run."""
    from ..registry import compile_only
    from ..values.runtime import RuntimeTensor

    if compile_only.current() is not None or device_identity() is None:
        return True
    values = list(args) + list((kwargs or {}).values())
    return any(isinstance(v, RuntimeTensor) and v.device == "fake" for v in values)


def default_workers(n: int) -> int:
    env = os.environ.get("WARPWEAVE_AUTOTUNE_WORKERS", "").strip()
    if env.isdigit() and int(env) > 0:
        return min(n, int(env))
    return max(1, min(n, 4, os.cpu_count() or 1))


def compile_all(trials: list[Trial], compile_one: Callable[[dict], Any], workers: int, label: str) -> None:
    """Compiles every trial's configuration (on `workers` threads), recording the compiled object or the error."""
    from ...progress import Progress

    def run(t: Trial):
        t0 = time.perf_counter()
        try:
            t.compiled = compile_one(t.config)
        except (DSLError, Exception) as e:  # noqa: BLE001 - a candidate that cannot be built is reported, not fatal
            t.error = f"{type(e).__name__}: {e}"
        t.compile_s = time.perf_counter() - t0
        return t

    bar = Progress(f"{label} compile", len(trials))
    bar.start(bar.label, len(trials))
    try:
        if workers <= 1 or len(trials) <= 1:
            for t in trials:
                run(t)
                bar.step(detail=config_text(t.config))
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ww-autotune") as pool:
                for t in pool.map(run, trials):
                    bar.step(detail=config_text(t.config))
    finally:
        bar.finish()
    for t in trials:
        if t.error is not None:
            warnings.warn(f"autotune {label}: configuration {config_text(t.config)} is left out: it did not "
                          f"compile ({t.error})", CandidateWarning, skip_file_prefixes=_OURS)


def reference_index(trials: list[Trial], defaults: dict) -> int | None:
    """The trial the others are checked against: the defaults' configuration if it compiled, else the first."""
    for i, t in enumerate(trials):
        if t.error is None and defaults and all(k in defaults and _same(defaults[k], v) for k, v in t.config.items()):
            return i
    for i, t in enumerate(trials):
        if t.error is None:
            return i
    return None


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - values without a plain equality
        return a is b


# --- tensors: snapshots, copies and comparisons --------------------------------------------------------------------

def _is_array(v) -> bool:
    from ..values.runtime import is_torch_tensor

    if is_torch_tensor(v):
        return True
    return type(v).__module__ == "numpy" and type(v).__name__ == "ndarray"


def _arrays(values):
    """The torch tensors (and numpy arrays) among the arguments, in argument order."""
    out = []

    def walk(v):
        from ..values.runtime import RuntimeTensor

        if _is_array(v):
            out.append(v)
        elif isinstance(v, RuntimeTensor) and _is_array(getattr(v, "source", None)):
            out.append(v.source)  # from_dlpack's view of a torch tensor (or numpy array)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
    walk(values)
    return out


def _clone(a):
    """A copy of a torch tensor with the same strides (a view into a larger buffer included: a kernel reads the
    copy by the strides it was compiled for); numpy arrays (host data, tests) are copied plainly."""
    if hasattr(a, "clone"):
        import torch

        return torch.empty_strided(a.size(), a.stride(), dtype=a.dtype, device=a.device).copy_(a)
    return a.copy()


def _copy_into(dst, src) -> None:
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


def _clone_tree(v):
    import copy

    from ..values.runtime import RuntimeTensor

    if _is_array(v):
        return _clone(v)
    if isinstance(v, RuntimeTensor) and _is_array(getattr(v, "source", None)):
        # the same view (marks, alignment) of a copy of its memory
        c = _clone(v.source)
        out = copy.copy(v)
        out.source = c
        out.data_ptr = int(c.data_ptr() if hasattr(c, "data_ptr") else c.ctypes.data)
        for k, val in vars(out).items():
            if isinstance(val, list):  # the marks: the copy's own
                setattr(out, k, list(val))
        out._spec = None
        return out
    if isinstance(v, tuple):
        return tuple(_clone_tree(x) for x in v)
    if isinstance(v, list):
        return [_clone_tree(x) for x in v]
    if isinstance(v, dict):
        return {k: _clone_tree(x) for k, x in v.items()}
    return v


def tolerance(dtype_name: str, itemsize: int, is_float: bool) -> tuple[float, float]:
    """(rtol, atol) between two configurations of one kernel: their summation orders may differ."""
    if not is_float:
        return 0.0, 0.0
    if itemsize == 1:  # fp8
        return 0.125, 0.125
    if itemsize == 2:  # fp16, bf16
        return 2e-2, 2e-2
    return 1e-4, 1e-5


def same_results(ref: list, got: list) -> str | None:
    """None when every tensor of `got` matches `ref` within tolerance, else what differs."""
    import numpy as np

    for i, (a, b) in enumerate(zip(ref, got)):
        if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
            return f"tensor {i}: {tuple(b.shape)} {b.dtype} against {tuple(a.shape)} {a.dtype}"
        if hasattr(a, "clone"):  # torch
            import torch

            is_float, itemsize = a.dtype.is_floating_point, a.element_size()
            x, y = (a.float(), b.float()) if is_float and itemsize == 1 else (a, b)
            rtol, atol = tolerance(str(a.dtype), itemsize, is_float)
            close = torch.isclose(x, y, rtol=rtol, atol=atol, equal_nan=True)
            bad, n = int((~close).sum().item()), a.numel()
        else:
            is_float = np.issubdtype(a.dtype, np.floating)
            rtol, atol = tolerance(str(a.dtype), a.dtype.itemsize, is_float)
            close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True) if is_float else a == b
            bad, n = int((~close).sum()), a.size
        if bad:
            return f"tensor {i}: {bad} of {n} elements differ from the reference configuration's"
    return None


def time_call(fn, workspaces: list, warmup: int, iterations: int, stream) -> float:
    """Median microseconds of fn(*w.args, **w.kwargs), rotating the workspaces (testing.benchmark)."""
    from ...cute.testing import benchmark

    it = itertools.cycle(workspaces)
    return benchmark(fn, workspace_generator=lambda: next(it), workspace_count=len(workspaces),
                     warmup_iterations=warmup, iterations=iterations, stream=stream)


def workspace_count(args_values, warmup: int, iterations: int) -> int:
    """How many fresh copies of the arguments the timing rotates through (bounded to 1 GiB of copies)."""
    from ...cute.testing import get_workspace_count

    nbytes = sum(t.numel() * t.element_size() if hasattr(t, "numel") else t.nbytes for t in _arrays(args_values))
    if nbytes == 0:
        return 1
    n = get_workspace_count(nbytes, warmup, iterations)
    return max(1, min(n, (1 << 30) // nbytes))


def search(label: str, trials: list[Trial], run_once: Callable[[Trial], list], timer: Callable[[Trial], float],
           restore: Callable[[], None], ref: int | None, check: Callable | None) -> None:
    """Checks and times the compiled trials (in place); candidates that fail or compute otherwise are left out."""
    from ...progress import Progress

    live = [t for t in trials if t.error is None]
    ref_results = None
    if ref is not None:
        order = [trials[ref]] + [t for t in live if t is not trials[ref]]
    else:
        order = live
    bar = Progress(f"{label} time", len(order))
    bar.start(bar.label, len(order))
    try:
        for t in order:
            bar.step(0, detail=config_text(t.config))
            try:
                restore()
                got = run_once(t)
                if t is order[0]:
                    ref_results = [_clone(x) for x in got]
                else:
                    why = check(ref_results, got) if check is not None else same_results(ref_results, got)
                    if why is False:
                        why = "the check function refused its results"
                    if why not in (None, True):
                        t.error = f"wrong results: {why}"
                if t.error is None:
                    t.time_us = timer(t)
                    _info("Tuning configuration: %s", config_text(t.config))
                    _info("   Execution time: %s us", t.time_us)
            except Exception as e:  # noqa: BLE001 - a candidate that faults at run time is left out
                t.error = f"{type(e).__name__}: {e}"
            if t.error is not None:
                warnings.warn(f"autotune {label}: configuration {config_text(t.config)} is left out: {t.error}",
                              CandidateWarning, skip_file_prefixes=_OURS)
            bar.step()
    finally:
        restore()
        bar.finish()


def pick(trials: list[Trial]) -> Trial | None:
    timed = [t for t in trials if t.error is None and t.time_us is not None and t.time_us == t.time_us]
    return min(timed, key=lambda t: t.time_us) if timed else None


def no_candidate(label: str, trials: list[Trial]) -> DSLValueError:
    why = "\n".join(f"  {config_text(t.config)}: {t.error}" for t in trials)
    return DSLValueError(f"autotune {label}: no configuration of the search space works:\n{why}", user_location(4))


def table_entry(result: SearchResult, space: list[dict], best_index: int, kernel_name: str, device: str) -> dict:
    return {"kernel": kernel_name, "device": device, "index": best_index, "config": config_text(space[best_index]),
            "time_us": result.best_time_us, "seconds": round(result.seconds, 3),
            "trials": [{"config": config_text(t.config), "time_us": t.time_us, "error": t.error}
                       for t in result.trials]}


# --- cute.testing.tune ---------------------------------------------------------------------------------------------

def _defaults_of(fn, names) -> dict:
    try:
        sig = inspect.signature(getattr(fn, "fn", fn))
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in sig.parameters.items()
            if n in names and p.default is not inspect.Parameter.empty}


def _sync():
    import sys

    torch = sys.modules.get("torch")  # only a program that uses torch has device work of torch's to wait for
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def _restorer(values):
    """(the arrays among `values`, a function that copies back into them the values they hold now)."""
    arrays = _arrays(values)
    saved = [_clone(a) for a in arrays]

    def restore():
        for a, s in zip(arrays, saved):
            _copy_into(a, s)
        if arrays:
            _sync()
    return arrays, restore


def tune(func: Callable, params_dict: dict | None = None, kernel_arguments=None, warmup_iterations: int = 10,
         iterations: int = 100, stream=None, *, check: Callable | None = None, workers: int | None = None,
         use_table: bool = True) -> dict:
    """The best configuration of params_dict for func: func(*kernel_arguments.args, **kernel_arguments.kwargs,
    **config) builds (compiles) a candidate and returns a callable of no arguments that runs it. Each candidate
    is built (on several threads), run once from the same argument values and compared with the reference
    configuration's results (check(ref_tensors, tensors) -> None/True or a reason replaces the comparison), timed
    (warmup_iterations, then the median of iterations) and the fastest returned. The arguments' tensors hold their
    original values afterwards."""
    from ...cute.testing import JitArguments

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
        return dict(trials[ref].config)
    tensors, restore = _restorer((args, kwargs))

    def run_once(t):
        t.compiled()
        _sync()
        return tensors

    def timer(t):
        return time_call(t.compiled, [JitArguments()], warmup_iterations, iterations, stream)

    search(label, trials, run_once, timer, restore, ref, check)
    return dict(tuner.finish(key, trials, t0).best)


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
            _info("Using cached best configuration: %s", config_text(cfg))
            self.memory[key] = cfg
            self.last = SearchResult(cfg, source="table")
        return cfg

    def finish(self, key, trials, t0) -> SearchResult:
        best = pick(trials)
        if best is None:
            raise no_candidate(self.label, trials)
        result = SearchResult(best.config, trials, True, best.time_us, time.perf_counter() - t0)
        _info("Best configuration: %s, execution time: %s us", config_text(best.config), best.time_us)
        _info("Total tuning time: %s s", result.seconds)
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
        from ..call.jit import BoundJitFunction, JitFunction

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
        from ... import _core

        parts = [_current_device(_core)]
        for name, v in arguments.items():
            t = _tensor_view(v)
            if t is not None:
                parts.append(t)
            elif name == "self":  # by what it holds, as the full key (it may change between calls)
                from ..call import function_cache

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
        from ..call.jit import compile_function
        from ..registry.target import select_target
        from ...cute.testing import JitArguments

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
        tensors, restore = _restorer((args, kwargs))
        n = workspace_count((args, kwargs), self.warmup_iterations, self.iterations)
        spaces = [JitArguments(*_clone_tree(args), **_clone_tree(kwargs)) for _ in range(n)]

        def run_once(t):
            t.compiled(*args, **kwargs, **t.config)
            _sync()
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
        from . import autotune_workers

        try:
            payload = autotune_workers.plan(self.jit_function, args, kwargs, target)
        except autotune_workers._NotShippable as e:
            _info("autotune %s: compiling on threads only (%s)", label, e)
            return
        results = autotune_workers.run_workers(payload, self.space, n)
        _info("autotune %s: %d of %d candidates compiled in %d processes", label, sum(r["ok"] for r in results),
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
