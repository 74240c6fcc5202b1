"""Compile tier (CPU): every instruction inside a generated probe kernel, through warpweave's compiler for each
of its targets; ptxas (nvJitLink) must accept it and the kernel's SASS must hold every expected opcode.

A compile costs tens of milliseconds of fixed overhead (the in-process pipeline, nvJitLink, one nvdisasm run),
so probes are batched: up to BATCH kernels per module and target (nvdisasm alone takes
0.3 s to start, which only large batches amortise), and the SASS listing is split back per kernel
by function name. Batches run on at most two worker processes. A batch that does not compile is bisected, so
that a failure is charged to the instruction that caused it.
"""
from __future__ import annotations

import importlib
import math
import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor

from .kernels import ProbeKernel, Record as Rec, default_attrs, held_type, is_result, value_type, values_of
from .records import FAIL, PASS, SKIP, record_for

BATCH = 128
LAUNCH_BOUNDS = "nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32"
MAX_WORKERS = 2


class Skip(Exception):
    pass


def probe_module(kind: str):
    """The probe of a conformance kind: a backend's own (its manifest's python_package.conformance_probes), else
    probes/<kind>.py; None when neither has one."""
    if not kind:
        return None
    from warpweave._dsl.registry.backend_python import ensure_loaded

    packages = ensure_loaded()
    for backend in list(packages.mounted):
        own = packages.probe_modules(backend).get(kind)
        if own:
            return importlib.import_module(own)
    mod = re.sub(r"[^0-9A-Za-z_]", "_", kind)
    try:
        return importlib.import_module(f"{__package__}.probes.{mod}")
    except ModuleNotFoundError as e:
        if e.name and e.name.endswith(f"probes.{mod}"):
            return None
        raise


def build_probe(b, kname: str, backend: str, entry: dict, plugin: bool) -> None:
    """Emits the compile probe of `entry` as kernel `kname` into builder b (a fresh builder per kernel).

    Generic by operand roles: register and scalar operands are loaded from `in`, shared-memory addresses point
    into a shared array, global addresses into the buffers, results are stored to `out`. A probe module may
    replace this with its own build_compile_probe(b, kname, backend, entry) where an instruction needs context
    (e.g. a prologue another instruction must run first)."""
    if entry.get("lowering_hook") and not plugin:
        raise Skip(f"lowered by the hook {entry['lowering_hook']!r}, which needs the plugin library (only its "
                   "manifest is given)")
    attrs, problem = default_attrs(entry)
    if problem:
        raise Skip(problem)
    mod = probe_module(entry.get("conformance", ""))
    custom = getattr(mod, "build_compile_probe", None) if mod else None
    if custom is not None:
        custom(b, kname, backend, entry)
        return
    # Compile probes are kept small, since ptxas time grows with the code and a wgmma or tcgen05 atom has up
    # to 128 values per operand: one loaded seed per value type stands for every value of that type (unknown to
    # the compiler, so nothing folds), and the results of one type leave as a single vector store.
    ops = entry.get("operands", [])
    in_rec, out_rec = Rec(), Rec()
    seeds = {}
    for op in ops:
        if is_result(op):
            continue
        if op["role"] in ("SMEM_ADDRESS", "MBARRIER"):
            in_rec.add(op["name"] + "@off", "i32", values_of(op))
        elif op["role"] == "GMEM_ADDRESS":
            in_rec.add(op["name"] + "@off", "i64", values_of(op))
        else:
            t = held_type(value_type(op))
            if t not in seeds:
                seeds[t] = in_rec.add(f"seed:{t}", t, 1).name
    result_types = {}
    for op in ops:
        if is_result(op):
            result_types.setdefault(value_type(op), 0)
            result_types[value_type(op)] += values_of(op)
    for t, n in result_types.items():
        out_rec.add(f"out:{t}", held_type(t), n)
    roles = {op["role"] for op in ops}
    smem = 4096 if roles & {"SMEM_ADDRESS", "MBARRIER"} else 0
    # Launch bounds of a warp-specialized kernel (3 warpgroups, 1 CTA per SM): ptxas drops setmaxnreg unless it
    # can tell the register count at entry, and the bounds change nothing for the other instructions.
    k = ProbeKernel(b, kname, 32, in_rec, out_rec, smem_bytes=smem, smem_align=1024,
                    data_bytes=256 if "GMEM_ADDRESS" in roles else 0, attributes=LAUNCH_BOUNDS)
    seed_values = {t: k.read(name)[0] for t, name in seeds.items()}
    overrides = {}
    for op in ops:
        if is_result(op) or op["role"] in ("SMEM_ADDRESS", "MBARRIER", "GMEM_ADDRESS"):
            continue
        t = value_type(op)
        v = seed_values[held_type(t)]
        if held_type(t) != t:
            v = b.op1("arith.trunci", [v], t)
        overrides[op["name"]] = [v] * values_of(op)
    res = k.emit(backend, entry, attrs, overrides)
    grouped = {}
    for op in ops:
        if is_result(op):
            vals = res[op["name"]]
            if held_type(value_type(op)) != value_type(op):
                vals = [b.op1("arith.extui", [v], "i8") for v in vals]
            grouped.setdefault(value_type(op), []).extend(vals)
    for t, vals in grouped.items():
        f = out_rec.fields[f"out:{t}"]
        et = held_type(t)
        if len(vals) == 1:
            k.write(f.name, vals)
        else:
            vec = b.op1("vector.from_elements", vals, f"vector<{len(vals)}x{et}>")
            k.store(vec, k.gep(k._out, f.offset), align=f.elem_bytes)
    k.end()


def _module_body(text: str, tag: int = 0) -> tuple | None:
    """(module attributes, body, aliases) of the IR builder's module text; the attributes (e.g. a request for ptxas)
    go onto the batch module that holds the body. The builder names long types and locations in aliases (type
    aliases before the module, location aliases after it); each probe's are renamed apart by `tag`, so that the
    bodies of several probes share one module."""
    m = re.match(r"(.*?)module (?:attributes \{(.*?)\} )?\{(.*)\}\s*\n((?:#loc\d+ = .*\n?)*)$", text.strip() + "\n",
                 re.S)
    if m is None or m.group(1).strip() and not m.group(1).lstrip().startswith("!ww_t"):
        return None
    rename = lambda t: re.sub(r"(!ww_t|#loc)(\d+)\b", rf"\g<1>{tag}_\2", t)  # noqa: E731
    return ({m.group(2)} if m.group(2) else set()), rename(m.group(3).strip("\n")), \
        (rename(m.group(1).strip()), rename(m.group(4).strip()))


def split_sass(sass: str) -> dict:
    """nvdisasm (".text.<name>" sections) or cuobjdump ("Function : <name>") listing -> {kernel: text}."""
    out, name, buf = {}, None, []
    head = re.compile(r"^\s*(?:\.section\s+\.text\.([A-Za-z0-9_$.]+)\b|Function\s*:\s*([A-Za-z0-9_$.]+))")
    for line in sass.splitlines():
        m = head.match(line)
        if m:
            if name is not None:
                out[name] = out.get(name, "") + "\n".join(buf)
            name, buf = m.group(1) or m.group(2), []
            continue
        if name is not None:
            buf.append(line)
    if name is not None:
        out[name] = out.get(name, "") + "\n".join(buf)
    return out


def _opcodes(text: str) -> list[str]:
    ops = []
    for line in text.splitlines():
        m = re.search(r"\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if m and m.group(1) not in ops:
            ops.append(m.group(1))
    return ops


def _error_text(e: Exception, limit: int = 700) -> str:
    msg = str(e)
    log = getattr(e, "log", "") or ""
    if log and log.strip() not in msg:
        msg += "\n" + log.strip()
    stage = getattr(e, "stage", "")
    if stage:
        msg = f"[{stage}] {msg}"
    msg = msg.strip()
    return msg if len(msg) <= limit else msg[:limit] + " ..."


_loaded = False


def _ensure_plugins():
    global _loaded
    if not _loaded:
        from warpweave._dsl.registry.plugins import registry
        registry.load()
        _loaded = True


def compile_batch(task):
    """Worker: task = (target dict, [(job index, kernel name, backend, entry, plugin loaded)]).
    Returns [(job index, status, reason, seconds)]."""
    from warpweave import _core

    target, jobs = task[0], task[1]
    if len(task) > 2:  # the element types of the manifests under test, as the parent process read them
        from warpweave._dsl.registry.element_types import ELEMENT_TYPES

        ELEMENT_TYPES.add_table(task[2])
    # Only hooks need the plugin libraries in this process; loading them re-validates every manifest.
    if any(j[4] and j[3].get("lowering_hook") for j in jobs):
        _ensure_plugins()
    results, bodies = [], []
    for idx, kname, backend, entry, plugin in jobs:
        b = _core.IRBuilder()
        try:
            build_probe(b, kname, backend, entry, plugin)
            body = _module_body(str(b), idx)
            if body is None:
                raise RuntimeError("unexpected module text from the IR builder")
            bodies.append((idx, kname, entry, body))
        except Skip as e:
            results.append((idx, SKIP, str(e), 0.0))
        except Exception as e:  # noqa: BLE001 - reported as this instruction's failure
            results.append((idx, FAIL, f"the probe kernel could not be built: {type(e).__name__}: {e}", 0.0))
    if not bodies:
        return results

    def compile_text(parts):
        attrs = sorted(set().union(*(p[3][0] for p in parts)))
        head = f"module attributes {{{', '.join(attrs)}}} {{" if attrs else "module {"
        types = " ".join(p[3][2][0] for p in parts if p[3][2][0])
        locs = "\n".join(p[3][2][1] for p in parts if p[3][2][1])
        text = (types + " " if types else "") + head + "\n" + "\n".join(p[3][1] for p in parts) + "\n}\n" + locs + "\n"
        return _core.compile(text, target)

    def sass_of(cubin):
        if not _core.sass_tool_available():
            return None
        return split_sass(_core.disassemble_sass(cubin))

    def judge(parts, res, seconds):
        try:
            sections = sass_of(res["cubin"])
        except Exception as e:  # noqa: BLE001
            for idx, _, _, _ in parts:
                results.append((idx, FAIL, f"ptxas accepted it, but the SASS listing failed: {e}", seconds))
            return
        for idx, kname, entry, _ in parts:
            want = entry.get("sass_opcodes", [])
            if sections is None:
                results.append((idx, PASS, "ptxas accepted it; SASS not checked (no nvdisasm or cuobjdump)", seconds))
                continue
            text = sections.get(kname)
            if text is None:
                results.append((idx, FAIL, f"ptxas accepted it, but the SASS has no function {kname}", seconds))
                continue
            missing = [op for op in want if op not in text]
            if missing:
                results.append((idx, FAIL, f"the SASS lacks {', '.join(missing)}; it has {' '.join(_opcodes(text))}",
                                seconds))
            elif want:
                results.append((idx, PASS, f"ptxas accepted it; SASS has {', '.join(want)}", seconds))
            else:
                results.append((idx, PASS, "ptxas accepted it; the manifest names no SASS opcode", seconds))

    def compile_parts(parts):
        # A module that does not compile is split in halves until the failing kernels stand alone: a few extra
        # compiles per failure instead of one per kernel (each SASS listing costs a 0.3 s nvdisasm start).
        t1 = time.perf_counter()
        try:
            res = compile_text(parts)
        except Exception as e:  # noqa: BLE001
            if len(parts) == 1:
                results.append((parts[0][0], FAIL, _error_text(e), time.perf_counter() - t1))
                return
            half = len(parts) // 2
            compile_parts(parts[:half])
            compile_parts(parts[half:])
            return
        judge(parts, res, (time.perf_counter() - t1) / len(parts))

    compile_parts(bodies)
    return results


def _init_worker():
    import warpweave  # noqa: F401 - the core's tool search paths are set on import


def plan(sources, targets_filter=None):
    """(jobs, records of instructions that need no compile): a job per (instruction, target)."""
    jobs, early = [], []
    for src in sources:
        for entry, what in src.entries():
            names = entry.get("targets", [])
            if not names:
                early.append(record_for(src, entry, what, "compile", "", FAIL, "the instruction names no target"))
            for tname in names:
                if targets_filter and tname not in targets_filter:
                    continue
                t = src.targets.get(tname)
                if t is None:
                    early.append(record_for(src, entry, what, "compile", tname, FAIL,
                                            f"the target {tname} is not in the manifest"))
                    continue
                jobs.append((src, entry, what, tname, t.as_dict()))
    return jobs, early


def run(sources, progress=None, workers: int | None = None, targets_filter=None):
    """Returns (records, wall seconds)."""
    t0 = time.perf_counter()
    jobs, records = plan(sources, targets_filter)

    def needs_plugin(i):
        return jobs[i][0].plugin and bool(jobs[i][1].get("lowering_hook"))

    # Instructions lowered by a plugin hook are compiled here, where the plugins are loaded already: a worker
    # would have to load (and validate) every plugin again, which takes seconds for the largest manifests.
    by_target = {}
    for i, (src, entry, what, tname, tdict) in enumerate(jobs):
        by_target.setdefault((tname, needs_plugin(i)), (tdict, []))[1].append(i)
    tasks, local = [], []
    from warpweave._dsl.registry.element_types import ELEMENT_TYPES

    element_table = dict(ELEMENT_TYPES.table())
    for (tname, here), (tdict, idxs) in sorted(by_target.items()):
        size = min(BATCH, max(8, math.ceil(len(idxs) / 2)))
        for s in range(0, len(idxs), size):
            chunk = [(i, f"ww_probe_{i}", jobs[i][0].name, jobs[i][1], jobs[i][0].plugin) for i in idxs[s:s + size]]
            (local if here else tasks).append((tdict, chunk, element_table))
    if workers is None:
        workers = min(MAX_WORKERS, os.cpu_count() or 1)
    workers = max(1, min(workers, MAX_WORKERS, len(tasks)))
    results = []

    def collect(batch):
        results.extend(batch)
        if progress:
            progress.step(len(batch))

    if workers <= 1:
        for task in local + tasks:
            collect(compile_batch(task))
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker) as pool:
            futures = [pool.submit(compile_batch, task) for task in tasks]
            for task in local:
                collect(compile_batch(task))
            for f in futures:
                collect(f.result())
    for idx, status, reason, seconds in sorted(results, key=lambda r: r[0]):
        src, entry, what, tname, _ = jobs[idx]
        records.append(record_for(src, entry, what, "compile", tname, status, reason, seconds))
    return records, time.perf_counter() - t0
