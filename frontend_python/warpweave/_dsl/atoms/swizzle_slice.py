"""One thread's slice of a swizzled tensor as a plain layout, as CuTe DSL partitions one.

A swizzle Sw<B,M,S> XORs the B address bits from M+S up into the B bits from M: it is linear over XOR and leaves
every bit from H = M+S+B up alone. When a thread's slice of `Sw o (O + L)` has its offset O + T(thread) and each
of its value bits on address bits that no other part uses (power-of-two modes on disjoint bits), the address of a
value coordinate is Sw(base) XOR the XOR of Sw(2^b) over its set bits b. Where those images are disjoint too, each
XOR is an addition: flipping bit b of the coordinate adds (Sw(base) ^ Sw(2^b)) - Sw(base), a stride known once the
thread is (a run-time value for bits the swizzle reads or writes, +2^b for the rest), and modes from H up add their
stride unchanged. So the slice is the pointer moved by Sw(base) and a plain layout whose swizzled modes are split
into one-bit modes with those strides (16:128 under Sw<2,4,3> becomes (2,2,4):(d7,d8,512)). A library can then
read its modes' shapes and strides, as it can under CuTe DSL. A slice that does not meet these conditions keeps
the swizzle around it. Of a tensor whose swizzle came with its pointer, CuTe DSL's slice keeps the swizzle in the
pointer and the plain layout's slice: the plain slice here stands for that one (values/swizzled_face.py), which is
what the program reads of it."""
from __future__ import annotations

from ... import _core
from ..values.coordinates import slice_tuple
from ..values.numeric import Int32
from ..values.swizzled_face import SwizzledFace, base_pointer
from ..values.tensor import ComposedLayout, SwizzledOrigin, Tensor, face_of, full_layout, with_face


def _power_of_two(x) -> bool:
    return isinstance(x, int) and x > 0 and x & (x - 1) == 0


def _bits(n: int, s: int) -> list[int]:
    """The address bits a mode of n values at stride s walks (both powers of two)."""
    return [s.bit_length() - 1 + i for i in range(n.bit_length() - 1)]


def _leaves(shape, stride, out):
    if isinstance(shape, tuple):
        for sh, st in zip(shape, stride):
            _leaves(sh, st, out)
    else:
        out.append((shape, stride))
    return out


def _low_bits(shape, stride, high: int, out: set) -> bool:
    """Adds the address bits below `high` that the modes walk to out; False where they are not single bits or
    overlap what is there already."""
    for n, s in _leaves(shape, stride, []):
        if n == 1 or s == 0 or (isinstance(s, int) and s % high == 0):
            continue
        if not (_power_of_two(n) and _power_of_two(s)):
            return False
        bits = set(_bits(n, s))
        if bits & out:
            return False
        out |= bits
    return True


def _apply(sw, x):
    return x ^ ((x & (((1 << sw.num_bits) - 1) << (sw.num_base + sw.num_shift))) >> sw.num_shift)


def _toggle(sbase, bits):
    """(sbase ^ sum of 2^k over bits) - sbase, as a sum of +-2^k: a run-time stride known to be a multiple of its
    lowest bit's power (vector accesses along the other modes stay provably aligned)."""
    return sum(((sbase >> k) & 1) * (-2 << k) + (1 << k) for k in sorted(bits))


def _swizzled_bits(sw) -> int:
    """The address bits a swizzle reads or writes."""
    zmask = ((1 << sw.num_bits) - 1) << sw.num_base
    return zmask | zmask << sw.num_shift


def _fold(shape, stride, sw, high: int, bit_stride):
    """shape:stride with each swizzled bit its own mode of stride bit_stride(bit) (the other bits of a mode kept
    together where they stay contiguous); None where a mode is not single bits or bit_stride gives None."""
    if isinstance(shape, tuple):
        parts = [_fold(sh, st, sw, high, bit_stride) for sh, st in zip(shape, stride)]
        if any(p is None for p in parts):
            return None
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    if shape == 1 or stride == 0 or (isinstance(stride, int) and stride % high == 0):
        return shape, stride
    if not (_power_of_two(shape) and _power_of_two(stride)):
        return None
    swizzled = _swizzled_bits(sw)
    pieces = []  # (size, stride) from the mode's lowest bit up
    for b in _bits(shape, stride):
        s = bit_stride(b)
        if s is None:
            return None
        if (1 << b) & swizzled:
            pieces.append((2, s))
        elif pieces and isinstance(pieces[-1][1], int) and pieces[-1][1] * pieces[-1][0] == 1 << b:
            pieces[-1] = (pieces[-1][0] * 2, pieces[-1][1])
        else:
            pieces.append((2, s))
    if len(pieces) == 1:
        return pieces[0]
    return tuple(p[0] for p in pieces), tuple(p[1] for p in pieces)


def _split(shape, stride, sw, sbase, high: int):
    """shape:stride with each swizzled bit its own mode, of the stride flipping it adds under sbase; None where two
    bits' images overlap (their XORs are then no sums)."""
    images: set = set()

    def bit_stride(b):
        image = _apply(sw, 1 << b)
        image_bits = {k for k in range(image.bit_length()) if image >> k & 1}
        if image_bits & images:
            return None
        images.update(image_bits)
        return _toggle(sbase, image_bits) if (1 << b) & _swizzled_bits(sw) else 1 << b

    return _fold(shape, stride, sw, high, bit_stride)


def thread_slice(tensor: Tensor, thr_layout, coord):
    """tensor (swizzled, whose outer layout is replaced by thr_layout) sliced at coord = (thread, None, ...) as a
    plain tensor; None where the slice keeps its swizzle (see the module's note)."""
    found = unswizzled_slice(full_layout(tensor), thr_layout, coord)
    if found is None:
        return None
    offset, layout = found
    plain = Tensor(base_pointer(tensor.iterator) + offset, layout, tensor.element_type)
    if not isinstance(tensor.iterator, SwizzledOrigin):
        return plain
    # the swizzle came with the pointer: the program sees CuTe DSL's slice, the swizzled pointer at its origin
    L = full_layout(tensor)
    return with_face(plain, Tensor(tensor.iterator, ComposedLayout(L.inner, L.offset, thr_layout),
                                   tensor.element_type)[coord])


def unswizzled_slice(L, thr_layout, coord):
    """(offset, plain layout) of the swizzled layout L, its outer layout replaced by thr_layout, sliced at coord;
    None where there is none."""
    if not isinstance(L, ComposedLayout) or not isinstance(L.inner, _core.Swizzle) or not isinstance(L.offset, int):
        return None
    sw = L.inner
    if sw.num_bits <= 0 or sw.num_shift <= 0 or _core.tuple_rank(thr_layout.shape) < 2:
        return None
    high = 1 << (sw.num_base + sw.num_shift + sw.num_bits)
    shape, stride = thr_layout.shape, thr_layout.stride
    if not isinstance(coord, tuple) or len(coord) != len(shape) or coord[0] is None or \
            not all(_all_none(c) for c in coord[1:]):
        return None
    used = {k for k in range((L.offset % high).bit_length()) if L.offset >> k & 1}
    if not _low_bits(shape[0], stride[0], high, used):  # the thread's bits, apart from the offset's
        return None
    rest_shape, rest_stride = slice_tuple(coord, shape), slice_tuple(coord, stride)
    value_bits: set = set()
    if not _low_bits(rest_shape, rest_stride, high, value_bits) or value_bits & used:
        return None
    thread_part = _core.crd2idx(coord[0], _core.make_layout(shape[0], stride[0]))
    if not isinstance(thread_part, int):
        thread_part = Int32(thread_part)  # the layout algebra's symbolic offset, as a number the XORs work on
    base = thread_part + L.offset
    # Sw(base) - base only moves bits from M up: written as base plus a multiple of 2^M, the pointer keeps the
    # alignment base gives it (a thread's first pair of values stays one vector).
    if isinstance(base, int):
        sbase = _apply(sw, base)
    else:
        sbase = base + ((_apply(sw, base) - base) >> sw.num_base) * (1 << sw.num_base)
    split = _split(rest_shape, rest_stride, sw, sbase, high)
    if split is None:
        return None
    return sbase, _core.make_layout(split[0], split[1])


def _all_none(c) -> bool:
    return c is None or (isinstance(c, tuple) and all(_all_none(x) for x in c))


def _bit_strides(shape, stride, plain_shape, plain_stride, high: int, out: dict) -> dict:
    """The stride each address bit of a pointer-swizzled slice's layout (shape:stride) has in the plain layout that
    folds it (thread_slice: each of its modes is one of the other's, split into pieces from its lowest bit up)."""
    if isinstance(shape, tuple):
        for i in range(len(shape)):
            _bit_strides(shape[i], stride[i], plain_shape[i], plain_stride[i], high, out)
        return out
    if shape == 1 or stride == 0 or (isinstance(stride, int) and stride % high == 0):
        return out
    bits = iter(_bits(shape, stride))
    for n, s in _leaves(plain_shape, plain_stride, []):
        for i in range(n.bit_length() - 1):
            out[next(bits)] = s if i == 0 else s * (1 << i)
    return out


def pointer_swizzled(t) -> bool:
    """Whether t is a tensor whose swizzle is in its pointer, as the program sees it (folded or not)."""
    return type.__instancecheck__(Tensor, t) and isinstance(t.iterator, (SwizzledOrigin, SwizzledFace)) and \
        (face_of(t) is not None or isinstance(t._layout, ComposedLayout))


def refold(src: Tensor, layout):
    """The tensor whose swizzle is in its pointer src (pointer_swizzled) given the program's layout `layout` over
    the same origin (a mode operation on its layout: grouped, selected, flattened, coalesced, divided). Of a folded
    thread slice (thread_slice), a plain layout made of the same bits' strides standing for CuTe DSL's tensor, the
    swizzled origin with `layout`; that tensor itself where some mode of `layout` is not made of its bits."""
    face = face_of(src)
    out = Tensor((src if face is None else face).iterator, layout, src.element_type)
    if face is None:
        return out
    L = full_layout(face)
    sw = L.inner
    high = 1 << (sw.num_base + sw.num_shift + sw.num_bits)
    strides = _bit_strides(L.outer.shape, L.outer.stride, src._layout.shape, src._layout.stride, high, {})
    used: set = set()

    def bit_stride(b):
        # a bit two modes walk adds with a carry, which its folded stride (an XOR's) does not
        if b in used:
            return None
        used.add(b)
        return strides.get(b)

    folded = _fold(layout.shape, layout.stride, sw, high, bit_stride)
    if folded is None:
        return out
    return with_face(Tensor(base_pointer(src.iterator), _core.make_layout(folded[0], folded[1]),
                            src.element_type), out)
