"""See `cutlass._mlir._mlir_libs`."""
