"""What the Blackwell backend registers with warpweave when it loads (see the package's docstring)."""
from warpweave import ext

from . import tcgen05_mma, tmem

# Tensor memory: 32-bit addresses (lane in the high half, column in the low half) in NVPTX address space 6.
TMEM_ADDRESS_SPACE = 6

ext.register_memory_space("tmem", TMEM_ADDRESS_SPACE)

# The operand kinds of the tcgen05.mma atoms (the manifest's Operand.kind).
ext.register_operand_kind("umma_smem_descriptor", tcgen05_mma.UmmaSmemDescriptorKind())
ext.register_operand_kind("tmem", tcgen05_mma.TmemKind())

# cute.nvgpu.tcgen05: CuTe DSL's names.
for _name in ("CtaGroup", "OperandMajorMode", "OperandSource", "Field", "SmemLayoutAtomKind",
              "make_smem_layout_atom"):
    ext.register_python_name(f"tcgen05.{_name}", getattr(tcgen05_mma, _name))
for _name, _cls in tcgen05_mma._make_op_classes().items():
    ext.register_python_name(f"tcgen05.{_name}", _cls)
for _name in ("make_tmem_copy", "make_s2t_copy", "commit", "fence_before_thread_sync", "fence_after_thread_sync"):
    ext.register_python_name(f"tcgen05.{_name}", getattr(tmem, _name))

# cute.arch and warpweave.utils: tensor memory.
for _name in tmem.NAMES:
    ext.register_python_name(f"arch.{_name}", getattr(tmem, _name))
ext.register_python_name("utils.TmemAllocator", tmem.TmemAllocator)
ext.register_python_name("utils.get_num_tmem_alloc_cols", tmem.get_num_tmem_alloc_cols)

