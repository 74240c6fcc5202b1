"""TMA atoms: cpasync.make_tiled_tma_atom, tma_partition, prefetch_descriptor, create_tma_multicast_mask.

A TMA atom moves a whole shared-memory tile (one pipeline stage of A, say) with a few instructions, each copying
a box of the global tensor described by a tensor map. make_tiled_tma_atom, in @cute.jit host code, reads the
tile's shared-memory layout and derives the boxes:

- the global tensor's contiguous mode (static stride 1) is the tensor map's dimension 0, its other modes follow in
  order; the shared-memory tile must be contiguous along the same mode;
- box 0 is the longest run of that mode that is contiguous in shared memory (at most the swizzle's width, 256
  elements and the tile), then each other mode the tile spans, in the order it steps through shared memory,
  takes the longest run that continues the box densely (at most 256); boxes of that size tile the whole tile,
  each at its own shared-memory offset; the remaining modes have box 1;
- a tiled mode whose sub-modes are not one run of memory (an interleaved operand's (2, n / 2):(n / 2 * s, s)) is a
  dimension per sub-mode, the tile split over them as their coordinates count, so that one box spans several
  dimensions of the map (the map's dimensions follow shared memory, their strides in any order);
- the swizzle of the layout (32, 64 or 128 bytes, or none) is the tensor map's swizzle, which only matches if
  the layout's swizzle is the one TMA applies to addresses (Swizzle<b, log2(16 / element bytes), 3>, a
  1024-byte-aligned buffer).

The tensor map itself is a host argument ("hopper.tma_descriptor"): encoded at each call from the call's tensor
(its address, shape and strides) by the host hook the selected TMA instruction names (encode_tma_descriptor), in
the plugin of that instruction's backend (Blackwell's on sm_100a), and passed as a 128-byte grid-constant
kernel parameter, so one compilation serves every shape. The atom's TMA tensor is a coordinate tensor of the
global tensor's shape: tile and partition it like the tensor; cute.copy(atom, coords, smem, tma_bar_ptr=...)
takes the coordinates of its first element and issues the boxes. Like CuTe DSL's, the copy is made by a whole
warp (the pipelines' producer warp): one elected lane issues it.

With num_multicast = n, each of the n CTAs of a multicast group loads 1/n of every box (box 1 split) into the
same offset of all n CTAs' shared memory (mcast_mask), so each CTA still receives the whole tile;
tma_partition offsets the tensors to the CTA's slice.
"""
from __future__ import annotations

import enum
import itertools
import math

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

from . import tma_blocked
from . import tma_in_kernel
# what this file's atoms use (unpacked_stride also for tests, through this module)
from .tma_unpack import unpacked_bits, unpacked_codes, unpacked_stride  # noqa: F401

DESCRIPTOR = "hopper.tma_descriptor"
TMAP_BYTES = 128

# DSL type name -> the tensor map's data type (8-bit floats move as bytes).
_TMA_TYPES = {"Float16": "f16", "BFloat16": "bf16", "Float32": "f32", "TFloat32": "tf32", "Float64": "f64",
              "Int8": "u8", "Uint8": "u8", "Float8E4M3FN": "u8", "Float8E5M2": "u8", "Float8E8M0FNU": "u8", "Int16": "u16",
              "Uint16": "u16", "Int32": "s32", "Uint32": "u32", "Int64": "s64", "Uint64": "u64"}
_SWIZZLE_NAMES = {0: "none", 32: "32B", 64: "64B", 128: "128B"}
# A tile's rows come from DRAM as whole 128-byte L2 lines instead of the 32-byte sectors the box's rows touch: the
# rows of a GEMM's tiles are 64 to 128 bytes of lines the neighbouring tiles (and the next k-block) read too. CuTe's
# C++ tensor maps are made so as well.
L2_PROMOTION = "128B"
_PACKED_TYPES = ("Float4E2M1FN", "Int4", "Uint4")   # two values a byte


def _name(op) -> str:
    return getattr(op, "python_name", "") or type(op).__name__


def _is_load(op) -> bool:
    return _name(op).endswith("G2SOp") or _name(op).endswith("G2SMulticastOp")


def _is_multicast(op) -> bool:
    return _name(op).endswith("G2SMulticastOp")


def _static(x, what):
    if not isinstance(x, int):
        raise ext.user_error(f"make_tiled_tma_atom: {what} must be static, got {x!r}", ext.DSLTypeError)
    return x


def _swizzle_bytes(layout, ebytes: int, pack: int = 1) -> int:
    """The TMA swizzle (bytes) a shared-memory layout's swizzle stands for; an error for any other swizzle. pack:
    elements per byte (2 for packed 4-bit types, whose layouts count half bytes)."""
    inner = getattr(layout, "inner", None)
    if inner is None or not hasattr(inner, "num_bits"):
        return 0
    b, m, s = inner.num_bits, inner.num_base, inner.num_shift
    if b == 0:
        return 0
    want_m = int(math.log2(16 * pack // ebytes)) if ebytes <= 16 else -1
    if m != want_m or s != 3 or b not in (1, 2, 3):
        raise ext.user_error(f"make_tiled_tma_atom: the shared-memory swizzle {inner} is not one TMA applies: for "
                             f"{ebytes}-byte elements it is Swizzle<b,{want_m},3> with b = 1, 2, 3 (32, 64, 128 "
                             "bytes)", ext.DSLValueError)
    return 16 << b


def _is_reduce(op) -> bool:
    return "Reduce" in _name(op)


def _kind(op) -> str:
    return ("multicast" if _is_multicast(op) else "load" if _is_load(op) else "reduce" if _is_reduce(op)
            else "store")


# The tensor map's data types each reduction combines (PTX ISA, cp.reduce.async.bulk.tensor): others are refused
# when the atom is made rather than left to ptxas or to the hardware.
_REDUCE_TYPES = {"add": ("f16", "bf16", "f32", "s32", "u32", "u64"),
                 "min": ("f16", "bf16", "s32", "u32", "s64", "u64"),
                 "max": ("f16", "bf16", "s32", "u32", "s64", "u64"),
                 "inc": ("u32",), "dec": ("u32",),
                 "and": ("s32", "u32", "s64", "u64"), "or": ("s32", "u32", "s64", "u64"),
                 "xor": ("s32", "u32", "s64", "u64")}


def _reduce_qualifier(op, tma_type: str, type_name: str):
    """The instruction's op qualifier of a reduction op (None for other ops), checked against the element type."""
    if not _is_reduce(op):
        return None
    kind = getattr(op, "reduction_op", ReductionOp.ADD)
    q = kind.name.lower()
    if tma_type not in _REDUCE_TYPES[q]:
        takes = ", ".join(n for n, t in _TMA_TYPES.items() if t in _REDUCE_TYPES[q] and n != "TFloat32")
        raise ext.user_error(f"make_tiled_tma_atom: a TMA reduction {kind.name} does not combine {type_name} values "
                             f"(it takes {takes})", ext.DSLTypeError)
    return q


def _select(kind: str, rank: int) -> tuple:
    """(backend, entry) of the TMA instruction of a kind ("load", "multicast", "store") and rank on the target."""
    params = {"rank": rank}
    if kind in ("load", "multicast"):
        params["cta_group"] = 1
    name = {"load": "cpasync.CopyBulkTensorTileG2SOp", "multicast": "cpasync.CopyBulkTensorTileG2SMulticastOp",
            "store": "cpasync.CopyBulkTensorTileS2GOp", "reduce": "cpasync.CopyReduceBulkTensorTileS2GOp"}[kind]
    return ext.select_instruction(name, params)


class TmaCopyAtom:
    """A TMA atom (what cpasync.make_tiled_tma_atom returns with its TMA tensor). `tma_desc` is the per-call
    tensor map: a HostArgument on the host, a DeviceHostArgument inside a kernel."""

    def __init__(self, op, tma_desc, element_type, dims, boxes, box, num_multicast, smem_bytes, swizzle):
        self.op = op
        self.tma_desc = tma_desc
        self.element_type = element_type
        self.dims = dims                  # global tensor mode of each tensor-map dimension (innermost first)
        self.boxes = boxes                # [(coordinate offsets per global mode, shared-memory element offset)]
        self.box = box                    # box extents per tensor-map dimension (this CTA's share)
        self.num_multicast = num_multicast
        self.smem_bytes = smem_bytes      # bytes one copy brings into each CTA (the whole tile)
        self.swizzle = swizzle
        self.value_type = element_type
        self.pack = 1                     # elements per byte: 2 for packed 4-bit types, moved as bytes
        self.reduce_op = None             # a reduction store's op qualifier ("add", ...)
        self.merged = {}                  # tiled modes of sub-modes read as one (global_modes): mode -> its shape
        self.split = {}                   # tiled modes read as their sub-modes (tile_over_leaves): mode -> extents

    def __repr__(self):
        return (f"TmaCopyAtom({_name(self.op)}, {self.element_type.__name__}, box {self.box}, "
                f"{len(self.boxes)} per copy, multicast {self.num_multicast}, swizzle {self.swizzle}B)")

    # --- in a kernel ------------------------------------------------------------------------------------------
    @property
    def is_load(self) -> bool:
        return _is_load(self.op)

    @property
    def multicasts(self) -> bool:
        """Whether the atom itself multicasts (a multicast op, or made for a multicast group)."""
        return _is_multicast(self.op) or self.num_multicast > 1

    def _descriptor_address(self):
        d = self.tma_desc
        if isinstance(d, tma_in_kernel.KernelMap):
            raise tma_in_kernel.not_in_memory_error()
        if not isinstance(d, ext.DeviceHostArgument):
            raise ext.user_error("a TMA atom is used inside a kernel: pass it to the kernel as an argument",
                                 ext.DSLTypeError)
        return ext.builder().op1("llvm.ptrtoint", [d.address], "i64")

    def _entry(self, kind):
        return _select(kind, len(self.dims))

    def __ww_copy__(self, src, dst, *, pred=None, tma_bar_ptr=None, mcast_mask=None, tma_desc_ptr=None, **kwargs):
        if kwargs:
            raise ext.user_error(f"cute.copy of a TMA atom got an unexpected keyword argument {next(iter(kwargs))!r} "
                                 "(it takes tma_bar_ptr= for loads, mcast_mask= for multicast loads and "
                                 "tma_desc_ptr= for a tensor map in memory)", ext.DSLTypeError)
        if pred is not None:
            raise ext.user_error("cute.copy of a TMA atom takes no pred=: the box's elements outside the tensor read "
                                 "as zero and are not written", ext.DSLTypeError)
        load = _is_load(self.op)
        coords_t, smem_t = (src, dst) if load else (dst, src)
        if not getattr(coords_t, "is_coordinate_tensor", False):
            raise ext.user_error(f"cute.copy of a TMA atom: the {'source' if load else 'destination'} is the atom's "
                                 f"TMA tensor (tiled and partitioned), got {coords_t!r}", ext.DSLTypeError)
        if getattr(smem_t, "memspace", None) != "smem":
            raise ext.user_error(f"cute.copy of a TMA atom: the {'destination' if load else 'source'} is a shared "
                                 f"memory tensor, got {smem_t!r}", ext.DSLTypeError)
        if load and tma_bar_ptr is None:
            raise ext.user_error("cute.copy of a TMA load needs tma_bar_ptr= (the mbarrier its bytes complete)",
                                 ext.DSLTypeError)
        if not load and (tma_bar_ptr is not None or mcast_mask is not None):
            raise ext.user_error("cute.copy of a TMA store takes neither tma_bar_ptr= nor mcast_mask=",
                                 ext.DSLTypeError)
        multicast = load and _is_multicast(self.op)
        if multicast and mcast_mask is None:
            raise ext.user_error("cute.copy of a multicast TMA load needs mcast_mask= (the CTAs that receive it)",
                                 ext.DSLTypeError)
        # A non-multicast load fills its own CTA whatever mcast_mask says, as CuTe DSL's does: kernels written for
        # any cluster shape compute a mask for every load (utils' cluster_shape_to_tma_atom_* picks the plain load
        # where the cluster has one CTA along the mode).
        mask = cutlass.Int32(mcast_mask).ir() if multicast else None
        self.issue_boxes(src, dst, tma_bar_ptr, "multicast" if multicast else "load" if load else _kind(self.op),
                         mask, tma_desc_ptr=tma_desc_ptr)

    def issue_boxes(self, src, dst, tma_bar_ptr, kind, mask, issuer=None, tma_desc_ptr=None):
        """Issues the copy's boxes from one elected lane; with issuer (a box index -> condition), box k only where
        issuer(k) holds (the CTAs of a multicast group share the boxes out, see tma_block_copy.py); through the
        tensor map at tma_desc_ptr where given, else the atom's own."""
        load = kind in ("load", "multicast")
        coords_t, smem_t = (src, dst) if load else (dst, src)
        b = ext.builder()
        backend, entry = self._entry(kind)
        tmap = self._descriptor_address() if tma_desc_ptr is None else _map_address(tma_desc_ptr)
        origin = coords_t[0]
        origin = origin if isinstance(origin, tuple) else (origin,)
        ptr = smem_t.iterator
        # TMA swizzles by address bits: it takes the box's unswizzled start (the swizzle's period sits in the
        # pointer, see cute's views of swizzled tensors)
        lay = ext.full_layout(smem_t)
        base_off = lay.offset + lay.outer(0) if hasattr(lay, "outer") else lay(0)
        mbar = None
        if load:
            bp = tma_bar_ptr.iterator if hasattr(tma_bar_ptr, "iterator") else tma_bar_ptr
            mbar = b.op1("llvm.ptrtoint", [bp.address(0)], "i32")
        ext.when(cute.arch.elect_one(), lambda: self._issue(b, backend, entry, load, mask is not None, tmap, origin,
                                                            ptr, base_off, mbar, mask, issuer))

    def __ww_prefetch__(self, src, **kwargs):
        """cute.prefetch(atom, src): each box cute.copy(atom, src, ...) would load, prefetched into L2
        (cp.async.bulk.prefetch.tensor) by one thread of the warp; nothing is written to shared memory."""
        if kwargs:
            raise ext.user_error(f"cute.prefetch of a TMA atom got an unexpected keyword argument "
                                 f"{next(iter(kwargs))!r} (it takes none)", ext.DSLTypeError)
        if not _is_load(self.op):
            raise ext.user_error("cute.prefetch: a TMA store atom reads shared memory; only a load's global boxes "
                                 "can be prefetched", ext.DSLTypeError)
        if not getattr(src, "is_coordinate_tensor", False):
            raise ext.user_error(f"cute.prefetch of a TMA atom: the source is the atom's TMA tensor (tiled and "
                                 f"partitioned, as for cute.copy), got {src!r}", ext.DSLTypeError)
        b = ext.builder()
        backend, entry = ext.select_instruction(f"cpasync.prefetch_tile_{len(self.dims)}d", {}, {"tmap", "coords"})
        tmap = self._descriptor_address()
        origin = src[0]
        origin = origin if isinstance(origin, tuple) else (origin,)

        def issue():
            for coord_off, _ in self.boxes:
                ext.emit_instruction(b, backend, entry, {"tmap": [tmap], "coords": self._coords(origin, coord_off)})

        ext.when(cute.arch.elect_one(), issue)

    def _coords(self, origin, coord_off):
        """The tensor map's coordinates of a box: the tile's origin (element coordinates; bytes along the
        contiguous mode of a packed type) plus the box's offsets (in the tensor map's units)."""
        coords = []
        origin = self._flat_origin(tuple(origin))
        for mode in self.dims:
            c = origin[mode] if mode < len(origin) else 0
            if self.pack > 1 and mode == self.dims[0]:
                c = c // self.pack
            c = c + coord_off[mode] if coord_off[mode] else c
            coords.append(cutlass.Int32(c).ir())
        return coords

    def _flat_origin(self, origin) -> list:
        """A coordinate of the tensor as one per tensor mode global_modes made (a merged mode's linearized)."""
        out = []
        for j, x in enumerate(origin):
            if j in self.split and not isinstance(x, tuple):
                # the mode's linear coordinate, as its sub-modes count it (colexicographically)
                for n in self.split[j][:-1]:
                    out.append(x % n)
                    x = x // n
                out.append(x)
            elif j in self.merged and isinstance(x, tuple):
                lin, scale = 0, 1
                for c, n in zip(leaves(x), leaves(self.merged[j])):
                    lin = lin + c * scale if scale != 1 or lin != 0 else c
                    scale = scale * n
                out.append(lin)
            else:
                out.extend(leaves(x) if isinstance(x, tuple) else [x])
        return out

    def _issue(self, b, backend, entry, load, multicast, tmap, origin, ptr, base_off, mbar, mask, issuer=None):
        for k, (coord_off, smem_off) in enumerate(self.boxes):
            def one(coord_off=coord_off, smem_off=smem_off):
                coords = self._coords(origin, coord_off)
                addr = b.op1("llvm.ptrtoint", [ptr.address(base_off + smem_off)], "i32")
                if load:
                    inputs = {"dst": [addr], "tmap": [tmap], "mbar": [mbar], "coords": coords}
                    if multicast:
                        inputs["cta_mask"] = [mask]
                else:
                    inputs = {"tmap": [tmap], "src": [addr], "coords": coords}
                ext.emit_instruction(b, backend, entry, inputs, {"op": self.reduce_op} if self.reduce_op else None)
            if issuer is None:
                one()
            else:
                ext.when(issuer(k), one)


def make_tiled_tma_atom(op, gmem_tensor, smem_layout, cta_tiler, num_multicast: int = 1, *, internal_type=None,
                        descriptor=None, loc=None, ip=None):
    """cpasync.TmaInfo (unpacks as (TMA atom, TMA tensor)) copying tiles of gmem_tensor of shape cta_tiler laid out
    in shared memory as smem_layout (one stage, or stages as its last mode: the first is used; the TmaInfo keeps
    the layout as given). op: CopyBulkTensorTileG2SOp, CopyBulkTensorTileG2SMulticastOp (with num_multicast CTAs
    sharing each load) or CopyBulkTensorTileS2GOp. descriptor(producer, attrs): the tensor map's per-call
    parameter made by that host-argument producer of the encoder's attributes (by default a host argument of gmem_tensor, made in host code; a kernel that makes
    its atoms itself passes the parameter slot it claims; inside a kernel, by default a template the kernel completes,
    tma_in_kernel.py)."""
    if descriptor is None and ext.in_kernel():
        descriptor = tma_in_kernel.kernel_descriptor(gmem_tensor)
    name = _name(op)
    if not (name.endswith("G2SOp") or name.endswith("G2SMulticastOp") or name.endswith("S2GOp")):
        raise ext.user_error(f"make_tiled_tma_atom: {op!r} is not a TMA tile operation (CopyBulkTensorTileG2SOp, "
                             "CopyBulkTensorTileG2SMulticastOp, CopyBulkTensorTileS2GOp, "
                             "CopyReduceBulkTensorTileS2GOp)", ext.DSLTypeError)
    num_multicast = _static(num_multicast, "num_multicast")
    if num_multicast < 1 or (num_multicast > 1 and not _is_multicast(op)):
        raise ext.user_error(f"make_tiled_tma_atom: num_multicast={num_multicast} needs "
                             "CopyBulkTensorTileG2SMulticastOp (and is at least 1)", ext.DSLValueError)
    gbits = unpacked_bits(gmem_tensor.element_type, internal_type)
    codes = unpacked_codes() if gbits else {}
    if gbits not in codes:
        gbits = 0   # where the target's manifest lists no unpacking tensor map for them, the bytes move as they are
    if gbits and not _is_load(op):
        raise ext.user_error(f"make_tiled_tma_atom: TMA unpacks {gmem_tensor.element_type.__name__} values into "
                             "shared memory on loads only; store them as bytes", ext.DSLValueError)
    et = internal_type or (cutlass.Uint8 if gbits else gmem_tensor.element_type)
    # Packed 4-bit types (two to a byte) move as bytes: the atom works in bytes along the contiguous mode (the
    # layouts' element offsets there are half bytes) and the tensor map is of u8 over half the extent.
    pack = 2 if et.width == 4 and et.__name__ in _PACKED_TYPES else 1
    tma_type = codes[gbits] if gbits else "u8" if pack == 2 else _TMA_TYPES.get(et.__name__)
    if tma_type is None:
        raise ext.user_error(f"make_tiled_tma_atom: TMA does not move {et.__name__} values", ext.DSLTypeError)
    reduce_op = _reduce_qualifier(op, "u8" if pack == 2 else tma_type, et.__name__)
    if tma_blocked.is_blocked(gmem_tensor) and not gbits:
        atom, coords = tma_blocked.blocked_atom(
            op, gmem_tensor, _first_stage(smem_layout, 2), _tile_of_identity_tiler(cta_tiler, gmem_tensor.shape), num_multicast,
            internal_type, kind=_kind(op), select=_select, tma_types=_TMA_TYPES, atom_base=TmaCopyAtom,
            descriptor=descriptor)
        atom.reduce_op = reduce_op
        return cute.nvgpu.cpasync.TmaInfo(atom, coords, smem_layout)
    ebytes = max(1, et.width // 8)
    cta_tiler = _tile_of_identity_tiler(cta_tiler, gmem_tensor.shape)
    tiler = tuple(cta_tiler) if isinstance(cta_tiler, (tuple, list)) else (cta_tiler,)
    # a mode tiled by a tuple names the tile along each of its sub-modes ((heads per KV head, rows) over a
    # (heads, rows) mode, where the run-time head count leaves the split of a plain extent unknown)
    tiler = tuple(tuple(_static(x, "cta_tiler") for x in leaves(t)) if isinstance(t, tuple)
                  else _static(t, "cta_tiler") for t in tiler)
    merged = {}
    shape, stride = global_modes(gmem_tensor.layout, len(tiler), merged,
                                 keep_split={i for i, t in enumerate(tiler) if isinstance(t, tuple)})
    tile_shape = tuple(math.prod(t) if isinstance(t, tuple) else t for t in tiler)
    tiler, tile_of, split = tile_over_leaves(gmem_tensor.layout, tiler, merged)
    rank = len(shape)
    contiguous = [i for i, d in enumerate(stride) if isinstance(d, int) and d == 1]
    if not contiguous:
        raise ext.user_error(f"make_tiled_tma_atom: no mode of the tensor has a static stride of 1 (strides "
                             f"{stride}); mark its layout dynamic with leading_dim", ext.DSLValueError)
    # Beside a mode of one element (stride 1 as well, e.g. a (1, s) tensor of one scale per row), the contiguous
    # run is the mode the tile takes several of.
    c = next((i for i in contiguous if i < len(tiler) and tiler[i] > 1), contiguous[0])
    # A mode of static stride 0 (a broadcast: every coordinate of it is the same element) has no dimension in
    # the tensor map; its coordinates are dropped.
    mapped = [i for i in range(rank) if not (isinstance(stride[i], int) and stride[i] == 0)]
    if len(mapped) > 5:
        # Past the five dimensions a tensor map holds, so are the modes of one element that the tile takes one of
        # (their coordinate is always 0): QuACK's W4 operands have two among six modes.
        mapped = [i for i in mapped if i == c or not (isinstance(shape[i], int) and shape[i] == 1
                                                      and (i >= len(tiler) or tiler[i] == 1))]
    for i, t in enumerate(tiler):
        if t > 1 and i not in mapped:
            raise ext.user_error(f"make_tiled_tma_atom: mode {i} of the tensor has stride 0 and the tile takes {t} "
                                 "of it; TMA copies boxes of distinct elements", ext.DSLValueError)
    dims = [c] + [i for i in mapped if i != c]
    if len(dims) > 5:
        raise ext.user_error(f"make_tiled_tma_atom: a tensor map has at most 5 dimensions, the tensor has "
                             f"{len(dims)} modes of nonzero stride, of more than one element or tiled (shape "
                             f"{gmem_tensor.layout})", ext.DSLValueError)
    if c >= len(tiler):
        raise ext.user_error(f"make_tiled_tma_atom: the tile {tiler} does not cover the tensor's contiguous mode "
                             f"{c}", ext.DSLValueError)
    given_layout = smem_layout
    smem_layout = _first_stage(smem_layout, len(tile_shape))
    outer = getattr(smem_layout, "outer", smem_layout)
    smem_shape = outer.shape if isinstance(outer.shape, tuple) else (outer.shape,)
    if len(smem_shape) != len(tile_shape) or any(cute.size(s) != t for s, t in zip(smem_shape, tile_shape)):
        raise ext.user_error(f"make_tiled_tma_atom: the shared-memory layout {smem_layout} is not of the tile's "
                             f"shape {tile_shape}", ext.DSLValueError)
    swizzle = _swizzle_bytes(smem_layout, ebytes, pack)
    if gbits and swizzle not in (0, 128):
        raise ext.user_error(f"make_tiled_tma_atom: TMA unpacks {gmem_tensor.element_type.__name__} values into "
                             f"shared memory without a swizzle or under the 128-byte one, the layout {smem_layout} "
                             f"has a {swizzle}-byte swizzle", ext.DSLValueError)
    if pack > 1:
        if tiler[c] % pack:
            raise ext.user_error(f"make_tiled_tma_atom: a tile of packed {et.__name__} values spans whole bytes along "
                                 f"the contiguous mode (an even extent), got {tiler}", ext.DSLValueError)
        tiler = tuple(t // pack if i == c else t for i, t in enumerate(tiler))

    def outer_flat(coord):
        # a coordinate of the flat tile (one per tensor-map dimension the tile spans) -> its shared-memory offset
        cc = list(coord) if isinstance(coord, tuple) else [coord]
        tc_ = [0] * len(tile_shape)
        for f, x in enumerate(cc):
            mode, scale = tile_of[f]
            tc_[mode] = tc_[mode] + x * scale
        return outer(tuple(tc_) if len(tc_) > 1 else tc_[0])

    def at(coord):
        # byte coordinates along the contiguous mode of a packed type -> byte offsets
        if pack == 1:
            return outer_flat(coord)
        cc = list(coord) if isinstance(coord, tuple) else [coord]
        cc[c] *= pack
        return outer_flat(tuple(cc) if len(cc) > 1 else cc[0]) // pack

    # box 0: the contiguous run along the tensor's contiguous mode
    zero = [0] * len(tiler)
    tc = tiler[c]
    limit = min(tc, 256, swizzle // ebytes if swizzle else tc)

    def co(**kw):
        x = list(zero)
        for k, v in kw.items():
            x[int(k[1:])] = v
        return tuple(x) if len(x) > 1 else x[0]

    run = 1
    while run < limit and at(co(**{f"m{c}": run})) == run:
        run += 1
    box0 = 1 << int(math.log2(run))
    if box0 * ebytes < 16 or tc % box0:
        raise ext.user_error(f"make_tiled_tma_atom: the shared-memory layout {smem_layout} has only {run} "
                             f"elements contiguous along the tensor's contiguous mode {c}; TMA needs runs of at least "
                             "16 bytes that divide the tile", ext.DSLValueError)
    if swizzle and box0 * ebytes != swizzle:
        raise ext.user_error(f"make_tiled_tma_atom: a {swizzle}-byte swizzle needs rows of {swizzle} bytes along the "
                             f"contiguous mode, the layout {smem_layout} has {box0 * ebytes}", ext.DSLValueError)
    # The other tile dimensions, by their step in shared memory: each continues the box densely as far as it
    # can (at most 256), boxes of that size tiling the tile; the tensor map takes them in that order.
    others = sorted((i for i in range(len(tiler)) if i != c and i in dims and tiler[i] > 1),
                    key=lambda i: at(co(**{f"m{i}": 1})))
    rows, dense = [], box0
    for o in others:
        b_o = 1
        while b_o < min(tiler[o], 256) and at(co(**{f"m{o}": b_o})) == b_o * dense:
            b_o += 1
        while tiler[o] % b_o:
            b_o -= 1
        rows.append((o, b_o))
        dense *= b_o
    o = rows[0][0] if rows else None
    box1 = rows[0][1] if rows else 1
    if num_multicast > 1 and (o is None or box1 % num_multicast or (swizzle and (box1 // num_multicast) % 8)
                              or tile_of[o][1] != 1 or len(rows) > 1):
        raise ext.user_error(f"make_tiled_tma_atom: {num_multicast} CTAs cannot share boxes of {box1} rows (each "
                             "takes an equal share, a multiple of 8 rows when swizzled, of the one other mode the "
                             "tile spans)", ext.DSLValueError)
    # Every box of the tile, with its coordinate offset (per global mode) and shared-memory offset, checked to be
    # the dense row-major image TMA writes.
    boxes = []
    for index in itertools.product(*(range(tiler[m] // b) for m, b in reversed(rows)),
                                   range(tc // box0)):
        jc, js = index[-1], dict(zip((m for m, _ in reversed(rows)), index[:-1]))
        first = {f"m{m}": js[m] * b for m, b in rows}
        base = at(co(**{f"m{c}": jc * box0, **first}))
        for r in itertools.product(*(range(b) for _, b in rows)):
            step = sum(x * math.prod(b for _, b in rows[:k]) for k, x in enumerate(r)) * box0
            at_row = {f"m{m}": js[m] * b + x for (m, b), x in zip(rows, r)}
            for e in (0, 1, box0 - 1):
                cc = co(**{f"m{c}": jc * box0 + e, **at_row})
                if at(cc) != base + step + e:
                    raise ext.user_error(f"make_tiled_tma_atom: the shared-memory layout {smem_layout} is not "
                                         f"made of dense boxes of {box0} x {[b for _, b in rows]} elements (element "
                                         f"{cc} is at {at(cc)}, not {base + step + e})", ext.DSLValueError)
        off = [0] * rank
        off[c] = jc * box0
        for m, b in rows:
            off[m] = js[m] * b
        boxes.append((tuple(off), base * pack))   # the shared-memory offset in elements
    # the spanned dimensions take the places of the tensor map's in their shared-memory order
    spanned = iter(m for m, _ in rows)
    dims = [next(spanned) if d in others else d for d in dims]
    box = [1] * len(dims)
    box[0] = box0
    for m, b in rows:
        box[dims.index(m)] = b // num_multicast if m == o else b
    # The tensor map is the work of the host hook the selected instruction names, in the plugin of its backend
    # (which may inherit it from a backend it extends): the target's TMA limits are that backend's.
    backend, entry = _select(_kind(op), len(dims))
    if not entry.get("host_hook"):
        raise ext.user_error(f"make_tiled_tma_atom: {entry['id']} names no host hook that encodes its tensor map",
                             ext.DSLValueError)
    attrs = {"data_type": tma_type, "rank": len(dims), "swizzle": _SWIZZLE_NAMES[swizzle],
             "l2_promotion": L2_PROMOTION, "dims": ",".join(map(str, dims)), "ebytes": ebytes, "pack": pack,
             "backend": backend, "hook": entry["host_hook"]}
    if gbits:
        attrs["gbits"] = gbits
    for i, bx in enumerate(box):
        attrs[f"box{i}"] = bx
    # The tensor map is of the tensor as the program views it (its modes flattened, at its offset from the
    # argument's start), which may be another layout of the argument's memory than the argument's own: extents
    # and strides that are runtime values are evaluated at each call.
    for i, mode in enumerate(dims):
        attrs[f"extent{i}"], attrs[f"gstride{i}"] = shape[mode], stride[mode]
    attrs["offset"] = gmem_tensor.iterator.offset
    desc = ext.host_argument(DESCRIPTOR, gmem_tensor, **attrs) if descriptor is None else descriptor(DESCRIPTOR, attrs)
    # the bytes a load counts on its barrier: those it reads (an unpacked narrow type's padding is not counted)
    smem_bytes = cute.size(outer) * (gbits or ebytes * 8 // pack) // 8
    atom = TmaCopyAtom(op, desc, et, dims, boxes, tuple(box), num_multicast, smem_bytes, swizzle)
    atom.pack = pack
    atom.reduce_op = reduce_op
    atom.rows_mode = tile_of[o][0] if o is not None else None
    atom.merged = merged
    atom.split = split
    tma_tensor = cute.make_identity_tensor(gmem_tensor.shape)
    return cute.nvgpu.cpasync.TmaInfo(atom, tma_tensor, given_layout)


def leaves(x) -> list:
    return [y for e in x for y in leaves(e)] if isinstance(x, tuple) else [x]


def global_modes(layout, tiled: int, merged: dict | None = None, keep_split=()):
    """The tensor's modes as (shapes, strides), flat: the tile takes its first `tiled` modes, which stay one mode
    each; the others (a ((heads, kv heads), batch) mode, say) are flattened into their leaves, each a mode of the
    tensor map. The coordinates the atom's TMA tensor gives are flattened alike. A tiled mode with modes of its
    own that step through memory as one (each sub-mode's stride the previous one's extent times its stride, as a
    sequence split into (8, s / 8)) is that one mode: its coordinates are linearized (colexicographically, as the
    layout counts them); merged, when given, receives {mode: its shape} for each. A tiled mode whose sub-modes are
    not one run is flattened into them like an untiled one (the tile is split over them, tile_over_leaves), as is
    one of keep_split (a tile that names its extent along each sub-mode)."""
    outer = layout.outer if hasattr(layout, "outer") else layout
    shape, stride = outer.shape, outer.stride
    shape = list(shape) if isinstance(shape, tuple) else [shape]
    stride = list(stride) if isinstance(stride, tuple) else [stride]
    for i in range(min(tiled, len(shape))):
        if isinstance(shape[i], tuple) and i not in keep_split:
            one = cute.coalesce(cute.make_layout(shape[i], stride=stride[i]))
            if isinstance(one.shape, tuple):
                # Not one run (the [gate; up] halves of an interleaved operand, (2, n / 2):(n / 2 * s, s)): each
                # sub-mode is a dimension of the tensor map, as for an untiled mode; the box spans several.
                continue
            if merged is not None:
                merged[i] = shape[i]
            shape[i], stride[i] = one.shape, one.stride
    flat_shape, flat_stride = leaves(tuple(shape)), leaves(tuple(stride))
    if not 1 <= len(flat_shape) <= 8:
        raise ext.user_error(f"make_tiled_tma_atom: the tensor must have 1 to 5 modes (flattened, not counting "
                             f"modes of stride 0), got shape {shape}", ext.DSLValueError)
    return tuple(flat_shape), tuple(flat_stride)


def tile_over_leaves(layout, tile, merged):
    """The tile over the tensor map's dimensions of its modes (global_modes): (extent per dimension, (tile mode,
    coordinate scale) per dimension, {split mode: its sub-modes' extents}). A mode read as sub-modes (not one
    run) takes the tile's extent along it colexicographically, as its coordinates count: all of a sub-mode before
    the next, or a divisor of it and one of each later sub-mode; a tile given as a tuple there names its extent
    along each sub-mode."""
    outer = layout.outer if hasattr(layout, "outer") else layout
    shape, stride = outer.shape, outer.stride
    shape = shape if isinstance(shape, tuple) else (shape,)
    stride = stride if isinstance(stride, tuple) else (stride,)
    flat, where, split = [], [], {}
    for i, t in enumerate(tile):
        if isinstance(t, tuple):
            subs = leaves(shape[i]) if i < len(shape) and isinstance(shape[i], tuple) else None
            if subs is None or len(subs) != len(t) or any(isinstance(n, int) and b > n for b, n in zip(t, subs)):
                raise ext.user_error(f"make_tiled_tma_atom: the tile {t} along mode {i} of the tensor "
                                     f"({shape[i] if i < len(shape) else None}) gives an extent per sub-mode; the "
                                     "mode has no such sub-modes, or fewer elements", ext.DSLValueError)
            split[i], scale = subs, 1
            for b in t:
                flat.append(b)
                where.append((i, scale))
                scale *= b
            continue
        if i >= len(shape) or not isinstance(shape[i], tuple) or i in merged:
            flat.append(t)
            where.append((i, 1))
            continue
        split[i] = leaves(shape[i])
        rest, scale = t, 1
        for j, n in enumerate(split[i]):
            last = j == len(split[i]) - 1
            if not last and not isinstance(n, int):
                raise ext.user_error(f"make_tiled_tma_atom: mode {i} of the tensor ({shape[i]}:{stride[i]}) has "
                                     "sub-modes that are not one run of memory and one of run-time extent before its "
                                     "last; the tile cannot be split over them", ext.DSLValueError)
            b = rest if last else n if rest >= n else rest
            if (not last and (rest % n if rest >= n else n % rest)) or (last and isinstance(n, int) and b > n):
                raise ext.user_error(f"make_tiled_tma_atom: the tile's {t} elements along mode {i} of the tensor "
                                     f"({shape[i]}:{stride[i]}), whose sub-modes are not one run of memory, do not "
                                     "split over the sub-modes (each taken whole, or a divisor of it)",
                                     ext.DSLValueError)
            flat.append(b)
            where.append((i, scale))
            scale, rest = scale * b, rest // b
    return tuple(flat), where, split


def _map_address(tma_desc_ptr):
    """The generic address (i64) of a tensor map a program keeps in memory (cute.copy's tma_desc_ptr=: a pointer
    to it, global or generic, as TensorMapManager.get_tensormap_ptr gives it)."""
    p = getattr(tma_desc_ptr, "iterator", tma_desc_ptr)
    if not (hasattr(p, "memspace") and hasattr(p, "address")) or p.memspace not in ("gmem", "generic"):
        raise ext.user_error(f"cute.copy: tma_desc_ptr= is a pointer to a tensor map in global memory, got "
                             f"{tma_desc_ptr!r}", ext.DSLTypeError)
    q = p if p.memspace == "generic" else p.tospace(cute.AddressSpace.generic)
    return ext.builder().op1("llvm.ptrtoint", [q.address(0)], "i64")


def _tile_of_identity_tiler(cta_tiler, tensor_shape):
    """A tile given as a layout of the tensor's coordinates (cute.composition(cute.make_identity_layout(shape),
    tile), as CuTe DSL's programs build one) as its plain shape; only the identity mapping (mode i of the tile
    along mode i of the tensor, split over its sub-modes where it has some) is such a tile here."""
    if not hasattr(cta_tiler, "shape") or not hasattr(cta_tiler, "stride"):
        return cta_tiler
    shape = cta_tiler.shape if isinstance(cta_tiler.shape, tuple) else (cta_tiler.shape,)
    shape = tuple(cute.size(x) if isinstance(x, tuple) else x for x in shape)
    if str(cta_tiler) != str(cute.make_identity_layout(shape)) and \
            str(cta_tiler) != str(cute.composition(cute.make_identity_layout(tensor_shape), shape)):
        raise ext.user_error(f"make_tiled_tma_atom: the tile {cta_tiler} maps its modes onto the tensor's other "
                             "than one to one; give the tile's shape (or the identity layout of it)",
                             ext.DSLValueError)
    return shape


def _first_stage(smem_layout, tile_rank: int):
    """A staged layout (the tile's modes and a last stage mode, as CuTe DSL's programs pass an epilogue's staged
    layout) as its first stage, swizzle kept; a layout of the tile's rank as it is."""
    outer = getattr(smem_layout, "outer", smem_layout)
    shape = outer.shape if isinstance(outer.shape, tuple) else (outer.shape,)
    if len(shape) != tile_rank + 1:
        return smem_layout
    stage = cute.slice_(outer, (None,) * tile_rank + (0,))
    if hasattr(smem_layout, "outer"):
        return cute.make_composed_layout(smem_layout.inner, smem_layout.offset, stage)
    return stage


def encode_descriptor(tensor, *, data_type, rank, swizzle, dims, ebytes, backend, hook, pack=1, offset=0, gbits=0,
                      l2_promotion="none", **boxes) -> bytes:
    """The host-argument producer: the tensor map of the call's tensor (of bytes for a packed 4-bit type: the
    contiguous mode's extent and the strides, counted in elements, halved), by host hook `hook` of `backend`.
    With extent{i}/gstride{i} (the atom's view of the tensor, per tensor-map dimension, evaluated at this call)
    and its offset in elements, those describe the memory; otherwise the call's tensor's own modes in `dims`
    order do."""
    order = [int(x) for x in dims.split(",")]
    rank = int(rank)
    if "extent0" in boxes:
        shape = [int(boxes[f"extent{i}"]) for i in range(rank)]
        strides = [int(boxes[f"gstride{i}"]) for i in range(rank)]
        names = order
    else:
        if len(tensor.shape) != rank:
            raise ValueError(f"TMA descriptor: the tensor has {len(tensor.shape)} modes, the atom was made for {rank}")
        shape = [int(tensor.shape[m]) for m in order]
        strides = [int(tensor.stride[m]) for m in order]
        names = order
    if strides[0] != 1:
        raise ValueError(f"TMA descriptor: mode {names[0]} of the tensor must be contiguous (stride 1), its strides "
                         f"are {tuple(strides)}")
    pack, gbits = int(pack), int(gbits)
    address = int(tensor.data_ptr) + (int(offset) * gbits // 8 if gbits else int(offset) * ebytes // pack)
    if address % 16:
        raise ValueError(f"TMA descriptor: the tensor's address {address:#x} is not 16-byte aligned")
    attrs = {"data_type": data_type, "rank": rank, "address": address, "swizzle": swizzle,
             "l2_promotion": l2_promotion}
    compact = ebytes  # the byte stride mode i would have if the tensor were packed in this order
    if pack > 1 and (shape[0] % pack or any(s % pack for s in strides[1:])):
        raise ValueError(f"TMA descriptor: a tensor of packed 4-bit values needs an even contiguous extent and even "
                         f"strides (shape {tuple(shape)}, strides {tuple(strides)})")
    for i, mode in enumerate(names):
        attrs[f"dim{i}"] = shape[i] // (pack if i == 0 else 1)
        attrs[f"box{i}"] = int(boxes[f"box{i}"])
        if i:
            s = unpacked_stride(strides[i], gbits) if gbits else strides[i] // pack * ebytes
            if shape[i] == 1:
                # A mode of extent 1 is never stepped along, so its stride is arbitrary (torch gives such modes
                # stride 1); the tensor map gets a legal one.
                s = -(-compact // 16) * 16
            if s % 16:
                raise ValueError(f"TMA descriptor: mode {mode} of the tensor has a stride of {s} bytes; TMA needs "
                                 f"multiples of 16 (strides {tuple(strides)}, {ebytes}-byte elements)")
            attrs[f"stride{i}"] = s
        compact = max(compact, attrs[f"dim{i}"] * (attrs.get(f"stride{i}") or ebytes))
    return ext.host_call(backend, hook, attrs, TMAP_BYTES)


def tma_partition(atom, cta_coord, cta_layout, smem_tensor, gmem_tensor, *, loc=None, ip=None):
    """(smem, gmem) views for cute.copy(atom, gmem[(None, k)], smem[(None, stage)]): mode 0 of both is the tile (as
    grouped by the caller), offset to this CTA's share of each box when the atom multicasts over cta_layout."""
    if not isinstance(atom, TmaCopyAtom):
        raise ext.user_error(f"tma_partition: expected a TMA atom (make_tiled_tma_atom), got {atom!r}",
                             ext.DSLTypeError)
    n = cute.size(cta_layout)
    if atom.num_multicast > 1 and n != atom.num_multicast:
        raise ext.user_error(f"tma_partition: the CTA layout {cta_layout} has {n} CTAs, the atom multicasts to "
                             f"{atom.num_multicast}", ext.DSLValueError)
    if atom.num_multicast == 1:
        return smem_tensor, gmem_tensor
    if getattr(atom, "share_mode", None) is not None:
        return tma_blocked.partition(atom, cta_coord, smem_tensor, gmem_tensor)
    rows = atom.box[atom.dims.index(atom.rows_mode)]
    share = cta_coord * rows

    def tile_coord(tensor, value):
        # mode 0 is the grouped tile; shift its rows mode
        sh = tensor.shape[0]
        sub = [0] * len(sh) if isinstance(sh, tuple) else [0]
        sub[atom.rows_mode] = value
        first = tuple(sub) if isinstance(sh, tuple) else sub[0]
        rest = tuple(0 for _ in range(len(tensor.shape) - 1))
        return (first,) + rest

    return (cute.domain_offset(tile_coord(smem_tensor, share), smem_tensor),
            cute.domain_offset(tile_coord(gmem_tensor, share), gmem_tensor))


def prefetch_descriptor(atom, *, loc=None, ip=None):
    """Brings the atom's tensor map into the cache (once per kernel, before the first copy)."""
    if not isinstance(atom, TmaCopyAtom):
        raise ext.user_error(f"prefetch_descriptor: expected a TMA atom, got {atom!r}", ext.DSLTypeError)
    backend, entry = ext.select_instruction("cpasync.prefetch_descriptor", {}, {"tmap"})
    ext.emit_instruction(ext.builder(), backend, entry, {"tmap": [atom._descriptor_address()]})


def create_tma_multicast_mask(cta_layout_vmnk, cta_coord_vmnk, mcast_mode: int, *, loc=None, ip=None):
    """The mask (bit r: the CTA of rank r in the cluster) of the CTAs whose coordinates in cta_layout_vmnk equal
    cta_coord_vmnk except along mode mcast_mode: the CTAs one multicast load along that mode reaches."""
    shape = cta_layout_vmnk.shape if isinstance(cta_layout_vmnk.shape, tuple) else (cta_layout_vmnk.shape,)
    stride = cta_layout_vmnk.stride if isinstance(cta_layout_vmnk.stride, tuple) else (cta_layout_vmnk.stride,)
    # a mode of one extent written as a 1-tuple (cute.tiled_divide's ((V), M, N, K)) is that extent
    shape = tuple(x[0] if isinstance(x, tuple) and len(x) == 1 else x for x in shape)
    stride = tuple(x[0] if isinstance(x, tuple) and len(x) == 1 else x for x in stride)
    if any(isinstance(x, tuple) or not isinstance(x, int) for x in shape + stride):
        raise ext.user_error(f"create_tma_multicast_mask: the CTA layout {cta_layout_vmnk} must be flat and static",
                             ext.DSLValueError)
    coord = tuple(cta_coord_vmnk) if isinstance(cta_coord_vmnk, tuple) else (cta_coord_vmnk,)
    if len(coord) != len(shape) or not 0 <= mcast_mode < len(shape):
        raise ext.user_error(f"create_tma_multicast_mask: coordinate {coord} and mode {mcast_mode} do not fit the "
                             f"layout {cta_layout_vmnk}", ext.DSLValueError)
    base = cutlass.Int32(0)
    for i, (c, d) in enumerate(zip(coord, stride)):
        if i != mcast_mode and shape[i] > 1:
            base = base + cutlass.Int32(c) * d
    pattern = 0
    for j in range(shape[mcast_mode]):
        pattern |= 1 << (j * stride[mcast_mode])
    return cutlass.Int32(pattern) << base


class ReductionOp(enum.Enum):
    """The combining operation of a TMA reduction store (cp.reduce.async.bulk.tensor's .op), as CuTe DSL names it."""
    ADD = 0
    MIN = 1
    MAX = 2
    INC = 3
    DEC = 4
    AND = 5
    OR = 6
    XOR = 7


def reduce_op_class():
    base = ext.manifest_class("cpasync.CopyReduceBulkTensorTileS2GOp")
    if base is None:
        return None

    class CopyReduceBulkTensorTileS2GOp(base):
        """TMA reduction store of a tile: CopyReduceBulkTensorTileS2GOp(reduction_op=ReductionOp.ADD)."""

        def __init__(self, reduction_op=ReductionOp.ADD):
            if not isinstance(reduction_op, ReductionOp):
                raise ext.user_error(f"CopyReduceBulkTensorTileS2GOp: reduction_op must be a cpasync.ReductionOp, "
                                     f"got {reduction_op!r}", ext.DSLTypeError)
            super().__init__()
            self.reduction_op = reduction_op

    return CopyReduceBulkTensorTileS2GOp
