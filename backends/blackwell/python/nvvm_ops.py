"""NVVM ops of Blackwell that CuTe DSL code calls through `cutlass._mlir.dialects.nvvm` (registered as
`nvvm.<op>`), written as the PTX each lowers to, with the IR access's checks at the user's line: the float maximum
and minimum of two or three values (the three-input form is sm_100's)."""
from __future__ import annotations

from warpweave import ext

NAMES = ["fmax", "fmin"]


def _minmax(op, a, b, c, ftz, nan, abs, results):
    ir = ext.ir
    f32 = ir.F32Type.get()
    if abs:
        raise ext.user_error(f"nvvm.f{op}: abs=True is not built here (the maximum of magnitudes)",
                             ext.DSLNotImplementedError)
    if results is not None and [ir.Type(r) for r in results] != [f32]:
        raise ext.user_error(f"nvvm.f{op} gives one f32 here, not {list(results)}", ext.DSLTypeError)
    operands = [a, b] + ([c] if c is not None else [])
    for x in operands:
        if not isinstance(x, ir.Value) or ir.Type(x.type) != f32:
            raise ext.user_error(f"nvvm.f{op} takes f32 IR values (Float32(x).ir_value()), got {x!r}",
                                 ext.DSLTypeError)
    quals = (".ftz" if ftz else "") + (".NaN" if nan else "")
    args = ", ".join(f"${i + 1}" for i in range(len(operands)))
    return ext.ir_llvm.inline_asm(f32, operands, f"{op}{quals}.f32 $0, {args};",
                                  "=f," + ",".join("f" for _ in operands), has_side_effects=False)


def fmax(a, b, *, c=None, ftz=None, nan=None, abs=None, results=None, loc=None, ip=None):
    """nvvm.fmax: the larger of a and b (and c): a NaN operand is ignored unless nan=True; ftz flushes subnormals."""
    return _minmax("max", a, b, c, ftz, nan, abs, results)


def fmin(a, b, *, c=None, ftz=None, nan=None, abs=None, results=None, loc=None, ip=None):
    """nvvm.fmin: the smaller of a and b (and c), as fmax."""
    return _minmax("min", a, b, c, ftz, nan, abs, results)
