"""`cutlass._mlir.extras`: `types` (the `T.i32()` spellings of MLIR types)."""
