"""Register reallocation between the warpgroups of a warp-specialized kernel under the names some of CuTe DSL's
examples use (cute.arch.warpgroup_reg_alloc / warpgroup_reg_dealloc), as the manifest's setmaxnreg primitives
(arch.setmaxregister_increase / arch.setmaxregister_decrease) that carry the instruction."""
from __future__ import annotations

from warpweave import ext


def _emit(python_name: str, reg_count):
    if not ext.in_kernel():
        raise ext.user_error(f"cute.arch.{python_name.split('.')[-1]} runs inside a kernel", ext.DSLTypeError)
    n = reg_count.value if getattr(reg_count, "is_static", False) else reg_count
    if isinstance(n, bool) or not isinstance(n, int):
        raise ext.user_error(f"the register count is a static integer (24..256, a multiple of 8), got {reg_count!r}",
                             ext.DSLTypeError)
    backend, entry = ext.select_instruction(python_name, {}, set())
    ext.emit_instruction(ext.builder(), backend, entry, {}, {"n": n})


def warpgroup_reg_alloc(reg_count, *, loc=None, ip=None):
    """Raises this warpgroup's per-thread register budget to reg_count (setmaxnreg.inc)."""
    _emit("arch.setmaxregister_increase", reg_count)


def warpgroup_reg_dealloc(reg_count, *, loc=None, ip=None):
    """Lowers this warpgroup's per-thread register budget to reg_count (setmaxnreg.dec), for the others to take."""
    _emit("arch.setmaxregister_decrease", reg_count)


NAMES = ("warpgroup_reg_alloc", "warpgroup_reg_dealloc")
