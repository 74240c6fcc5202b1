"""NVVM ops of Hopper that CuTe DSL code calls through `cutlass._mlir.dialects.nvvm` (registered as
`nvvm.<op>`), written as the PTX each lowers to, with the IR access's checks at the user's line."""
from __future__ import annotations

from warpweave import ext

NAMES = ["mbarrier_try_wait_parity_timelimit"]


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
