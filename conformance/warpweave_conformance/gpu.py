"""The device side of the execute tier: which target a probe is compiled for, and launching it with torch.

Probes (warpweave_conformance/probes/*.py) build a `Probe` (a kernel, its launch shape, the bytes of its input
buffer and a check of its output buffer) on the host; `run` compiles it for the present device, launches it on
buffers allocated by torch and hands the output bytes to the check. Everything but `run` works without a GPU,
which is how the tests exercise the probes' host side.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

import numpy as np

from warpweave import _core

POISON = 0xFF  # unwritten output bytes read as NaN (floats) or -1 (integers)


@dataclass
class Probe:
    mlir: str
    kernel: str
    grid: int
    block: int
    in_bytes: np.ndarray                 # uint8
    out_size: int                        # bytes
    check: Callable[[np.ndarray], tuple]  # out bytes (uint8) -> (status, reason)
    smem: int = 0                        # dynamic shared memory (probes use static arrays)
    in_rec: object = None                # the record layouts, for tests that stand in for the device
    out_rec: object = None


def device_cc(ordinal: int = 0) -> int | None:
    try:
        if not _core.driver_available() or _core.device_count() <= ordinal:
            return None
        major, minor = _core.device_info(ordinal)["compute_capability"]
        return int(major) * 10 + int(minor)
    except Exception:  # noqa: BLE001 - no usable driver is "no GPU"
        return None


def device_name(ordinal: int = 0) -> str:
    try:
        return str(_core.device_info(ordinal)["name"])
    except Exception:  # noqa: BLE001
        return ""


def usable_targets(backend, entry: dict, cc: int) -> list:
    targets = {t.name: t for t in backend.targets}
    return [targets[n] for n in entry.get("targets", []) if n in targets and targets[n].usable_on(cc)]


def compile_target(backend, entry: dict, cc: int) -> dict | None:
    """The target dict to compile `entry` for a device of compute capability cc: the entry's first target usable
    there. A cubin only runs on its own major generation, so a portable target's PTX (e.g. sm_80 on an sm_90
    device) is assembled for the device itself; an arch-specific target is the device's generation already."""
    usable = usable_targets(backend, entry, cc)
    if not usable:
        return None
    t = usable[0]
    d = t.as_dict()
    if not t.arch_specific:
        d["jit_arch"] = f"sm_{cc}"
    return d


def compile_for_device(mlir: str, backend, entry: dict, cc: int) -> bytes:
    target = compile_target(backend, entry, cc)
    if target is None:
        raise RuntimeError(f"{entry.get('id')} has no target usable on sm_{cc}")
    return bytes(_core.compile(mlir, target)["cubin"])


def launch(torch, cubin: bytes, kernel: str, grid: int, block: int, in_bytes: np.ndarray, out_size: int,
           smem: int = 0, poison: int = POISON) -> np.ndarray:
    """Runs kernel(in, out) once on fresh device buffers; returns the bytes of out."""
    src = np.ascontiguousarray(in_bytes, dtype=np.uint8).reshape(-1)
    if src.size == 0:
        src = np.zeros(16, dtype=np.uint8)
    d_in = torch.from_numpy(src.copy()).to("cuda")
    d_out = torch.full((max(16, int(out_size)),), poison, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    module = _core.Module.load(cubin)
    function = module.function(kernel)
    params = struct.pack("<QQ", d_in.data_ptr(), d_out.data_ptr())
    stream = torch.cuda.current_stream().cuda_stream
    _core.launch(function, [int(grid), 1, 1], [int(block), 1, 1], [], int(smem), int(stream), params, [0, 8])
    torch.cuda.synchronize()
    out = d_out.cpu().numpy()[: int(out_size)].copy()
    del module
    return out


def run(torch, backend, entry: dict, probe: Probe, cc: int | None = None) -> tuple:
    """Compiles, launches and checks a probe; returns (status, reason)."""
    cc = cc if cc is not None else device_cc()
    cubin = compile_for_device(probe.mlir, backend, entry, cc)
    out = launch(torch, cubin, probe.kernel, probe.grid, probe.block, probe.in_bytes, probe.out_size, probe.smem)
    return probe.check(out)
