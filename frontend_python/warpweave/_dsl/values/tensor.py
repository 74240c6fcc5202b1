"""Tensors of the DSL (cute.Tensor and the operations CuTe DSL makes of them): construction over a pointer or a
coordinate iterator, tiles and partitions, views, recasts and predicates.

The pieces live in their own modules (pointer.py: pointers and element access; coordinates.py; tensor_type.py: the
Tensor type; tensor_ssa.py: register values; fragments.py: register tensors); this module gives all their names.
"""
from __future__ import annotations

import math

from ... import _core
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.markers import accept_locations, accept_locations_in_class
from .coordinates import (  # noqa: F401
    CoordIterator, coordinate_sum, int_of, norm_coord, slice_layout, slice_tuple, zero_nones,
)
from .fragments import make_fragment, make_fragment_like, make_rmem_tensor, make_rmem_tensor_like  # noqa: F401
from .numeric import Boolean, Numeric, SymInt, Uint32, as_numeric, dtype as dtype_of
from .pointer import (  # noqa: F401
    GENERIC, GMEM, RMEM, SMEM, Pointer, elem_bytes, is_packed, load_scalar, load_scalars, load_vector, mem_type,
    ptr_type, register_memory_space, storage_bits, store_scalar, store_scalars, store_vector,
)
from .tensor_ssa import TensorSSA, full, full_like, where, zeros_like  # noqa: F401
from .tensor_type import (  # noqa: F401
    ComposedLayout, DSLIndexError, Layout, SwizzledOrigin, Tensor, face_of, full_layout, outer_of, static_size,
    swizzle_span, view, with_face,
)
from .swizzled_face import SwizzledFace, base_pointer  # noqa: F401


def make_tensor(iterator, layout):
    """A tensor over a pointer (or a coordinate iterator) with a layout (or a shape, made column-major)."""
    if not isinstance(layout, (Layout, ComposedLayout)):
        layout = _core.make_layout(layout)
    # an iterator that knows what a tensor over it is (a @cute.experimental.kernel's argument's data pointer: a
    # tensor that keeps its place in the argument)
    over = getattr(type(iterator), "__ww_make_tensor__", None)
    if over is not None:
        return over(iterator, layout)
    if isinstance(iterator, SwizzledFace):     # a thread slice's: the swizzled pointer at the slice's origin
        iterator = iterator.face
    if isinstance(iterator, SwizzledOrigin):   # CuTe DSL's swizzled pointer at another tensor's origin
        sw = iterator.origin_swizzle
        if isinstance(layout, ComposedLayout):   # the layout brings its own swizzle: over the tensor's base
            iterator = iterator._copy()
        else:
            iterator = iterator.swizzled() if isinstance(sw, _core.Swizzle) and sw.num_bits else iterator.origin()
    if isinstance(iterator, Pointer) and iterator.swizzle is not None:
        return _swizzled_tensor(iterator, layout)
    if isinstance(iterator, tuple):   # an origin: the coordinate tensor of those coordinates plus the layout's
        return Tensor(CoordIterator(norm_coord(iterator)), layout)
    return Tensor(iterator, layout)


def _swizzled_tensor(ptr, layout):
    """make_tensor over a swizzled pointer: element c lives at the swizzle of the absolute element address of
    ptr + layout(c), as CuTe's swizzle pointers permute the address itself. With the base aligned to the swizzle's
    span, the swizzle of the address is the base plus the swizzle of the offset from it: the tensor is the base
    with Swizzle o offset o layout (the offset's multiples of the span move to the pointer, as tensor views keep
    them). A base aligned less is split when the kernel runs: r, the address's part below the span, becomes the
    composed layout's offset and the pointer moves back by r to the span's boundary."""
    sw = ptr.swizzle
    if isinstance(layout, ComposedLayout):
        raise DSLTypeError(f"make_tensor: the pointer is swizzled ({sw}) and the layout {layout} is composed too; "
                           "give one swizzle", user_location(3))
    span = swizzle_span(sw)
    bits = storage_bits(ptr.dtype)
    span_bytes = span * bits // 8
    if ptr.base_align % span_bytes == 0:
        d, r = _core.split_divisible(ptr.offset, span)
        base = ptr._copy(offset=0, swizzle=None) + d
        return Tensor(SwizzledOrigin.of(base, sw, r), _core.ComposedLayout(sw, r, layout), ptr.dtype)
    if ptr.base is None:
        raise DSLValueError(f"make_tensor: a pointer swizzled by {sw} in a buffer aligned to {ptr.base_align} bytes "
                            f"(less than the swizzle's {span_bytes}) is placed only when a kernel runs",
                            user_location(3))
    align = min(ptr.alignment_at(0), span_bytes)
    addr = ptr.toint(Uint32)._v
    # the address's bits between the known alignment and the span, counted in elements (a multiple of align)
    r = (addr // align) % (span_bytes // align) * (align * 8 // bits)
    base = ptr._copy(swizzle=None) + (-r)
    return Tensor(SwizzledOrigin.of(base, sw, r), _core.ComposedLayout(sw, r, layout), ptr.dtype)


def make_identity_tensor(shape):
    """A tensor whose element at coordinate c is c (the global coordinates of tiles, for predication). Its strides
    are the unit steps of each mode: no product of the extents is made, so a shape whose size passes 64 bits is
    one too (QuACK's ragged TMA views have extents 2^30 x (2^31 - 1) x (2^31 - 1))."""
    shape = norm_coord(shape)
    ones = lambda s: tuple(ones(e) for e in s) if isinstance(s, tuple) else 1  # noqa: E731
    return Tensor(CoordIterator(0), _core.Layout(shape, _core.make_identity_layout(ones(shape)).stride), None)


# --- predicates ---------------------------------------------------------------------------------------------------

def elem_less(lhs, rhs):
    """True where every coordinate component of lhs is less than the one of rhs (bounds checks)."""
    if isinstance(lhs, tuple) != isinstance(rhs, tuple):
        if isinstance(rhs, tuple) and len(rhs) == 1:
            return elem_less(lhs, rhs[0])
        raise DSLValueError(f"elem_less: coordinate {lhs} and shape {rhs} differ in rank", user_location(2))
    if isinstance(lhs, tuple):
        if len(lhs) != len(rhs):
            raise DSLValueError(f"elem_less: coordinate {lhs} and shape {rhs} differ in rank", user_location(2))
        r = Boolean(True)
        for a, c in zip(lhs, rhs):
            r = r & elem_less(a, c)
        return r
    a = as_numeric(lhs) if not isinstance(lhs, Numeric) else lhs
    a, rhs = _lane_shared_bound(a, rhs)
    r = a < rhs
    return r if isinstance(r, Numeric) else Boolean(bool(r))


def _lane_shared_bound(a, rhs):
    """(a, rhs) or an equivalent (a // g, rhs // g) that the lanes of one vector access share: when rhs is a
    multiple of g and a = d + r with d a multiple of g and 0 <= r < g static, a < rhs exactly when d/g < rhs/g,
    the same comparison for the g consecutive coordinates of a vector. The copy's per-lane predicates are then
    one value, and the compiler keeps only its vector path (no scalar fallback for a partial vector)."""
    x = a._v if isinstance(a, Numeric) else a
    bound = rhs._v if isinstance(rhs, Numeric) else rhs
    if not isinstance(x, SymInt) or not isinstance(bound, (SymInt, int)) or isinstance(bound, bool):
        return a, rhs
    div = bound.divisibility if isinstance(bound, SymInt) else (abs(bound) & -abs(bound) if bound else 0)
    g = 16
    while g > 1:
        if div and div % g == 0:
            d, r = _core.split_divisible(x, g)
            if isinstance(r, int) and 0 <= r < g:
                return type(a)._wrap(d // g), bound // g
        g //= 2
    return a, rhs


def _dice(proj, x):
    """The modes of x where proj is not None (CuTe's dice with projection steps); modes of x past the end of proj
    are kept (a (m, n, k, l) tile coordinate diced by an (M, N, K) projection keeps l)."""
    if not isinstance(x, tuple):
        return x
    return tuple(v for v, p in zip(x, proj) if p is not None) + tuple(x[len(proj):])


def local_tile(input, tiler, coord, proj=None):
    """The tile of `input` at `coord` in the grid of `tiler`-sized tiles; with proj, only the modes of tiler and
    coord where proj is not None are used (e.g. proj=(1, None, 1) takes M and K of an (M, N, K) tiler)."""
    if proj is not None:
        tiler, coord = _dice(proj, tiler), _dice(proj, coord)
    r0 = len(tiler) if isinstance(tiler, tuple) else 1
    rank = _core.tuple_rank(input.shape)
    coord = tuple(coord) if isinstance(coord, tuple) else (coord,)
    rest = coord + (None,) * (rank - len(coord))
    # a swizzled (composed) layout divides its outer layout; the slice's view keeps the swizzle's offset
    z = _core.zipped_divide(full_layout(input), tiler)
    tile_sel = (None,) * r0 if r0 > 1 else None
    return Tensor(input.iterator, z, input.element_type)[(tile_sel, rest if len(rest) > 1 else rest[0])]

# --- views --------------------------------------------------------------------------------------------------------

def domain_offset(coord, tensor):
    """`tensor` with its origin moved to `coord` (a coordinate of its layout, possibly negative): element c of the
    result is element coord + c of the input. A mode given as None keeps its origin."""
    coord = zero_nones(norm_coord(coord))
    if tensor.is_coordinate_tensor:
        return Tensor(tensor.iterator + full_layout(tensor)(coord), full_layout(tensor), None)
    face = face_of(tensor)
    if face is not None:
        # a folded thread slice's plain layout adds its bits' strides where the swizzle XORs them: a move that
        # carries into other bits is the pointer-swizzled tensor's (swizzled_face.py)
        return domain_offset(coord, face)
    outer = outer_of(full_layout(tensor))
    return view(tensor, outer(coord), outer)


class UserSwizzle(_core.Swizzle):
    """A swizzle made by cute.make_swizzle. CuTe DSL reads one in two units: composed with a layout
    (make_composed_layout) it permutes the layout's offsets, which count elements; given to a pointer (recast_ptr's
    swizzle_, SmemAllocator.allocate_tensor's and MemRange.get_tensor's swizzle) it permutes the byte address, as
    CuTe's swizzle pointers do, so that make_swizzle(3, 4, 3) is the 128-byte swizzle of 16-byte chunks whatever
    the element type. Our pointers and composed layouts count elements: a pointer takes such a swizzle through
    element_swizzle. A swizzle read off a composed layout (its .inner, as the shared-memory layout helpers give
    them) already counts elements and is taken as it is."""


def element_swizzle(sw, dtype, where: str):
    """`sw`, given to a pointer to `dtype` values, as a swizzle of their element offsets (see UserSwizzle)."""
    if not isinstance(sw, UserSwizzle) or sw.num_bits == 0:
        return sw
    shift = int(math.log2(storage_bits(dtype))) - 3      # log2 of bytes per element (-1 for packed 4-bit values)
    if sw.num_base < shift:
        raise DSLValueError(f"{where}: the swizzle {sw} counts bytes and moves address bits from {sw.num_base} up, "
                            f"inside a {storage_bits(dtype)}-bit {dtype.__name__} value; its base must be at least "
                            f"{shift}", user_location(3))
    return _core.Swizzle(sw.num_bits, sw.num_base - shift, sw.num_shift)


def recast_ptr(ptr, swizzle_=None, dtype=None):
    """The pointer as one to `dtype` values; with swizzle_ a swizzled shared-memory pointer: make_tensor(
    recast_ptr(p, sw, dtype=T), layout) is the tensor whose element c lives at the swizzle of p's address + layout(c).
    A swizzle from cute.make_swizzle swizzles byte addresses, as in CuTe DSL; one read off a composed layout
    (its .inner) swizzles element addresses (see UserSwizzle)."""
    if not isinstance(ptr, Pointer):
        raise DSLTypeError(f"recast_ptr expects a pointer, got {type(ptr).__name__}", user_location(2))
    if isinstance(ptr, SwizzledFace):     # a thread slice's: its logical origin, as a swizzled tensor's
        ptr = ptr.face._copy(swizzle=None)
    if isinstance(ptr, SwizzledOrigin):   # a swizzled tensor's iterator: its origin, swizzled anew or not at all
        ptr = ptr.origin()
    if swizzle_ is not None and not isinstance(swizzle_, _core.Swizzle):
        raise DSLTypeError(f"recast_ptr: swizzle_ must be a Swizzle (e.g. a composed layout's .inner), got "
                           f"{type(swizzle_).__name__}", user_location(2))
    if swizzle_ is not None and ptr.swizzle is not None:
        raise DSLTypeError(f"recast_ptr: the pointer is already swizzled ({ptr.swizzle})", user_location(2))
    if swizzle_ is not None and ptr.memspace != SMEM:
        raise DSLValueError(f"recast_ptr: only shared-memory pointers are swizzled, this one is {ptr.memspace}",
                            user_location(2))
    out = ptr.recast(dtype_of(dtype)) if dtype is not None else ptr
    if swizzle_ is None:   # CuTe DSL's recast_ptr keeps the address, not a swizzle the pointer had
        return out if dtype is None or out.swizzle is None else out._copy(swizzle=None)
    return out._copy(swizzle=element_swizzle(swizzle_, out.dtype, "recast_ptr"))


def size_in_bytes(dtype, layout) -> int:
    """The bytes a tensor of `dtype` over `layout` occupies (its cosize); 0 for no layout (None), as a program
    sizing an optional buffer passes it."""
    dtype = dtype_of(dtype)
    if layout is None:
        return 0
    cos = layout.cosize()
    inner = getattr(layout, "inner", None)
    if isinstance(inner, _core.Swizzle) and not inner.num_bits:
        # the identity swizzle (a layout made composed for a TMA atom): the bytes are the outer layout's, not
        # rounded to the swizzle's span as an allocation is; a TMA load's transaction bytes are counted so
        cos = layout.offset + layout.outer.cosize()
    # 6-bit elements count their 6 bits, as CuTe DSL counts them: the bytes a TMA load reads of densely packed
    # ones (what its barrier's transaction count takes), though shared memory holds them a byte each
    bits = dtype.width if dtype.width == 6 else storage_bits(dtype)
    return (cos * bits + 7) // 8 if isinstance(cos, int) else cos * bits // 8


def _recast_layout(layout, old_bits: int, new_bits: int):
    """CuTe's recast_layout for a static or dynamic non-swizzled layout: the unit-stride mode's extent and every
    other stride scaled by old_bits / new_bits."""
    def walk(sh, st, up):
        if isinstance(sh, tuple):
            parts = [walk(a, b, up) for a, b in zip(sh, st)]
            return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        if isinstance(st, int) and st == 0:
            return sh, 0
        if up > 1:   # fewer, wider elements
            if isinstance(st, int) and st == 1:
                if isinstance(sh, int) and sh % up:
                    raise DSLValueError(f"recast_tensor: the unit-stride extent {sh} is not a multiple of {up}",
                                        user_location(5))
                return sh // up, 1
            if isinstance(st, int) and st % up:
                raise DSLValueError(f"recast_tensor: the stride {st} is not a multiple of {up}", user_location(5))
            return sh, st // up
        down = -up
        if isinstance(st, int) and st == 1:
            return sh * down, 1
        return sh, st * down

    if old_bits == new_bits:
        return layout
    up = new_bits // old_bits if new_bits > old_bits else -(old_bits // new_bits)
    if (new_bits > old_bits and new_bits % old_bits) or (old_bits > new_bits and old_bits % new_bits):
        raise DSLValueError(f"recast_tensor: {old_bits}-bit and {new_bits}-bit elements do not divide each other",
                            user_location(3))
    shape, stride = walk(layout.shape, layout.stride, up)
    return _core.make_layout(shape, stride)


def recast_tensor(src, dtype, swizzle_=None):
    """The same memory viewed as `dtype` elements (e.g. four Float8 values as one Int32): the pointer and the
    layout are recast."""
    dtype = dtype_of(dtype)
    if swizzle_ is not None:
        raise DSLTypeError("recast_tensor(swizzle_=...): compose the swizzle with the layout instead",
                           user_location(2))
    if not isinstance(src, Tensor) or not isinstance(src.iterator, Pointer):
        raise DSLTypeError(f"recast_tensor expects a tensor in memory, got {type(src).__name__}", user_location(2))
    old, new = storage_bits(src.element_type), storage_bits(dtype)
    it = src.iterator
    if isinstance(it, (SwizzledOrigin, SwizzledFace)):
        # CuTe DSL recasts the pointer's address and not its swizzle: the result is the plain recast of the
        # program's layout over the origin (CuTe DSL's bytes, unswizzled; test_swizzled_partition.py)
        origin = it.origin() if isinstance(it, SwizzledOrigin) else it.face._copy(swizzle=None)
        return Tensor(origin.recast(dtype), _recast_layout(src.layout, old, new), dtype)
    L = full_layout(src)
    if isinstance(L, ComposedLayout):
        return Tensor(it.recast(dtype), _recast_composed(L, old, new), dtype)
    return Tensor(it.recast(dtype), _recast_layout(L, old, new), dtype)


def _recast_composed(L, old_bits: int, new_bits: int):
    """Swizzle o offset o outer, which counts old_bits-wide elements, counting new_bits-wide ones: the swizzle's bit
    positions (of element offsets) move by log2 of the ratio, so it permutes the same bytes; the offset and the
    outer layout scale. Refused where a swizzled bit falls inside a new element or the offset is not a whole
    number of them."""
    sw = L.inner
    if not isinstance(sw, _core.Swizzle):
        raise DSLTypeError(f"recast_tensor: the composed layout {L} has no swizzle inside", user_location(3))
    shift = int(math.log2(old_bits)) - int(math.log2(new_bits))
    if sw.num_bits and sw.num_base + shift < 0:
        raise DSLValueError(f"recast_tensor: the swizzle {sw} of {old_bits}-bit elements moves address bits from "
                            f"{sw.num_base} up, inside a {new_bits}-bit element; {new_bits}-bit elements need a "
                            f"swizzle base of at least {-shift} in {old_bits}-bit elements", user_location(3))
    off = L.offset * old_bits
    div = off if isinstance(off, int) else off.divisibility
    if div % new_bits:
        raise DSLValueError(f"recast_tensor: the swizzled layout's offset {L.offset} is not a whole number of "
                            f"{new_bits}-bit elements", user_location(3))
    inner = _core.Swizzle(sw.num_bits, sw.num_base + shift, sw.num_shift) if sw.num_bits else sw
    return _core.ComposedLayout(inner, off // new_bits, _recast_layout(L.outer, old_bits, new_bits))


def _flat_coord(tile, index):
    """The coordinate of `index` in the thread layout `tile`, one integer per top mode (CuTe's get_flat_coord)."""
    index = int_of(index)
    modes = [_core.get(tile, [i]) for i in range(_core.tuple_rank(tile.shape))] if isinstance(tile.shape, tuple) \
        else [tile]
    out = []
    for m in modes:
        leaves = []

        def walk(sh, st):
            if isinstance(sh, tuple):
                for a, b in zip(sh, st):
                    walk(a, b)
            else:
                leaves.append((sh, st))

        walk(m.shape, m.stride)
        c, scale = 0, 1
        for sh, st in leaves:
            if isinstance(st, int) and st == 0:
                part = 0
            else:
                part = (index // st) % sh
            c = c + part * scale
            scale = scale * sh
        out.append(c)
    return tuple(out)


def local_partition(target, tiler, index, proj=None):
    """The elements of `target` that thread `index` of the thread layout `tiler` owns: target is divided into
    tiles of tiler's shape and the thread takes its position in every tile (CuTe's local_partition)."""
    if not isinstance(tiler, (Layout, ComposedLayout)):
        tiler = _core.make_layout(norm_coord(tiler))
    if proj is not None:
        keep = [i for i, p in enumerate(proj) if p is not None]
        tiler = _core.make_layout(tuple(tiler.shape[i] for i in keep), tuple(tiler.stride[i] for i in keep))
    tile_shape = tuple(_core.product(s) for s in tiler.shape) if isinstance(tiler.shape, tuple) \
        else _core.product(tiler.shape)
    coord = _flat_coord(tiler, index)
    z = _core.zipped_divide(full_layout(target), tile_shape)
    rank = _core.tuple_rank(target.shape)
    rest = (None,) * rank if rank > 1 else None
    inner = coord if len(coord) > 1 else coord[0]
    return Tensor(target.iterator, z, target.element_type)[(inner, rest)]


# CuTe DSL's tensor API takes loc= / ip= everywhere (libraries' wrappers pass them on: QuACK's indexing patch)
accept_locations_in_class(Tensor)
accept_locations_in_class(TensorSSA)
accept_locations(globals(), ["make_tensor", "make_identity_tensor", "local_tile", "local_partition", "domain_offset",
                             "recast_ptr", "recast_tensor", "elem_less", "make_fragment", "make_fragment_like",
                             "make_rmem_tensor", "make_rmem_tensor_like", "full", "full_like", "zeros_like", "where"])
