"""What the Blackwell backend registers with warpweave when it loads (see the package's docstring)."""
import warpweave as cutlass
from warpweave import ext
from warpweave.cute import atom as _atom

from . import tcgen05_mma, tmem
from . import tmem_plain_copy as _tmem_plain_copy  # noqa: F401 - cute.copy with a plain tcgen05.ld/st atom

# Tensor memory: 32-bit addresses (lane in the high half, column in the low half) in NVPTX address space 6.
TMEM_ADDRESS_SPACE = 6

ext.register_memory_space("tmem", TMEM_ADDRESS_SPACE, address_bits=32)

# The operand kinds of the tcgen05.mma atoms (the manifest's Operand.kind).
ext.register_operand_kind("umma_smem_descriptor", tcgen05_mma.UmmaSmemDescriptorKind())
ext.register_operand_kind("tmem", tcgen05_mma.TmemKind())

# cute.nvgpu.tcgen05: CuTe DSL's names.
_mma_names = {_name: getattr(tcgen05_mma, _name) for _name in (
    "CtaGroup", "OperandMajorMode", "OperandSource", "Field", "SmemLayoutAtomKind", "make_smem_layout_atom",
    "make_umma_smem_desc")}
_mma_names.update(tcgen05_mma._make_op_classes())
# The class every tcgen05 MMA operation is an instance of (libraries annotate with it and test against it).
_mma_names["MmaOp"] = _atom.kind_of_namespace(_atom.MmaOp, "tcgen05.", "MmaOp", "A tcgen05 MMA operation.")
for _name, _obj in _mma_names.items():
    ext.register_python_name(f"tcgen05.{_name}", _obj)
ext.register_python_name("tcgen05.Pack", tmem.Pack)
ext.register_python_name("tcgen05.Unpack", tmem.Unpack)
ext.register_python_name("tcgen05.Repetition", tmem.Repetition)
_copy_ops = tmem._make_copy_op_classes()
for _name, _what in tmem.NOT_BUILT_COPY_OPS.items():
    _copy_ops.setdefault(_name, tmem.not_built_op(_name, _what))
from . import scale_copy as _scale_copy  # noqa: E402

if _scale_copy.op_class() is not None:
    _copy_ops["Cp4x32x128bOp"] = _scale_copy.op_class()
for _name, _cls in _copy_ops.items():
    ext.register_python_name(f"tcgen05.{_name}", _cls)
# CuTe DSL also names the tensor-memory copy operations in tcgen05.copy (tcgen05.copy.Ld32x32bOp(...)).
import types as _types  # noqa: E402

ext.register_python_name("tcgen05.copy", _types.SimpleNamespace(
    Repetition=tmem.Repetition, Pack=tmem.Pack, Unpack=tmem.Unpack, **_copy_ops))
# ... and the MMA's in tcgen05.mma (tcgen05.mma.SmemLayoutAtomKind.MN_SW128).
ext.register_python_name("tcgen05.mma", _types.SimpleNamespace(**_mma_names))
for _name in ("make_tmem_copy", "make_s2t_copy", "get_s2t_smem_desc_tensor", "commit", "fence_before_thread_sync",
              "fence_after_thread_sync", "find_tmem_tensor_col_offset"):
    ext.register_python_name(f"tcgen05.{_name}", getattr(tmem, _name))

# cute.arch and warpweave.utils: tensor memory.
for _name in tmem.NAMES:
    ext.register_python_name(f"arch.{_name}", getattr(tmem, _name))
ext.register_python_name("utils.TmemAllocator", tmem.TmemAllocator)
ext.register_python_name("utils.get_num_tmem_alloc_cols", tmem.get_num_tmem_alloc_cols)
# CuTe DSL's cutlass.utils names this helper too
from . import helpers as _helpers  # noqa: E402

ext.register_python_name("utils.compute_epilogue_tile_shape", _helpers.compute_epilogue_tile_shape)
ext.register_python_name("tcgen05.tile_to_mma_shape", _helpers.tile_to_mma_shape)

# cute.nvgpu: TMA atoms of tcgen05 operands.
from . import tma  # noqa: E402

for _name in ("make_tiled_tma_atom_A", "make_tiled_tma_atom_B"):
    ext.register_python_name(f"nvgpu.{_name}", getattr(tma, _name))
# Hopper's TMA loads from a CTA value map, their loads completing on the barrier of the op's CTA group
ext.register_python_name("cute_nvgpu.atom_make_non_exec_tiled_tma_load", tma.make_non_exec_tiled_tma_load)

# CuTe DSL's LayoutEnum.mma_major_mode(): the tcgen05 MMA major of an operand of that layout (a row-major A (M, K)
# or B (N, K) is K-major).
from warpweave.utils import LayoutEnum as _LayoutEnum  # noqa: E402


def _mma_major_mode(self):
    return tcgen05_mma.OperandMajorMode.K if self == _LayoutEnum.ROW_MAJOR else tcgen05_mma.OperandMajorMode.MN


_LayoutEnum.mma_major_mode = _mma_major_mode

# cute.arch.umma_commit_arrive: the MMA completion the pipelines of warpweave.pipeline arrive with (PipelineTmaUmma,
# PipelineUmmaAsync, PipelineAsyncUmma): a tcgen05 commit of the calling warp's elected thread.
ext.register_python_name("arch.umma_commit_arrive", tmem.commit)

# cute.arch.clc_query_cancel: the decoded cluster-launch-control response (utils.ClcDynamicPersistentTileScheduler).
from . import clc  # noqa: E402

ext.register_python_name("arch.clc_query_cancel", clc.clc_query_cancel)
ext.register_python_name("arch.clc_response", clc.clc_response)
ext.register_python_name("arch.issue_clc_query", clc.issue_clc_query)

# cutlass.experimental.primitives' 2-CTA tensor copies complete on the pair's even CTA's mbarrier, as the 2-CTA
# TMA atoms do
from warpweave.backends.hopper import tma_primitives as _hopper_tma_primitives  # noqa: E402


def _pair_mbarrier(b, mbar):
    return b.op1("arith.andi", [mbar, cutlass.Int32(tma.PEER_BIT_MASK - (1 << 32)).ir()], "i32")


_hopper_tma_primitives.MBARRIER_OF_GROUP[2] = _pair_mbarrier

# cutlass.experimental.primitives' tcgen05 and tensor-memory operations, their descriptors and enumerations
from . import tcgen05_primitives  # noqa: E402

for _name in tcgen05_primitives.NAMES:
    ext.register_python_name(f"primitives.{_name}", getattr(tcgen05_primitives, _name))
from . import cute_ext as _cute_ext  # noqa: E402,F401 - cute.experimental's tensor memory, TMA and pipelines
from . import cute_ext_gemm as _cute_ext_gemm  # noqa: E402,F401 - cute.experimental's main loop and TMA epilogue


# cute.arch: the conversions of packed E2M1 values to f16 (fp4_convert.py), an instruction of the family-specific
# Blackwell targets; the tensor-memory fence by kind and the exclusive-allocation question (tmem_names.py)
from . import fp4_convert as _fp4_convert, tmem_names as _tmem_names  # noqa: E402

for _module in (_fp4_convert, _tmem_names):
    for _name, _f in _module.NAMES.items():
        ext.register_python_name(f"arch.{_name}", _f)
