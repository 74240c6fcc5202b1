"""Copy atoms, tiled copies and cute.copy.

A copy atom says how one thread moves a group of values; a tiled copy arranges atoms over the threads of a block
with a thread-value layout. Partitioning follows CuTe: the tile is divided by the tiler, composed with the
thread-value layout, and sliced at the thread. cute.copy moves per-thread partitions: it vectorizes over the
longest run that is contiguous in both tensors and whose alignment is proven (up to the atom's width), and
predicates each run (all lanes in bounds: one vector access; otherwise element by element).
"""
from __future__ import annotations

from .. import _core
from . import trace
from .errors import DSLTypeError, DSLValueError, user_location
from .numeric import Boolean, Numeric, dtype as dtype_of
from .tensor import (ComposedLayout, Layout, Pointer, Tensor, elem_bytes, load_scalar, mem_type, slice_layout,
                     store_scalar)


class CopyUniversalOp:
    """A plain load and store by each thread (vectorized where the layouts and alignment allow)."""

    def __repr__(self):
        return "CopyUniversalOp()"

    def __eq__(self, other):
        return isinstance(other, CopyUniversalOp)

    def __hash__(self):
        return hash("CopyUniversalOp")


class CopyAtom:
    """One thread's copy of `num_values` values of `value_type`."""

    def __init__(self, op, value_type, num_bits_per_copy=None):
        self.op = op
        self.value_type = dtype_of(value_type)
        bits = num_bits_per_copy if num_bits_per_copy is not None else self.value_type.width
        if bits % max(self.value_type.width, 1) != 0 or bits <= 0:
            raise DSLValueError(f"make_copy_atom: num_bits_per_copy={bits} is not a multiple of the "
                                f"{self.value_type.width}-bit {self.value_type.__name__}", user_location(2))
        self.num_bits_per_copy = bits
        self.explicit_bits = num_bits_per_copy is not None
        self.num_values = bits // max(self.value_type.width, 1)
        self.thr_id = _core.make_layout(1)
        self.layout_src_tv = _core.make_layout((1, self.num_values))
        self.layout_dst_tv = self.layout_src_tv
        self.layout_ref_tv = self.layout_src_tv

    @property
    def max_vector_bits(self) -> int:
        # A universal atom widens to 128-bit accesses unless the user fixed its width.
        return self.num_bits_per_copy if self.explicit_bits else max(128, self.num_bits_per_copy)

    def __repr__(self):
        return f"CopyAtom({self.op}, {self.value_type.__name__}, {self.num_bits_per_copy} bits)"


def make_copy_atom(op, copy_internal_type, *, num_bits_per_copy=None, **kwargs):
    if hasattr(op, "_ww_make_atom"):
        return op._ww_make_atom(copy_internal_type, num_bits_per_copy=num_bits_per_copy, **kwargs)
    if not isinstance(op, CopyUniversalOp):
        raise DSLTypeError(f"make_copy_atom: unknown copy operation {op!r}", user_location(2))
    return CopyAtom(op, copy_internal_type, num_bits_per_copy)


def _mode(layout, i):
    return _core.get(layout, [i])


def _pair(a, b):
    return _core.make_layout_from_modes([a, b])


class TiledCopy:
    """Copy atoms tiled over threads: layout_tv maps (thread, value) into the tiler_mn tile."""

    def __init__(self, atom, layout_tv, tiler_mn):
        self.atom = atom
        self.layout_tv_tiled = layout_tv
        self.tiler_mn = tiler_mn
        self.size = _core.product(_mode(layout_tv, 0).shape)

    @property
    def layout_tv(self):
        return self.layout_tv_tiled

    def __repr__(self):
        return f"TiledCopy({self.atom}, tiler {self.tiler_mn}, tv {self.layout_tv_tiled})"

    def _tile2thrfrg(self, zipped, ref2trg):
        """((TileM,TileN),(RestM,...)) -> (thread, value, (RestM,...))."""
        atom_thr = _core.product(self.atom.thr_id.shape)
        atom_val = self.atom.num_values
        atom_tv = _core.zipped_divide(self.layout_tv_tiled, (atom_thr, atom_val))
        trg_tv = _core.composition(atom_tv, (ref2trg, None))
        m0, m1 = _mode(trg_tv, 0), _mode(trg_tv, 1)
        zipped_tv = _pair(_pair(_mode(m0, 0), _mode(m1, 0)), _pair(_mode(m0, 1), _mode(m1, 1)))
        thrval2mn = _core.coalesce(zipped_tv, (1, (1, 1)))
        tv = _core.composition(zipped, (thrval2mn, None))
        return slice_layout(((None, None), None), tv)

    def tidfrg_S(self, layout):
        ref2trg = _core.composition(_core.right_inverse(self.atom.layout_ref_tv), self.atom.layout_src_tv)
        return self._tile2thrfrg(_core.zipped_divide(layout, self.tiler_mn), ref2trg)

    def tidfrg_D(self, layout):
        ref2trg = _core.composition(_core.right_inverse(self.atom.layout_ref_tv), self.atom.layout_dst_tv)
        return self._tile2thrfrg(_core.zipped_divide(layout, self.tiler_mn), ref2trg)

    def get_slice(self, thr_idx):
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice


class ThrCopy:
    """One thread's view of a tiled copy."""

    def __init__(self, tiled, thr_idx):
        self.tiled = tiled
        self.thr_idx = thr_idx

    def _partition(self, tensor, frg_fn):
        if not isinstance(tensor, Tensor):
            raise DSLTypeError(f"partition expects a Tensor, got {type(tensor).__name__}", user_location(3))
        layout = tensor.layout
        outer = layout.outer if isinstance(layout, ComposedLayout) else layout
        if _core.tuple_rank(outer.shape) < _core.tuple_rank(self.tiled.tiler_mn):
            raise DSLValueError(f"partition: the tensor {outer} has fewer modes than the tiler {self.tiled.tiler_mn}",
                                user_location(3))
        thr_layout = frg_fn(outer)
        rank = _core.tuple_rank(outer.shape)
        coord = (self.thr_idx, None, (None,) * rank)
        t = Tensor(tensor.iterator, thr_layout, tensor.element_type)
        part = t[coord]
        if isinstance(layout, ComposedLayout):
            part = Tensor(part.iterator, _core.ComposedLayout(layout.inner, layout.offset, part.layout),
                          tensor.element_type)
        return part

    def partition_S(self, tensor):
        """This thread's part of a source tile: (values, rest modes...)."""
        return self._partition(tensor, self.tiled.tidfrg_S)

    def partition_D(self, tensor):
        return self._partition(tensor, self.tiled.tidfrg_D)


def make_tiled_copy_tv(atom, thr_layout, val_layout):
    """A tiled copy whose threads and values follow thr_layout and val_layout (see make_layout_tv)."""
    tiler, tv = _core.make_layout_tv(thr_layout, val_layout)
    return TiledCopy(atom, tv, tiler)


def make_tiled_copy(atom, layout_tv, tiler_mn):
    return TiledCopy(atom, layout_tv, tiler_mn)


# --- cute.copy ----------------------------------------------------------------------------------------------------

def _largest_pow2_divisor(n: int, cap: int) -> int:
    v = 1
    while v * 2 <= cap and n % (v * 2) == 0:
        v *= 2
    return v


def _copy_run(src: Pointer, so, dst: Pointer, do, n: int):
    """Copies n elements, contiguous in both, with one vector access (n == 1: scalar)."""
    b = trace.builder()
    t = src.dtype
    if n == 1:
        if src.dtype is dst.dtype:
            a = src.address(so)
            v = b.op1("llvm.load", [a], mem_type(t), f"alignment = {min(src.alignment_at(so), elem_bytes(t))} : i64")
            d = dst.address(do)
            b.op0("llvm.store", [v, d], f"alignment = {min(dst.alignment_at(do), elem_bytes(t))} : i64")
        else:
            store_scalar(dst, do, dst.dtype(load_scalar(src, so)))
        return
    vt = f"vector<{n}x{mem_type(t)}>"
    a = src.address(so)
    v = b.op1("llvm.load", [a], vt, f"alignment = {min(src.alignment_at(so), n * elem_bytes(t))} : i64")
    d = dst.address(do)
    b.op0("llvm.store", [v, d], f"alignment = {min(dst.alignment_at(do), n * elem_bytes(t))} : i64")


def _aligned_width(src: Pointer, so, dst: Pointer, do, v: int) -> int:
    eb = elem_bytes(src.dtype)
    while v > 1 and (src.alignment_at(so) < v * eb or dst.alignment_at(do) < v * eb):
        v //= 2
    return v


def _emit_if(cond, then_body, else_body=None):
    if cond.is_static:
        if cond.value:
            then_body()
        elif else_body is not None:
            else_body()
        return
    b = trace.builder()
    c = cond.ir()
    b.begin_region([])
    then_body()
    b.op0("scf.yield", [])
    b.end_region()
    b.begin_region([])
    if else_body is not None:
        else_body()
    b.op0("scf.yield", [])
    b.end_region()
    b.op0("scf.if", [c], num_regions=2)


def copy(atom, src, dst, *, pred=None, **kwargs):
    """Copies the per-thread partition src into dst (element i of src to element i of dst); with pred, only the
    elements whose predicate is true."""
    if isinstance(atom, TiledCopy):
        atom = atom.atom
    if hasattr(atom, "_ww_copy"):
        return atom._ww_copy(src, dst, pred=pred, **kwargs)
    for name, t in (("source", src), ("destination", dst)):
        if not isinstance(t, Tensor) or not isinstance(t.iterator, Pointer):
            raise DSLTypeError(f"cute.copy: the {name} must be a tensor in memory, got {t!r}", user_location(2))
    n = _core.product(src.shape)
    m = _core.product(dst.shape)
    if not isinstance(n, int) or not isinstance(m, int):
        raise DSLTypeError(f"cute.copy: per-thread tensors need static sizes, got {src.shape} and {dst.shape}",
                           user_location(2))
    if n != m:
        raise DSLValueError(f"cute.copy: the source has {n} elements and the destination {m} "
                            f"({src.layout} vs {dst.layout})", user_location(2))
    if pred is not None:
        if not isinstance(pred, Tensor) or _core.product(pred.shape) != n:
            raise DSLValueError(f"cute.copy: pred must be a tensor of {n} predicates", user_location(2))
    if src.element_type.width != dst.element_type.width:
        raise DSLTypeError(f"cute.copy: {src.element_type.__name__} to {dst.element_type.__name__} changes the width; "
                           "convert with .load().to(...) and .store()", user_location(2))
    sl, dl = src.layout, dst.layout
    v = 1
    if isinstance(sl, Layout) and isinstance(dl, Layout) and src.element_type is dst.element_type:
        common = _core.max_common_layout(sl, dl)
        cap = max(1, atom.max_vector_bits // max(src.element_type.width, 8))
        size = common.size()
        v = _largest_pow2_divisor(size, cap) if isinstance(size, int) else 1
    if v > 1:
        vec = _core.composition(common, _core.make_layout(v))
        src_div, dst_div = _core.zipped_divide(sl, vec), _core.zipped_divide(dl, vec)
        pred_div = _core.zipped_divide(pred.layout, vec) if pred is not None else None
    for r in range(n // v):
        if v > 1:
            w = _aligned_width(src.iterator, src_div((0, r)), dst.iterator, dst_div((0, r)), v)
            runs = [(src_div((k * w, r)), dst_div((k * w, r))) for k in range(v // w)]
        else:
            runs, w = [(sl(r), dl(r))], 1

        def do_runs(runs=runs, w=w):
            for s_off, d_off in runs:
                _copy_run(src.iterator, s_off, dst.iterator, d_off, w)

        if pred is None:
            do_runs()
        elif v == 1:
            _emit_if(_as_bool(pred[r]), do_runs)
        else:
            coords = [(j, r) for j in range(v)]
            preds = [_pred_at(pred, pred_div, c) for c in coords]
            every = preds[0]
            for p in preds[1:]:
                every = every & p

            def per_element(coords=coords, preds=preds):
                for c, p in zip(coords, preds):
                    s_off, d_off = src_div(c), dst_div(c)
                    _emit_if(p, lambda s_off=s_off, d_off=d_off: _copy_run(src.iterator, s_off, dst.iterator, d_off, 1))

            _emit_if(every, do_runs, per_element)


def _as_bool(p):
    return p if isinstance(p, Numeric) else Boolean(p)


def _pred_at(pred, pred_div, coord):
    off = pred_div(coord)
    if isinstance(pred.iterator, Pointer):
        return _as_bool(load_scalar(pred.iterator, off))
    raise DSLTypeError("cute.copy: pred must be a register tensor of Booleans", user_location(3))


def autovec_copy(src, dst):
    """Copies src to dst with the widest accesses their layouts allow."""
    copy(CopyAtom(CopyUniversalOp(), src.element_type), src, dst)


def basic_copy(src, dst):
    copy(CopyAtom(CopyUniversalOp(), src.element_type, src.element_type.width), src, dst)
