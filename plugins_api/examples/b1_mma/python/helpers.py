"""warpweave.utils.b1_helpers: using example_b1's 1-bit MMA from the DSL.

    import warpweave.utils.b1_helpers as b1
    words = b1.pack_bits(bits)                       # host: (rows, K) 0/1 -> (rows, K / 32) uint32
    mma = b1.make_b1_tiled_mma("xor_popc", (2, 2, 1))
    desc = b1.bit_matrix_descriptor(words_tensor)    # in @cute.jit: a per-call kernel parameter
"""
import numpy as np

import warpweave.cute as cute
from warpweave import ext
from warpweave.cute.nvgpu import warp

BIT_OPS = ("and_popc", "xor_popc")


def pack_bits(bits) -> np.ndarray:
    """A (rows, K) array of 0/1 as (rows, K // 32) uint32 words, bit i of word w = column 32 w + i."""
    a = np.asarray(bits)
    if a.ndim != 2 or a.shape[1] % 32:
        raise ValueError(f"pack_bits: a (rows, K) array with K a multiple of 32, got shape {a.shape}")
    if not np.isin(a, (0, 1)).all():
        raise ValueError("pack_bits: the array must hold only 0 and 1")
    b = a.astype(np.uint64).reshape(a.shape[0], -1, 32)
    return (b << np.arange(32, dtype=np.uint64)).sum(axis=2).astype(np.uint32)


def unpack_bits(words) -> np.ndarray:
    w = np.asarray(words, dtype=np.uint32)
    return ((w[..., None] >> np.arange(32, dtype=np.uint32)) & 1).reshape(w.shape[0], -1).astype(np.uint8)


def make_b1_tiled_mma(bit_op: str = "and_popc", atom_layout_mnk=(1, 1, 1)):
    """A tiled MMA of the m16n8k256 1-bit atom (D = C + popcount(A op B) over K, s32)."""
    if bit_op not in BIT_OPS:
        raise ext.user_error(f"make_b1_tiled_mma: bit_op must be one of {', '.join(BIT_OPS)}, got {bit_op!r}")
    return cute.make_tiled_mma(warp.MmaB1Op(bit_op=bit_op, shape_mnk=(16, 8, 256)), atom_layout_mnk)


def bit_matrix_descriptor(words_tensor):
    """In @cute.jit code: the 16-byte descriptor (address, rows, words per row) of a packed bit-matrix tensor
    argument, computed on the host at each call and passed to a kernel as a grid-constant parameter."""
    return ext.host_argument("example_b1.bit_matrix", words_tensor)


def _descriptor_word(desc, offset: int):
    """The u32 at byte `offset` of a bit-matrix descriptor inside a kernel."""
    import warpweave

    if not isinstance(desc, ext.DeviceHostArgument) or desc.host.producer.name != "example_b1.bit_matrix":
        raise ext.user_error(f"expected a bit-matrix descriptor (bit_matrix_descriptor) inside a kernel, got {desc!r}",
                             ext.DSLTypeError)
    b = ext.builder()
    off = b.constant_int(offset, "i32")
    p = b.op1("llvm.getelementptr", [desc.address, off], "!llvm.ptr",
              "elem_type = i8, rawConstantIndices = array<i32: -2147483648>")
    return warpweave.Int32.from_ir(b.op1("llvm.load", [p], "i32", "alignment = 4 : i64"))


def descriptor_rows(desc):
    """Inside a kernel: the rows of the described bit matrix (an Int32)."""
    return _descriptor_word(desc, 8)


def descriptor_words_per_row(desc):
    """Inside a kernel: the 32-bit words per row of the described bit matrix (an Int32)."""
    return _descriptor_word(desc, 12)
