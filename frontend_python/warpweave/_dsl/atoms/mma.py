"""MMA atoms, tiled MMAs and cute.gemm.

An MMA atom computes D = A * B + C for one (M, N, K) tile with the threads of its thr_id; its thread-value layouts
map (thread, value) to the column-major index of the (M, K), (N, K) and (M, N) tiles. A tiled MMA lays atoms out
over more threads (atom_layout_mnk) and may permute the tile (permutation_mnk); partitioning follows CuTe's
thrfrg: divide by the permutation, zip-divide by the atom's shape, compose with the atom's layout, and divide the
thread mode by the atom layout.

The universal atom is one thread's fused multiply-add; the backends' atoms (warp-level and warpgroup MMAs, ...)
come from their manifests and are emitted through emit_instruction.
"""
from __future__ import annotations

import copy

from collections.abc import Sequence

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..values.numeric import Boolean, Numeric, dtype as dtype_of
from ..values.tensor import Layout, Tensor, full_layout, make_fragment_like, make_rmem_tensor, outer_of
from .atoms import ManifestOp
from .copy import with_outer
from .instructions import emit_instruction
from .operand_kinds import OperandKind, RegistersKind, adapter


def _mode(layout, i):
    return _core.get(layout, [i])


def _modes(*ms):
    return _core.make_layout_from_modes(list(ms))


class MmaUniversalOp:
    """One thread's multiply-add D = A * B + C on scalars of abacc_dtype (an atom of shape 1x1x1)."""

    def __init__(self, abacc_dtype):
        self.abacc_dtype = dtype_of(abacc_dtype)

    def __repr__(self):
        return f"MmaUniversalOp({self.abacc_dtype.__name__})"

    def __eq__(self, other):
        return isinstance(other, MmaUniversalOp) and other.abacc_dtype is self.abacc_dtype

    def __hash__(self):
        return hash(("MmaUniversalOp", self.abacc_dtype.__name__))


class MmaAtom:
    """An MMA atom: shape_mnk, thr_id and the thread-value layouts of A, B and C."""

    manifest = None

    def __init__(self, op):
        self.op = op
        if isinstance(op, MmaUniversalOp):
            t = op.abacc_dtype
            self.a_dtype = self.b_dtype = self.acc_dtype = t
            self.shape_mnk = (1, 1, 1)
            self.thr_id = _core.make_layout(1)
            one = _core.make_layout((1, 1), (0, 0))
            self.layout_a_tv = self.layout_b_tv = self.layout_c_tv = one
            return
        if not isinstance(op, ManifestOp) or op.kind != "MMA":
            raise DSLTypeError(f"make_mma_atom: {op!r} is not an MMA operation", user_location(3))
        self.backend, self.manifest = op.entry()
        defaults = getattr(op, "default_fields", None)
        if defaults:
            # fields an op starts with (e.g. an accumulate flag that starts False), carried through control flow
            self.fields = dict(defaults)
        ins = self.manifest
        ops = {o["name"]: o for o in ins.get("operands", [])}
        if "c" not in ops and "d" in ops:
            # An MMA without a c operand accumulates into D in place (D = A * B, or D += A * B): C is D.
            ops["c"] = {**ops["d"], "name": "c"}
        missing = [n for n in ("a", "b", "c", "d") if n not in ops]
        if missing:
            raise DSLTypeError(f"the MMA atom {ins['id']} has no operand {', '.join(missing)}", user_location(3))
        self.operands = ops
        # Each operand's kind decides what its fragments hold (operand_kinds.py); a backend registers the kinds of
        # its non-register operands (descriptors, tensor memory).
        self.kinds = {n: adapter(ops[n], ins["id"]) for n in ("a", "b", "c", "d")}
        self.shape_mnk = tuple(_core.parse_int_tuple(ins["shape_mnk"]))
        self.thr_id = _core.parse_layout(ins.get("thr_id") or "1:1")
        self.layout_a_tv = self.kinds["a"].layout_tv(ins["id"], ops["a"])
        self.layout_b_tv = self.kinds["b"].layout_tv(ins["id"], ops["b"])
        self.layout_c_tv = self.kinds["c"].layout_tv(ins["id"], ops["c"])
        p = op.raw_params
        self.a_dtype = self.kinds["a"].element_dtype(ins["id"], ops["a"], p.get("ab_dtype") or p.get("a_dtype"))
        self.b_dtype = self.kinds["b"].element_dtype(ins["id"], ops["b"], p.get("ab_dtype") or p.get("b_dtype"))
        self.acc_dtype = self.kinds["c"].element_dtype(ins["id"], ops["c"], p.get("acc_dtype"))

    @property
    def num_threads(self):
        return _core.product(self.thr_id.shape)

    # CuTe DSL's names for the atom's thread-value layouts: (thread, value) -> column-major index of the atom's
    # (M, K), (N, K) and (M, N) tiles.
    @property
    def tv_layout_A(self):
        return self.layout_a_tv

    @property
    def tv_layout_B(self):
        return self.layout_b_tv

    @property
    def tv_layout_C(self):
        return self.layout_c_tv

    # --- runtime fields (CuTe DSL's atom.set(Field.X, value)) ------------------------------------------------
    # What a field means is the operation's business: an op from a backend's Python may define
    # instruction_operands(fields) -> (inputs, attrs), the instruction's operands beyond a, b and c (e.g. a
    # predicate saying whether to accumulate) and its attributes, from the fields set so far.
    def set(self, field, value, *, loc=None, ip=None):
        fields = getattr(self, "fields", None)
        if fields is None:
            fields = self.fields = {}
        fields[field] = value

    def get(self, field, *, loc=None, ip=None):
        return getattr(self, "fields", {}).get(field)

    # A field set inside a dynamic loop or if is carried through it like a variable (the control flow carries
    # objects whose methods a region calls): its values as DSL numbers, Python booleans as Booleans.
    def _ww_carry_get(self):
        fields = getattr(self, "fields", {})
        self._carried = [k for k in fields if isinstance(fields[k], (bool, Numeric))]
        return [Boolean(fields[k]) if isinstance(fields[k], bool) else fields[k] for k in self._carried]

    def _ww_carry_set(self, values):
        fields = getattr(self, "fields", {})
        for k, v in zip(self._carried, values):
            fields[k] = v

    def __repr__(self):
        what = self.manifest["id"] if self.manifest else repr(self.op)
        return f"MmaAtom({what}, shape_mnk={self.shape_mnk})"

    def call(self, a_vals, b_vals, c_vals, more=None, chained=False):
        """IR values of D for one atom instance (lists in the atom's value order); more: what the op's
        companion_inputs made of cute.gemm's companion fragments, the instruction's other input operands by name
        (or, for an op with an instruction_operands hook, what that hook takes as its second argument). chained:
        C is the D of the previous k-block of this cute.gemm, which an op accumulating in place under a field
        (accumulate_field) adds to whatever the field says, as CuTe DSL does after a gemm's first k-block."""
        b = trace.builder()
        if self.manifest is None:
            t = self.acc_dtype
            r = b.op1("llvm.intr.fma", [a_vals[0], b_vals[0], c_vals[0]], t.ir_type) if t.is_float else \
                b.op1("arith.addi", [b.op1("arith.muli", [a_vals[0], b_vals[0]], t.ir_type), c_vals[0]], t.ir_type)
            return [r]
        inputs, attrs = {"a": a_vals, "b": b_vals, "c": c_vals}, {}
        hook = getattr(self.op, "instruction_operands", None)
        if hook is not None:
            fields = getattr(self, "fields", {})
            acc = getattr(self.op, "accumulate_field", None)
            if chained and acc is not None:
                fields = {**fields, acc: True}
            # An op with both hooks turns its companions into operands itself (they may also set descriptor bits).
            extra, attrs = hook(fields) if more is None else hook(fields, more)
            inputs.update(extra)
        elif more:
            inputs.update(more)
        # An op may issue its instruction itself (e.g. from one elected thread of the calling warp).
        emit = getattr(self.op, "emit_instruction", None) or emit_instruction
        out = emit(b, self.backend.name, self.manifest, inputs, attrs)
        return out.get("d", [])   # none when D is written in place (a memory operand)


def make_mma_atom(op, *, loc=None, ip=None):
    # loc and ip: CuTe DSL's source-location keywords (tracing records the user's line by itself).
    return MmaAtom(op)


def _as_layout(x):
    if isinstance(x, Layout):
        return x
    if isinstance(x, tuple):
        return _core.make_layout(x)
    return _core.make_layout(x)


class TiledMma:
    """MMA atoms over a layout of atoms (atom_layout_mnk), with an optional permutation of the tile."""

    def __init__(self, atom: MmaAtom, atom_layout_mnk, permutation_mnk=None):
        self.atom = atom
        lay = _as_layout(atom_layout_mnk)
        r = _core.tuple_rank(lay.shape)
        if r > 3:
            raise DSLValueError(f"make_tiled_mma: atom_layout_mnk {lay} has more than three modes", user_location(3))
        while r < 3:
            lay = _core.append(lay, _core.make_layout(1, 0))
            r += 1
        self.atom_layout_mnk = lay
        self.thr_layout_vmnk = _core.tiled_product(atom.thr_id, lay)
        perm = tuple(permutation_mnk) if permutation_mnk is not None else (None, None, None)
        if len(perm) != 3:
            raise DSLValueError(f"make_tiled_mma: permutation_mnk needs three entries, got {permutation_mnk}",
                                user_location(3))
        self.permutation_mnk = perm

    def __repr__(self):
        return f"TiledMma({self.atom}, atoms {self.atom_layout_mnk}, permutation {self.permutation_mnk})"

    @property
    def size(self) -> int:
        return _core.product(self.thr_layout_vmnk.shape)

    @property
    def shape_mnk(self):
        """The atom's (M, N, K), as in CuTe DSL (programs take mode 2 as the instruction's K); the tile of all the
        atoms is get_tile_size(0..2)."""
        return self.atom.shape_mnk

    @property
    def op(self):
        return self.atom.op

    @property
    def thr_id(self):
        """The atom's thread (or, for MMAs of several CTAs, CTA) layout."""
        return self.atom.thr_id

    def _thr_size(self, i):
        return _core.product(_mode(self.thr_layout_vmnk, i).shape)

    def tile_size(self, i: int) -> int:
        """The tile extent of mode i (0: M, 1: N, 2: K): the permutation's size, or atoms times the atom shape."""
        p = self.permutation_mnk[i]
        if p is None:
            return self.atom.shape_mnk[i] * self._thr_size(i + 1)
        if isinstance(p, Layout):
            return _core.product(p.shape)
        return _core.product(p)

    def get_tile_size(self, i):
        return self.tile_size(i)

    # --- thrfrg ---------------------------------------------------------------------------------------------------
    def _thrfrg(self, layout, perm_modes, atom_dims, atom_tv, thr_modes):
        perm = tuple(self.permutation_mnk[i] for i in perm_modes)
        t = _core.logical_divide(layout, perm) if any(p is not None for p in perm) else layout
        atom_tile = tuple(_core.make_layout(self.atom.shape_mnk[i]) for i in atom_dims)
        c = _core.zipped_divide(t, atom_tile)
        tv = _core.composition(c, (atom_tv, None))
        thr_tile = (None, tuple(_core.make_layout(self._thr_size(i)) for i in thr_modes))
        return _core.zipped_divide(tv, thr_tile)

    def thrfrg_A(self, layout):
        """((ThrV,(ThrM,ThrK)),(FrgV,(RestM,RestK,...)))."""
        return self._thrfrg(layout, (0, 2), (0, 2), self.atom.layout_a_tv, (1, 3))

    def thrfrg_B(self, layout):
        return self._thrfrg(layout, (1, 2), (1, 2), self.atom.layout_b_tv, (2, 3))

    def thrfrg_C(self, layout):
        return self._thrfrg(layout, (0, 1), (0, 1), self.atom.layout_c_tv, (1, 2))

    # CuTe DSL's spelling, which its programs call (a scale tile partitioned as the MMA partitions A, for its TMA)
    _thrfrg_A, _thrfrg_B, _thrfrg_C = thrfrg_A, thrfrg_B, thrfrg_C

    # --- thread-value layouts of the whole tile -------------------------------------------------------------------
    def _thridx(self):
        return _core.right_inverse(self.thr_layout_vmnk)

    def _layout_tv(self, which):
        M, N, K = (self.tile_size(i) for i in range(3))
        vm, vn = self._thr_size(1), self._thr_size(2)
        if which == "C":
            tv = self.thrfrg_C(_core.make_layout((M, N)))
            return _compose_mode0(tv, self._thridx())
        if which == "A":
            tv = self.thrfrg_A(_core.make_layout((M, K)))
            bcast = _core.make_layout((vm, vn), (1, 0))
        else:
            tv = self.thrfrg_B(_core.make_layout((N, K)))
            bcast = _core.make_layout((vm, vn), (0, 1))
        thr = _mode(tv, 0)
        thr = _core.composition(thr, (None, (bcast, None)))
        thr = _core.composition(thr, self._thridx())
        return _modes(thr, _mode(tv, 1))

    def get_layoutA_TV(self):
        """(thread index, value) -> the (M, K) tile's column-major index."""
        return self._layout_tv("A")

    def get_layoutB_TV(self):
        return self._layout_tv("B")

    def get_layoutC_TV(self):
        return self._layout_tv("C")

    # CuTe DSL's meaning: tv_layout_X is the atom's thread-value layout (programs read its strides as the
    # instruction's fragment order), tv_layout_X_tiled the whole tile's.
    @property
    def tv_layout_A(self):
        return self.atom.tv_layout_A

    @property
    def tv_layout_B(self):
        return self.atom.tv_layout_B

    @property
    def tv_layout_C(self):
        return self.atom.tv_layout_C

    @property
    def tv_layout_A_tiled(self):
        return self.get_layoutA_TV()

    @property
    def tv_layout_B_tiled(self):
        return self.get_layoutB_TV()

    @property
    def tv_layout_C_tiled(self):
        return self.get_layoutC_TV()

    # --- slices and fragments -------------------------------------------------------------------------------------
    def get_slice(self, thr_idx, *, loc=None, ip=None):
        return ThrMma(self, thr_idx)

    get_thread_slice = get_slice

    def thr_vmnk(self, thr_idx):
        """The (v, m, n, k) coordinate of thread thr_idx in the thread layout (CuTe's get_flat_coord)."""
        out = []
        for i in range(4):
            m = _mode(self.thr_layout_vmnk, i)
            out.append(_flat_coord(thr_idx, m))
        return tuple(out)

    def set(self, field, value, *, loc=None, ip=None):
        """Sets a runtime field of the atom (e.g. warpgroup.Field.ACCUMULATE) for the cute.gemm calls that follow."""
        self.atom.set(field, value)

    def with_(self, *, loc=None, ip=None):
        """A copy whose runtime fields are its own: what set() does to it leaves this tiled MMA as it is (a task
        that accumulates sets ACCUMULATE on its copy)."""
        atom = copy.copy(self.atom)
        atom.fields = dict(getattr(self.atom, "fields", None) or {})
        out = copy.copy(self)
        out.atom = atom
        return out

    def get(self, field, *, loc=None, ip=None):
        return self.atom.get(field)

    def _ww_carry_get(self):
        return self.atom._ww_carry_get()

    def _ww_carry_set(self, values):
        self.atom._ww_carry_set(values)

    def _frag(self, tensor, which, dtype):
        atom = self.atom
        kind = atom.kinds[which.lower()] if atom.manifest is not None else None
        if not isinstance(tensor, Tensor):
            if kind is not None and getattr(kind, "fragments_from_shapes", False):
                # e.g. accumulators in tensor memory: the kind lays the fragment out from the partition's shape
                return kind.make_fragment(atom.manifest["id"], atom.operands[which.lower()], tensor, dtype)
            # a layout, or a shape (partition_shape_C's, as CuTe DSL's attention kernels pass it)
            shape = outer_of(tensor).shape if hasattr(outer_of(tensor), "shape") else tensor
            return make_rmem_tensor(_core.make_layout(shape), dtype)
        if kind is not None and type(kind).make_fragment is not OperandKind.make_fragment:
            return kind.make_fragment(atom.manifest["id"], atom.operands[which.lower()], tensor, dtype)
        if which == "C":
            return make_rmem_tensor(_core.make_layout(outer_of(full_layout(tensor)).shape), dtype)
        return make_fragment_like(tensor, dtype)

    def make_fragment_A(self, tensor, *, loc=None, ip=None):
        """Registers for this thread's A partition (the atom's A value type)."""
        return self._frag(tensor, "A", self.atom.a_dtype)

    def make_fragment_B(self, tensor, *, loc=None, ip=None):
        return self._frag(tensor, "B", self.atom.b_dtype)

    def make_fragment_C(self, tensor, *, loc=None, ip=None):
        return self._frag(tensor, "C", self.atom.acc_dtype)

    def partition_shape_A(self, shape_mk, *, loc=None, ip=None):
        return _partition_shape(self.thrfrg_A(_core.make_layout(shape_mk)))

    def partition_shape_B(self, shape_nk, *, loc=None, ip=None):
        return _partition_shape(self.thrfrg_B(_core.make_layout(shape_nk)))

    def partition_shape_C(self, shape_mn, *, loc=None, ip=None):
        return _partition_shape(self.thrfrg_C(_core.make_layout(shape_mn)))


def _partition_shape(thrfrg):
    """(FrgV, RestM, RestN, ...) of one thread's partition. Each rest mode is its size, as CuTe DSL gives it (a
    permutation that interleaves the atoms makes partition_C's mode nested, e.g. (2, 4) where this is 8): libraries
    do arithmetic on these modes (QuACK's acc_layout.shape[2] % 2)."""
    frg = _mode(thrfrg, 1)
    rest = _mode(frg, 1).shape
    rest = rest if isinstance(rest, tuple) else (rest,)
    return (_mode(frg, 0).shape,) + tuple(_core.product(r) for r in rest)


def _compose_mode0(tv, f):
    return _modes(_core.composition(_mode(tv, 0), f), _mode(tv, 1))


def _flat_coord(idx, mode):
    """The linear coordinate within `mode` (a layout) of index idx: per leaf (idx / stride) % shape, a stride-0
    leaf giving 0, then the leaves' coordinates linearized column-major."""
    shape, stride = mode.shape, mode.stride
    shapes, strides = _leaves(shape), _leaves(stride)
    total, scale = 0, 1
    for s, d in zip(shapes, strides):
        if isinstance(d, int) and d == 0:
            c = 0
        else:
            c = (idx // d) % s if s != 1 else 0
        total = total + c * scale
        scale *= s
    return total


def _leaves(t):
    if isinstance(t, tuple):
        out = []
        for x in t:
            out.extend(_leaves(x))
        return out
    return [t]


class ThrMma:
    """One thread's view of a tiled MMA."""

    def __init__(self, tiled: TiledMma, thr_idx):
        self.tiled = tiled
        self.thr_idx = thr_idx
        self.v, self.m, self.n, self.k = tiled.thr_vmnk(_int_of(thr_idx))

    def _partition(self, tensor, frg, thr_coord):
        if not isinstance(tensor, Tensor):
            raise DSLTypeError(f"partition expects a Tensor, got {type(tensor).__name__}", user_location(3))
        layout = frg(outer_of(full_layout(tensor)))
        rest_rank = _core.tuple_rank(_mode(_mode(layout, 1), 1).shape)
        rest = (None,) * rest_rank if rest_rank > 1 else None
        return with_outer(tensor, layout)[(thr_coord, (None, rest))]

    def partition_A(self, tensor, *, loc=None, ip=None):
        """This thread's A values: (MMA values, MMA_M, MMA_K, rest...)."""
        return self._partition(tensor, self.tiled.thrfrg_A, (self.v, (self.m, self.k)))

    def partition_B(self, tensor, *, loc=None, ip=None):
        return self._partition(tensor, self.tiled.thrfrg_B, (self.v, (self.n, self.k)))

    def partition_C(self, tensor, *, loc=None, ip=None):
        return self._partition(tensor, self.tiled.thrfrg_C, (self.v, (self.m, self.n)))

    def partition_fragment_A(self, tensor, *, loc=None, ip=None):
        return self.tiled.make_fragment_A(self.partition_A(tensor))

    def partition_fragment_B(self, tensor, *, loc=None, ip=None):
        return self.tiled.make_fragment_B(self.partition_B(tensor))

    def partition_fragment_C(self, tensor, *, loc=None, ip=None):
        return self.tiled.make_fragment_C(self.partition_C(tensor))

    def __getattr__(self, name):
        # A thread's slice is also its tiled MMA (as in CuTe DSL, where ThrMma derives from TiledMma):
        # make_fragment_A, size, get_slice, the tiler and the atom's properties read through.
        if name.startswith("__") or name == "tiled":
            raise AttributeError(name)
        return getattr(self.tiled, name)


def _int_of(x):
    if isinstance(x, Numeric):
        return x.__ww_int__()
    return x


def make_tiled_mma(op_or_atom, atom_layout_mnk=(1, 1, 1), permutation_mnk=None, *, loc=None, ip=None):
    """A tiled MMA of an MMA operation (or atom) laid out by atom_layout_mnk (a layout or shape over M, N, K)."""
    atom = op_or_atom if isinstance(op_or_atom, MmaAtom) else MmaAtom(op_or_atom)
    return TiledMma(atom, atom_layout_mnk, permutation_mnk)


# --- cute.gemm ----------------------------------------------------------------------------------------------------

def _companions(mma_atom, x, which):
    """An operand given as [fragment, companion fragments...] (e.g. A with its scale factors): the fragment, and
    the companions, which the operation turns into its instruction's other operands (companion_inputs)."""
    if not isinstance(x, (list, tuple)):
        return x, []
    if not x:
        raise DSLValueError(f"cute.gemm: {which} is an empty list", user_location(3))
    if len(x) > 1 and getattr(mma_atom.op, "companion_inputs", None) is None:
        raise DSLTypeError(f"cute.gemm: {which} is given with {len(x) - 1} companion fragment(s), which {mma_atom} "
                           "does not take (only an operation with more inputs than A, B and C does, e.g. the scale "
                           "factors of a block-scaled MMA)", user_location(3))
    return x[0], list(x[1:])


@trace.one_user_line
def gemm(atom, d, a, b, c, *, loc=None, ip=None):
    """D = A * B + C over a thread's register fragments: d, c (V, M, N); a (V, M[, K]); b (V, N[, K]). A and B may
    each be a list [fragment, companions...] whose companions (V, M[, K]) and (V, N[, K]) the operation reads per
    atom, e.g. [A, SFA] for a block-scaled MMA."""
    mma_atom = atom.atom if isinstance(atom, (TiledMma, ThrMma)) else atom
    if not isinstance(mma_atom, MmaAtom):
        raise DSLTypeError(f"cute.gemm: expected a tiled MMA or MMA atom, got {type(atom).__name__}", user_location(2))
    a, a_more = _companions(mma_atom, a, "a")
    b, b_more = _companions(mma_atom, b, "b")
    # An op that can also take its extra inputs from its fields (companions_optional) may be given none here.
    if getattr(mma_atom.op, "companion_inputs", None) is not None and not (a_more and b_more) and \
            (a_more or b_more or not getattr(mma_atom.op, "companions_optional", False)):
        raise DSLValueError(f"cute.gemm: {mma_atom} needs A and B each with its companion fragment(s) "
                            "([tCrA, tCrSFA], [tCrB, tCrSFB])", user_location(2))
    for name, t in (("d", d), ("a", a), ("b", b), ("c", c)):
        if mma_atom.manifest is None:
            _REGISTERS.check_fragment("cute.gemm", {"name": name}, t)
        else:
            mma_atom.kinds[name].check_fragment(mma_atom.manifest["id"], mma_atom.operands[name], t)
    ra, rb, rd = (_core.tuple_rank(t.shape) for t in (a, b, d))
    if rd != 3 or _core.tuple_rank(c.shape) != 3:
        raise DSLValueError(f"cute.gemm: d and c must be (V, M, N) fragments, got {d.shape} and {c.shape}",
                            user_location(2))
    if ra == 2 and rb == 2:
        _gemm_mn(mma_atom, d, a, b, c, a_more, b_more)
        return
    if ra != 3 or rb != 3:
        raise DSLValueError(f"cute.gemm: a and b must both be (V, M) / (V, N) or (V, M, K) / (V, N, K); got "
                            f"{a.shape} and {b.shape}", user_location(2))
    K = _core.product(_mode(outer_of(full_layout(a)), 2).shape)
    if K != _core.product(_mode(outer_of(full_layout(b)), 2).shape):
        raise DSLValueError(f"cute.gemm: a and b disagree on K ({a.shape} vs {b.shape})", user_location(2))
    for k in range(K):
        _gemm_mn(mma_atom, d, a[None, None, k], b[None, None, k], c if k == 0 else d,
                 [t[None, None, k] for t in a_more], [t[None, None, k] for t in b_more], chained=k > 0)


def _gemm_mn(atom: MmaAtom, d, a, b, c, a_more=(), b_more=(), chained=False):
    V_a, V_b, V_c = (_core.product(_mode(outer_of(full_layout(t)), 0).shape) for t in (a, b, c))
    want = (_core.product(_mode(atom.layout_a_tv, 1).shape), _core.product(_mode(atom.layout_b_tv, 1).shape),
            _core.product(_mode(atom.layout_c_tv, 1).shape))
    if (V_a, V_b, V_c) != want:
        raise DSLValueError(f"cute.gemm: the fragments hold {V_a}, {V_b}, {V_c} values per atom; {atom} takes "
                            f"{want[0]}, {want[1]}, {want[2]} (partition with this tiled MMA)", user_location(3))
    M = _core.product(_mode(outer_of(full_layout(a)), 1).shape)
    N = _core.product(_mode(outer_of(full_layout(b)), 1).shape)
    if (M, N) != tuple(_core.product(_mode(outer_of(full_layout(d)), i).shape) for i in (1, 2)):
        raise DSLValueError(f"cute.gemm: d {d.shape} does not match a {a.shape} and b {b.shape}", user_location(3))

    kinds = atom.kinds if atom.manifest is not None else dict.fromkeys("abcd", _REGISTERS)
    ops = atom.operands if atom.manifest is not None else {n: {"name": n} for n in "abcd"}

    # Serpentine order over the (M, N) atoms: consecutive atoms share an A or B fragment.
    for n in range(N):
        ms = range(M) if n % 2 == 0 else range(M - 1, -1, -1)
        for m in ms:
            av = kinds["a"].read(ops["a"], a, _AtomCoords(V_a, m))
            bv = kinds["b"].read(ops["b"], b, _AtomCoords(V_b, n))
            cv = kinds["c"].read(ops["c"], c, _AtomCoords(V_c, m, n))
            more = atom.op.companion_inputs(a_more, b_more, m, n) if a_more or b_more else None
            dv = atom.call(av, bv, cv, more, chained)
            kinds["d"].write(ops["d"], d, _AtomCoords(len(dv), m, n), dv, atom.acc_dtype)


def mma_atom_call(atom, d, a, b, c, *, loc=None, ip=None):
    """One instruction of an MMA atom (CuTe DSL's mma_atom_call): d, a, b and c as the atom takes them, e.g. A and B
    as tensors over operand descriptors a kernel made itself, which the operand kinds read as they are."""
    mma_atom = atom.atom if isinstance(atom, (TiledMma, ThrMma)) else atom
    if not isinstance(mma_atom, MmaAtom) or mma_atom.manifest is None:
        raise DSLTypeError(f"cute.mma_atom_call: expected a tiled MMA or MMA atom of a backend's instruction, got "
                           f"{atom!r}", user_location(2))
    kinds, ops = mma_atom.kinds, mma_atom.operands
    for name, t in (("d", d), ("a", a), ("b", b), ("c", c)):
        kinds[name].check_fragment(mma_atom.manifest["id"], ops[name], t)
    V_a, V_b, V_c = (_core.product(_mode(tv, 1).shape)
                     for tv in (mma_atom.layout_a_tv, mma_atom.layout_b_tv, mma_atom.layout_c_tv))
    # the one atom's values: coordinates (v, 0, ...) of each tensor's own rank
    at = lambda t, n: _AtomCoords(n, *(0,) * (_core.tuple_rank(t.shape) - 1))  # noqa: E731
    av = kinds["a"].read(ops["a"], a, at(a, V_a))
    bv = kinds["b"].read(ops["b"], b, at(b, V_b))
    cv = kinds["c"].read(ops["c"], c, at(c, V_c))
    dv = mma_atom.call(av, bv, cv)
    kinds["d"].write(ops["d"], d, at(d, len(dv)), dv, mma_atom.acc_dtype)


class _AtomCoords(Sequence):
    """The coordinates (v, m[, n]) of values 0..count-1 of one atom instance, made as they are asked for: a
    tensor-memory accumulator is one atom's whole tile (32768 values for 128x256), and the kinds that address it
    read only the first coordinate."""

    __slots__ = ("count", "rest")

    def __init__(self, count: int, *rest):
        self.count = count
        self.rest = rest

    def __len__(self):
        return self.count

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.count))]
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(i)
        return (i, *self.rest)

    def __iter__(self):
        rest = self.rest
        return ((v, *rest) for v in range(self.count))


_REGISTERS = RegistersKind()

__all__ = ["MmaUniversalOp", "MmaAtom", "TiledMma", "ThrMma", "make_mma_atom", "make_tiled_mma", "gemm",
           "mma_atom_call"]
