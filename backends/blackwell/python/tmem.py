"""Tensor memory in the DSL: allocation (utils.TmemAllocator, cute.arch.alloc_tmem ...), copies between tensor
memory and registers (tcgen05.make_tmem_copy with the Ld/St ops), the tensor-memory fences, and the tcgen05
commit that makes an mbarrier track this thread's MMAs.

make_tmem_copy(atom, tmem_tensor) arranges the atom over the four warps of a warpgroup: warp w moves lanes
32 (w % 4) .. +31 of the tile (its only reachable lanes), and each thread's values follow the atom's register
layout (the manifest's layout_tv: thread l, register r -> (lane, column) of one instruction), repeated over the
lane halves (16-lane shapes) and then over the columns of the tile. The tiled copy's thread-value layout maps
into the tile's coordinates through the tile's own tensor-memory layout, so partitioning the tensor-memory tile
(partition_S) and a tile of the same shape elsewhere (partition_D, e.g. of C in global memory) pairs each register
with the element whose accumulator it holds. At cute.copy each instruction gets the warp's address (its first
lane and column: every thread passes the same one). A copy's load waits for the loads before it (one in flight),
not for itself: each read of its registers is ordered after it; fence_view_async_tmem_load (tcgen05.wait::ld)
waits for all of this thread's loads, before the tensor memory they read is handed back to the MMA.
"""
from __future__ import annotations

import itertools
import re

import copy as _copy
import enum

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

from .tcgen05_mma import CtaGroup, i32_value, tmem_address
from .tmem_layouts import LANE, LANES, columns_of
from . import tmem_warps
from .tmem_tiled_copy import TmemTiledCopy

WARPS = LANES // 32


class Pack(enum.Enum):
    """tcgen05.ld's packing: NONE (one 32-bit column per register), or PACK_16b_IN_32b (two 16-bit columns into
    one register; not supported here)."""
    NONE = "none"
    PACK_16b_IN_32b = "pack_16b_in_32b"


class Unpack(enum.Enum):
    """tcgen05.st's unpacking: NONE, or UNPACK_32b_IN_16b (not supported here)."""
    NONE = "none"
    UNPACK_32b_IN_16b = "unpack_32b_in_16b"


_TMEM_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b")


# tcgen05.Repetition: how many times a tcgen05.ld/st repeats its shape (.x1 .. .x128), by name (Repetition.x32)
# or by count (Repetition(32)); the manifest's atoms are selected by the name.
Repetition = enum.Enum("Repetition", {f"x{1 << i}": 1 << i for i in range(8)})
Repetition.__doc__ = "The repetitions of a tcgen05.ld/st shape: x1 .. x128 (Repetition(32) is x32)."


# CuTe DSL's tensor-memory copy operations this backend does not build yet: named (libraries list them in tables of
# ops, as QuACK's copy_utils does at import), refused where one is made.
NOT_BUILT_COPY_OPS = {
    "Ld16x32bx2Op": "tcgen05.ld .16x32bx2 (two 16-lane halves, the second at a column offset)",
    "St16x32bx2Op": "tcgen05.st .16x32bx2 (two 16-lane halves, the second at a column offset)",
    "LdRed16x32bx2Op": "tcgen05.ld.red .16x32bx2 (a load reduced across columns)",
    "LdRed32x32bOp": "tcgen05.ld.red .32x32b (a load reduced across columns)",
}


def not_built_op(name, what):
    def __init__(self, *args, **kwargs):
        raise ext.user_error(f"tcgen05.{name} ({what}) is not built by the Blackwell backend yet; the tensor-memory "
                             "copies it builds: tcgen05.Ld32x32bOp, Ld16x64bOp, Ld16x128bOp, Ld16x256bOp and their "
                             "St counterparts", ext.DSLNotImplementedError)

    return type(name, (), {"__init__": __init__, "__doc__": f"{what}: not built yet (constructing it says so)."})


def _make_copy_op_classes():
    """tcgen05.Ld<shape>Op(repeat, pack) and St<shape>Op(repeat, unpack) over the manifest's classes (whose only
    parameter is the repetition)."""
    out = {}
    for shape in _TMEM_SHAPES:
        cls_name = shape[0].upper() + shape[1:]
        for kind, flag, none in (("Ld", "pack", Pack.NONE), ("St", "unpack", Unpack.NONE)):
            base = ext.manifest_class(f"tcgen05.{kind}{cls_name}Op")
            if base is None:
                continue

            def init(self, repeat, mode=none, *, _flag=flag, _none=none, _base=base, **kwargs):
                if mode is not _none:
                    raise ext.user_error(f"{type(self).__name__}: {_flag}={mode} is not supported here (values move "
                                         f"32 bits per column); use {type(_none).__name__}.NONE", ext.DSLValueError)
                _base.__init__(self, repeat, **kwargs)

            out[f"{kind}{cls_name}Op"] = type(f"{kind}{cls_name}Op", (base,), {
                "__init__": init, "__doc__": (f"tcgen05.{'ld' if kind == 'Ld' else 'st'}.{shape}: {kind}{cls_name}Op("
                                              f"repeat, {flag}={type(none).__name__}.NONE)")})
    return out


def _is_tmem_op(atom, prefix):
    name = getattr(getattr(atom, "op", None), "python_name", "")
    return name.startswith(f"tcgen05.{prefix}") and name.endswith("Op")


def _shape_of_atom(atom):
    """(lanes, 32-bit columns per lane) of one instruction of a tcgen05.ld/st atom, from its manifest entry."""
    text = atom.manifest["id"].split(".")[3]                 # blackwell.tcgen05.ld.<shape>.x<num>
    lanes, bits = text.split("x")
    num = int(atom.manifest["id"].rsplit(".x", 1)[1])
    return int(lanes), int(bits[:-1]) * num // 32


def _flat(t):
    if isinstance(t, tuple):
        return [x for e in t for x in _flat(e)]
    return [t]


def _eval(shapes, strides, idx):
    """Layout (shapes, strides) applied to a run-time Int32 index (static shapes and strides)."""
    total = cutlass.Int32(0)
    div = 1
    for s, d in zip(shapes, strides):
        if s != 1 and d != 0:
            total = total + ((idx // div) % s) * d
        div *= s
    return total


def _pack(b, xs, et):
    """One 32-bit register of values of type et (32 // width of them, the first in the low bits)."""
    if len(xs) == 1:
        return xs[0] if et.ir_type == "i32" else b.op1("llvm.bitcast", [xs[0]], "i32")
    w = et.width
    out = None
    for k, x in enumerate(xs):
        bits = x if et.ir_type == f"i{w}" else b.op1("llvm.bitcast", [x], f"i{w}")
        wide = b.op1("arith.extui", [bits], "i32")
        if k:
            wide = b.op1("arith.shli", [wide, cutlass.Int32(k * w).ir()], "i32")
        out = wide if out is None else b.op1("arith.ori", [out, wide], "i32")
    return out


def _unpack(b, reg, et, pack):
    """The values of type et a 32-bit register holds, low bits first."""
    if pack == 1:
        return [reg if et.ir_type == "i32" else b.op1("llvm.bitcast", [reg], et.ir_type)]
    w = et.width
    out = []
    for k in range(pack):
        x = reg if k == 0 else b.op1("arith.shrui", [reg, cutlass.Int32(k * w).ir()], "i32")
        bits = b.op1("arith.trunci", [x], f"i{w}")
        out.append(bits if et.ir_type == f"i{w}" else b.op1("llvm.bitcast", [bits], et.ir_type))
    return out


class TmemCopyAtom:
    """Mixin of a tcgen05.ld/st copy atom arranged by make_tmem_copy: the copy of one thread's partition."""

    def _setup_tmem(self, lanes, cols, thread_offset, value_offsets):
        self.tmem_lanes, self.tmem_cols = lanes, cols
        self.thread_offset = thread_offset   # (thread shapes, strides): offset of a thread's first value (columns)
        self.value_offsets = value_offsets   # a thread's values of one instruction -> their offsets (elements)
        self.is_load = self.dst_op["role"] == "REGISTERS"

    def _check_instruction(self, tm, j, per):
        """Values j * per .. of this thread's partition are where one instruction puts them (a static layout)."""
        first = tm.layout(j * per)
        if not isinstance(first, int):
            return
        base = self.value_offsets(0)
        for v in range(per):
            got = tm.layout(j * per + v) - first
            if got != self.value_offsets(v) - base:
                raise ext.user_error(f"cute.copy with {self.manifest['id']}: value {j * per + v} of the tensor-memory "
                                     f"partition {tm.layout} is not where instruction {j} puts it (take the "
                                     "partition of this tiled copy: partition_S/D of the tile it was made for)",
                                     ext.DSLValueError)

    def __ww_copy__(self, src, dst, *, pred=None, **kwargs):
        if kwargs:
            raise ext.user_error(f"cute.copy of a tensor-memory copy got an unexpected keyword argument "
                                 f"{next(iter(kwargs))!r}", ext.DSLTypeError)
        if pred is not None:
            raise ext.user_error("cute.copy of a tensor-memory copy takes no pred=: every lane of the warp moves its "
                                 "values", ext.DSLTypeError)
        tm, rg = (src, dst) if self.is_load else (dst, src)
        tm_side, rg_side, part = ("source", "destination", "S") if self.is_load else ("destination", "source", "D")
        if getattr(tm, "memspace", None) != "tmem":
            raise ext.user_error(f"cute.copy with {self.manifest['id']}: the {tm_side} is this thread's partition of "
                                 f"tensor memory (partition_{part}), got {tm!r}", ext.DSLTypeError)
        if getattr(rg, "memspace", None) != "rmem":
            raise ext.user_error(f"cute.copy with {self.manifest['id']}: the {rg_side} is a register tensor, got "
                                 f"{rg!r}", ext.DSLTypeError)
        w = self.value_type.width
        if rg.element_type.width != w or tm.element_type.width != w:
            raise ext.user_error(f"cute.copy with {self.manifest['id']} of {self.value_type.__name__}: both sides hold "
                                 f"{w}-bit values, got {rg.element_type.__name__} registers and "
                                 f"{tm.element_type.__name__} in tensor memory; convert after loading",
                                 ext.DSLTypeError)
        n, m = cute.size(tm), cute.size(rg)
        per = self.num_values
        if n != m or n % per:
            raise ext.user_error(f"cute.copy with {self.manifest['id']}: the tensor-memory side has {n} values and the "
                                 f"registers {m}; each instruction moves {per} per thread", ext.DSLValueError)
        b = ext.builder()
        # The lane as the partition computed it (TmemThrCopy: the thread index modulo 32), not the lane register:
        # the two offsets then cancel in the compiler's folding and the address is the warp-uniform part alone.
        lane = cute.arch.thread_idx()[0] % 32
        own = _eval(*self.thread_offset, lane)   # where this thread's first value sits within the instruction
        et = rg.element_type
        pack = 32 // w
        for j in range(n // per):
            self._check_instruction(tm, j, per)
            addr = b.op1("arith.subi", [tmem_address(tm, tm.layout(j * per)), own.ir()], "i32")
            if self.is_load:
                if j:
                    fence_view_async_tmem_load()
                out = ext.emit_instruction(b, self.backend.name, self.manifest, {"src": [addr]})
                for r, v in enumerate(out["dst"]):
                    for k, x in enumerate(_unpack(b, v, et, pack)):
                        rg[j * per + r * pack + k] = et.from_ir(x)
            else:
                vals = [_pack(b, [rg[j * per + r * pack + k].ir() for k in range(pack)], et)
                        for r in range(per // pack)]
                ext.emit_instruction(b, self.backend.name, self.manifest, {"dst": [addr], "src": vals})
        # A load's registers are ready when read (ptxas orders each read after its load), so the copy does not wait
        # for its last load: waiting for all of them at the end would keep every loaded register live together (a
        # tile's worth, where ptxas otherwise converts and stores one load's values while the next is in flight).
        # Each further load waits for the ones before it: with several in flight, ptxas may hold the kernel to 64
        # registers and spill (CuTe DSL's dense_gemm_persistent_prefetch, four .x32 loads: 64 registers and 40
        # bytes of spills, against 149 with one load in flight). A program that hands the tensor memory back before
        # reading the registers waits with fence_view_async_tmem_load, as in CuTe DSL.


_atom_classes: dict = {}


def _tmem_atom(atom, value_offsets, lanes, cols, thread_offset):
    values = cute.size(value_offsets)
    base = type(atom)
    cls = _atom_classes.get(base)
    if cls is None:
        cls = _atom_classes[base] = type("TmemCopyAtom", (TmemCopyAtom, base), {})
    new = _copy.copy(atom)
    new.__class__ = cls
    # Both sides are counted as the registers hold them (the tensor-memory side is one address for the warp), a
    # lane's values in the order of make_tmem_copy's thread-value layout: partition_S and partition_D then pair a
    # register value with the element it holds.
    reg = cute.make_layout((32, values), stride=(values, 1))
    new.layout_src_tv = new.layout_dst_tv = new.layout_ref_tv = reg
    new._setup_tmem(lanes, cols, thread_offset, value_offsets)
    return new


def _register_offsets(atom, per):
    """One instruction of a tcgen05.ld/st atom as (lane of the warp, value) -> tensor-memory offset in elements of
    its value type (per elements to a 32-bit column; lane steps of per * LANE), the values of a register in order
    within it, and the instruction's (lanes, 32-bit columns)."""
    lanes, C = _shape_of_atom(atom)
    # the manifest's register layout counts 32-bit registers and cells of one instruction (column + C * lane)
    reg = atom.layout_dst_tv if atom.dst_op["role"] == "REGISTERS" else atom.layout_src_tv
    if per > 1:
        a32 = cute.make_copy_atom(atom.op, cutlass.Int32)
        reg = a32.layout_dst_tv if a32.dst_op["role"] == "REGISTERS" else a32.layout_src_tv
    off = cute.composition(cute.make_layout((C, lanes), stride=(1, LANE)), reg)
    th_s, th_d = _flat(off.shape[0]), _flat(off.stride[0])
    v_s, v_d = _flat(off.shape[1]), _flat(off.stride[1])
    thr32 = (th_s, th_d)
    vals = cute.make_layout((per,) + tuple(v_s), stride=(1,) + tuple(d * per for d in v_d))
    thr = cute.make_layout(tuple(th_s), stride=tuple(d * per for d in th_d))
    return thr, vals, thr32, lanes, C


def make_tmem_copy(atom, tmem_tensor, *, loc=None, ip=None):
    """The tiled copy of a tcgen05.ld or tcgen05.st atom (cute.make_copy_atom(tcgen05.Ld32x32bOp(...), Float32))
    over a tensor-memory tile (e.g. one epilogue sub-tile of the accumulators) for the 128 threads of a warpgroup.

    As CuTe's, it is tiled by what one instruction in each of the four warps reaches: its tiler takes, mode by mode
    of the tile, the coordinates those instructions hold, so partitioning the tile gives (one instruction's values,
    the tile's rest modes...) and a tile larger than that is copied by one instruction per rest index. Values of 8
    or 16 bits sit packed in 32-bit columns (2 or 4 to a column and to a register, the first in the low bits)."""
    if not (_is_tmem_op(atom, "Ld") or _is_tmem_op(atom, "St")):
        raise ext.user_error(f"make_tmem_copy: expected a copy atom of a tcgen05 Ld or St op, got {atom!r}",
                             ext.DSLTypeError)
    if getattr(tmem_tensor, "memspace", None) != "tmem":
        raise ext.user_error(f"make_tmem_copy: the tile must be a tensor in tensor memory, got {tmem_tensor!r}",
                             ext.DSLTypeError)
    w = atom.value_type.width
    if w not in (8, 16, 32):
        raise ext.user_error(f"make_tmem_copy: tensor-memory copies move 32-bit columns of one 32-bit value or of 2 "
                             f"16-bit or 4 8-bit ones, not {atom.value_type.__name__}", ext.DSLTypeError)
    if tmem_tensor.element_type.width != w:
        raise ext.user_error(f"make_tmem_copy: the atom moves {atom.value_type.__name__} values, the tile holds "
                             f"{tmem_tensor.element_type.__name__}", ext.DSLTypeError)
    per = 32 // w
    T = tmem_tensor.layout
    T = getattr(T, "outer", T)
    if not isinstance(cute.cosize(T), int):
        raise ext.user_error(f"make_tmem_copy: the tile's layout {T} must be static", ext.DSLValueError)
    thr, vals, thr32, lanes, C = _register_offsets(atom, per)
    # (thread of the warpgroup, value of one instruction) -> offset from the tile's first cell; warp w reaches the
    # lanes 32 (w % 4) .. (warps past a tile of fewer lanes repeat the first ones: tmem_warps.py)
    w_shape, w_stride = tmem_warps.warp_mode(T, per)
    thr_all = cute.make_layout((thr.shape, w_shape), stride=(thr.stride, w_stride))
    atom_tv = cute.make_layout((thr_all.shape, vals.shape), stride=(thr_all.stride, vals.stride))
    bad = _first_mismatch(T, cute.composition(cute.left_inverse(T), atom_tv), atom_tv, cute.size(vals))
    if bad is not None:
        raise ext.user_error(f"make_tmem_copy: {atom.manifest['id']} in each warp of a warpgroup reaches cells "
                             f"outside the tile {T} ({bad}); choose the copy op for the accumulator's data "
                             "path (blackwell_helpers.get_tmem_load_op)", ext.DSLValueError)
    tiled = cute.make_cotiled_copy(_tmem_atom(atom, vals, lanes, C, thr32), atom_tv, T)
    return TmemTiledCopy(tiled.atom, tiled.layout_tv_tiled, tiled.tiler_mn)


def _first_mismatch(T, tv, tmem_tv, values):
    """None when T(tv(t, v)) == tmem_tv(t, v) on every thread of a sample of values, else a sentence."""
    size = cute.size(T)
    for t in range(LANES):
        for v in sorted({0, 1, values // 2, values - 1} & set(range(values))):   # an x1 32x32b op has one value
            want = tmem_tv((t, v))
            i = tv((t, v))
            if not 0 <= i < size or T(i) != want:
                lane, col = divmod(want, LANE)
                return f"thread {t} value {v} would reach lane {lane} column {col}"
    return None


# tcgen05.cp shapes the copy below drives: (rows = lanes, bytes per row) of one instruction
_S2T_SHAPES = {"Cp128x256bOp": (128, 32), "Cp128x128bOp": (128, 16)}


class S2TCopy:
    """A shared -> tensor memory copy (make_s2t_copy): one elected thread issues one tcgen05.cp per tile of
    (128 rows, 32 or 16 bytes); row r lands in lane r, its bytes in consecutive 32-bit columns. Each shared-memory
    tile is read through a UMMA descriptor, so it must be in a canonical K-major layout (the MMAs' forms, K the
    row's bytes)."""

    def __init__(self, atom, rows, row_bytes, tiler):
        self.atom = atom
        self.rows, self.row_bytes = rows, row_bytes
        self.tiler_mn = tiler
        self.size = 1

    def get_slice(self, thr_idx):
        return self

    get_thread_slice = get_slice

    def _partition(self, tensor):
        outer = getattr(tensor.layout, "outer", tensor.layout)
        if cute.size(outer, mode=[0]) % self.rows or cute.size(outer, mode=[1]) % self.tiler_mn[1]:
            raise ext.user_error(f"make_s2t_copy: the tensor {tensor} is not made of ({self.rows}, "
                                 f"{self.tiler_mn[1]}) tiles", ext.DSLValueError)
        return cute.zipped_divide(tensor, self.tiler_mn)

    def partition_S(self, tensor):
        """The shared-memory tensor as ((one instruction's tile), (tiles...))."""
        return self._partition(tensor)

    def partition_D(self, tensor):
        return self._partition(tensor)

    def _check_operands(self, src, dst, pred, kwargs):
        """A shared-memory partition (partition_S) to a tensor-memory one (partition_D), without keywords."""
        if kwargs or pred is not None:
            raise ext.user_error("cute.copy of a shared -> tensor memory copy takes no keywords", ext.DSLTypeError)
        if getattr(src, "memspace", None) != "smem" or getattr(dst, "memspace", None) != "tmem":
            raise ext.user_error(f"cute.copy with {self.atom.manifest['id']}: from a shared-memory partition "
                                 f"(partition_S) to a tensor-memory one (partition_D), got {src!r} and {dst!r}",
                                 ext.DSLTypeError)

    def __ww_copy__(self, src, dst, *, pred=None, **kwargs):
        from .tcgen05_mma import UmmaSmemDescriptorKind

        self._check_operands(src, dst, pred, kwargs)
        n = cute.size(src, mode=[1]) if len(src.shape) > 1 else 1
        if n != (cute.size(dst, mode=[1]) if len(dst.shape) > 1 else 1):
            raise ext.user_error("cute.copy of a shared -> tensor memory copy: the two partitions have different "
                                 "numbers of tiles", ext.DSLValueError)
        kind = UmmaSmemDescriptorKind()
        b = ext.builder()
        insts = []
        for j in range(n):
            s_tile = src[(None, j)] if len(src.shape) > 1 else src
            d_tile = dst[(None, j)] if len(dst.shape) > 1 else dst
            self._check_tmem_tile(d_tile)
            desc = kind.descriptor({"name": "src"}, s_tile, self.row_bytes)
            insts.append((tmem_address(d_tile, d_tile.layout(0)), desc))

        def issue():
            for addr, desc in insts:
                ext.emit_instruction(b, self.atom.backend.name, self.atom.manifest, {"dst": [addr], "src": [desc]})

        ext.when(cute.arch.elect_one(), issue)

    def _check_tmem_tile(self, tile):
        per = 32 // tile.element_type.width
        lay = getattr(tile.layout, "outer", tile.layout)
        o0 = lay(0)
        cols = self.tiler_mn[1]
        for r in (0, 1, self.rows - 1):
            for c in (0, cols - 1):
                want = r * LANE * per + c
                if lay(r + self.rows * c) - o0 != want:
                    raise ext.user_error(f"make_s2t_copy: the tensor-memory tile {lay} does not put row {r} in lane "
                                         f"{r} and its elements in consecutive columns", ext.DSLValueError)


class S2TScaleCopy(S2TCopy):
    """The shared -> tensor memory copy of block scale factors (tcgen05.Cp4x32x128bOp, tcgen05.cp .32x128b.warpx4):
    one instruction per 512-byte block of 128 rows x 4 scale factors (blockscaled_layout's basic chunk), whose 32
    rows of 16 bytes land in lanes 0-31 of every lane quarter, 4 columns. partition_S / partition_D make an
    (MMA, MMA_MN, MMA_K[, STAGE]) scale-factor tensor (filter_zeros of make_smem_layout_sfa/sfb or
    make_tmem_layout_sfa/sfb) one of (block, the instruction's blocks, MMA_MN, MMA_K[, STAGE])."""

    def __init__(self, atom, shape=None):
        super().__init__(atom, 32, 16, (32, 16))
        if shape is not None:
            # one thread issues the copy of the whole tensor (make_s2t_copy's): the tile is the tensor, mode for
            # mode, and its (thread, value) layouts give thread 0 every value in the tensor's own modes
            self.tiler_mn = tuple(cute.size(shape, mode=[i]) for i in range(len(shape)))
            whole = cute.make_layout((1, shape), stride=(0, cute.make_layout(shape).stride))
            self.layout_src_tv_tiled = self.layout_dst_tv_tiled = whole

    def _partition(self, tensor):
        lay = getattr(tensor.layout, "outer", tensor.layout)
        shape, stride = lay.shape, lay.stride
        try:
            (rows, ks), (rows_d, ks_d) = shape[0], stride[0]
            if isinstance(rows[0], tuple):
                (r, blocks), (r_d, blocks_d) = rows, rows_d
            else:
                r, blocks, r_d, blocks_d = rows, 1, rows_d, 0
                if cute.size(r) > 128 and all(isinstance(x, int) for x in r) and cute.size(r[:-1]) == 128:
                    # ((32, 4), blocks) coalesced into one flat mode (32, 4, blocks)
                    r, blocks, r_d, blocks_d = r[:-1], r[-1], r_d[:-1], r_d[-1]
            if cute.size(ks) < 4 and len(shape) > 2:
                # An MMA of fewer than 4 scale factors a row (MXFP8's K = 32: one): the block's other factors are
                # the next k-blocks', the leading part of MMA_K.
                ks, ks_d, shape, stride = _factors_from_k(ks, ks_d, shape, stride)
            # 128 rows however factored ((32, 4), or sm_103a kernels' (8, 4, 4)): _check_block reads them in order
            ok = cute.size(r) == 128 and cute.size(ks) == 4 and isinstance(blocks, int)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ext.user_error(f"make_s2t_copy: {self.atom.op!r} copies blocks of 128 rows x 4 scale factors; the "
                                 f"tensor {tensor} is not an (MMA, ...) tensor of them (filter_zeros of a "
                                 "blockscaled_layout layout)", ext.DSLValueError)
        block = ((r, ks), (r_d, ks_d))
        new = cute.make_layout((block[0], blocks) + tuple(shape[1:]), stride=(block[1], blocks_d) + tuple(stride[1:]))
        return cute.make_tensor(tensor.iterator, new)

    def __ww_copy__(self, src, dst, *, pred=None, **kwargs):
        self._check_operands(src, dst, pred, kwargs)
        rest_s = [cute.size(src, mode=[i]) for i in range(1, len(src.shape))]
        rest_d = [cute.size(dst, mode=[i]) for i in range(1, len(dst.shape))]
        if rest_s != rest_d or not all(isinstance(x, int) for x in rest_s):
            raise ext.user_error(f"cute.copy of scale factors: the partitions' blocks differ ({rest_s} and "
                                 f"{rest_d}; slice the shared-memory one at its stage)", ext.DSLValueError)
        b = ext.builder()
        insts = []
        for idx in itertools.product(*(range(x) for x in rest_s)):
            s_blk, d_blk = src[(None,) + idx], dst[(None,) + idx]
            self._check_block(s_blk, 16, 4, "shared-memory", 1)
            self._check_block(d_blk, 4 * LANE, 4, "tensor-memory", 1)
            insts.append((tmem_address(d_blk, d_blk.layout(0)), self._desc(b, s_blk)))

        def issue():
            for addr, desc in insts:
                ext.emit_instruction(b, self.atom.backend.name, self.atom.manifest, {"dst": [addr], "src": [desc]})

        ext.when(cute.arch.elect_one(), issue)

    @staticmethod
    def _check_block(blk, row_step, quarter_step, what, sf_step):
        lay = getattr(blk.layout, "outer", blk.layout)
        o0 = lay(0)
        for r0, r1, sf in ((1, 0, 0), (31, 0, 0), (0, 1, 0), (0, 3, 0), (0, 0, 1), (5, 2, 3)):
            got = lay(r0 + 32 * r1 + 128 * sf) - o0       # the block's ((32, 4), (1, 4)) modes, co-lexicographic
            if got != r0 * row_step + r1 * quarter_step + sf * sf_step:
                raise ext.user_error(f"cute.copy of scale factors: the {what} block {lay} does not hold row "
                                     f"{r0 + 32 * r1}'s scale factor {sf} where a 32x128b.warpx4 copy takes it",
                                     ext.DSLValueError)

    @staticmethod
    def _desc(b, blk):
        """The UMMA descriptor of a 512-byte block: 32 rows of 16 bytes, K-major without swizzle (8-row groups 128
        bytes apart)."""
        lay = getattr(blk.layout, "outer", blk.layout)
        addr = b.op1("llvm.ptrtoint", [blk.iterator.address(lay(0))], "i32")
        backend, entry = ext.select_instruction("tcgen05.make_smem_desc", {}, {"addr"})
        out = ext.emit_instruction(b, backend, entry, {"addr": [addr]},
                                   {"leading_byte_offset": 16, "stride_byte_offset": 128, "swizzle": 0})
        return out["desc"][0]


def _leaves(shape, stride):
    if isinstance(shape, tuple):
        return [x for s, d in zip(shape, stride) for x in _leaves(s, d)]
    return [(shape, stride)]


def _factors_from_k(ks, ks_d, shape, stride):
    """(the block's scale-factor mode, its strides, the layout's shape and stride without them): an MMA mode of
    size(ks) < 4 factors a row completed to 4 by the leading 4 / size(ks) k-blocks of mode 2 (MMA_K), which
    then steps by that many k-blocks. Raises ValueError where mode 2 does not begin with them."""
    need = 4 // cute.size(ks)
    if need * cute.size(ks) != 4:
        raise ValueError("scale factors per row do not divide 4")
    k_leaves = _leaves(shape[2], stride[2])
    (k0, k0_d), rest = k_leaves[0], k_leaves[1:]
    if not isinstance(k0, int) or k0 % need:
        raise ValueError("MMA_K does not begin with the block's k-blocks")
    own = [(x, d) for x, d in _leaves(ks, ks_d) if x != 1]
    sf = tuple(x for x, _ in own) + (need,)
    sf_d = tuple(d for _, d in own) + (k0_d,)
    left = ([(k0 // need, k0_d * need)] if k0 > need else []) + rest or [(1, 0)]
    one = len(left) == 1
    k_shape = left[0][0] if one else tuple(x for x, _ in left)
    k_stride = left[0][1] if one else tuple(d for _, d in left)
    return (sf if len(sf) > 1 else sf[0], sf_d if len(sf_d) > 1 else sf_d[0],
            (shape[0], shape[1], k_shape) + tuple(shape[3:]), (stride[0], stride[1], k_stride) + tuple(stride[3:]))


def make_s2t_copy(atom, tmem_tensor, *, loc=None, ip=None):
    """The shared -> tensor memory copy of a tcgen05.cp atom (cute.make_copy_atom(tcgen05.Cp128x256bOp(
    CtaGroup.ONE), dtype)) for tiles of tmem_tensor (rows in lanes). Supported here: the .128x256b and .128x128b
    shapes, and .32x128b.warpx4 (Cp4x32x128bOp) for block scale factors (S2TScaleCopy)."""
    name = getattr(getattr(atom, "op", None), "python_name", "").split(".")[-1]
    if name == "Cp4x32x128bOp":
        if getattr(tmem_tensor, "memspace", None) != "tmem" or atom.value_type.width != 8:
            raise ext.user_error(f"make_s2t_copy: {name} copies 8-bit scale factors into tensor memory, got "
                                 f"{atom.value_type.__name__} values and {tmem_tensor!r}", ext.DSLTypeError)
        shape = tmem_tensor.shape if isinstance(tmem_tensor.shape, tuple) else (tmem_tensor.shape,)
        copy = S2TScaleCopy(atom, shape)
        copy._partition(tmem_tensor)   # refuses a tensor that is not of scale-factor blocks, at the user's line
        return copy
    if name not in _S2T_SHAPES:
        raise ext.user_error(f"make_s2t_copy: supported ops are tcgen05.{' and tcgen05.'.join(_S2T_SHAPES)}, got "
                             f"{atom!r}", ext.DSLValueError)
    if getattr(tmem_tensor, "memspace", None) != "tmem":
        raise ext.user_error(f"make_s2t_copy: the destination is a tensor in tensor memory, got {tmem_tensor!r}",
                             ext.DSLTypeError)
    rows, row_bytes = _S2T_SHAPES[name]
    width = atom.value_type.width
    if width > 32 or 32 % width:
        raise ext.user_error(f"make_s2t_copy: {atom.value_type.__name__} values do not pack into 32-bit columns",
                             ext.DSLTypeError)
    return S2TCopy(atom, rows, row_bytes, (rows, row_bytes * 8 // width))


def get_s2t_smem_desc_tensor(tiled_copy, smem_partition, *, loc=None, ip=None):
    """The shared-memory partition of a shared -> tensor memory copy as its copy takes it (the descriptors are
    made when it is copied)."""
    if not isinstance(tiled_copy, S2TCopy):
        raise ext.user_error(f"get_s2t_smem_desc_tensor: expected a copy of make_s2t_copy, got {tiled_copy!r}",
                             ext.DSLTypeError)
    return smem_partition


# --- allocation ---------------------------------------------------------------------------------------------------

def _cta(is_two_cta):
    return 2 if is_two_cta else 1


def alloc_tmem(num_columns, smem_ptr_to_write_address, is_two_cta=None, *, loc=None, ip=None):
    """tcgen05.alloc by the calling warp: num_columns (a power of two, 32..512) columns of tensor memory (of both
    CTAs of the pair with is_two_cta); the address is written to shared memory at smem_ptr_to_write_address."""
    _check_columns(num_columns)
    backend, entry = ext.select_instruction("tcgen05.alloc_tmem", {}, {"dst", "ncols"})
    b = ext.builder()
    dst = b.op1("llvm.ptrtoint", [smem_ptr_to_write_address.address(0)], "i32")
    ext.emit_instruction(b, backend, entry, {"dst": [dst], "ncols": [i32_value(num_columns)]},
                         {"cta_group": _cta(is_two_cta)})


def dealloc_tmem(tmem_ptr, num_columns, is_two_cta=None, *, loc=None, ip=None):
    """tcgen05.dealloc by the allocating warp."""
    _check_columns(num_columns)
    backend, entry = ext.select_instruction("tcgen05.dealloc_tmem", {}, {"taddr", "ncols"})
    b = ext.builder()
    addr = b.op1("llvm.ptrtoint", [tmem_ptr.base], "i32") if tmem_ptr.offset == 0 else \
        tmem_address(cute.make_tensor(tmem_ptr, cute.make_layout(1)), 0)
    ext.emit_instruction(b, backend, entry, {"taddr": [addr], "ncols": [i32_value(num_columns)]},
                         {"cta_group": _cta(is_two_cta)})


def relinquish_tmem_alloc_permit(is_two_cta=None, *, loc=None, ip=None):
    """This CTA (pair) allocates no more tensor memory: a CTA waiting to allocate may proceed."""
    backend, entry = ext.select_instruction("tcgen05.relinquish_tmem_alloc_permit", {}, set())
    ext.emit_instruction(ext.builder(), backend, entry, {}, {"cta_group": _cta(is_two_cta)})


def _check_columns(n):
    if isinstance(n, int) and (n < 32 or n > 512 or n & (n - 1)):
        raise ext.user_error(f"tensor memory is allocated in powers of two from 32 to 512 columns, got {n}",
                             ext.DSLValueError)


def get_num_tmem_alloc_cols(tmem_tensors, rounding: bool = True, *, arch=None, loc=None, ip=None) -> int:
    """The columns to allocate for tensor-memory tensors (one, or a list laid side by side): the columns their
    layouts reach, rounded up to a power of two of at least 32."""
    ts = tmem_tensors if isinstance(tmem_tensors, (list, tuple)) else [tmem_tensors]
    cols = 0
    for t in ts:
        cols += columns_of(getattr(t, "layout", t))
    if cols > 512:
        raise ext.user_error(f"get_num_tmem_alloc_cols: the tensors take {cols} columns; a CTA has 512",
                             ext.DSLValueError)
    if not rounding:
        return cols
    n = 32
    while n < cols:
        n *= 2
    return n


TMEM_COLUMNS = 512          # per CTA: 128 lanes x 512 columns of 32 bits
MIN_ALLOC_COLUMNS = 32


def get_max_tmem_alloc_cols(arch: str = "sm_100", *, loc=None, ip=None) -> int:
    """The most columns one allocation may take (all of a CTA's tensor memory)."""
    return TMEM_COLUMNS


def get_min_tmem_alloc_cols(arch: str = "sm_100", *, loc=None, ip=None) -> int:
    return MIN_ALLOC_COLUMNS


def find_tmem_tensor_col_offset(tmem_tensor, *, loc=None, ip=None) -> int:
    """The columns a tensor-memory tensor reaches from its start: the offset, in 32-bit columns, at which the next
    tensor may start (tmem_ptr + find_tmem_tensor_col_offset(acc) for 32-bit elements). A tensor of 8- or 16-bit
    values (scale factors) counts whole columns of packed values."""
    ptr = getattr(tmem_tensor, "iterator", None)
    width = getattr(getattr(ptr, "dtype", None), "width", 32)
    per = 32 // width if width < 32 and 32 % width == 0 else 1
    return columns_of(getattr(tmem_tensor, "layout", tmem_tensor), per)


def retrieve_tmem_ptr(element_type, alignment: int, ptr_to_buffer_holding_addr, *, loc=None, ip=None):
    """The tensor-memory address tcgen05.alloc wrote into shared memory, as a pointer to element_type values."""
    ptr = getattr(ptr_to_buffer_holding_addr, "iterator", ptr_to_buffer_holding_addr)
    if getattr(ptr, "memspace", None) != "smem" or ptr.dtype.width != 32:
        raise ext.user_error(f"retrieve_tmem_ptr: the address is read from a 32-bit shared-memory word, got "
                             f"{ptr_to_buffer_holding_addr!r}", ext.DSLTypeError)
    b = ext.builder()
    word = b.op1("llvm.load", [ptr.address(0)], "i32", "alignment = 4 : i64")
    base = b.op1("llvm.inttoptr", [word], "!llvm.ptr<6>")
    return ext.make_pointer(base, element_type, "tmem", alignment)


class TmemAllocator:
    """Tensor-memory allocation for a kernel, with CuTe DSL's interface: allocate (by allocator_warp_id's warp),
    wait_for_alloc (every thread that uses the memory meets at barrier_for_retrieve), retrieve_ptr, relinquish_
    alloc_permit, free. With is_two_cta the CTA pair allocates together (cta_group::2), and before freeing each CTA
    waits, on two_cta_tmem_dealloc_mbar_ptr, until its peer is done with the memory."""

    def __init__(self, alloc_result_dst_smem_ptr=None, barrier_for_retrieve=None, allocator_warp_id: int = 0,
                 is_two_cta: bool = False, num_allocated_columns: int = 0, two_cta_tmem_dealloc_mbar_ptr=None,
                 arch: str = "sm_100", *, loc=None, ip=None):
        # arch names the generation whose tensor memory is allocated (CuTe DSL's spelling, e.g. "sm_100"): every
        # datacenter Blackwell has the same 512 columns, so it only has to name one of them
        if not (isinstance(arch, str) and re.fullmatch(r"sm_1(0[0-9]|1[0-9])[af]?", arch)):
            raise ext.user_error(f"TmemAllocator(arch={arch!r}): tensor memory exists on sm_100 to sm_119 "
                                 "(datacenter Blackwell), named like 'sm_100'", ext.DSLValueError)
        if barrier_for_retrieve is None:
            raise ext.user_error("TmemAllocator needs barrier_for_retrieve (the named barrier at which the threads "
                                 "that use the memory wait for its address)", ext.DSLTypeError)
        if alloc_result_dst_smem_ptr is None:
            # Later CuTe DSL releases (QuACK's Blackwell GEMM calls it so) keep the word that receives the
            # allocation's address themselves: one more 32-bit word of the kernel's shared memory.
            alloc_result_dst_smem_ptr = cutlass.utils.SmemAllocator().allocate(
                cutlass.Int32, partition=cutlass.utils.SmemPartition.RESERVED)
        ptr = getattr(alloc_result_dst_smem_ptr, "iterator", alloc_result_dst_smem_ptr)
        if getattr(ptr, "memspace", None) != "smem" or ptr.dtype.width != 32:
            raise ext.user_error(f"TmemAllocator: the allocation's address is written to a 32-bit shared-memory "
                                 f"word; got {alloc_result_dst_smem_ptr!r}", ext.DSLTypeError)
        if is_two_cta and two_cta_tmem_dealloc_mbar_ptr is None:
            # likewise the pair's dealloc barrier (an Int64 word), which the allocator warp initializes below
            two_cta_tmem_dealloc_mbar_ptr = cutlass.utils.SmemAllocator().allocate(
                cutlass.Int64, partition=cutlass.utils.SmemPartition.RESERVED)
        self.ptr = ptr
        self.barrier = barrier_for_retrieve
        self.warp = allocator_warp_id
        self.is_two_cta = bool(is_two_cta)
        self.columns = num_allocated_columns
        self.dealloc_mbar = two_cta_tmem_dealloc_mbar_ptr
        if self.is_two_cta:
            def init():
                cute.arch.mbarrier_init(self.dealloc_mbar, cutlass.Int32(1))
                cute.arch.mbarrier_init_fence()
            ext.when(self._is_allocator_warp() & cute.arch.elect_one(), init)

    def _is_allocator_warp(self):
        return cute.arch.make_warp_uniform(cute.arch.warp_idx()) == self.warp

    def allocate(self, num_columns: int):
        """The allocator warp allocates num_columns columns (every thread may call it)."""
        _check_columns(num_columns)
        self.columns = num_columns

        def alloc():
            alloc_tmem(num_columns, self.ptr, self.is_two_cta)
            fence_before_thread_sync()   # the allocation is ordered before the barrier of wait_for_alloc

        ext.when(self._is_allocator_warp(), alloc)

    def wait_for_alloc(self):
        """Every thread of barrier_for_retrieve waits until the address is in shared memory (and its tcgen05
        operations after are ordered after the allocation)."""
        self.barrier.arrive_and_wait()
        fence_after_thread_sync()

    def retrieve_ptr(self, dtype=cutlass.Float32):
        """The allocation as a pointer to dtype values in tensor memory."""
        return retrieve_tmem_ptr(dtype, 16, self.ptr)

    def relinquish_alloc_permit(self):
        ext.when(self._is_allocator_warp(), lambda: relinquish_tmem_alloc_permit(self.is_two_cta))

    def free(self, tmem_ptr, num_columns: int = 0):
        """The allocator warp frees the allocation (with is_two_cta, once the peer CTA has arrived on this CTA's
        dealloc barrier: each CTA tells its peer it is done, then waits for the peer's word). Call it after a
        barrier of the threads that used the memory, each having issued tcgen05.fence_before_thread_sync."""
        n = num_columns or self.columns
        if not n:
            raise ext.user_error("TmemAllocator.free: how many columns? allocate() was not called on this allocator "
                                 "and num_columns was not given", ext.DSLValueError)

        def release():
            # the kernel's barrier before free() ordered the other warps' tensor-memory accesses before it
            fence_after_thread_sync()
            if self.is_two_cta:
                peer = cute.arch.block_rank_in_cluster() ^ 1
                ext.when(cute.arch.elect_one(), lambda: cute.arch.mbarrier_arrive_cluster(self.dealloc_mbar, peer))
                cute.arch.mbarrier_wait(self.dealloc_mbar, cutlass.Int32(0))
            dealloc_tmem(tmem_ptr, n, self.is_two_cta)

        ext.when(self._is_allocator_warp(), release)


# --- fences and commit ---------------------------------------------------------------------------------------

def _primitive(name, **attrs):
    backend, entry = ext.select_instruction(name, {}, set())
    ext.emit_instruction(ext.builder(), backend, entry, {}, attrs)


def fence_view_async_tmem_load(*, loc=None, ip=None):
    """This thread's tensor-memory loads have completed: their registers may be read (tcgen05.wait::ld)."""
    _primitive("tcgen05.wait_ld")


def fence_view_async_tmem_store(*, loc=None, ip=None):
    """This thread's tensor-memory stores have completed: an MMA issued after a following sync reads them."""
    _primitive("tcgen05.wait_st")


def fence_before_thread_sync(*, loc=None, ip=None):
    _primitive("tcgen05.fence_before_thread_sync")


def fence_after_thread_sync(*, loc=None, ip=None):
    _primitive("tcgen05.fence_after_thread_sync")


def fence_view_async_shared(*, loc=None, ip=None):
    """This thread's generic-proxy writes of shared memory are visible to the async proxy (TMA stores, MMAs
    reading shared memory): fence.proxy.async.shared::cta, the target's primitive."""
    _primitive("arch.fence_proxy_async_shared_cta")


def commit(mbar_ptr, mask=None, cta_group=CtaGroup.ONE, *, loc=None, ip=None):
    """One elected thread of the calling warp commits: the mbarrier at mbar_ptr gets one arrival once every
    tcgen05 operation this thread issued before (mma, cp) has completed. With mask, the mbarrier at the same offset
    in every CTA of the cluster whose bit is set gets it (cta_group TWO: the pair's MMAs)."""
    if cta_group not in (1, 2):
        raise ext.user_error(f"tcgen05.commit: cta_group is CtaGroup.ONE or TWO, got {cta_group!r}", ext.DSLTypeError)
    ptr = getattr(mbar_ptr, "iterator", mbar_ptr)
    b = ext.builder()
    bar = b.op1("llvm.ptrtoint", [ptr.address(0)], "i32")
    if mask is None:
        backend, entry = ext.select_instruction("tcgen05.commit", {}, {"mbar"})
        inputs = {"mbar": [bar]}
    else:
        backend, entry = ext.select_instruction("tcgen05.commit_multicast", {}, {"mbar", "cta_mask"})
        inputs = {"mbar": [bar], "cta_mask": [i32_value(mask)]}
    ext.when(cute.arch.elect_one(),
             lambda: ext.emit_instruction(b, backend, entry, inputs, {"cta_group": int(cta_group)}))


NAMES = ("alloc_tmem", "dealloc_tmem", "relinquish_tmem_alloc_permit", "get_num_tmem_alloc_cols",
         "fence_view_async_tmem_load", "fence_view_async_tmem_store", "fence_view_async_shared",
         "get_max_tmem_alloc_cols", "get_min_tmem_alloc_cols", "retrieve_tmem_ptr")
