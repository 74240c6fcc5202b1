"""Compiling autotuning candidates in worker processes (autotune_jit(..., processes=N)).

Threads overlap only the cubin tool (tracing and the MLIR/LLVM stage run one at a time, autotune.py); processes
run every stage of several candidates at once. A worker is a fresh interpreter that imports the tuned function's
module by name, rebuilds the arguments (tensors as memory-less views with the same type, shape, strides, marks
and alignment, everything else by pickle) and compiles its share of the configurations for the same target. Its
compilations land in the JIT cache's function level under the keys the parent computes for the same arguments,
so that the parent's own compile of each candidate is then a cache hit: no trace, no MLIR.

What cannot go to a worker (a function of __main__ or of no file, an argument that does not pickle, the cache
turned off) makes the search compile on threads only, as without processes; a worker's failure is not reported
(the parent's compile of that candidate reports it, at the user's line).
"""
from __future__ import annotations

import importlib
import json
import os
import pickle
import subprocess
import sys
import tempfile

from ... import _core
from ..call import function_cache
from ..values.runtime import runtime_view
from ..call.compile_module import jit_cache
from ..call.jit import JitFunction, compile_function
from ..registry.target import target_named
from ..values.runtime import RuntimeTensor, is_torch_tensor


class NotShippable(Exception):
    pass


def _tensor_state(v):
    """The fields of a tensor argument's runtime view, without its memory (None: not a tensor)."""
    if not (isinstance(v, RuntimeTensor) or is_torch_tensor(v)):
        return None
    rt = runtime_view(v)
    state = {k: x for k, x in vars(rt).items() if k not in ("source", "_spec")}
    return ("tensor", state)


def _encode(v):
    t = _tensor_state(v)
    if t is not None:
        return t
    if isinstance(v, tuple):
        return ("tuple", [_encode(x) for x in v])
    if isinstance(v, list):
        return ("list", [_encode(x) for x in v])
    try:
        return ("pickle", pickle.dumps(v))
    except Exception as e:  # noqa: BLE001 - lambdas, device objects...
        raise NotShippable(f"an argument of type {type(v).__name__} does not pickle ({e})") from None


def _decode(v):
    kind, x = v
    if kind == "tensor":
        rt = RuntimeTensor.__new__(RuntimeTensor)
        rt.__dict__.update(x)
        rt.source = None
        rt._spec = None
        return rt
    if kind == "tuple":
        return tuple(_decode(e) for e in x)
    if kind == "list":
        return [_decode(e) for e in x]
    return pickle.loads(x)


def plan(jf, args, kwargs, target) -> dict:
    """What a worker needs (raises NotShippable when the search cannot use workers)."""
    fn = jf.fn
    if _core.JitCache.disabled_by_env():
        raise NotShippable("the JIT cache is off (WARPWEAVE_DISABLE_CACHE)")
    if fn.__module__ in ("__main__", "__mp_main__") or fn.__code__.co_filename.startswith("<"):
        raise NotShippable(f"{fn.__qualname__} is not in an importable module")
    if "<locals>" in fn.__qualname__:
        raise NotShippable(f"{fn.__qualname__} is local to a function")
    try:
        function_cache.function_identity(fn)
    except function_cache.Unstable as e:
        raise NotShippable(str(e)) from None
    return {"module": fn.__module__, "qualname": fn.__qualname__, "target": target.name,
            "args": [_encode(a) for a in args], "kwargs": {k: _encode(x) for k, x in kwargs.items()},
            "sys_path": [p for p in sys.path if p], "cache_dir": jit_cache().dir}


def _resolve(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        if part == "<locals>":
            raise NotShippable(f"{qualname} is local to a function")
        obj = obj.__dict__[part] if isinstance(obj, type) and part in obj.__dict__ else getattr(obj, part)
    if not isinstance(obj, JitFunction):  # an autotuned function (autotune.py) compiles the @cute.jit one it wraps
        obj = getattr(obj, "jit_function", obj)
    if not isinstance(obj, JitFunction):
        raise NotShippable(f"{module}.{qualname} is a {type(obj).__name__}, not a @cute.jit function")
    return obj


def run_workers(payload: dict, configs: list, processes: int, timeout: float = 900.0) -> list:
    """Compiles `configs` in up to `processes` workers; returns one dict per configuration (ok, error)."""
    n = max(1, min(processes, len(configs)))
    shares = [list(range(i, len(configs), n)) for i in range(n)]
    env = dict(os.environ, WARPWEAVE_CACHE_DIR=payload["cache_dir"], WARPWEAVE_PROGRESS="0",
               WARPWEAVE_AUTOTUNE_WORKERS="1")
    procs = []
    with tempfile.TemporaryDirectory(prefix="ww-autotune-") as tmp:
        for k, share in enumerate(shares):
            job = os.path.join(tmp, f"job{k}.pickle")
            with open(job, "wb") as f:
                pickle.dump(dict(payload, configs=[pickle.dumps(configs[i]) for i in share]), f)
            p = subprocess.Popen([sys.executable, "-c", "from warpweave._dsl.tuning.autotune_workers import main; main()",
                                  job], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            procs.append((share, p))
        answers = []
        for share, p in procs:
            try:
                answers.append((share,) + p.communicate(timeout=timeout))
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
    out = [{"ok": False, "error": "no worker answered"} for _ in configs]
    for share, stdout, stderr in answers:
        lines = [l for l in stdout.decode("utf-8", "replace").splitlines() if l.startswith("{")]
        if not lines:
            for i in share:
                out[i] = {"ok": False, "error": stderr.decode("utf-8", "replace")[-500:]}
            continue
        results = json.loads(lines[-1])["results"]
        for i, r in zip(share, results):
            out[i] = r
    return out


def main() -> None:
    """A worker: reads the pickled job (the file named by its argument), prints {"results": [{ok, error}, ...]}."""
    with open(sys.argv[1], "rb") as f:
        job = pickle.load(f)
    sys.path[:0] = [p for p in job["sys_path"] if p not in sys.path]
    results = []
    try:
        jf = _resolve(job["module"], job["qualname"])
        target = target_named(job["target"])
        args = [_decode(a) for a in job["args"]]
        kwargs = {k: _decode(x) for k, x in job["kwargs"].items()}
    except Exception as e:  # noqa: BLE001 - the parent compiles them itself
        print(json.dumps({"results": [{"ok": False, "error": f"{type(e).__name__}: {e}"}] * len(job["configs"])}))
        return
    for blob in job["configs"]:
        cfg = pickle.loads(blob)
        try:
            c = compile_function(jf, args, {**kwargs, **cfg}, target=target)
            results.append({"ok": True, "function_cache": c.info.get("function_cache", "")})
        except Exception as e:  # noqa: BLE001
            results.append({"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"})
    print(json.dumps({"results": results}))
