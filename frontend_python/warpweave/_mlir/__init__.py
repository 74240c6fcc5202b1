"""`cutlass._mlir` as CuTe DSL users write with it: `ir` (types and values), `dialects` (llvm, arith) and `extras.types`.

These are not MLIR's Python bindings but a layer over warpweave's IR builder (frontend_python/DESIGN.md, "IR
access"): the ops a user writes go into the kernel being traced, checked at the user's line.
"""
