"""An autotuning search's candidates (autotune.py): the search space, compiling every configuration on threads,
checking each against the reference configuration's results and timing it, and the choice; candidates that fail
are reported as CandidateWarnings naming the user's line."""
from __future__ import annotations

import itertools
import logging
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

from ...progress import Progress
from ..base.errors import DSLError, DSLTypeError, DSLValueError, user_location
from .argument_copies import clone_array, same_results

log = logging.getLogger("warpweave.autotune")
# Warnings name the user's line: the first frame outside the warpweave package.
PACKAGE_FRAMES = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,)


class CandidateWarning(UserWarning):
    """A configuration of an autotuning search was left out (it did not compile, failed, or computed otherwise)."""


def _logging_on() -> bool:
    # CUTE_DSL_LOG_AUTOTUNE too: CuTe DSL programs run through `python -m warpweave run` set that one
    return any(os.environ.get(v, "").strip() not in ("", "0") for v in ("WARPWEAVE_LOG_AUTOTUNE",
                                                                           "CUTE_DSL_LOG_AUTOTUNE"))


def log_info(msg, *args):
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


def default_workers(n: int) -> int:
    env = os.environ.get("WARPWEAVE_AUTOTUNE_WORKERS", "").strip()
    if env.isdigit() and int(env) > 0:
        return min(n, int(env))
    return max(1, min(n, 4, os.cpu_count() or 1))


def compile_all(trials: list[Trial], compile_one: Callable[[dict], Any], workers: int, label: str) -> None:
    """Compiles every trial's configuration (on `workers` threads), recording the compiled object or the error."""
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
                          f"compile ({t.error})", CandidateWarning, skip_file_prefixes=PACKAGE_FRAMES)


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


def search(label: str, trials: list[Trial], run_once: Callable[[Trial], list], timer: Callable[[Trial], float],
           restore: Callable[[], None], ref: int | None, check: Callable | None) -> None:
    """Checks and times the compiled trials (in place); candidates that fail or compute otherwise are left out."""
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
                    ref_results = [clone_array(x) for x in got]
                else:
                    why = check(ref_results, got) if check is not None else same_results(ref_results, got)
                    if why is False:
                        why = "the check function refused its results"
                    if why not in (None, True):
                        t.error = f"wrong results: {why}"
                if t.error is None:
                    t.time_us = timer(t)
                    log_info("Tuning configuration: %s", config_text(t.config))
                    log_info("   Execution time: %s us", t.time_us)
            except Exception as e:  # noqa: BLE001 - a candidate that faults at run time is left out
                t.error = f"{type(e).__name__}: {e}"
            if t.error is not None:
                warnings.warn(f"autotune {label}: configuration {config_text(t.config)} is left out: {t.error}",
                              CandidateWarning, skip_file_prefixes=PACKAGE_FRAMES)
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
