"""`cutlass.base_dsl.runtime.jit_arg_adapters`: JitArgAdapterRegistry, which converts arguments of a program's own
types at each call (warpweave._dsl.call.arg_adapters), and the argument protocols' helpers CuTe DSL's module names
too."""
from ..._dsl.base.constexpr import Constexpr  # noqa: F401
from ..._dsl.call.arg_adapters import JitArgAdapterRegistry, register_jit_arg_adapter  # noqa: F401
from ..._dsl.values.jit_argument import is_jit_argument
from ..._dsl.values.value_tree import get_mlir_types  # noqa: F401


def implements_jit_argument(obj, *, partial: bool = False) -> bool:
    """Whether obj gives the JitArgument protocol (__c_pointers__, __get_mlir_types__, __new_from_mlir_values__);
    partial: any of them."""
    names = ("__c_pointers__", "__get_mlir_types__", "__new_from_mlir_values__")
    if partial:
        return any(callable(getattr(obj, n, None)) for n in names)
    return is_jit_argument(obj)


def implements_dynamic_expression(obj, *, partial: bool = False) -> bool:
    """Whether obj gives the DynamicExpression protocol (__extract_mlir_values__, __new_from_mlir_values__);
    partial: any of them."""
    found = [callable(getattr(obj, n, None)) for n in ("__extract_mlir_values__", "__new_from_mlir_values__")]
    return any(found) if partial else all(found)


__all__ = ["Constexpr", "JitArgAdapterRegistry", "get_mlir_types", "implements_dynamic_expression",
           "implements_jit_argument", "register_jit_arg_adapter"]
