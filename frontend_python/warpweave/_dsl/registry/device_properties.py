"""HardwareInfo: the properties of a CUDA device that kernels are sized and benchmarks rotate their workspaces by,
read through the CUDA driver (or, in a compile-only run without a GPU, the target's stand-in device)."""
from __future__ import annotations

from ... import _core
from ..base.errors import DSLRuntimeError, DSLValueError, user_location
from . import compile_only


class HardwareInfo:
    """The properties of a CUDA device that kernels are sized by (the current device by default)."""

    def __init__(self, device_id: int | None = None):
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
