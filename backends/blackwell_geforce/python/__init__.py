"""The consumer Blackwell backend's Python package (warpweave.backends.blackwell_geforce), mounted when the plugin
loads, after the packages of the backends it extends (ampere, hopper, blackwell).

- adapters (on_load): CuTe DSL's names of the block-scaled warp-level MMAs in cute.nvgpu.warp (MmaMXF8Op, the
  MXF8F6F4 pairs it supports), their scale-factor operands fed from cute.gemm's [A, SFA] / [B, SFB] fragments.
- helpers: the sm_120 names of warpweave.utils.blackwell_helpers (the tile permutation of the warp MMAs, the
  thread-value layouts and fragments of the scale factors); the module's other names are datacenter Blackwell's.
- blockscaled_layout: the sm_120 names of warpweave.utils.blockscaled_layout (the scale factors' shared-memory
  layouts); the rest of the module is datacenter Blackwell's, whose scale-factor atom both generations share.
"""
