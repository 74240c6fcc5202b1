"""cute.arch: thread and block indices, barriers."""
from .._dsl.arch import (barrier, block_dim, block_idx, grid_dim, lane_idx, sync_threads, thread_idx,  # noqa: F401
                         warp_idx)
