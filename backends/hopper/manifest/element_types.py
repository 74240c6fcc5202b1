"""The element types operands name: width, DSL type and the MLIR type their values are held in."""
from __future__ import annotations

from manifest_builder import format_element_types

# PTX type -> (bits, DSL type name)
TYPES = {"f16": (16, "Float16"), "bf16": (16, "BFloat16"), "tf32": (32, "TFloat32"), "e4m3": (8, "Float8E4M3FN"),
         "e5m2": (8, "Float8E5M2"), "s8": (8, "Int8"), "u8": (8, "Uint8"), "f32": (32, "Float32"),
         "s32": (32, "Int32")}


# The MLIR type a value of each element type is held in (fp8 and integers as integers of their width).
IR_TYPES = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "f32": "f32"}


def element_types() -> str:
    """The manifest's element type table: every type an operand names, with its width, the DSL type a Python
    parameter names it by (none for the untyped bNN), and the MLIR type its values are held in."""
    rows = [(t, bits, dsl) for t, (bits, dsl) in TYPES.items()] + [("b16", 16, ""), ("b32", 32, "")]
    return "\n".join(format_element_types(rows, IR_TYPES))
