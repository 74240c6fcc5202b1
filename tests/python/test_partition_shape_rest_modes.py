"""ThrMma.partition_shape_A/B/C give each rest mode (MMA_M, MMA_N, MMA_K) as its size, as CuTe DSL does, even where a
permutation that interleaves the atoms makes partition_C's mode nested; the value mode keeps its nesting."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base import trace

from dsl_helpers import target

W = cute.nvgpu.warp

# CuTe DSL 4.8.1, sm_80, MmaF16BF16Op (16, 8, 16), permutation (16 * atoms_m, ordered (8, atoms_n, run / 8) with
# order (0, 2, 1), 16): partition_shape_C((128, 128)), _A((128, 64)), _B((128, 64)), partition_C's layout.
REFERENCE = {
    ((2, 2, 1), 16): ("((2, 2), 4, 8)", "((2, 2, 2), 4, 4)", "((2, 2), 8, 4)",
                      "((2,2),4,(2,4)):((128,8),32,(1024,4096))"),
    ((4, 2, 1), 32): ("((2, 2), 2, 8)", "((2, 2, 2), 2, 4)", "((2, 2), 8, 4)",
                      "((2,2),2,(4,2)):((128,8),64,(1024,8192))"),
    ((2, 2, 1), 8): ("((2, 2), 4, 8)", "((2, 2, 2), 4, 4)", "((2, 2), 8, 4)", "((2,2),4,8):((128,8),32,2048)"),
}


@pytest.mark.parametrize("atoms, run", list(REFERENCE))
def test_rest_modes_are_sizes_as_cute_dsls(atoms, run):
    with target("sm_80"), trace.tracing(trace.TraceState(target={"name": "sm_80"})):
        op = W.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16))
        perm_n = cute.make_ordered_layout((8, atoms[1], run // 8), order=(0, 2, 1))
        thr = cute.make_tiled_mma(op, cute.make_layout(atoms), permutation_mnk=(atoms[0] * 16, perm_n, 16)).get_slice(0)
        c = thr.partition_C(cute.make_rmem_tensor(cute.make_layout((128, 128)), cutlass.Float32))
        got = (str(thr.partition_shape_C((128, 128))), str(thr.partition_shape_A((128, 64))),
               str(thr.partition_shape_B((128, 64))), str(c.layout))
        assert got == REFERENCE[(atoms, run)]
        shape_c = thr.partition_shape_C((128, 128))
        assert all(isinstance(m, int) for m in shape_c[1:]) and cute.size(shape_c) == cute.size(c)
