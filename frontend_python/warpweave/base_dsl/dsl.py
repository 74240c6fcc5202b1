"""`cutlass.base_dsl.dsl`: the IR-values protocol as CuTe DSL's tutorials reach for it (`extract_mlir_values` /
`new_from_mlir_values`, flat or `structured=True`), `debug_print_mlir_values` (an object's values as a tree of its
fields and their IR types) and `set_dynamic_debug` (print what each dynamic region carries while tracing)."""
from .._dsl.call.compiled_function import JitCompiledFunction  # noqa: F401 - what cute.compile returns
from .._dsl.tracing.dynamic_debug import set_dynamic_debug
from .._dsl.values.value_tree import extract_mlir_values, format_tree, get_mlir_types, new_from_mlir_values


def debug_print_mlir_values(obj, max_depth: int | None = None) -> str:
    """The IR values `obj` is made of as an indented tree (field names, list positions, IR types); returns the
    text, which callers print."""
    return format_tree(obj, max_depth)


__all__ = ["JitCompiledFunction", "debug_print_mlir_values", "extract_mlir_values", "get_mlir_types", "new_from_mlir_values",
           "set_dynamic_debug"]
