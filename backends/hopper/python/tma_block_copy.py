"""cutlass.utils.block_copy for TMA atoms: the copy of a whole tile (mode 0 of both tensors, as the caller grouped
it) without partitioning by hand, and, with tma_multicast, the multicast that CuTe DSL's compiler derives at the
copy site from a plain TMA atom.

tma_multicast = {"cluster_shape": (cm, cn), "multicast_dim": "M" | "N"} names the operand the tile belongs to:
an "M" operand (A: its tile depends on the CTA's cluster coordinate m only) is the same for the cn CTAs of a cluster
row, an "N" operand (B) for the cm CTAs of a cluster column. Those CTAs form the multicast group: each issues its
share of the tile's boxes (box k by the CTA at position k mod size of the group), each box written at the same
offset of every CTA of the group (one mask), so every CTA receives the whole tile, once, on its own barrier, as its
pipeline expects (the bytes of one tile). The atom keeps its boxes: a tile of one box is loaded by the first CTA
of the group for all of them.

With "use_2cta_mma_inst": True (Blackwell's MMA over a pair of CTAs, the pair being CTAs 2p and 2p+1 along M), each
CTA of a pair holds its own half of the operand: the N operand's group is then the CTAs of the cluster column with
the same place in their pair (cm / 2 of them), not the whole column. The M operand's group (its cluster row) is
the same either way. The atom's own CTA group says at whose barrier the bytes complete.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

from .tma import TmaCopyAtom

_KEYS = {"cluster_shape", "multicast_dim", "use_2cta_mma_inst"}


def _group(tma_multicast):
    """(cm, cn, dim) of a tma_multicast dict, checked."""
    if not isinstance(tma_multicast, dict) or not {"cluster_shape", "multicast_dim"} <= set(tma_multicast) \
            or set(tma_multicast) - _KEYS:
        raise ext.user_error(f"block_copy: tma_multicast is a dict of cluster_shape, multicast_dim (and "
                             f"use_2cta_mma_inst), got {tma_multicast!r}", ext.DSLValueError)
    shape = tma_multicast["cluster_shape"]
    if not (isinstance(shape, tuple) and len(shape) == 2 and all(isinstance(x, int) and x >= 1 for x in shape)):
        raise ext.user_error(f"block_copy: cluster_shape is (cluster_m, cluster_n), two positive integers, got "
                             f"{shape!r}", ext.DSLValueError)
    dim = tma_multicast["multicast_dim"]
    if dim not in ("M", "N"):
        raise ext.user_error(f"block_copy: multicast_dim is 'M' or 'N', got {dim!r}", ext.DSLValueError)
    pair = tma_multicast.get("use_2cta_mma_inst", False)
    if not isinstance(pair, bool):
        raise ext.user_error(f"block_copy: use_2cta_mma_inst is a Python bool, got {pair!r}", ext.DSLTypeError)
    if pair and shape[0] % 2:
        raise ext.user_error(f"block_copy: use_2cta_mma_inst pairs the CTAs along M, so cluster_m is even; got "
                             f"cluster_shape {shape!r}", ext.DSLValueError)
    return shape[0], shape[1], dim, pair


def block_copy(tiled_copy, src, dst, *, tma_multicast=None, loc=None, ip=None, **kwargs):
    """CuTe DSL's cutlass.utils.block_copy of a TMA atom: cute.copy of the tiles src and dst (mode 0 the tile),
    multicast over the cluster when tma_multicast says so (see the module's docstring). kwargs go to cute.copy
    (tma_bar_ptr= for loads)."""
    if not isinstance(tiled_copy, TmaCopyAtom):
        if type(getattr(tiled_copy, "op", None)).__name__.startswith("Cp"):
            raise ext.user_error("cutlass.utils.block_copy of a shared-to-tensor-memory copy (tcgen05.Cp*) is not "
                                 "built: partition it and copy with cute.copy", ext.DSLNotImplementedError)
        raise ext.user_error(f"block_copy: expected a TMA atom (cpasync.make_tiled_tma_atom), got {tiled_copy!r}",
                             ext.DSLTypeError)
    if tma_multicast is None:
        return cute.copy(tiled_copy, src, dst, **kwargs)
    cm, cn, dim, pair = _group(tma_multicast)
    if not tiled_copy.is_load:
        raise ext.user_error("block_copy: tma_multicast is for loads; a TMA store writes only its own tile",
                             ext.DSLValueError)
    if tiled_copy.multicasts:
        raise ext.user_error("block_copy: with tma_multicast the atom is a plain TMA load "
                             "(CopyBulkTensorTileG2SOp): the copy site makes it multicast", ext.DSLValueError)
    size = cn if dim == "M" else (cm // 2 if pair else cm)
    if size == 1:
        return cute.copy(tiled_copy, src, dst, **kwargs)
    unknown = set(kwargs) - {"tma_bar_ptr"}
    if unknown:
        raise ext.user_error(f"block_copy got an unexpected keyword argument {sorted(unknown)[0]!r} (a TMA load "
                             "takes tma_bar_ptr=)", ext.DSLTypeError)
    if kwargs.get("tma_bar_ptr") is None:
        raise ext.user_error("block_copy of a TMA load needs tma_bar_ptr= (the mbarrier its bytes complete)",
                             ext.DSLTypeError)
    if not getattr(src, "is_coordinate_tensor", False) or getattr(dst, "memspace", None) != "smem":
        raise ext.user_error(f"block_copy: a TMA load copies the atom's TMA tensor {src!r} into shared memory, "
                             f"got {dst!r}", ext.DSLTypeError)
    position, mask, size = multicast_group(cute.arch.block_idx_in_cluster(), cm, cn, dim, pair)
    tiled_copy.issue_boxes(src, dst, kwargs["tma_bar_ptr"], "multicast", cutlass.Int32(mask).ir(),
                            issuer=lambda k: position == k % size)


def multicast_group(rank, cm: int, cn: int, dim: str, pair: bool = False):
    """(position in its multicast group, mask of the group's CTAs, size of the group) of the CTA of rank `rank`
    (m + cm * n; a Python or a DSL integer) in a (cm, cn) cluster, for an operand of dimension `dim`; pair: the
    CTAs 2p, 2p+1 along M share an MMA, each with its half of the N operand."""
    m, n = rank % cm, rank // cm
    if dim == "M":  # the cluster row: the CTAs (m, 0..cn-1)
        position, pattern, base, size = n, sum(1 << (j * cm) for j in range(cn)), m, cn
    elif pair:      # the cluster column's CTAs at the same place in their pair: (m % 2 + 2 i, n)
        position, pattern, base, size = m // 2, sum(1 << (2 * i) for i in range(cm // 2)), n * cm + m % 2, cm // 2
    else:           # the cluster column: the CTAs (0..cm-1, n)
        position, pattern, base, size = m, (1 << cm) - 1, n * cm, cm
    mask = pattern << base if isinstance(base, int) else cutlass.Int32(pattern) << base
    return position, mask, size
