"""Layer 5 (beside `host`), device operations: cute.arch (indices, barriers, shuffles, atomics, fences, memory
ordering), cute.math, shared memory, reductions, device pointers. Imports the layers below and `host`'s modules
only where a device op has a host-side form. reduction and math register what values call of them
(values/hooks.py)."""
