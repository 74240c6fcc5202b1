"""warpweave.utils: helpers of CuTe DSL's cutlass.utils: shared-memory allocation and operand majorness."""
import enum

from .._dsl.atoms.atoms import backend_python_name as _backend_python_name
from .._dsl.base.errors import DSLTypeError, user_location
from .._dsl.registry.backend_python import public_attribute as _public_attribute
from .._dsl.device.smem import SmemAllocator, SmemPartition  # noqa: F401
from . import gemm, hardware_info, tensor_helpers  # noqa: F401,E402
from .hardware_info import HardwareInfo, get_smem_capacity_in_bytes  # noqa: F401,E402
from .tensor_helpers import create_cute_tensor_for_fp8, is_fp8_dtype  # noqa: F401,E402
from ..viz import print_latex, print_latex_tv  # noqa: F401,E402 (pictures of layouts, warpweave.viz)
from .static_persistent_tile_scheduler import (  # noqa: F401,E402
    PersistentTileSchedulerParams, StaticPersistentRuntimeTileScheduler, StaticPersistentTileScheduler, WorkTileInfo,
)
from .clc_dynamic_persistent_tile_scheduler import (  # noqa: F401,E402
    ClcDynamicPersistentTileScheduler, ClcDynamicPersistentTileSchedulerParams,
)
from .grouped_gemm_tile_scheduler import (  # noqa: F401,E402
    GroupedGemmTileSchedulerHelper, GroupedWorkTileInfo, GroupSearchResult, GroupSearchState,
    StaticPersistentGroupTileScheduler, create_initial_search_state,
)


class LayoutEnum(enum.Enum):
    """Which mode of a matrix (M, N, K or its 2D view) is contiguous: ROW_MAJOR when mode 1 is, COL_MAJOR when
    mode 0 is."""
    ROW_MAJOR = "row_major"
    COL_MAJOR = "col_major"

    @staticmethod
    def from_tensor(tensor) -> "LayoutEnum":
        layout = getattr(tensor, "layout", None)
        if layout is None:  # a host tensor (from_dlpack) before any @cute.jit call: its strides
            stride = tuple(tensor.stride)
        else:
            stride = layout.outer.stride if hasattr(layout, "outer") else layout.stride
        if isinstance(stride, tuple) and len(stride) >= 2:
            if isinstance(stride[1], int) and stride[1] == 1:
                return LayoutEnum.ROW_MAJOR
            if isinstance(stride[0], int) and stride[0] == 1:
                return LayoutEnum.COL_MAJOR
        what = layout if layout is not None else stride
        raise DSLTypeError(f"LayoutEnum.from_tensor: neither mode 0 nor mode 1 of {what} is contiguous "
                           "(stride 1)", user_location(2))

    def is_m_major_a(self) -> bool:
        return self is LayoutEnum.COL_MAJOR

    def is_k_major_a(self) -> bool:
        return self is LayoutEnum.ROW_MAJOR

    def is_n_major_b(self) -> bool:
        return self is LayoutEnum.COL_MAJOR

    def is_k_major_b(self) -> bool:
        return self is LayoutEnum.ROW_MAJOR

    def is_n_major_c(self) -> bool:
        return self is LayoutEnum.ROW_MAJOR

    def is_m_major_c(self) -> bool:
        return self is LayoutEnum.COL_MAJOR


__all__ = ["LayoutEnum", "SmemAllocator", "SmemPartition", "HardwareInfo", "get_smem_capacity_in_bytes", "hardware_info",
           "tensor_helpers", "create_cute_tensor_for_fp8", "is_fp8_dtype", "PersistentTileSchedulerParams",
           "StaticPersistentTileScheduler", "StaticPersistentRuntimeTileScheduler", "WorkTileInfo",
           "ClcDynamicPersistentTileScheduler", "ClcDynamicPersistentTileSchedulerParams",
           "GroupedGemmTileSchedulerHelper", "GroupedWorkTileInfo", "GroupSearchResult", "GroupSearchState",
           "StaticPersistentGroupTileScheduler", "create_initial_search_state"]


def __getattr__(name):
    """Helper modules that loaded backends ship (e.g. hopper_helpers), by their manifests' module maps."""
    if not name.startswith("__"):
        own = _backend_python_name(f"utils.{name}")   # a class or function a backend's package defines (TmemAllocator)
        if own is not None:
            return own
    module = _public_attribute(__name__, name)
    if module is None:
        raise AttributeError(f"warpweave.utils has no {name}, and no loaded backend ships warpweave.utils.{name}")
    return module
