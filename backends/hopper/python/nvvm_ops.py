"""NVVM ops of Hopper that CuTe DSL code calls through `cutlass._mlir.dialects.nvvm` (registered as
`nvvm.<op>`), written as the PTX each lowers to, with the IR access's checks at the user's line."""
from __future__ import annotations

import enum

import warpweave as cutlass
from warpweave import ext

NAMES = ["mbarrier_try_wait_parity_timelimit", "elect_sync", "CpAsyncBulkTensorGlobalToSharedClusterOp",
         "TMALoadMode", "CpAsyncBulkTensorLoadMode"]


class TMALoadMode(enum.Enum):
    """How a TMA load reads its box (nvvm's TMALoadMode; CpAsyncBulkTensorLoadMode is its older name)."""
    TILE = "tile"
    IM2COL = "im2col"


CpAsyncBulkTensorLoadMode = TMALoadMode


def _i1(word):
    ir, arith = ext.ir, ext.ir_arith
    return arith.cmpi(arith.CmpIPredicate.ne, word, arith.constant(ir.IntegerType.get_signless(32), 0))


def elect_sync(res=None, *, loc=None, ip=None):
    """nvvm.elect.sync: an i1, true in one lane of the (fully active) warp."""
    ir = ext.ir
    word = ext.ir_llvm.inline_asm(
        ir.IntegerType.get_signless(32), [],
        "{\n\t.reg .pred p;\n\telect.sync _|p, 0xffffffff;\n\tselp.u32 $0, 1, 0, p;\n\t}", "=r",
        has_side_effects=True)
    return _i1(word)


def _address(x, bits, what):
    """The address an operand stands for, as an i32 or i64 IR value: a DSL pointer, or an IR pointer value."""
    t = cutlass.Int32 if bits == 32 else cutlass.Int64
    if hasattr(x, "memspace") and hasattr(x, "address"):
        return x.toint(t).ir_value()
    if not isinstance(x, ext.ir.Value) or not ext.ir_llvm.PointerType.isinstance(x.type):
        raise ext.user_error(f"{what} is a pointer (a DSL pointer or an IR pointer value), got {x!r}",
                             ext.DSLTypeError)
    return t.from_ir(ext.builder().op1("llvm.ptrtoint", [x.use()], t.ir_type)).ir_value()


def CpAsyncBulkTensorGlobalToSharedClusterOp(dstMem, tmaDescriptor, coordinates, mbar, im2colOffsets=(), *,
                                             predicate=None, mode=None, loadMode=None, multicastMask=None,
                                             l2CacheHint=None, loc=None, ip=None):
    """nvvm.cp.async.bulk.tensor.shared.cluster.global (tile mode): the box of the tensor map at tmaDescriptor at
    coordinates (innermost first) into shared memory at dstMem, its bytes completing on mbar; only where predicate
    (an i1) holds."""
    m = mode if mode is not None else loadMode
    if m not in (None, TMALoadMode.TILE):
        raise ext.user_error(f"nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: only the tile mode is supported here, "
                             f"got {m}", ext.DSLNotImplementedError)
    if list(im2colOffsets or ()) or multicastMask is not None or l2CacheHint is not None:
        raise ext.user_error("nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: im2col offsets, multicast masks and "
                             "cache hints are not supported here", ext.DSLNotImplementedError)
    coords = list(coordinates)
    if not 1 <= len(coords) <= 5:
        raise ext.user_error(f"nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp: 1 to 5 coordinates, got {len(coords)}",
                             ext.DSLValueError)
    ir, arith = ext.ir, ext.ir_arith
    i32 = ir.IntegerType.get_signless(32)
    dst = _address(dstMem, 32, "dstMem")
    tmap = _address(tmaDescriptor, 64, "tmaDescriptor")
    bar = _address(mbar, 32, "mbar")
    pred = arith.extui(i32, predicate) if predicate is not None else arith.constant(i32, 1)
    n = len(coords)
    places = ", ".join(f"${4 + i}" for i in range(n))
    asm = ("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, $3, 0;\n\t"
           f"@p cp.async.bulk.tensor.{n}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
           f"[$0], [$1, {{{places}}}], [$2];\n\t}}")
    ext.ir_llvm.inline_asm(None, [dst, tmap, bar, pred] + coords, asm, ",".join(["r", "l", "r", "r"] + ["r"] * n),
                           has_side_effects=True)


def mbarrier_try_wait_parity_timelimit(res, addr, phase, ticks, *, loc=None, ip=None):
    """nvvm.mbarrier.try_wait.parity (with a time limit in ns): an i1, true once the phase of parity `phase` of the
    shared-memory mbarrier at `addr` has completed, false when the time limit passed first. `res` is the result
    type (i1), as MLIR's newer builders take it."""
    llvm, arith, ir = ext.ir_llvm, ext.ir_arith, ext.ir
    if res is not None and ir.Type(res) != ir.IntegerType.get_signless(1):
        raise ext.user_error(f"nvvm.mbarrier_try_wait_parity_timelimit gives an i1, not {res}", ext.DSLTypeError)
    word = llvm.inline_asm(
        ir.IntegerType.get_signless(32), [addr, phase, ticks],
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2, $3;\n\tselp.u32 $0, 1, 0, p;\n\t}",
        "=r,r,r,r", has_side_effects=True)
    return arith.cmpi(arith.CmpIPredicate.ne, word, arith.constant(ir.IntegerType.get_signless(32), 0))
