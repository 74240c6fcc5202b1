"""The architecture-neutral operations of CuTe DSL's extension API: storage, a thread's partition of a tile, and
copies and MMAs that take whole partitions. A bounded tensor (a @cute.experimental.kernel's argument or a view of
it) is copied only where it has elements; everything else is the ordinary tensor it is."""
from __future__ import annotations

from ... import _core
from ..._dsl.atoms.copy import CopyUniversalOp, ThrCopy, make_copy_atom
from ..._dsl.atoms.element_copy import copy as atom_copy
from ..._dsl.atoms.mma import MmaAtom, TiledMma, gemm
from ..._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from ..._dsl.device.smem import allocate_elements
from ..._dsl.values.fragments import make_rmem_tensor
from ..._dsl.values.numeric import Boolean, dtype as dtype_of
from ..._dsl.values.pointer import RMEM, Pointer
from ..._dsl.values.runtime import AddressSpace
from ..._dsl.values.tensor import ComposedLayout, Layout, Tensor, make_tensor
from ..layout import composition, zipped_divide
from .bounded import BoundedTensor, data_of

_TENSORS = (Tensor, BoundedTensor)
_ALLOCATORS: dict = {}


def register_allocator(space: AddressSpace, allocate_fn) -> None:
    """A backend's storage of another memory (Blackwell's tensor memory): allocate_fn(dtype, layout, alignment,
    **options) returns the tensor."""
    _ALLOCATORS[space] = allocate_fn


def _check_tensor(t, what: str, fn: str):
    if not isinstance(t, _TENSORS):
        raise DSLTypeError(f"cute.experimental.{fn}: {what} must be a tensor, got {type(t).__name__}",
                           user_location(3))


def allocate(dtype, space, layout, *, alignment: int = 16, **options):
    """A tensor of `layout` over fresh storage of `dtype` in `space`: registers (a thread's own values), shared
    memory (carved from the kernel's allocation, aligned to `alignment` bytes: a swizzled layout needs its span) or
    a memory a backend provides (tensor memory)."""
    dtype = dtype_of(dtype)
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise DSLTypeError(f"cute.experimental.allocate: expected a layout, got {type(layout).__name__}",
                           user_location(2))
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise DSLValueError(f"cute.experimental.allocate: alignment={alignment!r} is not a power of two (bytes)",
                            user_location(2))
    space = AddressSpace(space) if not isinstance(space, AddressSpace) else space
    if space in _ALLOCATORS:
        return _ALLOCATORS[space](dtype, layout, alignment, **options)
    if options:
        raise DSLTypeError(f"cute.experimental.allocate() got an unexpected keyword argument "
                           f"{next(iter(options))!r} for {space.name}", user_location(2))
    if space is AddressSpace.rmem:
        # Registers have no addresses to align: a fragment's 16 bytes serve every vector access into it.
        return make_rmem_tensor(layout, dtype)
    if space is AddressSpace.smem:
        size = layout.cosize() if isinstance(layout, Layout) else layout.outer.cosize()
        if not isinstance(size, int):
            raise DSLValueError(f"cute.experimental.allocate: shared memory needs a static layout, got {layout}",
                                user_location(2))
        return make_tensor(allocate_elements(dtype, max(size, 1), alignment), layout)
    raise DSLValueError(f"cute.experimental.allocate: no loaded backend allocates in {space.name} (registers and "
                        f"shared memory are always there; tensor memory needs a Blackwell target)", user_location(2))


def partition(tensor, thread_idx, *, layout_tv, tiler):
    """Thread `thread_idx`'s part of `tensor`: tensor cut into tiles of `tiler`, each tile read through
    `layout_tv` ((thread, value) -> position in the tile). The result is (values, tiles...): a bounded tensor
    stays bounded, so that a copy of the partition predicates each value."""
    _check_tensor(tensor, "the tensor", "partition")
    if not isinstance(layout_tv, Layout) or _core.tuple_rank(layout_tv.shape) != 2:
        raise DSLValueError(f"cute.experimental.partition: layout_tv must be a (thread, value) layout of rank 2, got "
                            f"{layout_tv}", user_location(2))
    tiler = tiler if isinstance(tiler, (tuple, Layout)) else (tiler,)
    rank_t = _core.tuple_rank(tiler.shape if isinstance(tiler, Layout) else tiler)
    if _core.tuple_rank(tensor.shape) < rank_t:
        raise DSLValueError(f"cute.experimental.partition: the tensor of shape {tensor.shape} has fewer modes than "
                            f"the tiler {tiler}", user_location(2))
    tile_size = _core.product(tiler.shape if isinstance(tiler, Layout) else tiler)
    tv_size = layout_tv.cosize()
    if isinstance(tv_size, int) and isinstance(tile_size, int) and tv_size > tile_size:
        raise DSLValueError(f"cute.experimental.partition: layout_tv {layout_tv} reaches {tv_size} positions, past "
                            f"the tiler's {tile_size}", user_location(2))
    tv = composition(zipped_divide(tensor, tiler), (layout_tv, None))
    return tv[((thread_idx, None), None)]


def _predicates(src, dst):
    """One Boolean per element for a copy between src and dst: where every bounded side has its element."""
    preds = [t.in_bounds() for t in (src, dst) if isinstance(t, BoundedTensor)]
    if len(preds) < 2:
        return preds[0] if preds else None
    both = make_rmem_tensor(preds[0].shape, Boolean)
    n = _core.product(preds[0].shape)
    for i in range(n):
        both[i] = preds[0][i] & preds[1][i]
    return both


def copy(src, dst, *, copy_atom=None, pred=None):
    """Copies src into dst (element i to element i) with `copy_atom` (by default the universal copy of their
    element type). Where src or dst is bounded, only the elements inside the kernel's argument move (the others of
    the destination keep their values); `pred` (a Boolean tensor of src's shape) narrows that further."""
    _check_tensor(src, "the source", "copy")
    _check_tensor(dst, "the destination", "copy")
    if copy_atom is None:
        copy_atom = make_copy_atom(CopyUniversalOp(), src.element_type)
    auto = _predicates(src, dst)
    if auto is not None and pred is not None:
        if _core.product(pred.shape) != _core.product(auto.shape):
            raise DSLValueError(f"cute.experimental.copy: pred has shape {pred.shape}, the copy {auto.shape}",
                                user_location(2))
        for i in range(_core.product(auto.shape)):
            auto[i] = auto[i] & pred[i]
    atom_copy(copy_atom, data_of(src), data_of(dst), pred=auto if auto is not None else pred)


def _thread_side(thr_copy: ThrCopy, t, source: bool):
    """A copy's operand as this thread holds it: a register tensor is the thread's already (viewed with the copy's
    value grouping); a tensor of shared, global or tensor memory is partitioned."""
    it = t.iterator if isinstance(t, Tensor) else None
    if isinstance(it, Pointer) and it.memspace == RMEM:
        return t
    return thr_copy.partition_S(t) if source else thr_copy.partition_D(t)


def partition_and_copy(thr_copy, src, dst):
    """This thread's part of a tiled copy from src to dst: each side partitioned by `thr_copy` (a tiled copy's
    get_slice(thread)) unless it is already the thread's register tensor."""
    if not isinstance(thr_copy, ThrCopy):
        raise DSLTypeError("cute.experimental.partition_and_copy: expected one thread's slice of a tiled copy "
                           f"(tiled_copy.get_slice(tid)), got {type(thr_copy).__name__}", user_location(2))
    _check_tensor(src, "the source", "partition_and_copy")
    _check_tensor(dst, "the destination", "partition_and_copy")
    s = _thread_side(thr_copy, data_of(src), True)
    d = _thread_side(thr_copy, data_of(dst), False)
    ns, nd = _core.product(s.shape), _core.product(d.shape)
    if isinstance(ns, int) and isinstance(nd, int) and ns != nd:
        raise DSLValueError(f"cute.experimental.partition_and_copy: the thread's source has {ns} elements "
                            f"({s.shape}) and its destination {nd} ({d.shape})", user_location(2))
    atom_copy(thr_copy.tiled, s, d)


def dot(mma_atom, a, b, acc):
    """acc += a * b with one MMA atom over whole operands: a (V, M, K), b (V, N, K), acc (V, M, N), as
    cute.gemm takes them (an atom's accumulate field decides whether acc is read)."""
    if not isinstance(mma_atom, (MmaAtom, TiledMma)):
        raise DSLTypeError(f"cute.experimental.dot: expected an MMA atom, got {type(mma_atom).__name__}",
                           user_location(2))
    for name, t in (("a", a), ("b", b), ("acc", acc)):
        _check_tensor(t, name, "dot")
        r = _core.tuple_rank(t.shape)
        if r != 3:
            raise DSLValueError(f"cute.experimental.dot: {name} must have rank 3 ((V, M, K), (V, N, K), (V, M, N)), "
                                f"got shape {t.shape} of rank {r} (cute.append_ones(t, up_to_rank=3) adds modes)",
                                user_location(2))
    a, b, acc = data_of(a), data_of(b), data_of(acc)
    gemm(mma_atom, acc, a, b, acc)
