"""warpweave.utils.blackwell_helpers, sm_120 names: the choices of a warp-level block-scaled GEMM (mma.sync with
scale factors). The module's other names are datacenter Blackwell's (this backend extends it).

    perm = sm120_utils.get_permutation_mnk(tile_shape_mnk, sf_vec_size, use_mxf8f6f4)
    tiled_mma = cute.make_tiled_mma(op, cute.make_layout((4, 2, 1)), permutation_mnk=perm)
    tCrSFA = sm120_utils.partition_fragment_SFA(sSFA[None, None, 0], thr_mma, tidx)
    copy_SFA = cute.make_tiled_copy(atom, sm120_utils.get_layoutSFA_TV(tiled_mma), (perm[0], perm[2]))

Scale factors are partitioned like A and B, with the instruction's own thread-value layouts of its factors in place
of A's and B's (over the same (M, K) and (N, K) atom tiles, column-major): in each quad of lanes (groupID g = lane / 4)
the even lane holds the factors of row g of A and the odd lane those of row g + 8 (lanes 2-3 repeat lanes 0-1, which
thread_id_a = 0 reads), and every lane holds the factors of column g of B; each value of K is a value of the layout,
so a factor appears once per vec values (stride 0 in the scale-factor layouts).
"""
from __future__ import annotations

import copy

import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.blackwell import helpers as _base
from warpweave.utils import LayoutEnum

# Threads -> rows of a 16-row A atom (lane % 2 -> +8, lane / 4 -> +1; lane / 2 % 2 repeats); values -> K (stride 16).
_SFA_THREADS = ((2, 2, 8), (8, 0, 1))
# Threads -> columns of an 8-column B atom (lane / 4 -> +1; lane % 4 repeats); values -> K (stride 8).
_SFB_THREADS = ((4, 8), (0, 1))
_PERM_N = ((8, 2, 2), (1, 16, 8))   # two n8 atoms of a warp, interleaved with the other warp column's by 16


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_base, name)


def get_permutation_mnk(tile_shape_mnk, sf_vec_size: int, use_mxf8f6f4: bool, *, loc=None, ip=None):
    """The permutation of a (4, 2, 1) layout of warp-level block-scaled atoms: M as the tile's (at most 128: four
    warps of two m16 atoms), N 32 (each warp's two n8 atoms interleaved with the other warp's, so that a warp's
    columns pair up for stmatrix), K one instruction (32 for mxf8f6f4, 64 for the e2m1 kinds)."""
    tile = tuple(tile_shape_mnk) if isinstance(tile_shape_mnk, (tuple, list)) else None
    if tile is None or len(tile) != 3 or not isinstance(tile[0], int):
        raise ext.user_error(f"get_permutation_mnk: tile_shape_mnk is a static (M, N, K), got {tile_shape_mnk!r}")
    return (min(tile[0], 128), cute.make_layout(_PERM_N[0], stride=_PERM_N[1]), 32 if use_mxf8f6f4 else 64)


def _sf_tiled_mma(tiled_mma, which):
    """tiled_mma with its atom's A (or B) thread-value layout replaced by that of the scale factors."""
    atom = copy.copy(tiled_mma.atom)
    k = atom.shape_mnk[2]
    if which == "A":
        (shape, stride), rows = _SFA_THREADS, atom.shape_mnk[0]
        atom.layout_a_tv = cute.make_layout((shape, k), stride=(stride, rows))
    else:
        (shape, stride), cols = _SFB_THREADS, atom.shape_mnk[1]
        atom.layout_b_tv = cute.make_layout((shape, k), stride=(stride, cols))
    out = copy.copy(tiled_mma)
    out.atom = atom
    return out


def _tiled(x, where):
    tiled = getattr(x, "tiled", x)
    if not hasattr(tiled, "thrfrg_A") or getattr(tiled.atom, "shape_mnk", (0, 0, 0))[2] not in (32, 64):
        raise ext.user_error(f"{where}: expected a tiled MMA of a warp-level block-scaled operation, got {x!r}")
    return tiled


def get_layoutSFA_TV(tiled_mma, *, loc=None, ip=None):
    """(thread index, value) -> the (M, K) tile's column-major index of each thread's A scale factors."""
    return _sf_tiled_mma(_tiled(tiled_mma, "get_layoutSFA_TV"), "A").get_layoutA_TV()


def get_layoutSFB_TV(tiled_mma, *, loc=None, ip=None):
    """(thread index, value) -> the (N, K) tile's column-major index of each thread's B scale factors."""
    return _sf_tiled_mma(_tiled(tiled_mma, "get_layoutSFB_TV"), "B").get_layoutB_TV()


def _fragment(which, sf_tensor, thr_mma, tidx):
    tiled = _sf_tiled_mma(_tiled(thr_mma, f"partition_fragment_SF{which}"), which)
    thr = tiled.get_slice(tidx)
    part = thr.partition_A(sf_tensor) if which == "A" else thr.partition_B(sf_tensor)
    return cute.make_fragment_like(part, sf_tensor.element_type)


def partition_fragment_SFA(sfa_tensor, thr_mma, tidx):
    """Thread tidx's register fragment of A's scale factors (V, MMA_M, MMA_K) for one stage's (M, K) tile."""
    return _fragment("A", sfa_tensor, thr_mma, tidx)


def partition_fragment_SFB(sfb_tensor, thr_mma, tidx):
    """Thread tidx's register fragment of B's scale factors (V, MMA_N, MMA_K)."""
    return _fragment("B", sfb_tensor, thr_mma, tidx)


def sm120_get_smem_store_op(layout_d, elem_ty_d, elem_ty_acc, *, loc=None, ip=None):
    """The copy atom writing converted accumulators to shared memory: stmatrix of two 8x8 matrices for 16-bit D
    (transposed for an M-major D), the four values an m16n8 accumulator gives each thread; a universal copy of
    elem_ty_d otherwise (CuTe DSL's choice)."""
    if getattr(elem_ty_d, "width", None) == 16:
        from warpweave.cute.nvgpu import warp

        return cute.make_copy_atom(warp.StMatrix8x8x16bOp(layout_d == LayoutEnum.COL_MAJOR, 2), elem_ty_d)
    return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), elem_ty_d)
