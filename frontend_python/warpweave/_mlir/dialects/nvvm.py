"""`cutlass._mlir.dialects.nvvm`: NVVM's ops as user code writes them. They are the backends' (an op exists for the
GPU generations that have its instruction): each is the name a loaded backend publishes as `nvvm.<op>`, and one
that none offers is an AttributeError naming it."""
import sys

from ..._dsl.atoms.atoms import namespace

sys.modules[__name__] = namespace(__name__, "nvvm")
