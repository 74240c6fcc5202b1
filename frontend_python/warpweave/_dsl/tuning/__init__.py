"""Layer 7 (beside `export`), tuning: autotune_jit and tune, and their worker processes. Imports the layers below."""
