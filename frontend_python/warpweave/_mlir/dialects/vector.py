"""`cutlass._mlir.dialects.vector`: the vector ops user code writes (extract and insert at static positions,
bitcast, from_elements, broadcast); the compiler lowers them to LLVM's."""
from ..._dsl.base.ir_ops import (vector_bitcast as bitcast, vector_broadcast as broadcast, vector_extract as extract,
                                 vector_from_elements as from_elements, vector_insert as insert)

__all__ = ["bitcast", "broadcast", "extract", "from_elements", "insert"]
