"""Which GPU target code is generated for: WARPWEAVE_ARCH, else the current device's compute capability, mapped
to a target of the loaded backends (their manifests carry the per-architecture knowledge)."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ... import _core
from ..base.errors import DSLRuntimeError
from .plugins import registry


@dataclass(frozen=True)
class Target:
    name: str           # "sm_90a"
    llvm_cpu: str
    ptx_features: str
    jit_arch: str
    compute_capability: int   # e.g. 90
    backend: str

    def as_dict(self) -> dict:
        return {"name": self.name, "llvm_cpu": self.llvm_cpu, "ptx_features": self.ptx_features,
                "jit_arch": self.jit_arch}

    def usable_backends(self):
        """The backends whose atoms run on this target's devices (the primary one first)."""
        bs = registry.usable_backends(self.compute_capability)
        return sorted(bs, key=lambda b: b.name != self.backend)


def plugins_digest(target: Target | None = None) -> str:
    """Digest of the backend plugins whose atoms a module may use (part of every JIT cache key): with a target,
    those usable on it, else every loaded one."""
    return registry.digest(getattr(target, "compute_capability", None))


def _from_info(t) -> Target:
    return Target(t.name, t.llvm_cpu or t.name, t.ptx_features, t.jit_arch or t.name, t.compute_capability, t.backend)


def target_named(name: str) -> Target:
    t = registry.target_named(name.strip())
    if t is None:
        known = ", ".join(sorted(x.name for x in registry.targets())) or "none: no backend plugin is loaded"
        raise DSLRuntimeError(f"no loaded backend offers the target {name!r} (known: {known})")
    return _from_info(t)


def target_for_capability(major: int, minor: int) -> Target:
    cc = major * 10 + minor
    t = registry.primary_target(cc)
    if t is None:
        raise DSLRuntimeError(f"no loaded backend serves compute capability {major}.{minor}")
    return _from_info(t)


_chosen: dict = {}


def arch_from_environment() -> str:
    """The target the environment names, '' for none: WARPWEAVE_ARCH, else CUTE_DSL_ARCH, the variable CuTe DSL
    programs set to compile without a GPU (their scripts and build jobs keep working unchanged)."""
    return (os.environ.get("WARPWEAVE_ARCH", "").strip() or os.environ.get("CUTE_DSL_ARCH", "").strip())


def select_target() -> Target:
    """The target the environment names (arch_from_environment: compiling without a GPU), else the current
    device's primary backend's target."""
    env = arch_from_environment()
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
