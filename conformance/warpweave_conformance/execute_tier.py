"""Execute tier (GPU): every instruction the present GPU can use (one of its targets is usable on the device's
compute capability) runs through the probe of its conformance kind, on random data against a CPU reference,
with its thread-value layouts confirmed element by element.

Probes run in a worker process (spawned, so that CUDA and torch start clean). A kernel that faults leaves the
CUDA context unusable, and one that hangs never returns: either way the worker is replaced and the suite goes on
with the next instruction, the culprit charged with the failure. torch is imported only in the worker; without
torch or without a GPU every instruction is skipped with the reason.
"""
from __future__ import annotations

import importlib.util
import multiprocessing
import queue
import time

from warpweave._dsl.registry.plugins import Backend

from . import gpu
from .compile_tier import probe_module
from .records import FAIL, SKIP, record_for

READY_TIMEOUT = 300.0   # importing torch and creating a CUDA context
PROBE_TIMEOUT = 120.0   # one probe: building, compiling, launching, checking


def _backend(spec, hooks: bool) -> Backend:
    name, path, manifest, plugin, targets = spec
    if plugin and hooks:
        # A hook (lowering or host) runs inside the plugin library, which must then be loaded in this process too.
        from warpweave._dsl.registry.plugins import registry
        registry.load()
    b = Backend(name, manifest.get("version", ""), path, "", manifest)
    b.targets = list(targets)
    return b


def _is_fatal(e: BaseException) -> bool:
    """Whether the CUDA context may be gone (a fault in the kernel), so the worker must not go on."""
    from warpweave import _core
    if isinstance(e, getattr(_core, "CudaError", ())):
        return True
    text = f"{type(e).__name__} {e}"
    return "CUDA error" in text or "AcceleratorError" in text or "cudaError" in text


def _worker(jobs, q, cc):
    try:
        import torch
        if not torch.cuda.is_available():
            q.put(("abort", "torch sees no CUDA device"))
            return
        torch.zeros(1, device="cuda")  # the primary context, current on this thread, before any driver call
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - anything here means no execute tier
        q.put(("abort", f"torch could not start CUDA: {type(e).__name__}: {e}"))
        return
    q.put(("ready",))
    backends = {}
    for idx, spec, entry in jobs:
        t0 = time.perf_counter()
        try:
            if spec[0] not in backends:
                backends[spec[0]] = _backend(spec, any(e.get("lowering_hook") or e.get("host_hook")
                                                       for _, s, e in jobs if s[0] == spec[0]))
            mod = probe_module(entry.get("conformance", ""))
            status, reason = mod.execute(backends[spec[0]], entry, torch)
        except Exception as e:  # noqa: BLE001 - the probe's failure, reported with the instruction
            msg = f"{type(e).__name__}: {e}"
            q.put(("rec", idx, FAIL, msg if len(msg) < 900 else msg[:900] + " ...", time.perf_counter() - t0))
            if _is_fatal(e):
                q.put(("fatal",))
                return
            continue
        q.put(("rec", idx, status, reason, time.perf_counter() - t0))
    q.put(("done",))


def device_label(cc) -> str:
    return f"sm_{cc}" if cc else ""


def _primitives_run_by_kind(src, backend) -> dict:
    """kind -> the primitive ids that its probe module says its kernels run (probes/__init__.py: uses)."""
    out = {}
    for kind in sorted({e.get("conformance", "") for e, _ in src.entries()} - {""}):
        try:
            mod = probe_module(kind)
            out[kind] = set(mod.uses(backend)) if mod is not None and hasattr(mod, "uses") else set()
        except Exception:  # noqa: BLE001 - a broken probe module is reported with its own instructions
            out[kind] = set()
    return out


def plan(sources, cc):
    """(jobs, records decided without running anything)."""
    jobs, records = [], []
    label = device_label(cc)
    for src in sources:
        backend = Backend(src.name, src.manifest.get("version", ""), src.path, "", src.manifest)
        backend.targets = list(src.targets.values())
        spec = (src.name, src.path, src.manifest, src.plugin, list(src.targets.values()))
        runs = None
        for entry, what in src.entries():
            kind = entry.get("conformance", "")
            usable = gpu.usable_targets(backend, entry, cc)
            if not usable:
                records.append(record_for(src, entry, what, "execute", label, SKIP,
                                          f"not usable on {label} (targets: {', '.join(entry.get('targets', []))})"))
                continue
            if not kind:
                if runs is None:
                    runs = _primitives_run_by_kind(src, backend)
                runs_in = sorted(k for k, ids in runs.items() if entry.get("id") in ids)
                records.append(record_for(src, entry, what, "execute", label, SKIP,
                                          "no probe of its own" + (f"; it runs inside the {', '.join(runs_in)} probes"
                                                                   if runs_in else
                                                                   " (the manifest names no conformance kind)")))
                continue
            try:
                mod = probe_module(kind)
            except Exception as e:  # noqa: BLE001 - a broken probe module fails its own instructions only
                records.append(record_for(src, entry, what, "execute", label, FAIL,
                                          f"the probe module for kind {kind} does not import: {type(e).__name__}: {e}"))
                continue
            if mod is None or not hasattr(mod, "execute"):
                records.append(record_for(src, entry, what, "execute", label, SKIP, f"no execute probe for kind {kind}"))
                continue
            if entry.get("lowering_hook") and not src.plugin:
                records.append(record_for(src, entry, what, "execute", label, SKIP,
                                          "lowered by a plugin hook, and only the manifest is given"))
                continue
            jobs.append((src, entry, what, spec))
    return jobs, records


def _skip_all(sources, reason):
    return [record_for(src, entry, what, "execute", "", SKIP, reason) for src in sources for entry, what in src.entries()]


def run(sources, progress=None):
    if importlib.util.find_spec("torch") is None:
        recs = _skip_all(sources, "PyTorch is not installed (the execute tier allocates and launches with it)")
        if progress:
            progress.step(len(recs))
        return recs
    cc = gpu.device_cc()
    if cc is None:
        recs = _skip_all(sources, "no CUDA GPU on this machine")
        if progress:
            progress.step(len(recs))
        return recs
    jobs, records = plan(sources, cc)
    if progress:
        progress.step(len(records))
    label = device_label(cc)
    pending = list(range(len(jobs)))
    ctx = multiprocessing.get_context("spawn")

    def finish(i, status, reason, seconds=0.0):
        src, entry, what, _ = jobs[i]
        records.append(record_for(src, entry, what, "execute", label, status, reason, seconds))
        if i in pending:
            pending.remove(i)
        if progress:
            progress.step()

    while pending:
        q = ctx.Queue()
        proc = ctx.Process(target=_worker, args=([(i, jobs[i][3], jobs[i][1]) for i in pending], q, cc), daemon=True)
        proc.start()
        ready, deadline = False, time.monotonic() + READY_TIMEOUT
        while True:
            try:
                msg = q.get(timeout=1.0)
            except queue.Empty:
                msg = None
            if msg is None:
                if not proc.is_alive() and q.empty():
                    if not ready:
                        for i in list(pending):
                            finish(i, FAIL, f"the execute worker died before starting (exit code {proc.exitcode})")
                    else:
                        finish(pending[0], FAIL, f"the probe killed its worker (exit code {proc.exitcode})")
                    break
                if time.monotonic() > deadline:
                    if not ready:
                        for i in list(pending):
                            finish(i, FAIL, "the execute worker did not start (torch/CUDA initialisation hung)")
                    else:
                        finish(pending[0], FAIL, f"timed out after {PROBE_TIMEOUT:.0f} s (the kernel hangs?)")
                    proc.kill()
                    break
                continue
            if msg[0] == "ready":
                ready, deadline = True, time.monotonic() + PROBE_TIMEOUT
            elif msg[0] == "abort":
                for i in list(pending):
                    finish(i, SKIP, msg[1])
                break
            elif msg[0] == "rec":
                finish(msg[1], msg[2], msg[3], msg[4])
                deadline = time.monotonic() + PROBE_TIMEOUT
            elif msg[0] in ("fatal", "done"):
                break
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
            proc.join()
    return records
