"""`cutlass._mlir.dialects`: the architecture-neutral dialects user code writes ops of (llvm, arith, vector,
math)."""
