"""cute.nvgpu: copy and MMA operations. The generic copy lives here; the architecture-specific atoms come from
the backends (warp, warpgroup, cpasync, tcgen05)."""
from ..._dsl.copy import CopyUniversalOp  # noqa: F401
