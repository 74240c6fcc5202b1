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
from .tensor_type import ComposedLayout, Layout, Tensor, outer_of


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


def _fragment_layout(layout):
    """CuTe's make_fragment_like: mode 0 compact column-major (keeping its stride-0 leaves at 0, as an atom's
    broadcast values need no registers), the other modes compact in the order of their strides."""
    layout = outer_of(layout)
    shape = layout.shape
    if not isinstance(shape, tuple) or len(shape) <= 1 or not isinstance(_core.product(shape), int):
        return _core.make_layout(shape)
    mode0 = _core.get(layout, [0])
    first = _core.make_layout(mode0.shape, _compact_keeping_zeros(mode0.shape, mode0.stride))
    rest_shape, rest_stride = tuple(shape[1:]), tuple(layout.stride[1:])
    rest = _core.make_ordered_layout(rest_shape, _order_of(rest_stride))
    return _core.tiled_product(first, rest)


def _compact_keeping_zeros(shape, stride):
    run = [1]

    def walk(sh, st):
        if isinstance(sh, tuple):
            return tuple(walk(a, b) for a, b in zip(sh, st))
        if isinstance(st, int) and st == 0:
            return 0
        d = run[0]
        run[0] *= sh
        return d

    return walk(shape, stride)


def _order_of(stride):
    """The rank of each leaf of a stride among all leaves (stable), as CuTe's compact_order uses it."""
    leaves = []

    def walk(s):
        if isinstance(s, tuple):
            for x in s:
                walk(x)
        else:
            leaves.append(abs(s) if isinstance(s, int) else 1 << 40)

    walk(stride)
    ranks = sorted(range(len(leaves)), key=lambda i: (leaves[i], i))
    order = [0] * len(leaves)
    for r, i in enumerate(ranks):
        order[i] = r
    it = iter(order)

    def build(s):
        return tuple(build(x) for x in s) if isinstance(s, tuple) else next(it)

    return build(stride)


def make_fragment_like(src, dtype=None):
    """A register tensor shaped like `src` (a tensor or layout), ordered for vector copies from it."""
    if isinstance(src, Tensor):
        layout = src.layout
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
    """A register tensor shaped like `src` (a Tensor, a Layout, or a TensorSSA), of src's element type or dtype."""
    if isinstance(src, TensorSSA):
        return make_rmem_tensor(src.shape, dtype_of(dtype) if dtype is not None else src.dtype)
    return make_fragment_like(src, dtype_of(dtype) if dtype is not None else None)
