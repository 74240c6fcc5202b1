"""The Blackwell backend's Python package: mounted as warpweave.backends.blackwell when the plugin loads.

- adapters.py (run on load): the tensor memory space, the operand kinds of the tcgen05.mma atoms
  ("umma_smem_descriptor", "tmem"), and the names CuTe DSL's users call: cute.nvgpu.tcgen05 (MmaF16BF16Op,
  MmaTF32Op, MmaI8Op, MmaF8F6F4Op, MmaFP8Op, CtaGroup, OperandMajorMode, OperandSource, Field, SmemLayoutAtomKind,
  make_smem_layout_atom, make_tmem_copy, commit, ...), cute.nvgpu.make_tiled_tma_atom_A/B, cute.arch's
  tensor-memory functions, utils.TmemAllocator and utils.get_num_tmem_alloc_cols;
- tcgen05_mma.py: the MMA ops (sm_103a's K = 96 4-bit ones, SM103MmaMXF4NVF4Op and SM103MmaMXF4Op, are sm_100a's
  classes over their own manifest families; MmaFP8Op, CuTe DSL's earlier name of the one-type kind::f8f6f4 MMA,
  selects MmaF8F6F4Op's atoms), their descriptors (make_umma_smem_desc, with next_src on sm_103a) and
  operand kinds; tmem_layouts.py: where D lives in tensor
  memory; tmem.py: tensor-memory copies, allocation, fences and commit; tma.py: TMA atoms of MMA operands;
- fp4_convert.py: cute.arch's E2M1 to f16 conversions (cvt_f4e2m1_f16, cvt_f4e2m1x{2,4,8}_to_f16x{2,4,8});
  tmem_names.py: cute.arch.fence_view_async_tmem_op and is_tmem_allocation_exclusive;
- clc.py: the decoded response of cluster launch control (arch.clc_query_cancel);
- helpers.py, public as warpweave.utils.blackwell_helpers (and utils.sm100), get_tmem_copy_properties included;
- blockscaled_layout.py, public as warpweave.utils.blockscaled_layout: where a block-scaled GEMM's scale factors
  live in global, shared and tensor memory;
- gemm_sm100.py, public as warpweave.utils.gemm.sm100: the epilogue warps' per-tile epilogue of a tcgen05 GEMM;
- cute_ext.py, cute_ext_gemm.py, cute_ext_kernel_maps.py: cute.experimental's operations (tensor memory, TMA,
  pipelines), its whole GEMM phases (mainloop_mma, epilogue_tma_store) and the tensor maps of tensors a kernel
  makes (written in the call's device workspace);
- tcgen05_primitives.py: cutlass.experimental.primitives' tcgen05 and tensor-memory operations, descriptors and
  enumerations;
Distributed shared memory (map_dsmem_ptr, cpasync.CopyDsmemStoreOp) is Hopper's, which this backend extends.
It imports warpweave's public modules and warpweave.ext only.
"""
