"""`cutlass._mlir._mlir_libs._cutlass_ir._mlir.ir`: the same module as `cutlass._mlir.ir`."""
import sys

from .... import ir

sys.modules[__name__] = ir
