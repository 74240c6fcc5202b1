"""warpweave.cute: CuTe's layouts, tensors, atoms and kernels in Python (CuTe DSL's module layout).

``import warpweave.cute as cute`` gives CuTe DSL's names.
"""
from .layout import *  # noqa: F401,F403
from .layout import __all__ as _layout_all

__all__ = list(_layout_all)
