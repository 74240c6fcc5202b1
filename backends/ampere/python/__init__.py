"""The Ampere backend's Python package: mounted as warpweave.backends.ampere when the plugin loads.

- adapters.py (run on load): CuTe DSL's names of this backend's operations where they differ from the manifest's
  (cute.nvgpu.warp.MmaFP8Op, the sm_89 fp8 mma.sync, over the manifest's warp.MmaF8Op);
- arch_ops.py: cute.arch.lop3 and cute.arch.red with CuTe DSL's signatures;
- integer_isa.py: cute.arch.bfe, bfi, bfind, mul24, mad24, add_sat_int, sub_sat_int and the carry chains;
- packed_half.py: cute.arch's f16x2/bf16x2 add, sub, fma and exp2, and the scalar f16/bf16 fma;
- primitives.py: cutlass.experimental.primitives whose signatures adapt onto this backend's instructions
  (shfl_sync, vote_sync, redux_sync, red, cp.async ones);
- integer_pack.py: primitives.convert_and_pack_integer (saturating integer packing);
- nvvm_ops.py: cutlass._mlir.dialects.nvvm's ops of every generation from sm_80 (atomicrmw, fmax, fmin), which the
  backends building on this one see too.
It imports warpweave's public modules and warpweave.ext only.
"""
from . import adapters  # noqa: F401
