"""warpweave: an open kernel-authoring stack for NVIDIA GPUs in the style of CuTe DSL.

``import warpweave as cutlass`` and ``import warpweave.cute as cute`` give CuTe DSL's names.
"""
__version__ = "0.1.0"

from . import cute  # noqa: E402,F401
