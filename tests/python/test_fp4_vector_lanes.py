"""Float4E2M1FN in IR vectors: 4-bit lanes, as CuTe DSL's (its mlir_type is 4 bits wide), while a number of it is
held in an i8 register (register_type). Programs that pack converted codes into words and bitcast the words to a
vector of the 4-bit type (QuACK's stochastic-rounding converters) get vector<32 x 4 bits> from 16 bytes, and a
TensorSSA or Vector of it gives back numbers of the register type; llvm.bitcast compares whole vectors' bits."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.ir_values import bit_width
from warpweave._mlir import ir
from warpweave._mlir.dialects import llvm, vector
from warpweave.base_dsl.typing import Vector
from warpweave.cute.runtime import from_dlpack
from warpweave.cute.tensor import TensorSSA

from dsl_helpers import requires_gpu, target


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def test_lane_and_register_types():
    fp4 = cutlass.Float4E2M1FN
    assert bit_width(fp4.mlir_type) == fp4.width == 4
    assert bit_width(fp4.register_type) == 8
    # the other types' lanes are their registers
    for t in (cutlass.Float8E4M3FN, cutlass.Float6E2M3FN, cutlass.Int4, cutlass.Float16, cutlass.Int32):
        assert t.mlir_type == t.register_type
        assert bit_width(t.mlir_type) >= t.width


def _fp4_kernel(words_per_thread=8):
    """Each thread: words_per_thread Uint16 words (4 codes each, code j of word q = (q + j) % 16) -> one vector of
    16-bit words -> llvm.bitcast to a vector of Float4E2M1FN lanes -> a TensorSSA stored into a 4-bit register
    fragment -> its words (as Int32) to global memory; and the codes read back one by one as numbers."""
    n = words_per_thread * 4

    @cute.kernel
    def k(gW: cute.Tensor, gV: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        wt = ir.VectorType.get([words_per_thread], cutlass.Uint16.mlir_type)
        w = llvm.mlir_undef(wt)
        for q in cutlass.range_constexpr(words_per_thread):
            word = sum(((q + j) % 16) << (4 * j) for j in range(4))
            w = vector.insert(cutlass.Uint16(word).ir_value(), w, dynamic_position=[], static_position=[q])
        lanes = llvm.bitcast(ir.VectorType.get([n], cutlass.Float4E2M1FN.mlir_type), w)
        frag = cute.make_rmem_tensor(cute.make_layout(n), cutlass.Float4E2M1FN)
        frag.store(TensorSSA(lanes, (n,), cutlass.Float4E2M1FN))
        words = cute.recast_tensor(frag, cutlass.Int32)
        for i in cutlass.range_constexpr(n // 8):
            gW[tidx * (n // 8) + i] = words[i]
        back = Vector(lanes, dtype=cutlass.Float4E2M1FN).to_elements()
        for i in cutlass.range_constexpr(n):
            gV[tidx * n + i] = cutlass.Float32(back[i])

    @cute.jit
    def h(w: cute.Tensor, v: cute.Tensor):
        k(w, v).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h, n


def test_words_bitcast_to_fp4_lanes_and_stored():
    h, n = _fp4_kernel()
    with target("sm_90a"):
        c = cute.compile(h, from_dlpack(np.zeros(32 * n // 8, np.int32)), from_dlpack(np.zeros(32 * n, np.float32)))
    assert "vector<32xi4>" in c.ir and "vector<8xi16>" in c.ir
    assert re.search(r"st\.global(\.v\d)?\.(b|u|s)32", c.info["ptx"])
    assert c.cubin


def test_fp4_vector_round_trip_of_numbers():
    @cute.kernel
    def k(g: cute.Tensor):
        v = Vector.from_elements([cutlass.Float32(x) for x in (0.5, -1.0, 6.0, 0.0)], cutlass.Float4E2M1FN)
        assert v.type == ir.VectorType.get([4], cutlass.Float4E2M1FN.mlir_type)
        for i, x in enumerate(v.to_elements()):
            assert type(x) is cutlass.Float4E2M1FN and x.ir_value().type == cutlass.Float4E2M1FN.register_type
            g[i] = cutlass.Float32(x)
        t = TensorSSA(v.ir_value(), (4,), cutlass.Float4E2M1FN)
        assert t.ir_value().type == v.type

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert "vector<4xi4>" in c.ir


def test_llvm_bitcast_compares_whole_vectors():
    @cute.kernel
    def k(g: cute.Tensor):
        w = llvm.mlir_undef(ir.VectorType.get([8], cutlass.Uint16.mlir_type))
        llvm.bitcast(ir.VectorType.get([16], cutlass.Uint8.mlir_type), w)       # 128 bits both
        llvm.bitcast(ir.VectorType.get([32], cutlass.Uint8.mlir_type), w)       # 256: refused

    @cute.jit
    def h(g: cute.Tensor):
        k(g).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"), pytest.raises(Exception, match=r"test_fp4_vector_lanes.py:\d+: bitcast keeps the bits: "
                                                          r"vector<8xi16> to vector<32xi8>"):
        cute.compile(h, from_dlpack(np.zeros(4, np.float32)))


@requires_gpu
def test_fp4_lanes_keep_the_words_bits_on_the_gpu():
    import torch

    h, n = _fp4_kernel()
    w = torch.zeros(32 * n // 8, dtype=torch.int32, device="cuda")
    v = torch.zeros(32 * n, dtype=torch.float32, device="cuda")
    cute.compile(h, from_dlpack(w), from_dlpack(v))(from_dlpack(w), from_dlpack(v))
    torch.cuda.synchronize()
    codes = [(q + j) % 16 for q in range(n // 4) for j in range(4)]     # lane i is nibble i of the words
    grid = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
    want = [(-1.0 if c & 8 else 1.0) * grid[c & 7] for c in codes]
    assert v.cpu().numpy().reshape(32, n).tolist() == [want] * 32
    words = [sum(codes[8 * i + j] << (4 * j) for j in range(8)) for i in range(n // 8)]
    got = w.cpu().numpy().view(np.uint32).reshape(32, n // 8).tolist()
    assert got == [words] * 32
