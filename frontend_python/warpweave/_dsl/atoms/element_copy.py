"""cute.copy and its kin (prefetch, autovec_copy, basic_copy, basic_copy_if): how a copy atom moves a thread's
elements from a source tensor to a destination.

The universal atom is a plain load and store: cute.copy vectorizes it over the longest runs that are contiguous in
both tensors and whose alignment is proven. The backends' atoms (ldmatrix, cp.async, ...) come from their
manifests: cute.copy emits one instruction per atom instance through emit_instruction, with the addresses and
registers its operands name.
"""
from __future__ import annotations

import math

from ... import _core
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.markers import accept_locations
from ..values import hooks
from ..values.fragments import make_rmem_tensor_like
from ..values.numeric import Boolean, Int16, Int32, Numeric, select
from ..values.tensor import (
    ComposedLayout, Pointer, Tensor, elem_bytes, full_layout, is_packed, load_scalar, mem_type, outer_of,
    store_scalar, storage_bits, store_scalars, swizzle_span,
)
from .atoms import pointer_operand
from .copy import CopyAtom, CopyUniversalOp, ManifestCopyAtom, TiledCopy
from .instructions import ELEMENT_TYPES, emit_instruction


# --- element access plans -----------------------------------------------------------------------------------------

class _Access:
    """Where the elements of a per-thread tensor are, in order of its linear index. For a swizzled tensor, `pre`
    is the offset the swizzle sees; runs that are contiguous there, start at a multiple of their length and do not
    pass 2**M elements (the swizzle's unchanged low bits) are contiguous in memory too."""

    def __init__(self, t: Tensor):
        self.t = t
        self.ptr = t.iterator
        L = full_layout(t)
        self.composed = isinstance(L, ComposedLayout)
        self.outer = outer_of(L)
        self.max_run = 1 << 30
        # Registers need no contiguity: any of a thread's values can be gathered into (or scattered from) a vector.
        self.registers = self.ptr.memspace == "rmem" and not self.composed
        if self.composed:
            inner = L.inner
            self.max_run = (1 << inner.num_base) if isinstance(inner, _core.Swizzle) else 1
        self._pre = {}

    def pre(self, i):
        if i not in self._pre:
            off = self.outer(i)
            self._pre[i] = full_layout(self.t).offset + off if self.composed else off
        return self._pre[i]

    def post(self, i):
        x = self.pre(i)
        if not self.composed:
            return x
        # The multiples of the swizzle's span commute with it: they are added after it, so the accesses of one
        # thread that differ by such offsets share one swizzled base and an immediate offset (an ldmatrix per
        # 16 rows of a tile), where the swizzle of each whole offset is computed anew.
        span = swizzle_span(full_layout(self.t).inner)
        if span:
            d, r = _core.split_divisible(x, span)
            if not (isinstance(d, int) and d == 0):
                return full_layout(self.t).inner(r) + d
        return full_layout(self.t).inner(x)

    def contiguous(self, idx) -> bool:
        """Whether the elements at linear indices idx (in order) are consecutive in memory."""
        n = len(idx)
        if self.registers:
            return True
        if n > self.max_run:
            return False
        x0 = self.pre(idx[0])
        for j in range(1, n):
            d = self.pre(idx[j]) - x0
            if not (isinstance(d, int) and d == j):
                return False
        if self.composed and n > 1:
            return _divisibility(x0) % n == 0
        return True

    def alignment(self, i0, n) -> int:
        """Proven alignment in bytes of the run of n elements starting at linear index i0 (a contiguous run)."""
        if self.registers:
            return 1 << 30
        if not self.composed:
            return self.ptr.alignment_at(self.pre(i0))
        run = min(_pow2_part(_divisibility(self.pre(i0))), self.max_run)
        return math.gcd(self.ptr.alignment_at(0), run * elem_bytes(self.ptr.dtype))


def _vector_groups(sa: _Access, da: _Access, n: int, cap: int):
    """The element indices in groups of v (a power of two <= cap) that are contiguous in both tensors, as CuTe's
    max_common_layout finds them (the contiguous mode need not be the first): a list of index lists."""
    v, common = 1, None
    # The right inverse is taken of the second layout: try both, as one of them may have run-time strides. A
    # register side constrains nothing: the memory side's own contiguous elements decide.
    if sa.registers and da.registers:
        pairs = ()
    elif sa.registers or da.registers:
        mem = da.outer if sa.registers else sa.outer
        pairs = ((mem, mem),)
    else:
        pairs = ((sa.outer, da.outer), (da.outer, sa.outer))
    for a, b in pairs:
        try:
            c = _core.max_common_layout(a, b)
        except Exception:  # noqa: BLE001 - a layout the algebra cannot invert: try the other order
            continue
        size = c.size()
        if isinstance(size, int):
            w = _pow2_part(size)
            while w > cap or w > min(sa.max_run, da.max_run) or n % w:
                w //= 2
            if w > v:
                v, common = w, c
    if v <= 1:
        return [[i] for i in range(n)]
    vec = _core.composition(common, _core.make_layout(v))
    dom = _core.zipped_divide(_core.make_layout(n), vec)
    return [[dom((j, r)) for j in range(v)] for r in range(n // v)]


def _divisibility(x) -> int:
    if isinstance(x, int):
        return abs(x) if x else 1 << 30
    return x.divisibility


def _pow2_part(n: int) -> int:
    return n & -n if n else 1 << 30


def _static_size(t, what):
    n = _core.product(outer_of(full_layout(t)).shape)
    if not isinstance(n, int):
        raise DSLTypeError(f"cute.copy: the per-thread {what} needs a static size, got shape {t.shape}",
                           user_location(3))
    return n


def _check_memory_tensor(t, name):
    if not isinstance(t, Tensor) or not isinstance(t.iterator, Pointer):
        raise DSLTypeError(f"cute.copy: the {name} must be a tensor in memory, got {t!r}", user_location(3))


# --- cute.copy ----------------------------------------------------------------------------------------------------

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


def _mode0_size(t):
    """The static size of a tensor's first mode (None where it has no modes or it is not known)."""
    shape = t.shape
    if not isinstance(shape, tuple) or not shape:
        return None
    s0 = _core.product(shape[0]) if isinstance(shape[0], tuple) else shape[0]
    return s0 if isinstance(s0, int) else None


def _as_bool(p):
    return p if isinstance(p, Numeric) else Boolean(p)


class _Pred:
    """A predicate tensor: one Boolean per element, one per atom instance (CuTe's predicate tensors that omit the
    atom's value mode), or one per block of the source's first mode (its value mode, which may hold several atom
    instances: a 256-bit row of eight floats copied 128 bits at a time under one predicate)."""

    def __init__(self, pred, n, per_atom, instances, mode0=None):
        self.pred = pred
        if pred is None:
            self.per = 0
            return
        if not isinstance(pred, Tensor) or not isinstance(pred.iterator, Pointer):
            raise DSLTypeError("cute.copy: pred must be a register tensor of Booleans", user_location(3))
        m = _core.product(pred.shape)
        if m == n:
            self.per = 1
        elif m == instances:
            self.per = per_atom
        elif mode0 and m * mode0 == n:
            self.per = mode0
        else:
            raise DSLValueError(f"cute.copy: pred has {m} predicates; the copy has {n} elements in {instances} atom "
                                f"instances (one predicate per element or per instance)", user_location(3))

    def at(self, i):
        """The predicate of linear element index i, or None."""
        if self.pred is None:
            return None
        k = i // self.per
        return _as_bool(load_scalar(self.pred.iterator, full_layout(self.pred)(k)))


# A backend's copy of per-thread partitions with a plain atom of one of its ops (python_name prefix -> fn(atom, src,
# dst, pred=, **kwargs)): CuTe DSL programs hand cute.copy the atom they made a tiled copy of, with that tiled copy's
# partitions (a tensor-memory load: cute.copy(ld_atom, thr.partition_S(t), regs)).
_PLAIN_ATOM_COPIES: dict = {}


def register_plain_atom_copy(prefix: str, fn) -> None:
    _PLAIN_ATOM_COPIES[prefix] = fn


def _plain_atom_copy(atom):
    name = getattr(getattr(atom, "op", None), "python_name", "") or ""
    return next((fn for prefix, fn in _PLAIN_ATOM_COPIES.items() if name.startswith(prefix)), None)


def copy(atom, src, dst, *, pred=None, loc=None, ip=None, **kwargs):
    """Copies the per-thread partition src into dst (element i of src to element i of dst); with pred, only the
    elements (or atom instances) whose predicate is true. Atoms that take more operands (a barrier, a multicast
    mask, ...) take them as keywords; one that an atom does not take is an error, never ignored."""
    if isinstance(atom, TiledCopy):
        atom = atom.atom
    own = getattr(atom, "__ww_copy__", None)
    if own is not None:
        # An atom from a backend's Python (e.g. one that moves a whole tile with one instruction) copies itself.
        return own(src, dst, pred=pred, **kwargs)
    if kwargs:
        what = atom.manifest["id"] if isinstance(atom, ManifestCopyAtom) else "the universal copy"
        raise DSLTypeError(f"cute.copy() got an unexpected keyword argument {next(iter(kwargs))!r}: {what} takes "
                           "no such operand", user_location(2))
    if not isinstance(atom, CopyAtom):
        raise DSLTypeError(f"cute.copy: expected a copy atom or tiled copy, got {type(atom).__name__}",
                           user_location(2))
    if isinstance(atom, ManifestCopyAtom):
        plain = _plain_atom_copy(atom)
        if plain is not None:
            return plain(atom, src, dst, pred=pred)
        return _copy_manifest(atom, src, dst, pred)
    for name, t in (("source", src), ("destination", dst)):
        _check_memory_tensor(t, name)
    n = _static_size(src, "source")
    m = _static_size(dst, "destination")
    if n != m:
        raise DSLValueError(f"cute.copy: the source has {n} elements and the destination {m} "
                            f"({src.layout} vs {dst.layout})", user_location(2))
    if src.element_type.width != dst.element_type.width:
        raise DSLTypeError(f"cute.copy: {src.element_type.__name__} to {dst.element_type.__name__} changes the width; "
                           "convert with .load().to(...) and .store()", user_location(2))
    per_atom = atom.num_values if n % atom.num_values == 0 else 1
    p = _Pred(pred, n, per_atom, n // per_atom, _mode0_size(src))
    _copy_universal(atom, _Access(src), _Access(dst), n, p)


def prefetch(atom, src, *, loc=None, ip=None, **kwargs):
    """Starts bringing into the cache what cute.copy(atom, src, ...) would read (e.g. a TMA load's box into L2),
    without copying it anywhere. Only atoms whose backend knows such a prefetch take it; the others refuse."""
    if isinstance(atom, TiledCopy):
        atom = atom.atom
    own = getattr(atom, "__ww_prefetch__", None)
    if own is None:
        raise DSLTypeError(f"cute.prefetch: {atom!r} has no prefetch of its source (a TMA load atom has)",
                           user_location(2))
    return own(src, **kwargs)


@trace.one_user_line  # the universal copy and a backend's atoms run no user code
def _copy_universal(atom, sa: _Access, da: _Access, n: int, p: _Pred):
    t = sa.ptr.dtype
    if is_packed(t) or is_packed(da.ptr.dtype):
        # Vector accesses here count whole bytes per element; packed values move as the bytes holding them.
        if t is not da.ptr.dtype or p.pred is not None or not _copy_packed(sa, da, n, atom.max_vector_bits // 4):
            raise DSLTypeError(f"cute.copy of packed 4-bit {t.__name__} tensors moves whole bytes: runs of an even "
                               "number of elements, from even elements, consecutive in both tensors (or copy element "
                               "by element, dst[i] = src[i])", user_location(3))
        return
    same = sa.ptr.dtype is da.ptr.dtype
    cap = max(1, atom.max_vector_bits // max(t.width, 8)) if same else 1
    eb = elem_bytes(t)
    for group in _vector_groups(sa, da, n, cap):
        # The widest split of the group into runs that are contiguous and aligned in both tensors.
        w = len(group)
        while w > 1:
            runs = [group[k:k + w] for k in range(0, len(group), w)]
            if all(sa.contiguous(r) and da.contiguous(r) and sa.alignment(r[0], w) >= w * eb
                   and da.alignment(r[0], w) >= w * eb for r in runs):
                break
            w //= 2
        for k in range(0, len(group), w):
            _copy_run_pred(sa, da, group[k:k + w], p)


def _packed_run(acc: _Access, i: int, w: int) -> bool:
    """Whether the w packed elements from linear index i are w consecutive elements in memory from an even one, w/2
    whole bytes at an alignment of w/2 (registers too: their bytes are what is copied)."""
    x0 = acc.pre(i)
    if any(not (isinstance(acc.pre(i + j) - x0, int) and acc.pre(i + j) - x0 == j) for j in range(1, w)):
        return False
    if acc.composed and (w > acc.max_run or _divisibility(x0) % w):
        return False
    start = acc.post(i)
    return _divisibility(acc.ptr.offset + start) % 2 == 0 and acc.ptr.alignment_at(start) >= w // 2


def _copy_packed(sa: _Access, da: _Access, n: int, cap: int) -> bool:
    """Copies n packed 4-bit elements as bytes, the widest run (a power of two up to cap elements) at each place;
    False (nothing written) when some element is not in such a run of at least two."""
    plan, i = [], 0
    while i < n:
        w = max(2, min(cap, _pow2_part(n - i)))
        while w >= 2 and not (_packed_run(sa, i, w) and _packed_run(da, i, w)):
            w //= 2
        if w < 2:
            return False
        plan.append((i, w))
        i += w
    b = trace.builder()
    for i, w in plan:
        ty = "i8" if w == 2 else f"vector<{w // 2}xi8>"
        v = b.op1("llvm.load", [sa.ptr.address(sa.post(i))], ty, f"alignment = {w // 2} : i64")
        b.op0("llvm.store", [v, da.ptr.address(da.post(i))], f"alignment = {w // 2} : i64")
    return True


def _copy_run_pred(sa, da, run, p: _Pred):
    w = len(run)
    i = run[0]

    def whole():
        if w > 1 and (sa.registers or da.registers):
            _copy_gather(sa, da, run)
        else:
            _copy_run(sa.ptr, sa.post(i), da.ptr, da.post(i), w)

    if p.pred is None:
        whole()
        return
    # The index arithmetic ahead of the branches below, which then share it: the run's start, from which its
    # elements are addressed by constants (the run is contiguous in memory).
    for acc in (sa, da):
        if not acc.registers:
            acc.ptr.prepare_address(acc.post(i))
    preds = [p.at(j) for j in run] if p.per == 1 else [p.at(i)]
    if len(preds) == 1 or all(q is preds[0] for q in preds):
        _emit_if(preds[0], whole)
        return
    every = preds[0]
    for q in preds[1:]:
        every = every & q

    def per_element():
        for k, (j, q) in enumerate(zip(run, preds)):
            _emit_if(q, lambda j=j, k=k: _copy_element(sa, da, i, j, k))

    _emit_if(every, whole, per_element)


def _register_groups(acc: _Access, run, eb: int):
    """The run cut into (position in run, count) pieces, each consecutive in the register tensor's storage and
    aligned to its size: one vector access each. Bytes of a register fragment accessed one by one would make LLVM
    keep each in a register of its own (and carry it so through loops); whole words stay whole."""
    out, k = [], 0
    while k < len(run):
        g = 1 << (len(run) - k).bit_length()
        while g > 1:
            g //= 2
            offs = [acc.post(j) for j in run[k:k + g]]
            if g > 1 and all(isinstance(x, int) for x in offs) and offs == list(range(offs[0], offs[0] + g)) and \
                    acc.ptr.alignment_at(offs[0]) >= g * eb:
                break
        out.append((k, g))
        k += g
    return out


def _copy_element(sa: _Access, da: _Access, first: int, j: int, k: int):
    """Element j = first + k of a run contiguous in memory, one scalar access: a memory side is addressed from the
    run's start by the constant k, so that the run's elements (and its whole access) share one address and differ
    by immediate offsets; an index sum per element, sign-extended, would hide that from the compiler and cost each
    element its own 64-bit address."""
    b = trace.builder()
    t = sa.ptr.dtype
    eb = elem_bytes(t)

    def addr(acc):
        a = acc.ptr.address(acc.post(j)) if acc.registers else acc.ptr.address_from(acc.post(first), k)
        return a, min(acc.ptr.alignment_at(acc.post(j)), eb)

    (src, s_align), (dst, d_align) = addr(sa), addr(da)
    v = _load(b, sa.ptr, src, mem_type(t), eb, s_align)
    _store(b, v, mem_type(t), da.ptr, dst, eb, d_align)


def _copy_gather(sa: _Access, da: _Access, run):
    """A run contiguous in memory on one side and spread over registers on the other: one vector access, the
    register side in the largest aligned pieces its storage holds consecutively."""
    b = trace.builder()
    t = sa.ptr.dtype
    n = len(run)
    vt = f"vector<{n}x{mem_type(t)}>"
    eb = elem_bytes(t)
    width = n * eb
    if sa.registers and da.registers:
        for j in run:
            _copy_run(sa.ptr, sa.post(j), da.ptr, da.post(j), 1)
        return
    # Values narrower than a register whose register side is consecutive too move to and from it as the whole
    # vector: the compiler then keeps those registers as one vector (two 16-bit values to a register) instead of a
    # register per value, repacked for packed arithmetic (elementwise_add in Float16: 114 registers, now 72).
    # Wider values gain nothing so, and a fragment that other copies access by vectors of another width would
    # then stay in local memory.
    packs = t.width < 32
    regs = sa if sa.registers else da
    offs = [regs.post(j) for j in run]
    if packs and all(isinstance(x, int) for x in offs) and offs == list(range(offs[0], offs[0] + n)):
        groups = [(0, n)]  # (Access.contiguous answers for memory: a register side always passes it)
    elif storage_bits(t) == 8:
        # a spread fragment of 8-bit values: its aligned consecutive pieces move whole
        groups = _register_groups(regs, run, eb)
    else:
        groups = [(k, 1) for k in range(n)]

    def piece_type(g):
        return mem_type(t) if g == 1 else f"vector<{g}x{mem_type(t)}>"

    if sa.registers:
        if groups == [(0, n)]:
            vec = b.op1("llvm.load", [sa.ptr.address(sa.post(run[0]))], vt, f"alignment = {eb} : i64")
        else:
            xs = []
            for k, g in groups:
                a = sa.ptr.address(sa.post(run[k]))
                v = b.op1("llvm.load", [a], piece_type(g), f"alignment = {g * eb} : i64")
                xs += [v] if g == 1 else [b.op1("vector.extract", [v], mem_type(t),
                                                f"static_position = array<i64: {j}>") for j in range(g)]
            vec = b.op1("vector.from_elements", xs, vt)
        _store(b, vec, vt, da.ptr, da.ptr.address(da.post(run[0])), width, width)
        return
    vec = _load(b, sa.ptr, sa.ptr.address(sa.post(run[0])), vt, width, width)
    if groups == [(0, n)]:
        b.op0("llvm.store", [vec, da.ptr.address(da.post(run[0]))], f"alignment = {eb} : i64")
        return
    for k, g in groups:
        if g == 1:
            x = b.op1("vector.extract", [vec], mem_type(t), f"static_position = array<i64: {k}>")
        else:
            mask = ", ".join(str(k + j) for j in range(g))
            x = b.op1("llvm.shufflevector", [vec, vec], piece_type(g), f"mask = array<i32: {mask}>")
        b.op0("llvm.store", [x, da.ptr.address(da.post(run[k]))], f"alignment = {g * eb} : i64")


# The L1 eviction priority of the global-memory accesses of the copy being traced (autovec_copy's
# l1c_evict_priority, a backend's cute.nvgpu.CacheEvictionPriority member, which emits those accesses); None: the
# plain loads and stores of LLVM (the default priority).
_l1_priority = None


def _load(b, ptr: Pointer, addr, ty: str, nbytes: int, align: int):
    if _l1_priority is not None and ptr.memspace == "gmem":
        return _l1_priority.__ww_global_load__(b, addr, ty, nbytes, align)
    return b.op1("llvm.load", [addr], ty, f"alignment = {align} : i64")


def _store(b, value, ty: str, ptr: Pointer, addr, nbytes: int, align: int):
    if _l1_priority is not None and ptr.memspace == "gmem":
        _l1_priority.__ww_global_store__(b, value, ty, addr, nbytes, align)
    else:
        b.op0("llvm.store", [value, addr], f"alignment = {align} : i64")


def _copy_run(src: Pointer, so, dst: Pointer, do, n: int):
    """Copies n elements, contiguous in both, with one vector access (n == 1: scalar)."""
    b = trace.builder()
    t = src.dtype
    if n == 1:
        if src.dtype is dst.dtype:
            a = src.address(so)
            eb = elem_bytes(t)
            v = _load(b, src, a, mem_type(t), eb, min(src.alignment_at(so), eb))
            _store(b, v, mem_type(t), dst, dst.address(do), eb, min(dst.alignment_at(do), eb))
        else:
            store_scalar(dst, do, dst.dtype(load_scalar(src, so)))
        return
    vt = f"vector<{n}x{mem_type(t)}>"
    width = n * elem_bytes(t)
    a = src.address(so)
    v = _load(b, src, a, vt, width, width)
    _store(b, v, vt, dst, dst.address(do), width, width)


# --- backend atoms ------------------------------------------------------------------------------------------------

@trace.one_user_line
def _copy_manifest(atom: ManifestCopyAtom, src, dst, pred):
    ins = atom.manifest
    if atom.width_mismatch:
        raise DSLTypeError(f"cute.copy: {atom.width_mismatch}; this atom gives layouts (a tiled copy's partition) "
                           "but copies only values of its own width", user_location(3))
    for name, t in (("source", src), ("destination", dst)):
        _check_memory_tensor(t, name)
    n, m = _static_size(src, "source"), _static_size(dst, "destination")
    vs, vd = atom.num_values_src, atom.num_values_dst
    if n % vs or m % vd or n // vs != m // vd:
        raise DSLValueError(f"cute.copy with {ins['id']}: the source has {n} elements and the destination {m}; "
                            f"each atom instance takes {vs} and gives {vd} per thread", user_location(3))
    for t, o, side in ((src, atom.src_op, "source"), (dst, atom.dst_op, "destination")):
        want = {"SMEM_ADDRESS": "smem", "GMEM_ADDRESS": "gmem", "REGISTERS": "rmem"}.get(o["role"])
        if want is None:
            raise DSLTypeError(f"cute.copy cannot drive the {o['role']} operand of {ins['id']}", user_location(3))
        if t.iterator.memspace != want:
            raise DSLTypeError(f"{ins['id']} takes its {side} in {want}; got a tensor in {t.iterator.memspace}",
                               user_location(3))
    instances = n // vs
    p = _Pred(pred, n, vs, instances, _mode0_size(src))
    sa, da = _Access(src), _Access(dst)
    b = trace.builder()
    vt = atom.value_type
    eb = elem_bytes(vt)

    def address(acc: _Access, i0, count, o):
        if not acc.contiguous(list(range(i0, i0 + count))):
            raise DSLValueError(f"{ins['id']}: each thread's {count} values of an atom instance must be contiguous "
                                f"in memory; the layout {full_layout(acc.t)} does not place them so", user_location(5))
        need = count * vt.width // 8
        got = acc.alignment(i0, count)
        if got < need:
            raise DSLValueError(f"{ins['id']}: each thread's {need}-byte run must be {need}-byte aligned; only "
                                f"{got}-byte alignment is proven (promise more with Pointer.align or an aligned "
                                "tensor)", user_location(5))
        ty = "i32" if o["role"] == "SMEM_ADDRESS" else "i64"
        return [pointer_operand(acc.ptr, acc.post(i0), ty)]

    k = atom.pack_values

    def words(acc: _Access, i0, count, o):
        """Per register of values i0..i0+count-1 of a register tensor: (pointer, index) of the register element
        holding its k values where they are consecutive and aligned in the tensor's storage (the register moves
        whole, no value is taken apart), else None. Decided register by register: a retiled fragment places the
        registers of one instruction apart, each whole."""
        wt = {16: Int16, 32: Int32}.get(ELEMENT_TYPES[o["element_type"]][1])
        base = acc.ptr.offset
        if k < 2 or wt is None or acc.composed or not isinstance(base, int) or \
                (base * storage_bits(vt)) % wt.width:
            return [None] * (count // k)
        ptr, out = None, []
        for r in range(0, count, k):
            offs = [acc.post(i0 + r + j) for j in range(k)]
            if not all(isinstance(x, int) for x in offs) or offs[0] % k or \
                    offs != list(range(offs[0], offs[0] + k)):
                out.append(None)
                continue
            ptr = ptr or acc.ptr.recast(wt)
            out.append((ptr, offs[0] // k))
        return out

    def registers(acc: _Access, i0, count, o):
        et = ELEMENT_TYPES[o["element_type"]][0]
        slots = words(acc, i0, count, o) if k > 1 else [None] * count
        vals = []
        for r, slot in enumerate(slots):
            if slot is not None:
                vals.append(load_scalar(*slot).ir())
                continue
            one = []
            for j in range(r * k, (r + 1) * k) if k > 1 else (r,):
                v = load_scalar(acc.ptr, acc.post(i0 + j)).ir()
                one.append(v if et == vt.ir_type or k > 1 else b.op1("llvm.bitcast", [v], et))
            vals += one if k == 1 else _pack_values(b, one, k, vt.width, et)
        return vals

    for r in range(instances):
        i_s, i_d = r * vs, r * vd

        def one(flag=None, r=r, i_s=i_s, i_d=i_d):
            inputs = {}
            for o, acc, i0, cnt in ((atom.src_op, sa, i_s, vs), (atom.dst_op, da, i_d, vd)):
                if o["role"] == "REGISTERS":
                    if o["direction"] != "OUT":
                        inputs[o["name"]] = registers(acc, i0, cnt, o)
                else:
                    inputs[o["name"]] = address(acc, i0, cnt, o)
            if atom.src_size_op is not None:
                full = Int32(vs * eb)
                size = full if flag is None else _select_int(flag, full)
                inputs["src_size"] = [size.ir()]
            out = emit_instruction(b, atom.backend.name, ins, inputs, dict(atom.attributes))
            if atom.dst_op["role"] == "REGISTERS" and atom.dst_op["direction"] == "OUT":
                vals = out["dst"]
                et = ELEMENT_TYPES[atom.dst_op["element_type"]][0]
                if k == 1:
                    xs = [vt.from_ir(v if et == vt.ir_type else b.op1("llvm.bitcast", [v], vt.ir_type)) for v in vals]
                    store_scalars(da.ptr, [da.post(i_d + j) for j in range(len(xs))], xs)
                    return
                wt = Int16 if et == "i16" else Int32
                slots = words(da, i_d, vd, atom.dst_op)
                r = 0
                while r < len(vals):
                    slot = slots[r]
                    if slot is None:
                        xs = [vt.from_ir(x) for x in _unpack_values(b, [vals[r]], k, vt.width, et, vt.ir_type)]
                        store_scalars(da.ptr, [da.post(i_d + r * k + j) for j in range(k)], xs)
                    elif et == "i16" and r + 1 < len(vals) and slot[1] % 2 == 0 and slots[r + 1] is not None and \
                            slots[r + 1][1] == slot[1] + 1:
                        # Two 16-bit halves of one aligned 32-bit word: one store, so that the word stays one
                        # register (the halves of the instruction's 32-bit register, put back together).
                        pair = b.op1("vector.from_elements", [vals[r], vals[r + 1]], "vector<2xi16>")
                        word = Int32.from_ir(b.op1("llvm.bitcast", [pair], "i32"))
                        store_scalar(slot[0].recast(Int32), slot[1] // 2, word)
                        r += 1
                    else:
                        store_scalar(slot[0], slot[1], wt.from_ir(vals[r]))
                    r += 1

        q = p.at(i_s) if p.pred is not None else None
        if q is None:
            one()
        elif atom.src_size_op is not None:
            one(q)  # zero-fill when predicated off: one instruction, no branch
        else:
            _emit_if(q, one)


def _pack_values(b, vals, k, bits, et):
    """Values of `bits` bits (their IR integers) -> registers of type et, k a register, the first in the low bits."""
    out = []
    for r in range(0, len(vals), k):
        acc = None
        for j, v in enumerate(vals[r:r + k]):
            x = b.op1("arith.extui", [v], et) if bits < int(et[1:]) else v
            if bits < 8:
                x = b.op1("arith.andi", [x, b.constant_int((1 << bits) - 1, et)], et)
            if j:
                x = b.op1("arith.shli", [x, b.constant_int(bits * j, et)], et)
            acc = x if acc is None else b.op1("arith.ori", [acc, x], et)
        out.append(acc)
    return out


def _unpack_values(b, regs, k, bits, et, vt):
    """The inverse of _pack_values: each register of type et -> its k values as vt integers."""
    out = []
    for r in regs:
        for j in range(k):
            x = b.op1("arith.shrui", [r, b.constant_int(bits * j, et)], et) if j else r
            x = b.op1("arith.trunci", [x], vt if bits >= 8 else "i8")
            if bits < 8:
                x = b.op1("arith.andi", [x, b.constant_int((1 << bits) - 1, "i8")], "i8")
            out.append(x)
    return out


def _select_int(flag, full):
    return select(flag, full, Int32(0))


def autovec_copy(src, dst, *, l1c_evict_priority=None, loc=None, ip=None):
    """Copies src to dst with the widest accesses their layouts allow; with l1c_evict_priority (a
    cute.nvgpu.CacheEvictionPriority), its global-memory loads and stores carry that L1 eviction priority."""
    global _l1_priority
    if l1c_evict_priority is not None and not hasattr(l1c_evict_priority, "__ww_global_store__"):
        raise DSLTypeError(f"autovec_copy: l1c_evict_priority is a cute.nvgpu.CacheEvictionPriority, got "
                           f"{l1c_evict_priority!r}", user_location(2))
    if l1c_evict_priority is not None and src.element_type is not dst.element_type:
        raise DSLTypeError(f"autovec_copy with l1c_evict_priority: {src.element_type.__name__} to "
                           f"{dst.element_type.__name__} converts; copy between tensors of one type",
                           user_location(2))
    outer, _l1_priority = _l1_priority, l1c_evict_priority
    try:
        copy(CopyAtom(CopyUniversalOp(), src.element_type), src, dst)
    finally:
        _l1_priority = outer


@hooks.fill_memory.register
def _fill_memory(t, value):
    """t.fill(value) for a shared- or global-memory tensor: the value in a register fragment shaped like t, copied
    with the widest stores t's layout allows (a swizzled shared tensor's 16-byte runs stay one store each)."""
    frag = make_rmem_tensor_like(t)
    frag.store(value)
    autovec_copy(frag, t)


def basic_copy(src, dst):
    copy(CopyAtom(CopyUniversalOp(), src.element_type, src.element_type.width), src, dst)


def basic_copy_if(pred, src, dst, *, loc=None, ip=None):
    """basic_copy of the elements whose predicate (a Boolean tensor of src's shape) is true; the others of dst
    are left as they are."""
    copy(CopyAtom(CopyUniversalOp(), src.element_type, src.element_type.width), src, dst, pred=pred)


accept_locations(globals(), ["autovec_copy", "basic_copy"])
