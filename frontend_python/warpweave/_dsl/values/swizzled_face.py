"""The pointer a program sees of a pointer-swizzled shared-memory tensor's thread slice.

CuTe DSL keeps a swizzle that came with a tensor's pointer in the pointer through every partition: a tiled copy's
thread slice of such a tensor is a swizzled pointer at the slice's logical (unswizzled) origin and the slice of the
plain layout. Here a thread's slice addresses its elements through a plain layout where it can (atoms/swizzle_slice.py:
the swizzle folded into run-time strides, from a pointer already swizzled for the thread), which is what makes its
accesses cheap. Such a slice keeps beside it the tensor CuTe DSL has (`face`: the swizzled origin and the plain
layout), and its iterator is a SwizzledFace: to the tensor's own operations the physical pointer its plain layout
offsets, to the program the swizzled pointer at the logical origin (its type, printing, arithmetic, and what
make_tensor and recast_ptr take of it).
"""
from __future__ import annotations

from .pointer import Pointer


class SwizzledFace(Pointer):
    """A thread slice's iterator: the physical pointer of its plain layout, standing for `face`, CuTe DSL's swizzled
    pointer at the slice's logical origin (a Pointer whose swizzle counts elements)."""

    __slots__ = ("face",)

    @staticmethod
    def of(ptr, face):
        out = SwizzledFace(ptr.base, ptr.dtype, ptr.memspace, ptr.base_align, ptr.offset, ptr.host, ptr.wide,
                           ptr.assumed, None)
        out.face = face
        return out

    def base_pointer(self) -> Pointer:
        """The physical pointer the tensor's own (plain) layout offsets."""
        return self._copy()

    # What a program reads of it is the swizzled pointer's: ptr + k moves the logical address, before the swizzle.
    @property
    def type(self):
        return self.face.type

    @property
    def alignment(self) -> int:
        return self.face.alignment_at(0)

    def toint(self, dtype=None, *, loc=None, ip=None):
        return self.face._copy(swizzle=None).toint(dtype)

    def __add__(self, off):
        return self.face + off

    __radd__ = __add__

    def align(self, min_align: int):
        return align_swizzled(self, self.face._copy(swizzle=None), min_align)

    def __repr__(self):
        return repr(self.face)


def align_swizzled(it, logical: Pointer, min_align: int):
    """CuTe DSL's Pointer.align of a swizzled pointer `it` whose logical address is `logical`: a promise its
    alignment already keeps leaves it as it is (the swizzle too); a stronger one gives a plain pointer at the
    logical address with that alignment (CuTe DSL's result has no swizzle)."""
    out = Pointer.align(logical, min_align)
    return it if out.alignment <= it.alignment else out


def base_pointer(it):
    """The pointer a tensor's own layout (full_layout) offsets: an iterator that stands for a swizzled pointer
    moves physically through it (its + is the program's, in logical addresses)."""
    f = getattr(it, "base_pointer", None)
    return f() if f is not None else it
