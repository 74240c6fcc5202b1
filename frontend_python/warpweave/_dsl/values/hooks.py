"""What the language's values do that an upper layer knows how to do, set by that layer at its import.

Values sit below the host side of a @cute.jit function and below device operations, but a number of the host
side is evaluated at each call (host/host_values.py), a host comparison of runtime integers is decided and guarded
(host/host_guards.py), a TensorSSA reduces (device/reduction.py) and Python's min and max of DSL numbers in traced
code are cute.math's (device/math.py). Each such behaviour is a Hook here: the value
calls it, the owning module registers its function (`@hooks.X.register`). warpweave's own import brings in every
registering module before any trace can run, so a hook is always set when a value calls it.
"""
from __future__ import annotations

from typing import Callable


class Hook:
    """One function of an upper layer that values call; registered once, by the module named as its owner."""
    __slots__ = ("name", "owner", "fn")

    def __init__(self, name: str, owner: str):
        self.name = name
        self.owner = owner
        self.fn: Callable | None = None

    def register(self, fn: Callable) -> Callable:
        if self.fn is not None and self.fn is not fn:
            raise RuntimeError(f"values hook {self.name} is already registered ({self.fn.__qualname__})")
        self.fn = fn
        return fn

    def __call__(self, *args, **kwargs):
        fn = self.fn
        if fn is None:
            raise RuntimeError(f"values hook {self.name} is unset: {self.owner} registers it at its import")
        return fn(*args, **kwargs)

    def __repr__(self):
        return f"Hook({self.name}, owner={self.owner}, set={self.fn is not None})"


# fn(*args) evaluated at each call, as a Numeric of result_type: (fn, args, result_type=None) -> Numeric.
defer_on_host = Hook("defer_on_host", "warpweave._dsl.host.host_values")
# The truth of a runtime Boolean of the host side with the values compiled for, kept as a guard; None when unknown.
decide_on_host = Hook("decide_on_host", "warpweave._dsl.host.host_guards")
# An `if` of the host side on a runtime Boolean: (cond, then_fn, else_fn, values, lineno) -> the carried values.
branch_on_host = Hook("branch_on_host", "warpweave._dsl.host.host_branch")
# A `for` of the host side over a runtime bound: (body, (start, stop, step), names, values, lineno) -> carried values.
loop_on_host = Hook("loop_on_host", "warpweave._dsl.host.host_loop")
# A `while` of the host side on a runtime condition: (cond_fn, body_fn, names, values, lineno) -> carried values.
while_on_host = Hook("while_on_host", "warpweave._dsl.host.host_loop")
# A host-side division by a runtime integer (divisor SymInt, "division" or "modulo"): refused where the values compiled
# for make it zero, and checked at each call.
divisor_on_host = Hook("divisor_on_host", "warpweave._dsl.host.host_guards")
# An element of a tensor read / written on the host side: (ptr, offset) -> Numeric, (ptr, offset, value).
load_on_host = Hook("load_on_host", "warpweave._dsl.host.host_values")
store_on_host = Hook("store_on_host", "warpweave._dsl.host.host_values")
# A register tensor made on the host side: (layout, dtype) -> Tensor.
local_tensor_on_host = Hook("local_tensor_on_host", "warpweave._dsl.host.host_values")
# TensorSSA.reduce: (ssa, op, init_val, reduction_profile) -> a number or a TensorSSA.
reduce_tensor = Hook("reduce_tensor", "warpweave._dsl.device.reduction")
# Python's min / max in traced code, where an argument is a DSL number: ("min" or "max", *args) -> cute.math's.
min_max = Hook("min_max", "warpweave._dsl.device.math")

# Tensor.store (fill) of one value into a kernel's shared- or global-memory tensor, with the widest stores its
# layout allows: (tensor, value) -> None.
fill_memory = Hook("fill_memory", "warpweave._dsl.atoms.element_copy")

ALL = (defer_on_host, decide_on_host, branch_on_host, loop_on_host, while_on_host, divisor_on_host, load_on_host, store_on_host,
       local_tensor_on_host, reduce_tensor, min_max, fill_memory)
