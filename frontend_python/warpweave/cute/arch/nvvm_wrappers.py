"""`cute.arch.nvvm_wrappers`: the module CuTe DSL keeps its warp-level wrappers in, which programs import from by
that name (`from cutlass.cute.arch.nvvm_wrappers import FULL_MASK, WARP_SIZE`). Its names are cute.arch's, the
backends' primitives included."""
from . import __getattr__ as _arch_attribute
from . import (  # noqa: F401
    FULL_MASK, WARP_SIZE, lane_idx, make_warp_uniform, popc, shuffle_sync, shuffle_sync_bfly, shuffle_sync_down,
    shuffle_sync_up, sync_warp, vote_all_sync, vote_any_sync, vote_ballot_sync, vote_uni_sync, warp_idx,
    warp_reduction, warp_reduction_max, warp_reduction_min, warp_reduction_sum, warp_redux_sync,
)


def __getattr__(name):
    return _arch_attribute(name)
