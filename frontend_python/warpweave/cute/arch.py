"""cute.arch: thread and block indices, barriers, printf, and the backends' primitives (cp.async groups,
mbarriers, fences, warp shuffles, ...): a name the loaded backends publish as "arch.<name>" is found here."""
from .._dsl.arch import (barrier, block_dim, block_idx, cp_async_commit_group, cp_async_wait_all,  # noqa: F401
                         cp_async_wait_group, grid_dim, lane_idx, sync_threads, thread_idx, warp_idx)


def __getattr__(name):
    from .._dsl.atoms import primitive

    f = primitive("arch." + name) if not name.startswith("__") else None
    if f is None:
        raise AttributeError(f"cute.arch has no {name}, and no loaded backend offers arch.{name}")
    globals()[name] = f
    return f
