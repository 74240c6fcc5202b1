"""Register tensors (fragments): a static layout over registers of one type, made in a kernel as one array that
LLVM keeps in registers, or on the host side of a @cute.jit function as an array of each call (values/hooks.py);
CuTe's make_fragment_like orders a fragment for vector copies from its source."""
from __future__ import annotations

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from . import hooks
from .coordinates import norm_coord
from .numeric import dtype as dtype_of
from .pointer import RMEM, Pointer, is_packed, mem_type, storage_bits
from .tensor_ssa import TensorSSA
from .tensor_type import ComposedLayout, Layout, Tensor, face_of, full_layout, outer_of


def _alloca(dtype, n: int, align: int) -> int:
    b = trace.builder()
    with trace.at_entry():
        # One alloca of an array type (not n of the element type): LLVM's SROA splits only single allocations, and
        # it must, so that fragments live in registers.
        one = b.constant_int(1, "i32")
        return b.op1("llvm.alloca", [one], "!llvm.ptr",
                     f"alignment = {align} : i64, elem_type = !llvm.array<{n} x {mem_type(dtype)}>")


_REGISTER_FILE_BYTES = 255 * 4
# The largest register tensor a thread may make: 16 register files.
_REGISTER_TENSOR_BYTES = 16 * _REGISTER_FILE_BYTES
# The widest array a strided register tensor may span (the few values it holds are promoted to registers, but a
# vast array stalls that promotion).
_REGISTER_SPAN_BYTES = 16 * _REGISTER_TENSOR_BYTES


def _distinct_bound(layout) -> int:
    """An upper bound of the distinct offsets a layout addresses: the product of its extents along modes of
    nonzero stride (unbounded when an extent is dynamic)."""
    def walk(shape, stride):
        if isinstance(shape, tuple):
            n = 1
            for sh, st in zip(shape, stride):
                m = walk(sh, st)
                if m is None:
                    return None
                n *= m
            return n
        if not isinstance(shape, int):
            return None
        return 1 if isinstance(stride, int) and stride == 0 else shape

    n = walk(layout.shape, layout.stride)
    return n if n is not None else 1 << 62


def make_rmem_tensor(layout_or_shape, dtype):
    """A register tensor: a layout (or a shape, column-major) over registers of `dtype`."""
    dtype = dtype_of(dtype)
    layout = layout_or_shape if isinstance(layout_or_shape, (Layout, ComposedLayout)) \
        else _core.make_layout(norm_coord(layout_or_shape))
    cos = layout.cosize()
    if not isinstance(cos, int):
        raise DSLTypeError(f"a register tensor needs a static layout, got {layout}", user_location(2))
    if not trace.in_kernel():  # the host side of a @cute.jit function: an array of each call (host_values.py)
        return hooks.local_tensor_on_host(layout, dtype)
    # A thread has at most 255 32-bit registers (1020 bytes), but a register tensor somewhat larger is still held
    # there when its values are not all live at once (CuTe DSL's Blackwell tutorials keep a 256-value Float32
    # epilogue fragment, of which one tensor-memory load's worth is live; ptxas fits it in 166 registers) and
    # spills otherwise, as in CUDA. A far larger one is a mistake (a shape meant for shared memory, an extent too
    # many), and a huge one stalls LLVM's promotion of the array to registers (2^30 values never finished).
    # What counts is the values the tensor holds: a strided layout (a thread's slice of a tile, as CuTe DSL
    # programs pass make_rmem_tensor) spans more array elements (its cosize) than it addresses (its size), and
    # LLVM keeps only those addressed; a broadcast layout (stride-0 modes: a row or column vector seen over a
    # whole tile) addresses its cosize elements many times over.
    size = min(_distinct_bound(layout), cos) if isinstance(layout, Layout) else cos
    nbytes = (size * storage_bits(dtype) + 7) // 8
    span = (cos * storage_bits(dtype) + 7) // 8
    if nbytes > _REGISTER_TENSOR_BYTES:
        raise DSLValueError(f"make_rmem_tensor: a register tensor of {size} {getattr(dtype, '__name__', dtype)} "
                            f"values ({nbytes} bytes) is more than 16 times what a thread's 255 32-bit registers "
                            f"hold ({_REGISTER_TENSOR_BYTES} bytes); partition it among the threads, or put it in "
                            "shared memory", user_location(2))
    if span > _REGISTER_SPAN_BYTES:
        raise DSLValueError(f"make_rmem_tensor: the layout {layout} spans {cos} {getattr(dtype, '__name__', dtype)} "
                            f"values ({span} bytes) for its {size}; a register tensor spans at most "
                            f"{_REGISTER_SPAN_BYTES} bytes: make it of a compact layout (make_layout of its shape)",
                            user_location(2))
    # 16-byte alignment lets copies into and out of registers use vector accesses.
    align = 16
    n = (cos + 1) // 2 if is_packed(dtype) else cos
    base = _alloca(dtype, max(n, 1), align)
    return Tensor(Pointer(base, dtype, RMEM, align), layout, dtype)


make_fragment = make_rmem_tensor


def _leaves(t) -> list:
    return [x for e in t for x in _leaves(e)] if isinstance(t, tuple) else [t]


def _like(profile, it):
    return tuple(_like(e, it) for e in profile) if isinstance(profile, tuple) else next(it)


def _compact_in_order(extents: list, keys: list) -> list:
    """Compact strides of leaves taken in the order of their keys (CuTe's compact_order): a leaf's stride is the
    product of the extents of the leaves of smaller key, so leaves of one key share a stride, as they do in CuTe
    DSL's fragments. A dynamic key (None) ranks after every static one, in leaf order."""
    ranks = [(0, k) if k is not None else (1, i) for i, k in enumerate(keys)]
    out = []
    for r in ranks:
        d = 1
        for e, q in zip(extents, ranks):
            d = d * e if q < r else d
        out.append(d)
    return out


def _static(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _fragment_layout(layout):
    """CuTe's make_fragment_like: mode 0 compact column-major (its stride-0 leaves stay 0, as an atom's broadcast
    values need no registers), the other modes compact after it in the order of their strides."""
    layout = outer_of(layout)
    shape = layout.shape
    if not isinstance(shape, tuple) or len(shape) <= 1 or not isinstance(_core.product(shape), int):
        return _core.make_layout(shape)
    first_extents, first_strides = _leaves(shape[0]), _leaves(layout.stride[0])
    first, run = [], 1
    for e, d in zip(first_extents, first_strides):
        live = e != 1 and not (_static(d) and d == 0)
        first.append(run if live else 0)
        run = run * e if live else run
    rest_extents, rest_strides = _leaves(shape[1:]), _leaves(layout.stride[1:])
    rest = _compact_in_order(rest_extents, [d if _static(d) else None for d in rest_strides])
    rest = [0 if e == 1 else run * d for e, d in zip(rest_extents, rest)]
    return _core.make_layout(shape, (_like(shape[0], iter(first)),) + _like(shape[1:], iter(rest)))


def _layout_like(layout):
    """CuTe's make_layout_like (what make_rmem_tensor_like gives a layout or tensor): compact in the order of the
    strides, stride-0 leaves kept at 0. A broadcast mode of the source (a scale repeated along a tile) takes no
    registers, so that indexing it at a runtime coordinate stays a static offset and the fragment stays in
    registers."""
    layout = outer_of(layout)
    shape = layout.shape
    extents, strides = _leaves(shape), _leaves(layout.stride)
    if not all(_static(e) for e in extents):
        return _core.make_layout(shape)
    live = [i for i, (e, d) in enumerate(zip(extents, strides)) if e != 1 and not (_static(d) and d == 0)]
    compact = _compact_in_order([extents[i] for i in live], [strides[i] if _static(strides[i]) else None
                                                             for i in live])
    out = [0] * len(extents)
    for i, d in zip(live, compact):
        out[i] = d
    return _core.make_layout(shape, _like(shape, iter(out)) if isinstance(shape, tuple) else out[0])


def _shaping_layout(src):
    """The layout whose modes and stride order a register copy of src follows: of a thread slice that folds a
    pointer-swizzled tensor, that tensor's (the program's modes, not the folded bits)."""
    face = face_of(src)
    return full_layout(src if face is None else face)


def make_fragment_like(src, dtype=None):
    """A register tensor shaped like `src` (a tensor or layout), ordered for vector copies from it."""
    if isinstance(src, Tensor):
        layout = _shaping_layout(src)
        dtype = dtype or src.element_type
        if dtype is None:
            raise DSLTypeError("make_fragment_like of a coordinate tensor needs dtype=", user_location(2))
    elif isinstance(src, (Layout, ComposedLayout)):
        layout = src
        if dtype is None:
            raise DSLTypeError("make_fragment_like of a layout needs dtype=", user_location(2))
    else:
        raise DSLTypeError(f"make_fragment_like expects a Tensor or Layout, got {type(src).__name__}", user_location(2))
    return make_rmem_tensor(_fragment_layout(layout), dtype)


def make_rmem_tensor_like(src, dtype=None):
    """A register tensor shaped like `src` (a Tensor, a Layout, or a TensorSSA), of src's element type or dtype:
    a TensorSSA's shape compact, a layout's (or tensor's) in the order of its strides (_layout_like)."""
    if isinstance(src, TensorSSA):
        return make_rmem_tensor(src.shape, dtype_of(dtype) if dtype is not None else src.dtype)
    if isinstance(src, Tensor):
        dtype = dtype_of(dtype) if dtype is not None else src.element_type
        if dtype is None:
            raise DSLTypeError("make_rmem_tensor_like of a coordinate tensor needs dtype=", user_location(2))
        return make_rmem_tensor(_layout_like(_shaping_layout(src)), dtype)
    if isinstance(src, (Layout, ComposedLayout)):
        if dtype is None:
            raise DSLTypeError("make_rmem_tensor_like of a layout needs dtype=", user_location(2))
        return make_rmem_tensor(_layout_like(src), dtype_of(dtype))
    raise DSLTypeError(f"make_rmem_tensor_like expects a Tensor, Layout or TensorSSA, got {type(src).__name__}",
                       user_location(2))
