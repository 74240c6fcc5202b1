"""The element types operands name: width, DSL type and the MLIR type their values are held in."""
from __future__ import annotations

from manifest_builder import format_element_types

# Manifest element type -> the DSL's numeric type name (python_params).
PY_DTYPE = {"f16": "Float16", "bf16": "BFloat16", "tf32": "TFloat32", "f32": "Float32", "e4m3": "Float8E4M3FN",
            "e5m2": "Float8E5M2", "s8": "Int8", "u8": "Uint8", "s32": "Int32", "e2m1": "Float4E2M1FN",
            "ue8m0": "Float8E8M0FNU", "e2m3": "Float6E2M3FN", "e3m2": "Float6E3M2FN"}

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s32": 32, "e2m1": 4,
        "ue8m0": 8, "e2m3": 6, "e3m2": 6}


# The MLIR type a value of each element type is held in (fp8 and integers as integers of their width).
IR_TYPES = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "f32": "f32"}


def element_types_text() -> str:
    """The manifest's element type table: every type an operand names, with its width, the DSL type a Python
    parameter names it by (none for the untyped b8 and b32), and the MLIR type its values are held in."""
    rows = [(t, BITS[t], d) for t, d in PY_DTYPE.items()] + [("b8", 8, ""), ("b32", 32, "")]
    return "".join(line + "\n" for line in format_element_types(rows, IR_TYPES))
