"""CuTe layout algebra with CuTe DSL's names and argument conventions, over the C++ core.

Everything here works in plain Python, outside any kernel. Shapes, strides and coordinates are ints and tuples;
dynamic (runtime) integers are SymInt. A tensor passes through every operation that acts on its layout: an object
with a ``layout`` attribute and a ``_ww_with_layout(layout)`` method gets its layout replaced.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

from .. import _core
from .._dsl.base.markers import accept_locations
from .._dsl.values.numeric import Int32, Int64, Integer
from .._dsl.values.runtime import SymInt as _runtime_SymInt
from .._dsl.atoms.swizzle_slice import pointer_swizzled, refold
from .._dsl.values.tensor import UserSwizzle, full_layout
from .custom_composed_layout import CustomComposedLayout

Layout = _core.Layout
ComposedLayout = _core.ComposedLayout
Swizzle = _core.Swizzle
SymInt = _runtime_SymInt  # constructible (a fake tensor's symbolic extent); isinstance covers traced integers
ScaledBasis = _core.ScaledBasis

_LAYOUTS = (Layout, ComposedLayout)


def _ir_handle(self):
    """CuTe DSL's `.value` of a layout: the IR handle its dialect's ops take. A layout here is its own handle (no
    IR op makes one), so code written against that dialect (cute_nvgpu's atom builders) gets the layout itself."""
    return self


for _cls in _LAYOUTS:
    _cls.value = property(_ir_handle)


class EmptyLayout:
    """CuTe's rank-0 layout ():(): no modes, one element at offset 0. Programs build layouts onto it mode by mode
    (cute.append(cute.make_layout(()), mode)); the core's layouts have at least one mode, so it is this value, which
    append and prepend turn into one."""
    shape = ()
    stride = ()
    rank = 0
    depth = 0

    def size(self):
        return 1

    def cosize(self):
        return 1

    def __call__(self, coord=()):
        return 0

    def __eq__(self, other):
        return isinstance(other, EmptyLayout)

    def __hash__(self):
        return hash(EmptyLayout)

    def __str__(self):
        return "():()"

    __repr__ = __str__


def _only_mode(elem, op: str):
    """append / prepend onto the rank-0 layout: the layout whose one mode is elem."""
    if isinstance(elem, EmptyLayout):
        raise TypeError(f"{op}: a mode with no modes of its own (the layout ()) cannot be added to a layout")
    if not _is_layout(elem):
        raise TypeError(f"{op}: the rank-0 layout ():() takes a layout as its mode, got {type(elem).__name__}")
    return _core.make_layout_from_modes([elem])


__all__ = [
    "Layout", "ComposedLayout", "Swizzle", "SymInt", "ScaledBasis", "EmptyLayout",
    "make_layout", "make_ordered_layout", "make_identity_layout", "make_layout_tv", "make_swizzle",
    "make_composed_layout", "parse_layout", "size", "cosize", "rank", "depth", "shape", "stride", "get", "select",
    "flatten", "flatten_to_tuple", "group_modes", "append", "prepend", "crd2idx", "idx2crd", "coalesce", "filter",
    "filter_zeros",
    "composition", "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide", "tiled_divide",
    "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product", "blocked_product",
    "raked_product", "max_common_layout", "max_common_vector", "tile_to_shape", "recast_layout", "ceil_div",
    "shape_div", "product", "product_each", "is_static", "is_congruent", "is_weakly_congruent", "round_up", "slice_", "pretty_str", "repeat_like",
]


def _is_layout(x: Any) -> bool:
    return isinstance(x, _LAYOUTS)


def _layout_of(x: Any, op: str):
    """The layout an operation transforms: a tensor's, or the one a tensor names for its layout algebra
    (``_ww_algebra_layout``: cute.experimental's bounded tensors divide their coordinates)."""
    if _is_layout(x):
        return x
    inner = getattr(x, "_ww_algebra_layout", None)
    return inner if _is_layout(inner) else _data_layout_of(x, op)


def _data_layout_of(x: Any, op: str):
    """The layout that addresses x's elements (what strides, offsets and inverses are read from)."""
    if _is_layout(x):
        return x
    inner = full_layout(x) if hasattr(x, "layout") else None
    if _is_layout(inner):
        return inner
    raise TypeError(f"{op}: expected a Layout, ComposedLayout or Tensor, got {type(x).__name__}")


def _rewrap(x: Any, new_layout):
    """Returns new_layout for a layout argument, or the tensor x with new_layout."""
    if _is_layout(x):
        return new_layout
    return x._ww_with_layout(new_layout)


def _keeps_face(op):
    """op on a tensor whose swizzle is in its pointer (a thread slice that folds one too, values/swizzled_face.py)
    acts on the layout the program sees, CuTe DSL's, over the same swizzled origin; a folded slice's result is
    folded again where it can be."""
    @functools.wraps(op)
    def wrapped(input, *args, **kwargs):
        seen = op(input.layout, *args, **kwargs) if pointer_swizzled(input) else None
        return refold(input, seen) if isinstance(seen, _core.Layout) else op(input, *args, **kwargs)
    return wrapped


def _mode_path(mode) -> list[int]:
    if mode is None:
        return []
    if isinstance(mode, int):
        return [mode]
    return list(mode)


def _tuple_get(t, path: Sequence[int]):
    for i in path:
        if isinstance(t, tuple):
            if not -len(t) <= i < len(t):
                raise ValueError(f"get: mode {i} out of range for {t}")
            t = t[i]
        elif i != 0:
            raise ValueError(f"get: mode {i} out of range for the integer {t}")
    return t


def _select_layout(x, mode, op, shape_only=False):
    lay = _layout_of(x, op)
    path = _mode_path(mode)
    if not path:
        return lay
    if isinstance(lay, ComposedLayout):
        if shape_only:
            return _core.get(lay.outer, path)  # a composed layout has its outer layout's shape
        # a mode of the outer layout under the same inner function and offset (CuTe's get of a composition: one
        # stage's modes of a swizzled staged layout, the TMA mode of a divided one)
        return ComposedLayout(lay.inner, lay.offset, _core.get(lay.outer, path))
    return _core.get(lay, path)


# --- Construction ---------------------------------------------------------------------------------------------

def make_layout(*args, shape=None, stride=None):
    """make_layout(shape, stride=None) (also with shape= as a keyword): compact column-major by default.
    make_layout(L0, L1, ...) concatenates layouts as modes."""
    if shape is not None:
        if args:
            raise TypeError("make_layout: the shape is given both positionally and as shape=")
        args = (shape,)
    if len(args) == 1 and args[0] == () and (stride is None or stride == ()):
        return EmptyLayout()
    if args and all(_is_layout(a) for a in args):
        if stride is not None:
            raise TypeError("make_layout: stride= is not taken with layouts as modes")
        return _core.make_layout_from_modes(list(args))
    if len(args) != 1:
        raise TypeError("make_layout: expected a shape (and stride=), or layouts as modes")
    return _core.make_layout(args[0], stride)


def make_ordered_layout(shape, order):
    return _core.make_ordered_layout(shape, order)


def make_identity_layout(shape):
    return _core.make_identity_layout(shape)


def make_layout_tv(thr_layout, val_layout):
    """Returns (tiler_mn, layout_tv): layout_tv maps (thread, value) into the tiler_mn tile of
    raked_product(thr_layout, val_layout)."""
    return _core.make_layout_tv(thr_layout, val_layout)


def make_swizzle(b: int, m: int, s: int):
    """Swizzle<b, m, s>. Composed with a layout it permutes the layout's (element) offsets; given to a pointer
    (recast_ptr, allocate_tensor, get_tensor) it permutes byte addresses, as in CuTe DSL (UserSwizzle)."""
    return UserSwizzle(b, m, s)


def make_composed_layout(inner, offset, outer):
    """inner o offset o outer: R(c) = inner(offset + outer(c)); inner is a Swizzle, a Layout, or a Python function
    of a coordinate (custom_composed_layout.py)."""
    if callable(inner) and not isinstance(inner, (Layout, ComposedLayout, Swizzle)):
        return CustomComposedLayout(inner, offset, outer)
    return ComposedLayout(inner, offset, outer)


def parse_layout(text: str):
    """Reads CuTe's notation, e.g. ``(4,(2,3)):(1,(4,8))`` or ``S<3,4,3> o 0 o (8,64):(64,1)``."""
    if not isinstance(text, str):
        raise TypeError(f"parse_layout: expected a str, got {type(text).__name__}")
    return _core.parse_layout(text)


# --- Queries --------------------------------------------------------------------------------------------------

def _shape_of(x):
    if isinstance(x, (int, tuple, _core.SymInt)) or hasattr(x, "__ww_int__"):
        return x
    return _layout_of(x, "shape").shape


def _dsl_int(x):
    """A dynamic result as a DSL integer (comparable, usable in control flow); static results stay ints."""
    if isinstance(x, _core.SymInt):
        return (Int64 if x.bits > 32 else Int32)._wrap(x)
    return x


def size(a, mode=[]):  # noqa: B006 (CuTe DSL's signature)
    path = _mode_path(mode)
    if isinstance(a, EmptyLayout) and not path:
        return 1
    if isinstance(a, (int, tuple, _core.SymInt)) or hasattr(a, "__ww_int__"):
        return _dsl_int(_core.product(_tuple_get(a, path)))
    if not path and not _is_layout(a) and not _is_layout(getattr(a, "layout", None)) and hasattr(a, "size"):
        n = a.size() if callable(a.size) else a.size  # a tiled copy or MMA: its number of threads
        return _dsl_int(n)
    return _dsl_int(_select_layout(a, path, "size", True).size())


def cosize(a, mode=[]):  # noqa: B006
    return _dsl_int(_select_layout(a, mode, "cosize").cosize())


def _is_int_tuple(a) -> bool:
    """An IntTuple: an integer (static, a symbolic extent, or a run-time integer value) or a tuple of them."""
    return isinstance(a, (int, tuple, _core.SymInt, SymInt)) or (isinstance(a, Integer) and not isinstance(a, bool))


def _as_core_tuple(a):
    # a leaf's place in the hierarchy is all that rank and depth ask of it: any integer stands for a run-time one
    if isinstance(a, tuple):
        return tuple(_as_core_tuple(c) for c in a)
    return a if isinstance(a, (int, _core.SymInt)) else 1


def rank(a, mode=[]):  # noqa: B006
    path = _mode_path(mode)
    if isinstance(a, EmptyLayout) and not path:
        return 0
    if _is_int_tuple(a):
        return _core.tuple_rank(_as_core_tuple(_tuple_get(a, path)))
    return _select_layout(a, path, "rank", True).rank


def depth(a, mode=[]):  # noqa: B006
    path = _mode_path(mode)
    if _is_int_tuple(a):
        return _core.tuple_depth(_as_core_tuple(_tuple_get(a, path)))
    return _select_layout(a, path, "depth", True).depth


def shape(a, mode=[]):  # noqa: B006
    path = _mode_path(mode)
    return _tuple_get(_shape_of(a), path) if path else _shape_of(a)


def stride(a, mode=[]):  # noqa: B006
    lay = _data_layout_of(a, "stride")
    if isinstance(lay, ComposedLayout):
        raise TypeError("stride: a composed layout has no single stride; use its outer layout")
    return _tuple_get(lay.stride, _mode_path(mode))


def is_static(x) -> bool:
    if isinstance(x, int):
        return True
    if isinstance(x, tuple):
        return all(is_static(c) for c in x)
    if isinstance(x, _core.SymInt):
        return False
    if isinstance(x, Layout):
        return x.is_static()
    if isinstance(x, ComposedLayout):
        return x.outer.is_static()
    return False


def _profile(x):
    """The hierarchy of an IntTuple or of a layout's shape: a tuple of profiles, or None for a leaf."""
    if _is_layout(x) or isinstance(x, EmptyLayout):
        x = x.outer.shape if isinstance(x, ComposedLayout) else x.shape
    return tuple(_profile(c) for c in x) if isinstance(x, tuple) else None


def is_congruent(a, b) -> bool:
    """Whether a and b (IntTuples or layouts, by their shapes) have the same hierarchy: both leaves, or tuples of
    the same length whose modes are congruent."""
    return _profile(a) == _profile(b)


def is_weakly_congruent(a, b) -> bool:
    """Whether a's hierarchy is b's with some subtrees of b collapsed to leaves: a leaf of a matches any mode of
    b; a tuple of a matches a tuple of b of the same length whose modes a's modes weakly match."""
    def weak(p, q):
        if p is None:
            return True
        return q is not None and len(p) == len(q) and all(weak(x, y) for x, y in zip(p, q))
    return weak(_profile(a), _profile(b))


def product(a):
    return _core.product(a)


def product_each(a):
    return _core.product_each(a)


# --- Modes ----------------------------------------------------------------------------------------------------

@_keeps_face
def get(input, mode):
    """The sub-tuple or sub-layout at a mode path, e.g. get(layout, mode=[1, 0])."""
    path = _mode_path(mode)
    if isinstance(input, tuple) or isinstance(input, int):
        return _tuple_get(input, path)
    return _rewrap(input, _select_layout(input, path, "get"))


def _composed_mode(self, i):
    """composed[i]: get(composed, mode=[i]), as a layout's own indexing is."""
    if not isinstance(i, int):
        raise TypeError(f"a composed layout is indexed by a mode number, got {i!r}")
    return get(self, mode=[i])


ComposedLayout.__getitem__ = _composed_mode


@_keeps_face
def select(input, mode):
    path = _mode_path(mode)
    if isinstance(input, tuple):
        return tuple(input[i] for i in path)
    if isinstance(input, _core.ComposedLayout):
        # the modes of the outer layout, under the same swizzle and offset (one stage of a staged layout)
        return _core.ComposedLayout(input.inner, input.offset, _core.select(input.outer, path))
    return _rewrap(input, _core.select(_layout_of(input, "select"), path))


@_keeps_face
def flatten(a):
    if isinstance(a, (int, tuple)):
        return _core.tuple_flatten(a)
    return _rewrap(a, _core.flatten(_layout_of(a, "flatten")))


def flatten_to_tuple(a) -> tuple:
    """The leaves of a nested tuple (a shape, stride or coordinate, static or dynamic) as one flat tuple, depth
    first; anything else is the tuple of itself (a layout is one leaf here: flatten is what flattens its modes)."""
    if not isinstance(a, tuple):
        return (a,)
    return tuple(leaf for mode in a for leaf in flatten_to_tuple(mode))


@_keeps_face
def group_modes(input, begin: int, end: int = None):
    if isinstance(input, tuple):
        end = len(input) if end is None else end
        return input[:begin] + (tuple(input[begin:end]),) + input[end:]
    lay = _layout_of(input, "group_modes")
    if isinstance(lay, _core.ComposedLayout):
        # Grouping modes changes no offset: the swizzle and its offset stay as they are around the outer layout.
        outer = lay.outer
        end = outer.rank if end is None else end
        return _rewrap(input, _core.ComposedLayout(lay.inner, lay.offset, _core.group_modes(outer, begin, end)))
    end = lay.rank if end is None else end
    return _rewrap(input, _core.group_modes(lay, begin, end))


def _on_outer(lay, fn):
    """fn of a layout; of a composed layout, fn of its outer layout under the same inner function and offset (a
    stage mode appended to a swizzled shared-memory layout, as CuTe DSL's programs stage them)."""
    if isinstance(lay, ComposedLayout):
        return ComposedLayout(lay.inner, lay.offset, fn(lay.outer))
    return fn(lay)


@_keeps_face
def append(input, elem, up_to_rank: int = None):
    if isinstance(input, (int, tuple)):
        t = input if isinstance(input, tuple) else (input,)
        if up_to_rank is None:
            return t + (elem,)
        return t + (elem,) * max(0, up_to_rank - len(t))
    if isinstance(input, EmptyLayout) and up_to_rank is None:
        return _only_mode(elem, "append")
    if isinstance(elem, EmptyLayout):
        raise TypeError("append: a mode with no modes of its own (the layout ()) cannot be added to a layout")
    lay = _layout_of(input, "append")
    if isinstance(lay, _core.ComposedLayout):
        # New modes change no offset: the swizzle and its offset stay around the outer layout (a swizzled stage
        # given unit modes for an MMA's rank).
        return _rewrap(input, _core.ComposedLayout(lay.inner, lay.offset, append(lay.outer, elem, up_to_rank)))
    if up_to_rank is None:
        return _rewrap(input, _on_outer(lay, lambda o: _core.append(o, elem)))
    return _rewrap(input, _on_outer(lay, lambda o: _core.append_to_rank(o, up_to_rank, elem)))


@_keeps_face
def prepend(input, elem, up_to_rank: int = None):
    if isinstance(input, (int, tuple)):
        t = input if isinstance(input, tuple) else (input,)
        if up_to_rank is None:
            return (elem,) + t
        return (elem,) * max(0, up_to_rank - len(t)) + t
    if isinstance(input, EmptyLayout) and up_to_rank is None:
        return _only_mode(elem, "prepend")
    if isinstance(elem, EmptyLayout):
        raise TypeError("prepend: a mode with no modes of its own (the layout ()) cannot be added to a layout")
    lay = _layout_of(input, "prepend")
    if isinstance(lay, _core.ComposedLayout):
        # New modes change no offset: the swizzle and its offset stay around the outer layout (a swizzled stage
        # given unit modes for an MMA's rank).
        return _rewrap(input, _core.ComposedLayout(lay.inner, lay.offset, prepend(lay.outer, elem, up_to_rank)))
    if up_to_rank is None:
        return _rewrap(input, _on_outer(lay, lambda o: _core.prepend(o, elem)))
    return _rewrap(input, _on_outer(lay, lambda o: _core.prepend_to_rank(o, up_to_rank, elem)))


# --- Coordinates ----------------------------------------------------------------------------------------------

def crd2idx(coord, layout):
    """The offset of a coordinate (or 1-D index) under a layout."""
    return _core.crd2idx(coord, _data_layout_of(layout, "crd2idx"))


def idx2crd(idx, shape):
    """The colexicographic coordinate of an index in a shape."""
    return _core.idx2crd(idx, shape)


# --- Algebra --------------------------------------------------------------------------------------------------

@_keeps_face
def coalesce(input, target_profile=None):
    return _rewrap(input, _core.coalesce(_layout_of(input, "coalesce"), target_profile))


def _filtered(input, op, f, target_profile):
    """f (the core's filter) of input's layout; of a composed layout's outer layout, the swizzle and offset kept:
    filtering reindexes the domain, which the composition's outer layout is (a swizzled tensor's partition)."""
    lay = _layout_of(input, op)
    if isinstance(lay, _core.ComposedLayout):
        return _rewrap(input, _core.ComposedLayout(lay.inner, lay.offset, f(lay.outer, target_profile)))
    return _rewrap(input, f(lay, target_profile))


@_keeps_face
def filter_zeros(input, *, target_profile=None):
    return _filtered(input, "filter_zeros", _core.filter_zeros, target_profile)


@_keeps_face
def filter(input, *, target_profile=None):  # noqa: A001 (CuTe's name)
    return _filtered(input, "filter", _core.filter, target_profile)


@_keeps_face
def composition(lhs, rhs):
    """lhs o rhs: (lhs o rhs)(c) == lhs(rhs(c)). rhs may be a layout or a tiler (a tuple of layouts/ints/None)."""
    if isinstance(lhs, Swizzle):
        return _core.composition(lhs, rhs)
    return _rewrap(lhs, _core.composition(_layout_of(lhs, "composition"), rhs))


def complement(input, cotarget=None):
    return _core.complement(_data_layout_of(input, "complement"), cotarget)


def right_inverse(input):
    return _core.right_inverse(_data_layout_of(input, "right_inverse"))


def left_inverse(input):
    return _core.left_inverse(_data_layout_of(input, "left_inverse"))


def _tiler_op(name):
    fn = getattr(_core, name)

    def op(target, tiler):
        return _rewrap(target, fn(_layout_of(target, name), tiler))

    op.__name__ = name
    op.__doc__ = f"CuTe's {name}(target, tiler); a tensor target keeps its data and gets the new layout."
    return _keeps_face(op)


logical_divide = _tiler_op("logical_divide")
zipped_divide = _tiler_op("zipped_divide")
tiled_divide = _tiler_op("tiled_divide")
flat_divide = _tiler_op("flat_divide")
logical_product = _tiler_op("logical_product")
zipped_product = _tiler_op("zipped_product")
tiled_product = _tiler_op("tiled_product")
flat_product = _tiler_op("flat_product")


def blocked_product(block, tiler):
    return _core.blocked_product(_layout_of(block, "blocked_product"), tiler)


def raked_product(block, tiler):
    return _core.raked_product(_layout_of(block, "raked_product"), tiler)


def tile_to_shape(atom, trg_shape, order=None):
    return _core.tile_to_shape(_layout_of(atom, "tile_to_shape"), trg_shape, order)


def max_common_layout(a, b):
    return _core.max_common_layout(_data_layout_of(a, "max_common_layout"), _data_layout_of(b, "max_common_layout"))


def max_common_vector(a, b):
    return _core.max_common_vector(_data_layout_of(a, "max_common_vector"), _data_layout_of(b, "max_common_vector"))


def recast_layout(new_type_bits: int, old_type_bits: int, src_layout):
    """src_layout, which counts values of old_type_bits, counting values of new_type_bits. A swizzled layout
    (Swizzle o offset o layout) recasts its layout and moves its swizzle and offset to the new unit: the
    swizzle's base down by log2 of the ratio when the values widen, up when they narrow (CuTe's upcast and
    downcast of a ComposedLayout)."""
    layout = _data_layout_of(src_layout, "recast_layout")
    if isinstance(layout, ComposedLayout) and isinstance(layout.inner, Swizzle):
        return _recast_swizzled(new_type_bits, old_type_bits, layout)
    return _core.recast_layout(new_type_bits, old_type_bits, layout)


def _recast_swizzled(new_bits: int, old_bits: int, layout):
    sw, offset = layout.inner, layout.offset
    outer = _core.recast_layout(new_bits, old_bits, layout.outer)
    wide, narrow = max(new_bits, old_bits), min(new_bits, old_bits)
    ratio = wide // narrow
    if wide % narrow or ratio & (ratio - 1):
        raise ValueError(f"recast_layout: a swizzled layout recasts between widths a power of two apart, got "
                         f"{old_bits} to {new_bits} bits")
    shift = ratio.bit_length() - 1
    if new_bits > old_bits:
        if sw.num_bits and sw.num_base < shift or not isinstance(offset, int) or offset % ratio:
            raise ValueError(f"recast_layout: {layout} moves units smaller than a {new_bits}-bit value")
        return ComposedLayout(Swizzle(sw.num_bits, sw.num_base - shift if sw.num_bits else sw.num_base,
                                      sw.num_shift), offset // ratio, outer)
    base = sw.num_base + shift if sw.num_bits else sw.num_base
    return ComposedLayout(Swizzle(sw.num_bits, base, sw.num_shift), offset * ratio, outer)


def round_up(a, b):
    """a rounded up to a multiple of b; for tuples mode by mode, modes missing in b counting as 1 (CuTe's
    round_up)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        if len(b) > len(a):
            raise ValueError(f"round_up: {b} has more modes than {a}")
        return tuple(round_up(x, y) for x, y in zip(a, b + (1,) * (len(a) - len(b))))
    if isinstance(a, tuple) or isinstance(b, tuple):
        raise TypeError(f"round_up: expected two integers or two tuples, got {a!r} and {b!r}")
    if isinstance(b, int) and not isinstance(b, bool) and b <= 0:
        raise ValueError(f"round_up: the multiple must be positive, got {b}")
    return ((a + b - 1) // b) * b


def _slice_tuple(coord, t, op):
    """CuTe's slice: what lies under the None (`_`) leaves of coord, with one level of nesting removed."""
    if coord is None:
        return t
    if not isinstance(coord, tuple):
        return ()
    out = []

    def lift(c, x):
        if isinstance(c, tuple):
            if not isinstance(x, tuple) or len(c) != len(x):
                raise ValueError(f"{op}: the coordinate {coord} does not match the shape of {t}")
            for ci, xi in zip(c, x):
                lift(ci, xi)
        elif c is None:
            out.append(x)

    lift(coord, t)
    return tuple(out)


def slice_(src, coord):
    """The part of src (a tuple, layout or tensor) that the None leaves of coord keep, as CuTe's slice: for a
    layout, the layout of the modes left free; a tensor is indexed (src[coord])."""
    if isinstance(src, (int, tuple)):
        return _slice_tuple(coord, src, "slice_")
    if isinstance(src, ComposedLayout):
        # CuTe's slice of a composed layout: the outer layout's slice, its fixed coordinates' offset added to the
        # composed offset (the swizzle then sees the same offsets as before).
        if coord is None:
            return src
        zeros = _core.make_layout(src.outer.shape, src.outer.stride)
        fixed = zeros(_zero_free(coord))
        return _core.ComposedLayout(src.inner, src.offset + fixed, slice_(zeros, coord))
    if isinstance(src, Layout):
        if coord is None:
            return src
        shape_part = _slice_tuple(coord, src.shape, "slice_")
        if shape_part == ():
            return Layout(1, 0)
        return _core.make_layout(shape_part, _slice_tuple(coord, src.stride, "slice_"))
    if hasattr(src, "__getitem__") and _is_layout(getattr(src, "layout", None)):
        return src[coord]
    raise TypeError(f"slice_: expected a tuple, Layout or Tensor, got {type(src).__name__}")


def _zero_free(coord):
    """coord with its None leaves (the free modes) at 0."""
    if isinstance(coord, tuple):
        return tuple(_zero_free(c) for c in coord)
    return 0 if coord is None else coord


def pretty_str(arg) -> str:
    """CuTe's notation for a value: layouts as shape:stride, tuples as (a,b,...), other values as str()."""
    if isinstance(arg, tuple):
        return "(" + ",".join(pretty_str(x) for x in arg) + ")"
    if isinstance(arg, list):
        return "[" + ",".join(pretty_str(x) for x in arg) + "]"
    return str(arg)


def ceil_div(input, tiler):
    """The number of tiles of `tiler` along each mode of the shape `input` (the rest modes of a divide)."""
    return _core.ceil_div(_shape_of(input), tiler)


def shape_div(a, b):
    return _core.shape_div(a, b)


def repeat_like(x, target):
    """A tuple of target's nesting with x at every leaf (CuTe's repeat_like): repeat_like(0, (2, (3, 4))) is
    (0, (0, 0))."""
    if isinstance(target, tuple):
        return tuple(repeat_like(x, t) for t in target)
    return x


# CuTe DSL's layout functions take loc= / ip= (library helpers pass theirs on: cute.shape(tile, loc=loc))
accept_locations(globals(), [_n for _n in __all__ if callable(globals().get(_n)) and not isinstance(globals()[_n], type)])
