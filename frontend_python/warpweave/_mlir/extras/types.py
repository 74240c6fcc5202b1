"""`T`: MLIR types by their short names, as `cutlass._mlir.extras.types` and `cutlass.cutlass_dsl.T` give them."""
from ..._dsl.base.ir_values import (BF16Type, F16Type, F32Type, F64Type, IndexType, IntegerType,
                                    VectorType)


def i(width: int) -> IntegerType:
    return IntegerType.get_signless(width)


def bool() -> IntegerType:  # noqa: A001 (the name CuTe DSL gives it)
    return IntegerType.get_signless(1)


def i1() -> IntegerType:
    return IntegerType.get_signless(1)


def i8() -> IntegerType:
    return IntegerType.get_signless(8)


def i16() -> IntegerType:
    return IntegerType.get_signless(16)


def i32() -> IntegerType:
    return IntegerType.get_signless(32)


def i64() -> IntegerType:
    return IntegerType.get_signless(64)


def i128() -> IntegerType:
    return IntegerType.get_signless(128)


def f16() -> F16Type:
    return F16Type.get()


def bf16() -> BF16Type:
    return BF16Type.get()


def f32() -> F32Type:
    return F32Type.get()


def f64() -> F64Type:
    return F64Type.get()


def index() -> IndexType:
    return IndexType.get()


def vector(*shape_and_element) -> VectorType:
    """`T.vector(4, T.f32())`: vector<4xf32>."""
    *shape, elem = shape_and_element
    return VectorType.get(shape, elem)
