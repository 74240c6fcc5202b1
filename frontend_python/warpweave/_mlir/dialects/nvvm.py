"""`cutlass._mlir.dialects.nvvm`: NVVM's ops as user code writes them. They are the backends' (an op exists for the
GPU generations that have its instruction): each is the name a loaded backend publishes as `nvvm.<op>`, and one
that none offers is an AttributeError naming it."""
import sys

from ..._dsl.atoms.atoms import namespace
from ..._dsl.device.packed_f32x2_op import NVVM_OPS

# the packed f32x2 ops are the frontend's: what they stand for (cute.arch.calc_packed_f32x2_op's calc_func) is on
# every target, the instruction is the target backend's
sys.modules[__name__] = namespace(__name__, "nvvm", static=NVVM_OPS)
