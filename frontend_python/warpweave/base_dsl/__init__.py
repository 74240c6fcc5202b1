"""`cutlass.base_dsl`: `typing` (the numeric types and their metaclass, as CuTe DSL's extensions import them)."""
