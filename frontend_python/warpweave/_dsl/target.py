"""Which GPU target code is generated for: WARPWEAVE_ARCH, else the current device's compute capability."""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import _core
from .errors import DSLRuntimeError


@dataclass(frozen=True)
class Target:
    name: str           # "sm_90a"
    llvm_cpu: str
    ptx_features: str
    jit_arch: str
    compute_capability: tuple

    def as_dict(self) -> dict:
        return {"name": self.name, "llvm_cpu": self.llvm_cpu, "ptx_features": self.ptx_features,
                "jit_arch": self.jit_arch}


# The architecture-specific variants (a) unlock the instructions of their generation (wgmma, tcgen05).
_FOR_CC = {(9, 0): "sm_90a", (10, 0): "sm_100a", (10, 3): "sm_103a", (12, 0): "sm_120a"}


def target_named(name: str) -> Target:
    name = name.strip()
    digits = "".join(c for c in name[3:] if c.isdigit())
    if not name.startswith("sm_") or not digits:
        raise DSLRuntimeError(f"unknown target {name!r}: expected sm_<N>[a|f], e.g. sm_80, sm_90a, sm_100a")
    cc = (int(digits[:-1]), int(digits[-1]))
    ptx = "+ptx88" if cc >= (10, 0) else "+ptx86"
    return Target(name, name, ptx, name, cc)


def target_for_capability(major: int, minor: int) -> Target:
    return target_named(_FOR_CC.get((major, minor), f"sm_{major}{minor}"))


_chosen: dict = {}


def select_target() -> Target:
    """WARPWEAVE_ARCH if set (compiling without a GPU), else the current device."""
    env = os.environ.get("WARPWEAVE_ARCH", "")
    if env:
        t = _chosen.get(env)
        if t is None:
            t = _chosen[env] = target_named(env)
        return t
    if not _core.driver_available():
        raise DSLRuntimeError("no CUDA driver: set WARPWEAVE_ARCH (e.g. sm_90a) to compile without a GPU "
                              f"({_core.driver_unavailable_reason()})")
    dev = _core.current_device() if _core.device_count() > 0 else -1
    if dev < 0:
        raise DSLRuntimeError("no CUDA device: set WARPWEAVE_ARCH (e.g. sm_90a) to compile without a GPU")
    t = _chosen.get(dev)
    if t is None:
        info = _core.device_info(dev)
        t = _chosen[dev] = target_for_capability(*info["compute_capability"])
    return t
