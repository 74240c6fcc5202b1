"""`cutlass._mlir.dialects`: the dialects user code writes ops of: llvm, arith, vector, math, scf (architecture-
neutral, here) and nvvm (its generic ops here, those of one GPU generation from the backends that have them)."""
