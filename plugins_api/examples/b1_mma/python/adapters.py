"""What example_b1 registers with warpweave when it loads.

Operand kind "b1_words": the atoms' A and B hold 1-bit values, 32 to a 32-bit word (bit i is the i-th K index of
its 32, lowest bit first). warpweave has no 1-bit element type, so a fragment of these operands holds the words
as Uint32 values; this adapter fixes that element type and refuses fragments of anything else, where the generic
register adapter would find no DSL type for "b32".

Host argument "example_b1.bit_matrix": 16 bytes describing a packed bit matrix argument at each call: its address
(u64), its rows (u32) and its words per row (u32), as a kernel that walks rows of a bit matrix wants them.
"""
import struct

import warpweave
from warpweave import ext


class B1WordsKind(ext.OperandKind):
    name = "b1_words"

    def element_dtype(self, atom_id, operand, hint):
        return warpweave.Uint32

    def check_fragment(self, atom_id, operand, tensor):
        super().check_fragment(atom_id, operand, tensor)
        et = getattr(tensor, "element_type", None)
        if et is None or not et.is_integer or et.width != 32:
            raise ext.user_error(f"{atom_id}: operand {operand['name']} holds 1-bit values packed 32 to a word; its "
                                 f"fragment must hold Uint32 words, not {getattr(et, '__name__', et)} "
                                 "(warpweave.utils.b1_helpers.pack_bits packs a 0/1 matrix on the host)",
                                 ext.DSLTypeError)


def bit_matrix(tensor, **attrs):
    if attrs:
        raise TypeError(f"example_b1.bit_matrix takes no attributes, got {sorted(attrs)}")
    if len(tensor.shape) != 2:
        raise ValueError(f"example_b1.bit_matrix describes a rank-2 tensor of words, got shape {tensor.shape}")
    rows, words = tensor.shape
    return struct.pack("<QII", tensor.data_ptr, rows, words)


ext.register_operand_kind("b1_words", B1WordsKind())
ext.register_host_argument("example_b1.bit_matrix", bit_matrix, size=16, align=8)
