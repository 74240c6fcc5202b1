"""Copy atoms and tiled copies (cute.copy, which runs them, is element_copy.py).

A copy atom says how the threads of one atom move a group of values: its thread-value layouts map (thread, value)
to the atom's tile for the source, the destination and the reference (the side the values are counted on). A tiled
copy arranges atoms over the threads of a block with a thread-value layout. Partitioning follows CuTe: the tile is
divided by the tiler, composed with the thread-value layout, and sliced at the thread.
"""
from __future__ import annotations

from ... import _core
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.markers import accept_locations
from ..values.numeric import dtype as dtype_of
from ..values.tensor import ComposedLayout, Layout, Tensor, full_layout, outer_of, slice_layout
from .atoms import ManifestOp
from .instructions import ELEMENT_TYPES
from .swizzle_slice import thread_slice


class CopyUniversalOp:
    """A plain load and store by each thread (vectorized where the layouts and alignment allow)."""

    def __repr__(self):
        return "CopyUniversalOp()"

    def __eq__(self, other):
        return isinstance(other, CopyUniversalOp)

    def __hash__(self):
        return hash("CopyUniversalOp")


class CopyAtom:
    """The universal atom: one thread copies `num_values` values of `value_type`."""

    manifest = None

    def __new__(cls, op=None, value_type=None, *args, **kwargs):
        # CopyAtom(op, trait): an atom a backend's builder made (a TMA atom of cute_nvgpu's builders, wrapped in its
        # trait): the trait gives the atom itself, checked against op
        made = getattr(value_type, "__ww_copy_atom__", None)
        if cls is CopyAtom and made is not None:
            return made(op)
        return super().__new__(cls)

    def __init__(self, op, value_type, num_bits_per_copy=None):
        self.op = op
        self.value_type = dtype_of(value_type)
        bits = num_bits_per_copy if num_bits_per_copy is not None else self.value_type.width
        if bits % max(self.value_type.width, 1) != 0 or bits <= 0:
            raise DSLValueError(f"make_copy_atom: num_bits_per_copy={bits} is not a multiple of the "
                                f"{self.value_type.width}-bit {self.value_type.__name__}", user_location(3))
        self.num_bits_per_copy = bits
        self.explicit_bits = num_bits_per_copy is not None
        n = bits // max(self.value_type.width, 1)
        self.thr_id = _core.make_layout(1)
        self.layout_src_tv = _core.make_layout((1, n))
        self.layout_dst_tv = self.layout_src_tv
        self.layout_ref_tv = self.layout_src_tv

    @property
    def num_values(self) -> int:
        return _core.product(_core.get(self.layout_ref_tv, [1]).shape)

    @property
    def num_values_src(self) -> int:
        return _core.product(_core.get(self.layout_src_tv, [1]).shape)

    @property
    def num_values_dst(self) -> int:
        return _core.product(_core.get(self.layout_dst_tv, [1]).shape)

    @property
    def num_threads(self) -> int:
        return _core.product(self.thr_id.shape)

    @property
    def max_vector_bits(self) -> int:
        # A universal atom widens to 128-bit accesses unless the user fixed its width.
        return self.num_bits_per_copy if self.explicit_bits else max(128, self.num_bits_per_copy)

    def __repr__(self):
        return f"CopyAtom({self.op}, {self.value_type.__name__}, {self.num_bits_per_copy} bits)"


class ManifestCopyAtom(CopyAtom):
    """A backend's copy atom: layouts, operands and PTX from its manifest entry. Operands named `src` and `dst` are
    the two sides (addresses or registers); a SCALAR operand `src_size` gets the bytes to read, 0 when the copy is
    predicated off (the atom then zero-fills its destination)."""

    # Values of the entry's attributes for every copy through the atom (a backend's Python sets them, e.g. from
    # make_copy_atom's options); the entry's defaults fill the rest.
    attributes: dict = {}

    def __init__(self, op, value_type, num_bits_per_copy=None):
        self.op = op
        self.value_type = dtype_of(value_type)
        extra = {} if num_bits_per_copy is None else {"num_bits_per_copy": num_bits_per_copy}
        if num_bits_per_copy is None and "num_bits_per_copy" in op.parameter_names():
            extra["num_bits_per_copy"] = self.value_type.width
        self.backend, self.manifest = op.entry(**extra)
        ins = self.manifest
        self.explicit_bits = True
        ops = {o["name"]: o for o in ins.get("operands", [])}
        if "src" not in ops or "dst" not in ops:
            raise DSLTypeError(f"the copy atom {ins['id']} has no src and dst operands", user_location(3))
        self.src_op, self.dst_op = ops["src"], ops["dst"]
        self.src_size_op = ops.get("src_size")
        unit = int(ins.get("layout_unit_bits") or 1)
        w = self.value_type.width
        # The atom's layouts are in bits, read here in units of the value type (CuTe's Copy_Atom<Op, T>): an atom of
        # another width than its registers' values still describes a partition (e.g. CuTe DSL's epilogues tile a
        # 32-bit C with stmatrix's layouts). Copying through it needs the registers' width: see width_mismatch.
        self.width_mismatch = None
        # Narrower values fill each register element (16-bit matrix elements of 8-bit or 4-bit values): a copy
        # packs pack_values of them, in order, into each.
        self.pack_values = 1
        for o in (self.src_op, self.dst_op):
            if o["role"] == "REGISTERS":
                et_bits = ELEMENT_TYPES[o["element_type"]][1]
                if et_bits > w and et_bits % w == 0:
                    self.pack_values = et_bits // w
                elif et_bits != w:
                    self.width_mismatch = (f"{op.python_name} moves {et_bits}-bit values ({ins['id']}); "
                                           f"{self.value_type.__name__} is {w}-bit")

        def tv(o):
            text = o.get("layout_tv")
            if not text:
                raise DSLTypeError(f"the copy atom {ins['id']} has no layout for operand {o['name']}",
                                   user_location(4))
            return _core.recast_layout(w, unit, _core.parse_layout(text))

        self.thr_id = _core.parse_layout(ins.get("thr_id") or "1:1")
        self.layout_src_tv = tv(self.src_op)
        self.layout_dst_tv = tv(self.dst_op)
        if self.width_mismatch:
            # Values wider than the registers' elements: where the registers' layout does not regroup into such
            # values within each thread (a transposing stmatrix pairs 16-bit elements across threads), the
            # register side is counted as CuTe counts it, each thread's register bits in order; the atom then only
            # gives partitions (copying through it is refused).
            n_thr = _core.product(self.thr_id.shape)
            for o, attr in ((self.src_op, "layout_src_tv"), (self.dst_op, "layout_dst_tv")):
                lay = getattr(self, attr)
                if o["role"] == "REGISTERS" and _core.product(_core.get(lay, [0]).shape) != n_thr:
                    bits = _core.product(_core.get(_core.parse_layout(o["layout_tv"]), [1]).shape) * unit
                    n = bits // w
                    setattr(self, attr, _core.make_layout((n_thr, n), (n, 1)))
        # The reference side is the registers' one (CuTe's RefLayout): values are counted where they are held.
        self.layout_ref_tv = self.layout_dst_tv if self.dst_op["role"] == "REGISTERS" else self.layout_src_tv
        self.num_bits_per_copy = self.num_values_src * w

    @property
    def max_vector_bits(self) -> int:
        return self.num_bits_per_copy

    def __repr__(self):
        return f"CopyAtom({self.manifest['id']}, {self.value_type.__name__})"


def make_copy_atom(op, copy_internal_type, *, num_bits_per_copy=None, loc=None, ip=None, **options):
    """A copy atom of operation `op` for values of `copy_internal_type`. options: what the operation's atom takes
    beyond the width (e.g. a global load's memory order and scope); only an operation of a backend's Python takes
    any."""
    own = getattr(op, "__ww_make_copy_atom__", None)
    if own is not None:  # an operation of a backend's Python makes its own atom (e.g. cpasync.CopyDsmemStoreOp)
        return own(copy_internal_type, num_bits_per_copy, **options)
    if options:
        raise DSLTypeError(f"make_copy_atom got an unexpected keyword argument {next(iter(options))!r}: {op!r} "
                           "takes no such option", user_location(2))
    if isinstance(op, ManifestOp):
        if op.kind != "COPY":
            raise DSLTypeError(f"make_copy_atom: {op.python_name} is not a copy operation", user_location(2))
        return ManifestCopyAtom(op, copy_internal_type, num_bits_per_copy)
    if not isinstance(op, CopyUniversalOp):
        raise DSLTypeError(f"make_copy_atom: unknown copy operation {op!r}", user_location(2))
    return CopyAtom(op, copy_internal_type, num_bits_per_copy)


def _mode(layout, i):
    return _core.get(layout, [i])


def _pair(a, b):
    return _core.make_layout_from_modes([a, b])


def _shape_of_tiler(tiler):
    if isinstance(tiler, tuple):
        return tuple(_shape_of_tiler(t) for t in tiler)
    if isinstance(tiler, Layout):
        return _core.product(tiler.shape)
    return tiler


class TiledCopy:
    """Copy atoms tiled over threads: layout_tv maps (thread, value) into the tiler_mn tile."""

    def __init__(self, atom, layout_tv, tiler_mn):
        self.atom = atom
        self.layout_tv_tiled = layout_tv
        self._tiler = tiler_mn
        self.size = _core.product(_mode(layout_tv, 0).shape)

    @property
    def tiler_mn(self):
        """The tile, as CuTe's Tiler_MN: a layout per mode (an extent n given is the layout n:1)."""
        def one(t):
            return t if isinstance(t, Layout) else _core.make_layout(t)
        return tuple(one(t) for t in self._tiler) if isinstance(self._tiler, tuple) else one(self._tiler)

    @property
    def layout_tv(self):
        return self.layout_tv_tiled

    @property
    def layout_src_tv_tiled(self):
        return self.get_layoutS_TV()

    @property
    def layout_dst_tv_tiled(self):
        return self.get_layoutD_TV()

    def __repr__(self):
        return f"TiledCopy({self.atom}, tiler {self._tiler}, tv {self.layout_tv_tiled})"

    def _ref2trg(self, trg):
        return _core.composition(_core.right_inverse(self.atom.layout_ref_tv), trg)

    def _tile2thrfrg(self, tiled, ref2trg):
        """((TileM,TileN,...),(RestM,...)) -> ((thread, value), (RestM,...))."""
        atom_tv = _core.zipped_divide(self.layout_tv_tiled, (self.atom.num_threads, self.atom.num_values))
        trg_tv = _core.composition(atom_tv, (ref2trg, None))
        m0, m1 = _mode(trg_tv, 0), _mode(trg_tv, 1)
        zipped_tv = _pair(_pair(_mode(m0, 0), _mode(m1, 0)), _pair(_mode(m0, 1), _mode(m1, 1)))
        thrval2mn = _core.coalesce(zipped_tv, (1, (1, 1)))
        return _core.composition(tiled, (thrval2mn, None))

    def tidfrg_S(self, layout):
        tv = self._tile2thrfrg(_core.zipped_divide(layout, self._tiler), self._ref2trg(self.atom.layout_src_tv))
        return slice_layout(((None, None), None), tv)

    def tidfrg_D(self, layout):
        tv = self._tile2thrfrg(_core.zipped_divide(layout, self._tiler), self._ref2trg(self.atom.layout_dst_tv))
        return slice_layout(((None, None), None), tv)

    def _layout_tv_of(self, trg):
        ref = _core.make_layout((_shape_of_tiler(self._tiler), 1))
        tv = self._tile2thrfrg(ref, self._ref2trg(trg))
        return slice_layout((None, None, 0), _flatten_tv(tv))

    def get_layoutS_TV(self):
        """(thread index, value) -> the tile's (m, n) index, for the source side."""
        return self._layout_tv_of(self.atom.layout_src_tv)

    def get_layoutD_TV(self):
        return self._layout_tv_of(self.atom.layout_dst_tv)

    def retile_layout(self, layout):
        """CuTe's TiledCopy::retile: a (V, M, N, ...) register layout of an MMA partition viewed as this copy's
        ((atom values, rest values), M, N, ...)."""
        layout = outer_of(layout)
        V = _core.product(_mode(layout, 0).shape)
        tiler_shape = _shape_of_tiler(self._tiler)
        tiler_shape = tiler_shape if isinstance(tiler_shape, tuple) else (tiler_shape,)
        num_thr = self.size
        inv = _core.composition(_core.right_inverse(self.layout_tv_tiled), _core.make_layout(tiler_shape))
        frg_mn = _core.upcast(inv, num_thr * V)
        frg_v = _core.zipped_divide(_core.logical_product(_core.make_layout(V), _core.right_inverse(frg_mn)),
                                    _core.make_layout(self.atom.num_values))
        tile = (V,) + tuple(_core.product_each(frg_mn.shape)) if isinstance(frg_mn.shape, tuple) \
            else (V, frg_mn.shape)
        t = _core.zipped_divide(layout, tile)
        v = _core.composition(t, (frg_v, None))
        rank = _core.tuple_rank(_mode(v, 1).shape)
        return slice_layout((None, (0,) + (None,) * (rank - 1)), v)

    def get_slice(self, thr_idx, *, loc=None, ip=None):
        return ThrCopy(self, thr_idx)

    get_thread_slice = get_slice

    def retile(self, tensor, *, loc=None, ip=None):
        """A register partition of an MMA (V, M, N, ...) viewed with this copy's value grouping (the same for every
        thread, so the tiled copy has it as well as its thread slices)."""
        if not isinstance(tensor, Tensor):
            raise DSLTypeError(f"retile expects a Tensor, got {type(tensor).__name__}", user_location(2))
        return with_outer(tensor, self.retile_layout(full_layout(tensor)))


def _flatten_tv(tv):
    """((thr, val), rest) -> (thr, val, rest)."""
    m0 = _mode(tv, 0)
    return _core.make_layout_from_modes([_mode(m0, 0), _mode(m0, 1), _mode(tv, 1)])


class ThrCopy(TiledCopy):
    """One thread's view of a tiled copy. It is also the tiled copy (as in CuTe DSL, where ThrCopy derives from
    TiledCopy): cute.copy(thr_copy, ...), its atom, size and layouts take a thread's slice where a tiled copy goes."""

    def __init__(self, tiled, thr_idx):
        tiled = getattr(tiled, "tiled", tiled)
        super().__init__(tiled.atom, tiled.layout_tv_tiled, tiled._tiler)
        self.tiled = tiled
        self.thr_idx = thr_idx

    def _partition(self, tensor, frg_fn):
        if not isinstance(tensor, Tensor):
            raise DSLTypeError(f"partition expects a Tensor, got {type(tensor).__name__}", user_location(3))
        outer = outer_of(full_layout(tensor))
        if _core.tuple_rank(outer.shape) < _core.tuple_rank(_shape_of_tiler(self.tiled._tiler)):
            raise DSLValueError(f"partition: the tensor {outer} has fewer modes than the tiler {self.tiled._tiler}",
                                user_location(3))
        thr_layout = frg_fn(outer)
        rank = _core.tuple_rank(_mode(thr_layout, 2).shape) if _core.tuple_rank(thr_layout.shape) > 2 else 0
        rest = (None,) * rank if rank > 1 else None
        coord = (self.thr_idx, None, rest)
        plain = thread_slice(tensor, thr_layout, coord)
        return plain if plain is not None else with_outer(tensor, thr_layout)[coord]

    def partition_S(self, tensor, *, loc=None, ip=None):
        """This thread's part of a source tile: (values, rest modes...)."""
        return self._partition(tensor, self.tiled.tidfrg_S)

    def partition_D(self, tensor, *, loc=None, ip=None):
        return self._partition(tensor, self.tiled.tidfrg_D)

    def retile(self, tensor, *, loc=None, ip=None):
        """A register partition of an MMA (V, M, N, ...) viewed with this copy's value grouping."""
        if not isinstance(tensor, Tensor):
            raise DSLTypeError(f"retile expects a Tensor, got {type(tensor).__name__}", user_location(2))
        return with_outer(tensor, self.tiled.retile_layout(full_layout(tensor)))

    def retile_S(self, tensor, *, loc=None, ip=None):
        return self.retile(tensor)

    def retile_D(self, tensor, *, loc=None, ip=None):
        return self.retile(tensor)


def with_outer(tensor, outer):
    """tensor with its (outer) layout replaced by `outer`, whose codomain is the old outer layout's."""
    L = full_layout(tensor)
    if isinstance(L, ComposedLayout):
        return Tensor(tensor.iterator, _core.ComposedLayout(L.inner, L.offset, outer), tensor.element_type)
    return Tensor(tensor.iterator, outer, tensor.element_type)


def make_tiled_copy_tv(atom, thr_layout, val_layout):
    """A tiled copy whose threads and values follow thr_layout and val_layout (see make_layout_tv)."""
    tiler, tv = _core.make_layout_tv(thr_layout, val_layout)
    return TiledCopy(atom, tv, tiler)


def make_tiled_copy(atom, layout_tv, tiler_mn):
    return TiledCopy(atom, layout_tv, tiler_mn)


def make_tiled_copy_S(atom, tiled_copy):
    """A tiled copy of `atom` with the source thread-value layout of `tiled_copy`."""
    return TiledCopy(atom, tiled_copy.get_layoutS_TV(), tiled_copy._tiler)


def make_tiled_copy_D(atom, tiled_copy):
    return TiledCopy(atom, tiled_copy.get_layoutD_TV(), tiled_copy._tiler)


def make_tiled_copy_A(atom, tiled_mma):
    """A tiled copy of `atom` whose threads hold the A values the tiled MMA expects (e.g. ldmatrix to A)."""
    return TiledCopy(atom, tiled_mma.get_layoutA_TV(), (tiled_mma.tile_size(0), tiled_mma.tile_size(2)))


def make_tiled_copy_B(atom, tiled_mma):
    return TiledCopy(atom, tiled_mma.get_layoutB_TV(), (tiled_mma.tile_size(1), tiled_mma.tile_size(2)))


def make_tiled_copy_C(atom, tiled_mma):
    return TiledCopy(atom, tiled_mma.get_layoutC_TV(), (tiled_mma.tile_size(0), tiled_mma.tile_size(1)))


def make_tiled_copy_C_atom(atom, tiled_mma):
    """The smallest tiled copy of `atom` over the tiled MMA's C layout (CuTe's make_tiled_copy_C_atom): each
    thread keeps only its first atom's worth of C values, and the tiler is cut down, mode by mode, to the C
    elements those values reach, so that an epilogue can copy C one such subtile at a time."""
    layout_c = tiled_mma.get_layoutC_TV()
    n_thr = _core.product(_mode(layout_c, 0).shape)
    n_val = atom.num_values_src
    if n_val > _core.product(_mode(layout_c, 1).shape):
        raise DSLValueError(f"make_tiled_copy_C_atom: the atom moves {n_val} values per thread, more than the "
                            f"{_core.product(_mode(layout_c, 1).shape)} C values each thread of the MMA holds",
                            user_location(2))
    # (thread, value) -> C element, for the atom's values only (in C's value order).
    layout_tv = _core.composition(layout_c, _core.make_layout((n_thr, n_val)))
    tv, tiler = _cotile(layout_tv, (tiled_mma.tile_size(0), tiled_mma.tile_size(1)))
    return TiledCopy(atom, tv, tiler)


def _cotile(tv_data, data_shape):
    """(layout_tv, tiler) of a copy whose (thread, value) reach the coordinates tv_data gives (as an index over
    data_shape, each mode's size): per mode, the coordinates of that mode the copy reaches, as a layout into the
    mode; then (thread, value) -> coordinate of that subtile."""
    rank = len(data_shape)
    tiler = tuple(_core.filter(_core.composition(_core.make_layout(data_shape, tuple(int(j == i) for j in range(rank))),
                                                 tv_data), None)
                  for i in range(rank))
    tile2data = _core.composition(_core.make_layout(data_shape), tiler)
    return _core.composition(_core.left_inverse(tile2data), tv_data), tiler


def make_cotiled_copy(atom, atom_layout_tv, data_layout):
    """A tiled copy of `atom` whose (thread, value) -> address is atom_layout_tv, over data whose coordinate ->
    address is data_layout (CuTe's make_cotiled_copy): its tiler takes, mode by mode of the data, the coordinates
    those addresses hold, so that partitioning the data (or a tensor of its shape) gives each thread the values at
    its addresses."""
    if isinstance(data_layout, ComposedLayout) and isinstance(data_layout.inner, _core.Swizzle) and \
            data_layout.offset == 0:
        # A swizzled shared-memory tensor's layout (swizzle o 0 o outer here, where CuTe DSL keeps the swizzle in
        # the pointer and gives the outer layout): its addresses are the outer layout's, the swizzle being applied
        # where the tensor is accessed.
        data_layout = data_layout.outer
    if not isinstance(data_layout, Layout):
        raise DSLTypeError(f"make_cotiled_copy: the data layout is a plain Layout (or a swizzled tensor's layout), "
                           f"got {data_layout!r}", user_location(2))
    if not all(isinstance(x, int) for x in (data_layout.cosize(), atom_layout_tv.cosize())):
        raise DSLValueError(f"make_cotiled_copy: the layouts {atom_layout_tv} and {data_layout} must be static",
                            user_location(2))
    tv_data = _core.composition(_core.left_inverse(data_layout), atom_layout_tv)
    n_thr = _core.product(_mode(atom_layout_tv, 0).shape)
    n_val = _core.product(_mode(atom_layout_tv, 1).shape)
    size = _core.product(data_layout.shape)
    for t in sorted({0, 1, n_thr // 2, n_thr - 1}):
        for v in sorted({0, n_val // 2, n_val - 1}):
            want = atom_layout_tv((t, v))
            i = tv_data((t, v))
            if not 0 <= i < size or data_layout(i) != want:
                raise DSLValueError(f"make_cotiled_copy: thread {t} value {v} copies address {want}, which the data "
                                    f"layout {data_layout} does not hold", user_location(2))
    shape = _core.product_each(data_layout.shape)
    tv, tiler = _cotile(tv_data, shape if isinstance(shape, tuple) else (shape,))
    return TiledCopy(atom, tv, tiler)


accept_locations(globals(), ["make_tiled_copy_tv", "make_tiled_copy", "make_tiled_copy_S", "make_tiled_copy_D",
                             "make_tiled_copy_A", "make_tiled_copy_B", "make_tiled_copy_C", "make_tiled_copy_C_atom",
                             "make_cotiled_copy"])
