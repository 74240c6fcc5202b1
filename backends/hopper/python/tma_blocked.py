"""TMA atoms of tensors stored in dense blocks: each of the tensor's first two modes is (block part, rest), the
block parts together index one dense run of memory (possibly with stride-0 sub-modes, values repeated along
them), and the blocks follow each other by the rest modes' strides. Scale-factor tensors of block-scaled GEMMs are
such (blockscaled_layout.tile_atom_to_shape_SF: 128 rows x 4 factors, 512 bytes a block, a factor repeated over
its sf_vec_size elements).

A tile of whole blocks whose shared-memory image is the same blocks, each dense and in the same inner order,
placed block after block along one of the two modes and then the other, is one TMA box over a tensor map of
dimensions (block, rest of the faster mode, rest of the slower mode, the remaining modes): the tensor map of the
block storage, not of the element coordinates. The atom's TMA tensor is a coordinate tensor of the tensor's own
(nested) modes whose values are element coordinates, one integer a mode, tiled and partitioned like the tensor; a
copy turns its origin into block indices.

A multicast group's CTAs each load an equal part of the tile: a run of whole blocks where they divide among the
CTAs, else (a tile of fewer blocks than CTAs, as CuTe DSL's sm_103a GEMM's 3 K blocks over 4 CTAs) an equal run
of rows of the blocks' storage, the tensor map then reading a block as rows that continue into the next block.
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
    if src_bits % 8 == 0 and (internal_type is None or block * src_bits // unit_bits > _MAX_BOX):
        # The block is a plain run of bytes: without a type to move it as, or with one of which a box row cannot
        # hold it (CuTe DSL's sm_103a kernels move their scale factors as Uint8), it moves in the narrowest units
        # of which one box row holds it (a 512-byte block of 8-bit factors as 256 16-bit units).
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
    unit_bytes = unit_bits // 8
    share = _multicast_share(n, fast, slow, num_multicast)
    if share is not None:
        share_mode, box, rows = share[0], share[1], 1
        dims = [None, fast, slow]
    else:
        share_mode, rows = _row_share(where, n, units, unit_bytes, sizes, stride, block, num_multicast)
        # the tile's blocks all lie along share_mode: one tensor-map dimension of rows, the block's rows then the
        # next block's (the blocks are adjacent in global memory), a CTA's share an equal run of them
        box = [1, 1]
        box[share_mode] = rows * n[share_mode] // num_multicast
        dims = [None, share_mode, 1 - share_mode]
    rank = len(shape)
    dims += list(range(2, rank))    # tensor-map dimension -> the tensor mode it steps
    backend, entry = select(kind, len(dims))
    if not entry.get("host_hook"):
        raise ext.user_error(f"{where}: {entry['id']} names no host hook that encodes its tensor map",
                             ext.DSLValueError)
    row_units = units // rows
    attrs = {"data_type": tma_type, "rank": len(dims), "backend": backend, "hook": entry["host_hook"],
             "ebytes": unit_bytes, "dim0": row_units, "box0": row_units, "box1": box[dims[1]],
             "box2": box[dims[2]]}
    for d, mode in enumerate(dims[1:], start=1):
        attrs[f"dim{d}"], st, scale = _extent_and_stride(shape, stride, mode, src_bits, rows, share_mode,
                                                         row_units * unit_bytes)
        attrs[f"stride{d}"] = st * scale
        attrs.setdefault(f"box{d}", 1)
    desc = ext.host_argument(DESCRIPTOR, gmem_tensor, **attrs) if descriptor is None else descriptor(DESCRIPTOR,
                                                                                                      attrs)
    atom = _atom_class(atom_base)(op, desc, et, tuple(d if d is not None else 0 for d in dims), [((0,) * rank, 0)],
                          (row_units, box[dims[1]], box[dims[2]]) + (1,) * (rank - 2), num_multicast,
                          block * n[0] * n[1] * src_bits // 8, 0)
    atom.blocks = tuple(sizes)
    # a coordinate of the tensor's own (hierarchical) modes, as a tensor of them gives, counts elements of the mode
    atom.merged = {0: shape[0], 1: shape[1]}
    # tensor-map coordinate = element coordinate // divisor; the rows mode counts rows of its blocks: a row is
    # 1/rows of the block's storage, its coordinate in elements the block's extent / rows (a CTA's share starting
    # inside a block is written as such a coordinate, not an element of the row)
    atom.rows = (share_mode, rows, row_units * unit_bytes) if rows > 1 else None
    atom.coord_div = {m: sizes[m] // (rows if rows > 1 and m == share_mode else 1) for m in range(2)}
    # a multicast CTA's share: its step along `share_mode` (element coordinates) and in shared memory (elements)
    atom.share_mode = share_mode
    if share_mode is not None:
        atom.share_step = box[share_mode] * atom.coord_div[share_mode]
    atom.share_elems = block * box[0] * box[1] // rows
    atom.block_layout = str(inner)
    atom.source_bits = src_bits
    return atom, element_coordinates(shape)


def element_coordinates(shape):
    """A coordinate tensor of the tensor's own (hierarchical) shape whose value at a coordinate is, for each mode,
    the element index of the coordinate within the mode (colexicographic, as the mode counts its elements): each
    leaf steps its mode's basis by the compact column-major stride of the mode. Its modes nest as the tensor's, so
    that a program may rebuild it over another extent of the same hierarchy (make_layout(shape, stride=its
    stride)); its values are those of an identity tensor of the modes' sizes, one integer a mode, which the atom
    turns into block indices."""
    modes = shape if isinstance(shape, tuple) else (shape,)

    def scaled(stride, mode):
        if isinstance(stride, tuple):
            return tuple(scaled(s, mode) for s in stride)
        return cute.ScaledBasis(stride, mode)

    stride = tuple(scaled(cute.make_layout(m).stride, i) for i, m in enumerate(modes))
    return cute.make_tensor(cute.make_identity_tensor(modes).iterator, cute.make_layout(modes, stride=stride))


def _multicast_share(n, fast, slow, num_multicast):
    """(the tensor mode whose blocks the CTAs of a multicast group share out, None without multicast; the box's
    blocks per mode) where each CTA's share can be a run of whole blocks, dense in shared memory: the slower mode's
    blocks are split, or the faster mode's when the tile has one block along the slower; else None."""
    box = list(n)
    if num_multicast == 1:
        return None, box
    for mode in (slow, fast):
        if mode == fast and n[slow] != 1:
            break
        if n[mode] % num_multicast == 0:
            box[mode] = n[mode] // num_multicast
            return mode, box
    return None


def _row_share(where, n, units, unit_bytes, sizes, stride, block, num_multicast):
    """(share mode, rows a block) when the multicast CTAs share the tile inside its blocks: each block's storage
    read as `rows` rows (of at least 16 bytes), the rows of the tile's blocks along the share mode one run that
    each CTA loads an equal part of. The tile must lie along one mode whose blocks follow each other in global
    memory; the fewest rows (the widest box) that divide among the CTAs are taken."""
    modes = [m for m in range(2) if n[m] > 1] or [0, 1]
    for mode in modes:
        if len(modes) == 2 and n[1 - mode] > 1:
            break
        if not isinstance(stride[mode][1], int) or stride[mode][1] != block:
            continue
        for rows in range(1, units + 1):
            if (units % rows == 0 and (units // rows * unit_bytes) % 16 == 0 and sizes[mode] % rows == 0
                    and (rows * n[mode]) % num_multicast == 0):
                return mode, rows
    raise ext.user_error(f"{where}: {num_multicast} CTAs cannot share a tile of {n[0]} x {n[1]} blocks (each loads "
                         "an equal run of whole blocks, or of equal rows of at least 16 bytes of blocks that follow "
                         "each other in global memory along the one mode the tile spans)", ext.DSLValueError)


def _extent_and_stride(shape, stride, mode, src_bits, rows, rows_mode, row_bytes):
    """A tensor-map dimension's extent, stride and bytes a stride step (stride x bytes: its byte stride): the rest
    of a blocked mode (its rows when it is the rows mode), or a remaining mode."""
    if mode >= 2:
        return (*_one_extent(shape[mode], stride[mode]), src_bits // 8)
    if rows > 1 and mode == rows_mode:
        return shape[mode][1] * rows, row_bytes, 1
    return shape[mode][1], stride[mode][1], src_bits // 8


def _one_extent(extent, stride):
    """A remaining mode as one tensor-map dimension: a nested mode (a tensor that keeps its nesting, e.g. (1,1)) is
    the one run it coalesces to."""
    if not isinstance(extent, tuple):
        return extent, stride
    one = cute.coalesce(cute.make_layout(extent, stride=stride))
    if isinstance(one.shape, tuple):
        raise ext.user_error(f"make_tiled_tma_atom: the mode {extent}:{stride} is not one run of memory, which a "
                             "tensor-map dimension needs", ext.DSLValueError)
    return one.shape, one.stride


def partition(atom, cta_coord, smem_tensor, gmem_tensor):
    """tma_partition of a multicast blocked atom: the shared-memory tensor and the coordinate tensor moved to the
    CTA's share of the tile (its blocks' place in shared memory; their element coordinates)."""
    mode = atom.share_mode
    r = cutlass.Int32(cta_coord)
    step = [0, 0]
    # the coordinate iterator adds layout-algebra integers (what a DSL integer stands for there)
    step[mode] = (r * atom.share_step).__ww_int__()
    smem = cute.make_tensor(ext.base_pointer(smem_tensor) + r * atom.share_elems,
                            ext.full_layout(smem_tensor))
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
    rows_mode, rows, row_bytes = atom.rows or (None, 1, 0)
    if rows > 1 and (not isinstance(stride[rows_mode][1], int)
                     or stride[rows_mode][1] != cute.size(cute.filter_zeros(inner))):
        raise ext.user_error(f"{where}: the atom's multicast shares rows of blocks that follow each other along "
                             f"mode {rows_mode}; gmem_tensor's are {stride[rows_mode][1]} elements apart",
                             ext.DSLValueError)
    for d, mode in enumerate(atom.dims[1:], start=1):
        ext_, st, scale = _extent_and_stride(shape, stride, mode, atom.source_bits, rows, rows_mode, row_bytes)
        replace(fields.GLOBAL_DIM, map_ptr, cutlass.Int32(ext_), ord=d)
        # ord d - 1: the byte stride of dimension d (dimension 0 is the block, contiguous)
        replace(fields.GLOBAL_STRIDE, map_ptr, cutlass.Int64(st) * scale, ord=d - 1)


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
                    c = c // self.coord_div[mode]
                out.append(cutlass.Int32(c).ir())
            return out

    _classes[base] = _Blocked
    return _Blocked
