"""`cutlass._mlir.dialects.llvm`: inline asm, struct fields, bitcasts, atomics and the intrinsics user code
reaches for."""
from ..._dsl.base.ir_atomics import AtomicBinOp, AtomicOrdering, atomicrmw, cmpxchg
from ..._dsl.base.ir_dialects import unknown_op
from ..._dsl.base.ir_ops import (AsmDialect, addrspacecast, extractvalue, insertvalue, inline_asm, intr_ctlz,
                                 mlir_undef, llvm_bitcast as bitcast)
from ..._dsl.base.ir_values import PointerType, StructType

__all__ = ["AsmDialect", "AtomicBinOp", "AtomicOrdering", "PointerType", "StructType", "addrspacecast",
           "atomicrmw", "bitcast", "cmpxchg", "extractvalue", "insertvalue", "inline_asm", "intr_ctlz", "mlir_undef"]


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise unknown_op("llvm", name, __all__)
