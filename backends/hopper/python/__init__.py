"""The Hopper backend's Python package: mounted as warpweave.backends.hopper when the plugin loads.

- adapters.py (run on load): the "smem_descriptor" operand kind of the wgmma atoms, the "hopper.tma_descriptor"
  host argument (a TMA tensor map encoded per call), and the names CuTe DSL's users call in cute.nvgpu.cpasync
  (make_tiled_tma_atom, tma_partition, prefetch_descriptor, create_tma_multicast_mask) and cute.nvgpu.warpgroup
  (MmaF16BF16Op, MmaF8Op, OperandMajorMode, OperandSource, Field, SmemLayoutAtomKind, make_smem_layout_atom);
- tma.py: TMA atoms; bulk_copy.py: bulk copies of byte ranges (cpasync.CopyBulkG2SOp, ...); wgmma.py: warpgroup
  MMA ops, layout atoms, descriptors;
- helpers.py, public as warpweave.utils.hopper_helpers;
- dsmem.py, public as warpweave.cute.arch.smem and cute.arch.map_dsmem_ptr, and cpasync.CopyDsmemStoreOp:
  distributed shared memory (another CTA's shared memory in the cluster, mapa and st.async);
- primitives.py: cutlass.experimental.primitives adapted onto this backend's instructions (mbarrier arrivals,
  mapa, elect_sync, ldmatrix / stmatrix, and cute.arch's names of the others);
- tensor_map.py: cutlass.experimental.cuda's TensorMap and its constructors (the "hopper.tensor_map" host
  argument); tma_primitives.py: the primitives' tensor copies and tensor-map edits.
It imports warpweave's public modules and warpweave.ext only.
"""
