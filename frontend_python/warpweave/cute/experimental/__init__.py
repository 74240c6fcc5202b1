"""`cutlass.cute.experimental`: `iket`, CuTe DSL's in-kernel event tracing (named ranges a kernel pushes and pops).
Its markers (iket_events.py) leave no code in a kernel compiled outside the IKET profiler; its other names come
from the loaded backends (`iket.<name>` in their manifests and Python packages); a name none offers is an
AttributeError naming it."""
import sys

from ..._dsl.atoms.atoms import namespace
from . import iket_events

iket = namespace(__name__ + ".iket", "iket", {n: getattr(iket_events, n) for n in iket_events.__all__})
sys.modules[iket.__name__] = iket

__all__ = ["iket"]
