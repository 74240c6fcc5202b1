"""What the Hopper backend registers with warpweave when it loads (see the package's docstring)."""
from warpweave import ext

from . import tensormap_update, tma, tma_block_copy, tma_blocked, tma_export, tma_in_kernel, wgmma

ext.register_operand_kind("smem_descriptor", wgmma.SmemDescriptorKind())
ext.register_host_argument(tma.DESCRIPTOR, tma.encode_descriptor, size=tma.TMAP_BYTES, align=64,
                           export_c=tma_export.descriptor_c)
ext.register_host_argument(tma_blocked.DESCRIPTOR, tma_blocked.encode, size=tma.TMAP_BYTES, align=64,
                           export_c=tma_export.blocked_c)

for _name in ("make_tiled_tma_atom", "tma_partition", "prefetch_descriptor", "create_tma_multicast_mask"):
    ext.register_python_name(f"cpasync.{_name}", getattr(tma, _name))
ext.register_python_name("cpasync.TmaCopyAtom", tma.TmaCopyAtom)
# TMA loads of a tile a program maps out itself (CuTe DSL's cute_nvgpu dialect op, and the trait making it a CopyAtom)
from . import tma_value_map  # noqa: E402

ext.register_python_name(tma_value_map.NAME, tma_value_map.make_non_exec_tiled_tma_load)
ext.register_python_name("cpasync.CopyBulkTensorTileG2SNonExecTrait", tma_value_map.CopyBulkTensorTileG2SNonExecTrait)
# tensor maps a kernel keeps in memory and retargets per work unit (grouped GEMMs)
for _name, _obj in tensormap_update.NAMES.items():
    ext.register_python_name(_name, _obj)
for _name, _obj in tma_in_kernel.NAMES.items():   # atoms made in kernels, whose maps they write to memory
    ext.register_python_name(_name, _obj)
ext.register_python_name("utils.block_copy", tma_block_copy.block_copy)
ext.register_python_name("cpasync.ReductionOp", tma.ReductionOp)
ext.register_python_name("cpasync.ReductionKind", tma.ReductionOp)  # CuTe DSL's other name of the same kinds
_reduce = tma.reduce_op_class()
if _reduce is not None:
    ext.register_python_name("cpasync.CopyReduceBulkTensorTileS2GOp", _reduce)
# Bulk copies of byte ranges (no tensor map): the manifest's ops, whose atoms take their byte count from each copy
from . import bulk_copy  # noqa: E402

for _name, _cls in bulk_copy.op_classes().items():
    ext.register_python_name(_name, _cls)
for _name in ("OperandMajorMode", "OperandSource", "Field", "SmemLayoutAtomKind", "make_smem_layout_atom"):
    ext.register_python_name(f"warpgroup.{_name}", getattr(wgmma, _name))
for _name, _cls in wgmma._make_op_classes().items():
    ext.register_python_name(f"warpgroup.{_name}", _cls)
# The operand major mode is one enum for wgmma and (through Blackwell, which builds on it) tcgen05: CuTe DSL names it
# in cute.nvgpu.common too, for kernels that check an operand's mode before knowing which MMA takes it.
ext.register_python_name("common.OperandMajorMode", wgmma.OperandMajorMode)

# Distributed shared memory: pointers into a peer CTA's shared memory (cute.arch.map_dsmem_ptr, also as
# cute.arch.smem.map_dsmem_ptr: the module map's warpweave.cute.arch.smem) and the stores into it that complete on its
# mbarrier (cpasync.CopyDsmemStoreOp).
from . import dsmem  # noqa: E402

ext.register_memory_space("dsmem", dsmem.DSMEM_ADDRESS_SPACE)
ext.register_python_name("cpasync.CopyDsmemStoreOp", dsmem.CopyDsmemStoreOp)
ext.register_python_name("arch.map_dsmem_ptr", dsmem.map_dsmem_ptr)
ext.register_python_name("arch.store_async_dsmem", dsmem.store_async_dsmem)

from . import mbarrier_waits  # noqa: E402

ext.register_python_name("arch.mbarrier_conditional_try_wait", mbarrier_waits.mbarrier_conditional_try_wait)

from . import nvvm_ops  # noqa: E402

for _name in nvvm_ops.NAMES:
    ext.register_python_name(f"nvvm.{_name}", getattr(nvvm_ops, _name))

from . import cluster  # noqa: E402

for _name in cluster.NAMES:
    ext.register_python_name(f"arch.{_name}", getattr(cluster, _name))

from . import registers  # noqa: E402

for _name in registers.NAMES:
    ext.register_python_name(f"arch.{_name}", getattr(registers, _name))

# CuTe DSL's LayoutEnum.sm90_mma_major_mode(): the warpgroup MMA major of an operand of that layout (a row-major
# A (M, K) or B (N, K) is K-major). Hopper's knowledge, so the Hopper package adds it.
from warpweave.utils import LayoutEnum as _LayoutEnum  # noqa: E402


def _sm90_mma_major_mode(self):
    return wgmma.OperandMajorMode.K if self == _LayoutEnum.ROW_MAJOR else wgmma.OperandMajorMode.MN


_LayoutEnum.sm90_mma_major_mode = _sm90_mma_major_mode

# cutlass.experimental.cuda's tensor maps (TensorMap, create_tensor_map_tiled, create_tensor_map_tiled_from_view)
from . import tensor_map  # noqa: E402

ext.register_host_argument(tensor_map.DESCRIPTOR, tensor_map.encode, size=tma.TMAP_BYTES, align=64,
                           export_c=tma_export.tensor_map_c)
for _name in tensor_map.NAMES:
    ext.register_python_name(f"cuda.{_name}", getattr(tensor_map, _name))

# cutlass.experimental.primitives' tensor-copy operations and tensor-map edits
from . import tma_primitives  # noqa: E402

for _name in tma_primitives.NAMES:
    ext.register_python_name(f"primitives.{_name}", getattr(tma_primitives, _name))

# cutlass.experimental.primitives: the names whose signature is not their instruction's operand list, and the
# instructions the manifest has under cute.arch's names.
from . import primitives as _primitives  # noqa: E402

for _name, _f in _primitives.NAMES.items():
    ext.register_python_name(f"primitives.{_name}", _f)
for _name, _target in _primitives.ALIASES.items():
    ext.register_python_name(f"primitives.{_name}", _primitives.alias(_target))

from . import griddep  # noqa: E402

for _name in griddep.NAMES:
    ext.register_python_name(f"primitives.{_name}", getattr(griddep, _name))

# cute.arch.elect_one as CuTe DSL's kernels use it (`if` and `with`), over the target's election primitive (Hopper's
# elect.sync, or the extending Blackwell's).
from . import elect  # noqa: E402

ext.register_python_name("arch.elect_one", elect.elect_one)
ext.register_python_name("arch.prefetch", tma_primitives.prefetch)
# CuTe DSL's cute.arch.cp_async_bulk_wait_group(n, read=...) chooses between the two wait entries
ext.register_python_name("arch.cp_async_bulk_wait_group", _primitives.cp_async_bulk_wait_group)
