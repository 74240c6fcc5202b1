"""`cutlass._mlir.dialects.llvm`: inline asm, struct fields, bitcasts, pointer/integer and integer width casts,
atomics and the intrinsics user code reaches for."""
from ..._dsl.base.ir_atomics import AtomicBinOp, AtomicOrdering, atomicrmw, cmpxchg
from ..._dsl.base.ir_dialects import unknown_op
from ..._dsl.base.ir_ops import (AsmDialect, IntegerOverflowFlags, addrspacecast, extractvalue, insertvalue,
                                 inline_asm, intr_ctlz, inttoptr, mlir_undef, ptrtoint, sext, trunc, zext,
                                 llvm_bitcast as bitcast)
from ..._dsl.base.ir_values import PointerType, StructType

__all__ = ["AsmDialect", "AtomicBinOp", "AtomicOrdering", "IntegerOverflowFlags", "PointerType", "StructType",
           "addrspacecast", "atomicrmw", "bitcast", "cmpxchg", "extractvalue", "insertvalue", "inline_asm", "intr_ctlz",
           "inttoptr", "mlir_undef", "ptrtoint", "sext", "trunc", "zext"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("llvm", name, __all__)
