"""`cutlass.cute.experimental`: `iket`, CuTe DSL's in-kernel event tracing (named ranges a kernel pushes and pops).
Its names come from the loaded backends (`iket.<name>` in their manifests and Python packages); a name
none offers is an AttributeError naming it."""
import sys

from ..._dsl.atoms.atoms import namespace

iket = namespace(__name__ + ".iket", "iket")
sys.modules[iket.__name__] = iket

__all__ = ["iket"]
