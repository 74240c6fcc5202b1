"""What the consumer Blackwell backend registers with warpweave when it loads (see the package's docstring)."""
import warpweave as cutlass
from warpweave import ext

from . import mma_ops

for _name, _cls in mma_ops.make_op_classes().items():
    ext.register_python_name(f"warp.{_name}", _cls)
ext.register_python_name("warp.MXF8F6F4_SUPPORTED_PAIRS", mma_ops.MXF8F6F4_SUPPORTED_PAIRS)

# An unsigned integer partition gives a fragment of the signed type of its width, as CuTe DSL's (whose integers
# are signless in its IR) does.
_SIGNED = {cutlass.Uint8: cutlass.Int8, cutlass.Uint16: cutlass.Int16, cutlass.Uint32: cutlass.Int32,
           cutlass.Uint64: cutlass.Int64}


class PartitionTypedRegisters(ext.OperandKind):
    """A and B of the block-scaled warp MMAs: register fragments of the partition's element type, not the atom's
    (see generate_manifest.py, PARTITION_TYPED_KIND)."""

    name = "registers_of_partition_type"

    def make_fragment(self, atom_id, operand, tensor, dtype):
        own = tensor.element_type
        return cutlass.cute.make_fragment_like(tensor, _SIGNED.get(own, own) if own is not None else dtype)


ext.register_operand_kind(PartitionTypedRegisters.name, PartitionTypedRegisters())
