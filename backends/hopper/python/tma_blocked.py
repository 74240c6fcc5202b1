"""TMA atoms of tensors stored in dense blocks: each of the tensor's first two modes is (block part, rest), the
block parts together index one dense run of memory (possibly with stride-0 sub-modes, values repeated along
them), and the blocks follow each other by the rest modes' strides. Scale-factor tensors of block-scaled GEMMs are
such (blockscaled_layout.tile_atom_to_shape_SF: 128 rows x 4 factors, 512 bytes a block, a factor repeated over
its sf_vec_size elements).

A tile of whole blocks whose shared-memory image is the same blocks, each dense and in the same inner order,
placed block after block along one of the two modes and then the other, is one TMA box over a tensor map of
dimensions (block, rest of the faster mode, rest of the slower mode, the remaining modes): the tensor map of the
block storage, not of the element coordinates. The atom's TMA tensor is a coordinate tensor of the element
coordinates (each mode's size), tiled and partitioned like the tensor; a copy turns its origin into block
indices.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

DESCRIPTOR = "hopper.tma_blocked_descriptor"
_MAX_BOX = 256


def is_blocked(gmem_tensor) -> bool:
    shape = gmem_tensor.layout.shape
    return (isinstance(shape, tuple) and len(shape) >= 2 and all(
        isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], (tuple, int)) for m in shape[:2])
        and any(isinstance(m[0], tuple) for m in shape[:2]))


def _static_size(x):
    s = cute.size(x)
    return s if isinstance(s, int) else None


def blocked_atom(op, gmem_tensor, smem_layout, tiler, num_multicast, internal_type, *, kind, select, tma_types,
                 atom_base, descriptor=None):
    """(atom, TMA tensor) for a blocked gmem_tensor (is_blocked); select, tma_types and atom_base: tma.py's
    instruction selection, tensor-map data types and atom class; descriptor as make_tiled_tma_atom's."""
    where = "make_tiled_tma_atom"
    layout = gmem_tensor.layout
    shape, stride = layout.shape, layout.stride
    inner_shape = tuple(shape[i][0] for i in range(2))
    inner_stride = tuple(stride[i][0] for i in range(2))
    sizes = [_static_size(s) for s in inner_shape]
    if None in sizes:
        raise ext.user_error(f"{where}: the block of the tensor {shape} must be static", ext.DSLValueError)
    inner = cute.make_layout(inner_shape, stride=inner_stride)
    dense = cute.filter_zeros(inner)
    block = cute.size(dense)
    if sorted(dense(i) for i in range(block)) != list(range(block)):
        raise ext.user_error(f"{where}: the block {inner} of the tensor is not one dense run of memory",
                             ext.DSLValueError)
    et = internal_type or gmem_tensor.element_type
    src_bits = gmem_tensor.element_type.width
    unit_bits = et.width
    tma_type = tma_types.get(et.__name__)
    if internal_type is None and src_bits % 8 == 0:
        # The block is a plain run of bytes: without a type to move it as, it moves in the narrowest units of
        # which one box row holds it (a 512-byte block of 8-bit factors as 256 16-bit units).
        while block * src_bits // unit_bits > _MAX_BOX and unit_bits < 64:
            unit_bits *= 2
        tma_type = {8: "u8", 16: "u16", 32: "u32", 64: "u64"}[unit_bits]
    if unit_bits % 8 or src_bits % 8 or (block * src_bits) % unit_bits:
        raise ext.user_error(f"{where}: a block of {block} {gmem_tensor.element_type.__name__} values does not move "
                             f"as {et.__name__} values", ext.DSLValueError)
    units = block * src_bits // unit_bits
    if tma_type is None or units > _MAX_BOX or (block * src_bits // 8) % 16:
        raise ext.user_error(f"{where}: a block of {block * src_bits // 8} bytes moves as one TMA box row of at most "
                             f"{_MAX_BOX} {et.__name__} values and a multiple of 16 bytes", ext.DSLValueError)
    tiler = tuple(tiler)
    if len(tiler) != 2 or any(t % s for t, s in zip(tiler, sizes)):
        raise ext.user_error(f"{where}: the tile {tiler} is not made of whole blocks {tuple(sizes)}",
                             ext.DSLValueError)
    n = [t // s for t, s in zip(tiler, sizes)]
    outer = getattr(smem_layout, "outer", smem_layout)
    if hasattr(smem_layout, "outer") and "S<0," not in str(smem_layout.inner) and str(smem_layout.inner) != "0":
        raise ext.user_error(f"{where}: a tensor stored in blocks is loaded into an unswizzled layout, got "
                             f"{smem_layout}", ext.DSLValueError)
    # Which mode's blocks are adjacent in shared memory (the tensor map's dimension 1), then the other's.
    step = {0: outer((sizes[0], 0)) if n[0] > 1 else None, 1: outer((0, sizes[1])) if n[1] > 1 else None}
    fast = 0 if step[0] in (None, block) and (step[1] in (None, block * n[0])) else 1
    slow = 1 - fast
    for j0 in range(n[0]):
        for j1 in range(n[1]):
            j = (j0, j1)
            base = block * (j[fast] + n[fast] * j[slow])
            for i in range(0, cute.size(inner), max(1, cute.size(inner) // 512)):
                c = (i % sizes[0], i // sizes[0])
                if outer((j0 * sizes[0] + c[0], j1 * sizes[1] + c[1])) != base + inner(c):
                    raise ext.user_error(f"{where}: the shared-memory layout {smem_layout} does not hold the tile's "
                                         f"blocks {inner} densely, one after another along a mode",
                                         ext.DSLValueError)
    share_mode, box = _multicast_share(where, n, fast, slow, num_multicast)
    rank = len(shape)
    dims = [None, fast, slow] + list(range(2, rank))    # tensor-map dimension -> the tensor mode it steps
    backend, entry = select(kind, len(dims))
    if not entry.get("host_hook"):
        raise ext.user_error(f"{where}: {entry['id']} names no host hook that encodes its tensor map",
                             ext.DSLValueError)
    attrs = {"data_type": tma_type, "rank": len(dims), "backend": backend, "hook": entry["host_hook"],
             "ebytes": unit_bits // 8, "dim0": units, "box0": units, "box1": box[fast], "box2": box[slow]}
    for d, mode in enumerate(dims[1:], start=1):
        ext_ = shape[mode][1] if mode < 2 else shape[mode]
        st = stride[mode][1] if mode < 2 else stride[mode]
        attrs[f"dim{d}"] = ext_
        attrs[f"stride{d}"] = st * (src_bits // 8)
        attrs.setdefault(f"box{d}", 1)
    desc = ext.host_argument(DESCRIPTOR, gmem_tensor, **attrs) if descriptor is None else descriptor(DESCRIPTOR,
                                                                                                      attrs)
    atom = _atom_class(atom_base)(op, desc, et, tuple(d if d is not None else 0 for d in dims), [((0,) * rank, 0)],
                          (units, box[fast], box[slow]) + (1,) * (rank - 2), num_multicast,
                          block * n[0] * n[1] * src_bits // 8, 0)
    atom.blocks = tuple(sizes)
    # a coordinate of the tensor's own (hierarchical) modes, as a tensor of them gives, counts elements of the mode
    atom.merged = {0: shape[0], 1: shape[1]}
    # a multicast CTA's share: the blocks of `share_mode` it loads, and where they start in shared memory
    atom.share_mode = share_mode
    atom.share_blocks = box[share_mode] if share_mode is not None else n[0]
    atom.share_elems = block * box[0] * box[1]
    atom.block_layout = str(inner)
    atom.source_bits = src_bits
    coords = cute.make_identity_tensor(tuple(cute.size(m) for m in shape))
    return atom, coords


def _multicast_share(where, n, fast, slow, num_multicast):
    """(the tensor mode whose blocks the CTAs of a multicast group share out, None without multicast; the box's
    blocks per mode). Each CTA's share is a run of whole blocks, dense in shared memory: the slower mode's blocks
    are split, or the faster mode's when the tile has one block along the slower."""
    box = list(n)
    if num_multicast == 1:
        return None, box
    for mode in (slow, fast):
        if mode == fast and n[slow] != 1:
            break
        if n[mode] % num_multicast == 0:
            box[mode] = n[mode] // num_multicast
            return mode, box
    raise ext.user_error(f"{where}: {num_multicast} CTAs cannot share a tile of {n[0]} x {n[1]} blocks (each loads "
                         "an equal run of whole blocks)", ext.DSLValueError)


def partition(atom, cta_coord, smem_tensor, gmem_tensor):
    """tma_partition of a multicast blocked atom: the shared-memory tensor and the coordinate tensor moved to the
    CTA's share of the tile (its blocks' place in shared memory; their element coordinates)."""
    mode = atom.share_mode
    r = cutlass.Int32(cta_coord)
    step = [0, 0]
    # the coordinate iterator adds layout-algebra integers (what a DSL integer stands for there)
    step[mode] = (r * (atom.share_blocks * atom.blocks[mode])).__ww_int__()
    smem = cute.make_tensor(smem_tensor.iterator + r * atom.share_elems, smem_tensor.layout)
    coords = cute.make_tensor(gmem_tensor.iterator + tuple(step), gmem_tensor.layout)
    return smem, coords


def replace_fields(atom, gmem_tensor, map_ptr, replace, fields):
    """Rewrites the tensor map at map_ptr, made for a blocked atom, to describe gmem_tensor (another tensor of the
    same blocks, elsewhere, with other rest extents and strides): the fields a blocked map's encode computes from
    its tensor, each with replace(field, map_ptr, value, ord=...)."""
    where = "update_tma_descriptor"
    layout = gmem_tensor.layout
    if not is_blocked(gmem_tensor) or len(layout.shape) != len(atom.dims) - 1:
        raise ext.user_error(f"{where}: the atom's tensor map is of a tensor stored in blocks; gmem_tensor must be "
                             f"one of the same modes, got {layout}", ext.DSLValueError)
    shape, stride = layout.shape, layout.stride
    inner = cute.make_layout(tuple(shape[i][0] for i in range(2)), stride=tuple(stride[i][0] for i in range(2)))
    if str(inner) != atom.block_layout or gmem_tensor.element_type.width != atom.source_bits:
        raise ext.user_error(f"{where}: gmem_tensor's blocks are {inner} of {gmem_tensor.element_type.__name__}, "
                             f"the atom's {atom.block_layout} of {atom.source_bits}-bit values", ext.DSLValueError)
    replace(fields.GLOBAL_ADDRESS, map_ptr, gmem_tensor.iterator.toint(cutlass.Int64))
    for d, mode in enumerate(atom.dims[1:], start=1):
        ext_ = shape[mode][1] if mode < 2 else shape[mode]
        st = stride[mode][1] if mode < 2 else stride[mode]
        replace(fields.GLOBAL_DIM, map_ptr, cutlass.Int32(ext_), ord=d)
        # ord d - 1: the byte stride of dimension d (dimension 0 is the block, contiguous)
        replace(fields.GLOBAL_STRIDE, map_ptr, cutlass.Int64(st) * (atom.source_bits // 8), ord=d - 1)


def encode(tensor, *, data_type, rank, backend, hook, ebytes, **dims) -> bytes:
    """The host-argument producer: the tensor map of the block storage (dimension 0 the block, in the moved
    type's units; the others the rest modes, strides in bytes)."""
    if tensor.data_ptr % 16:
        raise ValueError(f"TMA descriptor: the tensor's address {tensor.data_ptr:#x} is not 16-byte aligned")
    attrs = {"data_type": data_type, "rank": int(rank), "address": int(tensor.data_ptr), "swizzle": "none"}
    for i in range(int(rank)):
        attrs[f"dim{i}"] = int(dims[f"dim{i}"])
        attrs[f"box{i}"] = int(dims[f"box{i}"])
        if i:
            s = int(dims[f"stride{i}"])
            if attrs[f"dim{i}"] == 1:
                s = -(-s // 16) * 16 or 16   # never stepped along: any legal stride
            if s % 16:
                raise ValueError(f"TMA descriptor: dimension {i} of the block storage has a stride of {s} bytes; TMA "
                                 "needs multiples of 16")
            attrs[f"stride{i}"] = s
    return ext.host_call(backend, hook, attrs, 128)


_classes: dict = {}


def _atom_class(base):
    if base in _classes:
        return _classes[base]

    class _Blocked(base):
        """A TMA atom of a tensor stored in blocks: a copy's origin (element coordinates) -> block indices."""

        def _coords(self, origin, coord_off):
            out = [cutlass.Int32(0).ir()]
            origin = self._flat_origin(tuple(origin))
            for mode in self.dims[1:]:
                c = origin[mode] if mode < len(origin) else 0
                if mode < 2:
                    c = c // self.blocks[mode]
                out.append(cutlass.Int32(c).ir())
            return out

    _classes[base] = _Blocked
    return _Blocked
