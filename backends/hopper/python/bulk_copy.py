"""Bulk copies of byte ranges with CuTe DSL's names: cpasync.CopyBulkG2SOp, CopyBulkG2SMulticastOp, CopyBulkS2GOp.

    atom = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32)
    cute.copy(atom, gmem_tensor, smem_tensor, mbar_ptr=bar)          # + mcast_mask= for the multicast op
    cute.copy(cute.make_copy_atom(cpasync.CopyBulkS2GOp(), cutlass.Float32), smem_tensor, gmem_tensor)

One instruction moves mode 0 of the two tensors (the whole tensor when it has one mode): its elements must be
contiguous and the same count on both sides; each further element of the other modes is another instruction, as in
CuTe DSL. The byte count is mode 0's, known while tracing; the hardware wants it a multiple of 16 and both addresses
16-byte aligned, so a count that is not, or an address known to be misaligned, is an error at the user's line (an
address whose alignment is not known is the program's promise). The loads complete their bytes on mbar_ptr's
mbarrier (the program expects them there first, e.g. arrive_and_expect_tx); the store completes with the issuing
thread's bulk groups (cp_async_bulk_commit_group, then wait_group). No thread is elected: every thread that reaches
the copy issues it, so a program guards it (`if tidx == 0`), as CuTe DSL's own documentation says.
"""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

# The instruction's operand granularity: bytes a copy moves and the alignment of both its addresses.
GRANULE_BYTES = 16

# python name -> (source space, destination space, takes an mbarrier, takes a multicast mask)
KINDS = {
    "cpasync.CopyBulkG2SOp": ("gmem", "smem", True, False),
    "cpasync.CopyBulkG2SMulticastOp": ("gmem", "smem", True, True),
    "cpasync.CopyBulkS2GOp": ("smem", "gmem", False, False),
}
SPACE_WORDS = {"gmem": "global", "smem": "shared"}


def op_classes() -> dict:
    """python name -> the operation class: the manifest's class (so that isinstance and equality behave as for the
    other cpasync ops) making the bulk atom below."""
    out = {}
    for name in KINDS:
        base = ext.manifest_class(name)
        if base is None:
            continue
        out[name] = type(name.split(".")[1], (base,), {
            "__doc__": f"{name}: a bulk copy of a byte range (see warpweave.backends.hopper.bulk_copy).",
            "__ww_make_copy_atom__": _make_atom})
    return out


def _make_atom(op, value_type, num_bits_per_copy=None, **options):
    if options:
        raise ext.user_error(f"make_copy_atom of {op!r} got an unexpected keyword argument {next(iter(options))!r}",
                             ext.DSLTypeError)
    return BulkCopyAtom(op, value_type)


class BulkCopyAtom:
    """The copy atom of a bulk copy operation for values of value_type: one thread, and what it moves is decided
    by the tensors of each cute.copy."""

    def __init__(self, op, value_type):
        self.op = op
        self.value_type = value_type
        self.python_name = op.python_name
        self.src_space, self.dst_space, self.takes_mbar, self.multicast = KINDS[op.python_name]

    def __repr__(self):
        return f"CopyAtom({self.python_name}, {self.value_type.__name__})"

    __str__ = __repr__

    def __ww_copy__(self, src, dst, *, pred=None, mbar_ptr=None, mcast_mask=None, **kwargs):
        what = f"cute.copy of {self.python_name}"
        if kwargs:
            raise ext.user_error(f"{what} got an unexpected keyword argument {next(iter(kwargs))!r}",
                                 ext.DSLTypeError)
        if pred is not None:
            raise ext.user_error(f"{what} takes no pred= (guard the call: one thread issues each copy)",
                                 ext.DSLTypeError)
        if self.takes_mbar and mbar_ptr is None:
            raise ext.user_error(f"{what} needs mbar_ptr= (the mbarrier in this CTA its bytes complete on)",
                                 ext.DSLTypeError)
        if not self.takes_mbar and mbar_ptr is not None:
            raise ext.user_error(f"{what} takes no mbar_ptr=: it completes with the thread's bulk groups "
                                 "(commit_group, then wait_group)", ext.DSLTypeError)
        if self.multicast and mcast_mask is None:
            raise ext.user_error(f"{what} needs mcast_mask= (the cluster's CTAs that receive the bytes, by rank)",
                                 ext.DSLTypeError)
        if not self.multicast and mcast_mask is not None:
            raise ext.user_error(f"{what} takes no mcast_mask= (cpasync.CopyBulkG2SMulticastOp does)",
                                 ext.DSLTypeError)
        for t, side, space in ((src, "source", self.src_space), (dst, "destination", self.dst_space)):
            if getattr(t, "memspace", None) != space:
                raise ext.user_error(f"{what}: the {side} is a {SPACE_WORDS[space]}-memory tensor, got {t!r}",
                                     ext.DSLTypeError)
            if t.element_type.width != self.value_type.width:
                raise ext.user_error(f"{what}: the atom moves {self.value_type.__name__} values, the {side} holds "
                                     f"{t.element_type.__name__}", ext.DSLTypeError)
        count, runs = _runs(src, dst, what)
        nbytes = count * self.value_type.width // 8
        if (count * self.value_type.width) % (8 * GRANULE_BYTES):
            raise ext.user_error(f"{what} moves {count} {self.value_type.__name__} values per instruction "
                                 f"({count * self.value_type.width} bits): a bulk copy moves a multiple of "
                                 f"{GRANULE_BYTES} bytes", ext.DSLValueError)
        sp, dp = ext.base_pointer(src), ext.base_pointer(dst)
        for s_off, d_off in runs:
            _check_alignment(sp, s_off, "source", what)
            _check_alignment(dp, d_off, "destination", what)
        b = ext.builder()
        backend, entry = ext.select_instruction(self.python_name, {})
        size = cutlass.Int32(nbytes).ir()
        extra = {}
        if self.takes_mbar:
            bar = ext.address_of(mbar_ptr, f"{what}: mbar_ptr")
            if bar.memspace != "smem":
                raise ext.user_error(f"{what}: mbar_ptr points to this CTA's shared memory, got {bar!r}",
                                     ext.DSLTypeError)
            extra["mbar"] = [b.op1("llvm.ptrtoint", [bar.address(0)], "i32")]
        if self.multicast:
            extra["cta_mask"] = [cutlass.Int32(mcast_mask).ir()]
        for s_off, d_off in runs:
            inputs = {"src": [_address(b, sp, s_off)], "dst": [_address(b, dp, d_off)], "size": [size], **extra}
            ext.emit_instruction(b, backend, entry, inputs)


def _runs(src, dst, what):
    """(values per instruction, [(source offset, destination offset) of each instruction's first value]): mode 0
    of both tensors, contiguous, once per element of their other modes (in the same order on both sides)."""
    sizes = []
    for t, side in ((src, "source"), (dst, "destination")):
        n = cute.size(t)
        n0 = cute.size(t, mode=[0])
        if not isinstance(n, int) or not isinstance(n0, int):
            raise ext.user_error(f"{what}: the {side}'s shape must be known while tracing, got {t.shape}",
                                 ext.DSLValueError)
        sizes.append((n0, n))
    (s0, sn), (d0, dn) = sizes
    if s0 != d0 or sn != dn:
        raise ext.user_error(f"{what}: the source's mode 0 has {s0} of {sn} values and the destination's {d0} of "
                             f"{dn}: one instruction moves mode 0, which must be the same size on both sides",
                             ext.DSLValueError)
    ls, ld = ext.full_layout(src), ext.full_layout(dst)
    runs = []
    for j in range(sn // s0):
        first = j * s0
        for lay, side in ((ls, "source"), (ld, "destination")):
            start = lay(first)
            for i in range(1, s0):
                step = lay(first + i) - start
                if not isinstance(step, int) or step != i:
                    raise ext.user_error(f"{what}: mode 0 of the {side} must be contiguous (unit stride, known "
                                         f"while tracing): element {i} lies {step} elements from element 0 "
                                         f"(layout {lay})", ext.DSLValueError)
        runs.append((ls(first), ld(first)))
    return s0, runs


def _check_alignment(ptr, offset, side, what):
    """An error where the address `offset` elements past ptr is known not to be 16-byte aligned: the base is known
    aligned to 16 and the whole offset is known while tracing. Where it is not known, the program promises it."""
    base = getattr(ptr, "base_align", 0) or 0
    total = getattr(ptr, "offset", 0) + offset
    if base < GRANULE_BYTES or not isinstance(total, int):
        return
    bits = total * ptr.dtype.width
    if bits % (8 * GRANULE_BYTES):
        raise ext.user_error(f"{what}: the {side} address lies {bits / 8:g} bytes past a {base}-byte aligned base: a "
                             f"bulk copy's addresses are {GRANULE_BYTES}-byte aligned", ext.DSLValueError)


def _address(b, ptr, offset):
    """The instruction's operand of an address: 32 bits for shared memory, 64 for global."""
    return b.op1("llvm.ptrtoint", [ptr.address(offset)], "i32" if ptr.memspace == "smem" else "i64")
