"""Execute-tier probes, one module per conformance kind (the manifest's `conformance` field).

A module `probes/<kind>.py` exposes

    execute(backend, entry, torch) -> (status, reason)

where `backend` is the backend (warpweave._dsl.registry.plugins.Backend: name, targets, manifest), `entry` the manifest
entry (protobuf JSON mapping), `torch` the imported torch module, and status one of "pass", "fail", "skip". It
is called only on a GPU that can use one of the entry's targets, in a worker process of its own (a kernel that
faults or hangs costs that worker, not the suite). A kind without a module is reported as skipped.

A module may also expose build_compile_probe(b, kernel_name, backend_name, entry) to replace the compile tier's
generic probe kernel for its kind, and uses(backend) -> set of the backend's primitive ids its kernels run (a
primitive with no probe of its own is then reported as run inside those probes).

The built-in probes split their work in `prepare(...) -> gpu.Probe` (host side: kernel, inputs, reference
check; runs anywhere) and `gpu.run` (device side), so the tests exercise everything but the launch on machines
without a GPU. Helpers shared by the probes follow.
"""
from __future__ import annotations

import numpy as np

from warpweave import cute

from ..records import FAIL, PASS, SKIP  # noqa: F401 - re-exported for probe modules


def layout_table(text: str, threads: int) -> np.ndarray:
    """(thread, value) -> position table of a thread-value layout: shape (threads, size / threads)."""
    l = cute.parse_layout(text)
    size = int(cute.size(l))
    if size % threads:
        raise ValueError(f"layout {text} has size {size}, not a multiple of {threads} threads")
    vals = size // threads
    flat = np.array([l(i) for i in range(size)], dtype=np.int64)
    return flat.reshape(vals, threads).T.copy()


def thread_ids(entry: dict, default: int = 32) -> np.ndarray:
    """Physical thread index of each logical thread of the atom (its thr_id layout)."""
    text = entry.get("thr_id") or f"{default}:1"
    l = cute.parse_layout(text)
    return np.array([l(i) for i in range(int(cute.size(l)))], dtype=np.int64)


def block_for(threads: np.ndarray) -> int:
    return int(-(-(int(threads.max()) + 1) // 32) * 32)


def parse_shape(text: str) -> tuple:
    s = text.strip().strip("()")
    return tuple(int(x) for x in s.split(","))


def kernel_name(entry: dict) -> str:
    import re
    return "ww_exec_" + re.sub(r"[^0-9A-Za-z_]", "_", entry.get("id", "probe"))


def execute_probe(prepare, backend, entry: dict, torch, **kw) -> tuple:
    """The common execute(): prepare on the host, run on the device, check."""
    from .. import gpu

    p = prepare(backend, entry, **kw)
    if isinstance(p, tuple):
        return p
    return gpu.run(torch, backend, entry, p)
