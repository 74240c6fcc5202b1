"""example_b1's Python package: mounted by warpweave as warpweave.backends.example_b1 when the plugin loads.

It shows what a third party ships besides a manifest and a library, with no change to warpweave:
- adapters.py (run on load): the operand kind "b1_words" of the atoms' A and B operands, and the host argument
  "example_b1.bit_matrix";
- helpers.py, public as warpweave.utils.b1_helpers: packing 1-bit matrices, the 1-bit tiled MMA, and the
  per-call bit-matrix descriptor.
It imports warpweave's public modules and warpweave.ext only.
"""
