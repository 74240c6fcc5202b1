"""What the GPU and the targets offer: HardwareInfo (the current device, through the CUDA driver) and
get_smem_capacity_in_bytes (a target's shared memory per block, from the loaded backends' manifests: each
target's smem_capacity_bytes)."""
from __future__ import annotations

from .._dsl.base.errors import DSLRuntimeError, DSLValueError, user_location


def _capability_of(name: str) -> int:
    digits = name[3:].rstrip("af") if name.startswith("sm_") else ""
    if not digits.isdigit():
        raise DSLValueError(f"get_smem_capacity_in_bytes: a target name such as 'sm_80' or 'sm_90a', got {name!r}",
                            user_location(3))
    return int(digits)


def smem_capacity_of_capability(cc: int) -> int | None:
    """The shared memory per block of devices of compute capability cc (e.g. 90), as the manifests say."""
    from .._dsl.registry.plugins import registry

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


class HardwareInfo:
    """The properties of a CUDA device that kernels are sized by (the current device by default)."""

    def __init__(self, device_id: int | None = None):
        from .. import _core
        from .._dsl.registry import compile_only

        have_gpu = _core.driver_available() and _core.device_count() > 0
        if not have_gpu and compile_only.current() is not None:
            # A compile-only run without a GPU: a stand-in device of the target (see _dsl/registry/compile_only.py).
            self.device_id = 0 if device_id is None else int(device_id)
            self._info = compile_only.stand_in_device()
            return
        if not _core.driver_available():
            raise DSLRuntimeError(f"HardwareInfo needs a CUDA device ({_core.driver_unavailable_reason()})",
                                  user_location(2))
        if _core.device_count() == 0:
            raise DSLRuntimeError("HardwareInfo needs a CUDA device: none is present", user_location(2))
        self.device_id = _core.current_device() if device_id is None else int(device_id)
        self._info = _core.device_info(self.device_id)

    def get_device_multiprocessor_count(self) -> int:
        return int(self._info["multiprocessor_count"])

    def get_l2_cache_size_in_bytes(self) -> int:
        return int(self._info["l2_cache_size"])

    def get_smem_capacity_in_bytes(self) -> int:
        return int(self._info["max_shared_memory_per_block_optin"])

    def get_compute_capability(self) -> tuple[int, int]:
        return tuple(self._info["compute_capability"])

    def get_max_active_clusters(self, cluster_size: int) -> int:
        """An upper bound of the clusters of cluster_size CTAs resident at once: one CTA per multiprocessor
        (the driver's cluster occupancy query, which depends on the kernel, is not used); refused where the
        device has no cluster launch."""
        if cluster_size < 1:
            raise DSLValueError(f"get_max_active_clusters: cluster_size must be positive, got {cluster_size}",
                                user_location(2))
        if cluster_size > 1 and not self._info.get("cluster_launch"):
            raise DSLRuntimeError("this device does not launch clusters", user_location(2))
        return self.get_device_multiprocessor_count() // cluster_size
