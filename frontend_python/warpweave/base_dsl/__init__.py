"""`cutlass.base_dsl`: `typing` (the numeric types and their metaclass, as CuTe DSL's extensions import them) and
`arch` (`Arch`, the GPU targets by name in a comparable order)."""
