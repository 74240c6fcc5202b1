"""The argument kind of a dataclass instance that holds runtime values (a configuration object of numbers, a
bundle of tensors): its fields are its elements, as a NamedTuple's are (arg_tensor.TreeArg), so that CuTe DSL code
passing one reads each call's numbers. A Python int field is an Int32, a float a Float32, a bool a Boolean, read at
each call (one compilation serves other values); a field annotated cutlass.Constexpr, None, strings, enumerations
and other objects are compiled in, checked at each call. A dataclass of compile-time values only stays one
compile-time value (arg_values.ConstArg).

The function traces with the dataclass made again of its fields' stand-ins through its own __init__ (so
__post_init__ derives its init=False fields from them, as it does for the caller's object); the call passes the
fields its __init__ takes (value_tree.argument_fields)."""
from __future__ import annotations

import copy
import dataclasses
import inspect

from ..values.jit_argument import is_jit_argument
from ..values.value_tree import argument_annotations, argument_fields
from .arg_tensor import TreeArg, passes_at_call


def is_dataclass_instance(value) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


class DataclassArg(TreeArg):
    kind = "dataclass"
    fast_path = False  # the generated fast paths index lists and tuples: a call passing one goes the general way

    @classmethod
    def takes(cls, value, annotation) -> bool:
        return is_dataclass_instance(value) and not is_jit_argument(value) and \
            passes_at_call(cls.elements(value), True)

    @staticmethod
    def elements(value) -> list:
        return [getattr(value, f) for f in argument_fields(value)]

    @staticmethod
    def annotations(value, annotation) -> list:
        return [inspect.Parameter.empty if t is None else t for t in argument_annotations(value)]

    @staticmethod
    def element_name(name: str, value, k: int) -> str:
        return f"{name}.{argument_fields(value)[k]}"

    @staticmethod
    def rebuilt(value, hosts):
        try:
            return dataclasses.replace(value, **dict(zip(argument_fields(value), hosts)))
        except (TypeError, ValueError):
            # an __init__ that replace() cannot call again (an InitVar without a default): a copy with the fields
            # set, its derived fields left as the caller's object has them
            out = copy.copy(value)
            for f, h in zip(argument_fields(value), hosts):
                object.__setattr__(out, f, h)
            return out

    def element_c_name(self, name: str, k: int) -> str:
        return f"{name}_{self.children[k].name.rsplit('.', 1)[-1]}"

    def matches(self, v) -> bool:
        return type(v).__name__ == self.spec[1] and is_dataclass_instance(v) and \
            len(argument_fields(v)) == len(self.children)

    def native(self, slots):
        return None


__all__ = ["DataclassArg", "is_dataclass_instance"]
