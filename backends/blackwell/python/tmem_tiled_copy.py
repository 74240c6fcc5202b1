"""Tiled copies between tensor memory and registers (make_tmem_copy's result) and one thread's slice of them."""
from __future__ import annotations

import warpweave.cute as cute


class TmemTiledCopy(cute.TiledCopy):
    """A tiled copy between a tensor-memory tile and registers (make_tmem_copy). Its tiler holds, for each of the
    tile's modes (as one index over the mode's size), the coordinates one instruction per warp reaches, so that
    tiles of the same sizes partition alike however their modes are grouped (the accumulator's rows of layout F
    are (16, 4), those of a tile of C in global memory 64)."""

    def get_slice(self, thr_idx, *, loc=None, ip=None):
        return TmemThrCopy(self, thr_idx)

    get_thread_slice = get_slice


class TmemThrCopy(cute.ThrCopy):
    """One thread's view of a tensor-memory tiled copy. Its partition of a tensor-memory tile takes the thread's
    warp from a warp-uniform value (lane 0's, broadcast) and its lane from the thread index: the same index, but
    the copy's address (the partition's offset less the lane's, see __ww_copy__) then comes out as that uniform
    warp times the warp's lane stride, which ptxas keeps in a uniform register as tcgen05.ld/st want it.
    Computed from the thread index alone, the lane's part cancels into (index << 16) & mask, which ptxas does not
    see as warp-uniform: the address then holds a vector register across the epilogue's loop (2-3 registers
    above CuTe DSL's in the Blackwell GEMM tutorials). The lane's parts cancel in the compiler's folding where
    the offset is a sum (the tutorials' sub-tile loops); where it folds them into a bitwise or first (a single
    straight-line copy), the address still holds the lane's part, as before."""

    def _partition(self, tensor, frg_fn):
        idx = self.thr_idx
        if getattr(tensor, "memspace", None) != "tmem" or isinstance(idx, int) or getattr(idx, "is_static", False):
            return super()._partition(tensor, frg_fn)
        warp = cute.arch.make_warp_uniform(idx // 32)
        self.thr_idx = warp * 32 + idx % 32
        try:
            return super()._partition(tensor, frg_fn)
        finally:
            self.thr_idx = idx
