"""`cutlass._mlir._mlir_libs`: where CuTe DSL keeps its MLIR bindings; programs that import `ir` from its inner path
(`_cutlass_ir._mlir.ir`) get `cutlass._mlir.ir`."""
