"""CuTe DSL's containers of narrow floats as a tensor map moves them: Float4E2M1FNx2 (two E2M1 values in a byte),
Float6E2M3FNx4 and Float6E3M2FNx4 (four 6-bit values in three bytes). Each is a storage type: one element is the
whole container (what a tensor map's element size and a tile's byte count read), not a number to compute with;
the values in it are of its `element_type` (Float4E2M1FN, ...), `elements` of them."""
from .numeric import Float4E2M1FN, Float6E2M3FN, Float6E3M2FN, Numeric


def _container(name: str, element, count: int):
    width = element.width * count
    return type(name, (Numeric,), {"__slots__": (), "width": width, "ir_type": f"i{width}",
                                   "element_type": element, "elements": count})


Float4E2M1FNx2 = _container("Float4E2M1FNx2", Float4E2M1FN, 2)
Float6E2M3FNx4 = _container("Float6E2M3FNx4", Float6E2M3FN, 4)
Float6E3M2FNx4 = _container("Float6E3M2FNx4", Float6E3M2FN, 4)
PACKED_CONTAINERS = (Float4E2M1FNx2, Float6E2M3FNx4, Float6E3M2FNx4)

__all__ = ["Float4E2M1FNx2", "Float6E2M3FNx4", "Float6E3M2FNx4", "PACKED_CONTAINERS"]
