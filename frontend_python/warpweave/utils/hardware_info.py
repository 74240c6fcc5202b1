"""What the GPU and the targets offer: HardwareInfo (the current device, through the CUDA driver) and
get_smem_capacity_in_bytes (a target's shared memory per block, from the loaded backends' manifests: each
target's smem_capacity_bytes)."""
from __future__ import annotations

from .._dsl.base.errors import DSLValueError, user_location
from .._dsl.registry.device_properties import HardwareInfo
from .._dsl.registry.plugins import registry


def _capability_of(name: str) -> int:
    digits = name[3:].rstrip("af") if name.startswith("sm_") else ""
    if not digits.isdigit():
        raise DSLValueError(f"get_smem_capacity_in_bytes: a target name such as 'sm_80' or 'sm_90a', got {name!r}",
                            user_location(3))
    return int(digits)


def smem_capacity_of_capability(cc: int) -> int | None:
    """The shared memory per block of devices of compute capability cc (e.g. 90), as the manifests say."""
    registry.load()
    best = None
    for b in registry.backends.values():
        for t in b.manifest.get("targets", []):
            own = int(t.get("compute_capability", 0))
            cap = int(t.get("smem_capacity_bytes", 0) or 0)
            if own == cc and cap:
                return cap
            served = [int(x) for x in t.get("also_serves", [])]
            if cc in served:
                caps = [int(x) for x in t.get("also_serves_smem_capacity_bytes", [])]
                i = served.index(cc)
                best = caps[i] if i < len(caps) else (cap or best)
    return best


def get_smem_capacity_in_bytes(compute_capability: str | None = None) -> int:
    """Shared memory one block may use, in bytes, for a target ("sm_80", "sm_90", "sm_90a", ...; default: the
    current device's)."""
    if compute_capability is None:
        return HardwareInfo().get_smem_capacity_in_bytes()
    cc = _capability_of(compute_capability)
    cap = smem_capacity_of_capability(cc)
    if cap is None:
        raise DSLValueError(f"get_smem_capacity_in_bytes: no loaded backend describes the shared memory of "
                            f"{compute_capability} (check `python -m warpweave plugins`)", user_location(2))
    return cap

