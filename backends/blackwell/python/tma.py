"""TMA atoms for tcgen05.mma operands: cute.nvgpu.make_tiled_tma_atom_A/B and the ops they take.

The shared-memory layouts of A and B here are in the MMA's shape, ((atom M or N, atom K), rest MN, rest K) per
stage (blackwell_helpers.make_smem_layout_a/b), as tcgen05 kernels partition them. make_tiled_tma_atom_A/B view a
stage as the plain (MN, K) tile of this CTA's share of the MMA tile and build Hopper's TMA atom (boxes, swizzle,
the per-call tensor map; this backend extends Hopper's) over it; the atom keeps the op's CTA group:

- cta_group ONE: the loads complete on the CTA's own mbarrier (also under a 2-CTA MMA, whose pair the program then
  synchronizes itself);
- the tiled MMA (one CTA or two) decides the CTA's share of the tile, whatever the op's group;
- cta_group TWO (a pair of CTAs under one 2-CTA MMA): each CTA loads its half of A and of B into its own shared
  memory, and the loads complete on the mbarrier of the pair's even CTA, whose MMA reads both halves. The
  instruction takes that barrier as the CTA's own barrier address with the CTA-rank bit of the pair cleared (bit
  24 of a shared::cluster address of the executing CTA's window, CuTe's Sm100MmaPeerBitMask).

With a cluster, A is multicast to the CTAs of its cluster row (same M, cluster_shape_vmnk mode 2) and B to those
of its column (mode 1), as cluster_shape_to_tma_atom_A/B choose.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.hopper import tma as hopper_tma
from warpweave.backends.hopper import tma_value_map
from warpweave.backends.hopper import tma_blocked

from .tcgen05_mma import CtaGroup, OperandMajorMode

PEER_BIT_MASK = 0xFEFFFFFF


def _cpasync():
    from warpweave.cute.nvgpu import cpasync

    return cpasync


def _op_cta_group(op) -> int:
    return int(getattr(op, "params", {}).get("cta_group", "1"))


_classes: dict = {}


def _umma_class(base):
    cls = _classes.get(base)
    if cls is None:
        class UmmaTmaCopyAtom(base):
            """A TMA atom of a tcgen05 kernel's operand: its loads use the op's CTA group."""

            def _entry(self, kind):
                if kind == "store" or self.cta_group == 1:
                    return super()._entry(kind)
                name = ("cpasync.CopyBulkTensorTileG2SMulticastOp" if kind == "multicast"
                        else "cpasync.CopyBulkTensorTileG2SOp")
                return ext.select_instruction(name, {"rank": len(self.dims), "cta_group": self.cta_group})

            def __ww_copy__(self, src, dst, *, mcast_mask=None, **kwargs):
                # A kernel may compute one mask for both operands' loads and pass it to each (CuTe DSL's do): a
                # load that is not multicast here needs none.
                if not getattr(self.op, "python_name", "").endswith("MulticastOp"):
                    mcast_mask = None
                if mcast_mask is not None:
                    kwargs["mcast_mask"] = mcast_mask
                return super().__ww_copy__(src, dst, **kwargs)

            def _issue(self, b, backend, entry, load, multicast, tmap, origin, ptr, base_off, mbar, mask, issuer=None):
                if load and self.cta_group == 2:
                    mbar = b.op1("arith.andi", [mbar, cutlass.Int32(PEER_BIT_MASK - (1 << 32)).ir()], "i32")
                super()._issue(b, backend, entry, load, multicast, tmap, origin, ptr, base_off, mbar, mask, issuer)

        cls = _classes[base] = UmmaTmaCopyAtom
    return cls


def as_pair_atom(atom):
    """A Hopper TMA load atom made for a CTA pair's MMA (cta_group 2): its loads complete on the leader CTA's
    barrier."""
    atom.__class__ = _umma_class(type(atom))
    atom.cta_group = 2
    return atom


def plain_stage_layout(smem_layout):
    """The (MN, K) view of one stage of an MMA-shaped ((MN atom, K atom), rest MN, rest K) layout (swizzle kept)."""
    outer = getattr(smem_layout, "outer", smem_layout)
    shape = outer.shape
    if not (isinstance(shape, tuple) and len(shape) == 3 and isinstance(shape[0], tuple) and len(shape[0]) == 2):
        raise ext.user_error(f"the shared-memory layout of one stage is ((MN, K) of the MMA atom, rest MN, rest K) "
                             f"(blackwell_helpers.make_smem_layout_a/b sliced at a stage), got {smem_layout}",
                             ext.DSLValueError)
    (ma, ka), rm, rk = shape
    if not all(isinstance(cute.size(x), int) for x in (ma, ka, rm, rk)):
        raise ext.user_error(f"the shared-memory layout {smem_layout} must be static", ext.DSLValueError)
    ma, ka, rm, rk = (cute.size(x) for x in (ma, ka, rm, rk))
    view = cute.make_layout(((ma, rm), (ka, rk)), stride=((1, ma * ka), (ma, ma * ka * rm)))
    plain = cute.composition(outer, view)
    if hasattr(smem_layout, "outer"):
        return cute.make_composed_layout(smem_layout.inner, 0, plain)
    return plain


def _one_stage(smem_layout):
    """A staged layout (make_smem_layout_a/b with a stage count: ((MN, K) atom, rest MN, rest K, stage)) sliced at
    its first stage, as CuTe DSL's programs pass either; one stage as it is."""
    outer = getattr(smem_layout, "outer", smem_layout)
    if not (isinstance(outer.shape, tuple) and len(outer.shape) == 4):
        return smem_layout
    stage = cute.slice_(outer, (None, None, None, 0))
    if hasattr(smem_layout, "outer"):          # the swizzle stays the stage's
        return cute.make_composed_layout(smem_layout.inner, smem_layout.offset, stage)
    return stage


def _make(op, gmem_tensor, smem_layout, tiled_mma, num_multicast, internal_type, which, descriptor=None):
    cpasync = _cpasync()
    name = getattr(op, "python_name", "")
    if not name.startswith("cpasync.CopyBulkTensorTileG2S"):
        raise ext.user_error(f"make_tiled_tma_atom_{which}: expected CopyBulkTensorTileG2SOp or "
                             f"CopyBulkTensorTileG2SMulticastOp, got {op!r}", ext.DSLTypeError)
    # The op's CTA group says which barrier the loads complete on, the tiled MMA which share of the tile this CTA
    # loads; they may differ: ONE under a pair's MMA (each CTA's loads complete on its own barrier, the program
    # then tells the leader itself), TWO with a one-CTA MMA (the scale factors of B beside a pair's MMA: each
    # CTA's loads complete on the leader's barrier, which the pair's MMA waits on).
    cta = _op_cta_group(op)
    plain = plain_stage_layout(_one_stage(smem_layout))
    po = getattr(plain, "outer", plain)
    tile = (cute.size(po, mode=[0]), cute.size(po, mode=[1]))
    major = tiled_mma.op.a_major_mode if which == "A" else tiled_mma.op.b_major_mode
    if num_multicast > 1 and major != OperandMajorMode.K:
        raise ext.user_error(f"make_tiled_tma_atom_{which}: multicast of an MN-major operand is not supported here "
                             "(use K-major, or a cluster without multicast of this operand)", ext.DSLValueError)
    if _by_element_blocks(gmem_tensor):
        atom, _ = hopper_tma.make_tiled_tma_atom(op, *_by_leaves(gmem_tensor, plain, tile, which), num_multicast,
                                                 internal_type=internal_type, descriptor=descriptor)
        tensor = cute.make_identity_tensor(gmem_tensor.shape)
    else:
        atom, tensor = hopper_tma.make_tiled_tma_atom(op, gmem_tensor, plain, tile, num_multicast,
                                                      internal_type=internal_type, descriptor=descriptor)
    atom.__class__ = _umma_class(type(atom))
    atom.cta_group = cta
    return cpasync.TmaInfo(atom, tensor, smem_layout)   # the layout as given (staged or one stage)


def make_non_exec_tiled_tma_load(gmem_tensor, smem_layout, cta_v_map, op, num_multicast: int = 1, *, loc=None,
                                 ip=None):
    """Hopper's atom of a CTA value map (tma_value_map.py) whose loads use the op's CTA group: with TWO, each CTA
    of the pair loads into its own shared memory and completes on the leader's barrier."""
    atom, tensor = tma_value_map.make_non_exec_tiled_tma_load(gmem_tensor, smem_layout, cta_v_map, op, num_multicast)
    atom.__class__ = _umma_class(type(atom))
    atom.cta_group = _op_cta_group(op)
    return atom, tensor


def _modes(tensor):
    shape = tensor.layout.shape
    return shape if isinstance(shape, tuple) else (shape,)


def _by_element_blocks(gmem_tensor) -> bool:
    """Whether the tensor's (MN, K) modes are (part, part, ...) of flat parts, some nested, one of stride 0 (a
    mixed-input GEMM's scales: one per block of elements), and not stored in dense blocks (block-scaled scale
    factors, Hopper's tma_blocked). A nested mode without a repeated part (the query rows of the heads that share
    a KV head, FlashAttention's packed GQA) is a mode of Hopper's atom, split over its parts."""
    first = _modes(gmem_tensor)[:2]
    layout = gmem_tensor.layout
    strides = layout.stride if isinstance(layout.shape, tuple) else (layout.stride,)
    repeated = any(isinstance(d, int) and d == 0 for m, st in zip(first, strides[:2]) if isinstance(m, tuple)
                   for d in (st if isinstance(st, tuple) else (st,)))
    return (repeated and not tma_blocked.is_blocked(gmem_tensor)
            and all(not isinstance(p, tuple) for m in first if isinstance(m, tuple) for p in m))


def _by_leaves(gmem_tensor, plain, tile, which):
    """(the tensor, its one-stage shared-memory layout, the tile) over the leaves of the tensor's (MN, K) modes, for
    an operand indexed by element coordinates whose modes have parts of stride 0 (the scales of a mixed-input GEMM,
    ((granularity_m, blocks_m), (granularity_k, blocks_k), L): one scale per block). The tile takes, along each
    mode, its leaves in order (colexicographically, as the mode counts its elements); a stride-0 leaf repeats one
    element, so the tile takes one of it and the shared-memory image is the same values once. The TMA tensor's
    coordinates are the mode's hierarchical ones, whose leaves are the tensor map's coordinates."""
    layout = gmem_tensor.layout
    shape, stride = _modes(gmem_tensor), layout.stride if isinstance(layout.shape, tuple) else (layout.stride,)
    po = getattr(plain, "outer", plain)
    leaf_shape, leaf_stride, leaf_tile, smem_stride = [], [], [], []
    for i in range(len(shape)):
        sh, st = shape[i], stride[i]
        parts = list(zip(sh, st)) if isinstance(sh, tuple) else [(sh, st)]
        left, step = (tile[i] if i < 2 else 1), 1
        for extent, d in parts:
            if isinstance(extent, tuple) or isinstance(d, tuple):
                raise ext.user_error(f"make_tiled_tma_atom_{which}: mode {i} of the tensor {layout} is nested "
                                     "more than two deep", ext.DSLValueError)
            take = 1
            if left > 1:
                e = extent if isinstance(extent, int) else None
                take = left if e is None or left < e else e
                if (e is not None and (left % e if left >= e else e % left)):
                    raise ext.user_error(f"make_tiled_tma_atom_{which}: the tile {tile} does not split over the "
                                         f"parts of mode {i} of the tensor {layout}", ext.DSLValueError)
                left //= take
            zero = isinstance(d, int) and d == 0
            leaf_shape.append(extent)
            leaf_stride.append(d)
            n = 1 if zero else take
            leaf_tile.append(n)
            # the shared-memory step of this leaf: the stage layout's at this leaf's first element of the mode
            smem_stride.append(0 if n == 1 or i >= 2 else po(tuple(step if j == i else 0 for j in range(2))))
            if n > 1:
                for x in range(n):
                    at = po(tuple(step * x if j == i else 0 for j in range(2)))
                    if at != x * smem_stride[-1]:
                        raise ext.user_error(f"make_tiled_tma_atom_{which}: the shared-memory layout {plain} is not "
                                             f"one run along part {len(leaf_shape) - 1} of the tensor {layout}",
                                             ext.DSLValueError)
            step *= take if isinstance(take, int) else 1
        if left != 1:
            raise ext.user_error(f"make_tiled_tma_atom_{which}: the tile {tile} is larger than mode {i} of the "
                                 f"tensor {layout}", ext.DSLValueError)
    flat = cute.make_tensor(gmem_tensor.iterator, cute.make_layout(tuple(leaf_shape), stride=tuple(leaf_stride)))
    smem = cute.make_layout(tuple(leaf_tile), stride=tuple(smem_stride))
    if hasattr(plain, "inner"):
        smem = cute.make_composed_layout(plain.inner, 0, smem)
    return flat, smem, tuple(leaf_tile)


def make_tiled_tma_atom_A(op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk=None, *,
                          internal_type=None, loc=None, ip=None):
    """cpasync.TmaInfo (unpacks as (TMA atom, TMA tensor)) loading this CTA's share of A's (M, K) MMA tiles into
    one stage of smem_layout;
    multicast over the cluster's N mode (cluster_shape_vmnk[2]) with a multicast op."""
    n = _mcast(op, cluster_shape_vmnk, 2)
    return _make(op, gmem_tensor, smem_layout, tiled_mma, n, internal_type, "A")


def make_tiled_tma_atom_B(op, gmem_tensor, smem_layout, mma_tiler_mnk, tiled_mma, cluster_shape_vmnk=None, *,
                          internal_type=None, loc=None, ip=None):
    """cpasync.TmaInfo (unpacks as (TMA atom, TMA tensor)) loading this CTA's share of B's (N, K) MMA tiles;
    multicast over the cluster's M mode (cluster_shape_vmnk[1])."""
    n = _mcast(op, cluster_shape_vmnk, 1)
    return _make(op, gmem_tensor, smem_layout, tiled_mma, n, internal_type, "B")


def _mcast(op, cluster_shape_vmnk, mode):
    multicast = getattr(op, "python_name", "").endswith("MulticastOp")
    if cluster_shape_vmnk is None:
        if multicast:
            raise ext.user_error("a multicast TMA op needs cluster_shape_vmnk (the cluster's (V, M, N, K) shape)",
                                 ext.DSLValueError)
        return 1
    shape = tuple(cluster_shape_vmnk)
    n = cute.size(shape[mode])
    if n > 1 and not multicast:
        return 1   # each CTA loads the whole tile itself
    return n if multicast else 1


def cluster_shape_to_tma_atom_A(cluster_shape_mn, atom_thr_id, *, loc=None, ip=None):
    """The TMA op for A: multicast when several CTAs of the cluster share A (cluster N > 1), with the MMA's CTA
    group."""
    return _op_for(cluster_shape_mn[1] > 1, atom_thr_id)


def cluster_shape_to_tma_atom_B(cluster_shape_mn, atom_thr_id, *, loc=None, ip=None):
    """The TMA op for B: multicast when several MMA tiles of the cluster share B (cluster M / CTA group > 1)."""
    cta = cute.size(atom_thr_id.shape if hasattr(atom_thr_id, "shape") else atom_thr_id)
    return _op_for(cluster_shape_mn[0] // cta > 1, atom_thr_id)


def cluster_shape_to_tma_atom_SFB(cluster_shape_mn, atom_thr_id, *, loc=None, ip=None):
    """The TMA op for B's scale factors: a 2-CTA MMA always multicasts them to the pair (each CTA's MMA reads the
    whole N tile's factors), a 1-CTA MMA when the cluster has several CTAs along M."""
    cta = cute.size(atom_thr_id.shape if hasattr(atom_thr_id, "shape") else atom_thr_id)
    return _op_for(cta == 2 or cluster_shape_mn[0] > 1, atom_thr_id)


def _op_for(multicast: bool, atom_thr_id):
    cpasync = _cpasync()
    cta = cute.size(atom_thr_id.shape if hasattr(atom_thr_id, "shape") else atom_thr_id)
    group = CtaGroup.TWO if cta == 2 else CtaGroup.ONE
    return (cpasync.CopyBulkTensorTileG2SMulticastOp(group) if multicast
            else cpasync.CopyBulkTensorTileG2SOp(group))
