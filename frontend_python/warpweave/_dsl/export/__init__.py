"""Layer 7 (beside `tuning`), export: C headers and objects of compiled functions, loading them back, calls through
TVM FFI. Imports the layers below."""
