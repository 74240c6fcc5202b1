"""`cutlass.utils.tensormap_manager` (deprecated in CuTe DSL): TensorMapManager and TensorMapUpdateMode, the tensor
maps a kernel edits while it runs, from the loaded backend that has TMA (as `cutlass.utils.TensorMapManager`). Making
a TensorMapManager through this module warns, as CuTe DSL's deprecated alias does."""
import warnings

from .. import utils

_DEPRECATED = {}


def _deprecated_manager():
    base = utils.TensorMapManager  # the backend's class (an AttributeError where no loaded backend has TMA)
    cls = _DEPRECATED.get(base)
    if cls is None:
        def __init__(self, *args, **kwargs):
            warnings.warn("cutlass.utils.tensormap_manager.TensorMapManager is deprecated; use "
                          "cutlass.utils.TensorMapManager instead", DeprecationWarning, stacklevel=2)
            base.__init__(self, *args, **kwargs)

        cls = _DEPRECATED[base] = type("TensorMapManager", (base,), {"__init__": __init__, "__module__": __name__,
                                                                     "__doc__": base.__doc__})
    return cls


def __getattr__(name):
    if name == "TensorMapManager":
        return _deprecated_manager()
    if name == "TensorMapUpdateMode":
        return utils.TensorMapUpdateMode
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TensorMapManager", "TensorMapUpdateMode"]
