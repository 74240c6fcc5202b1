"""In a kernel, an integer divided by a divisor known to be 0 is the division's instruction, as CuTe DSL writes it
(undefined only if it runs), not a refusal while tracing: QuACK's sm_90 GEMM advances the state of its epilogue's
pipeline, which has 0 stages when there is no C, in a branch that never reads it (index // stages). In host code,
where the value is computed while compiling, it stays an error at the user's line."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLValueError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target


def compile_kernel(t):
    @cute.kernel
    def k(a: cute.Tensor, n: cutlass.Int32):
        stages = 0                              # a pipeline without stages
        index = t(0) + t(3)
        crossings = index // stages
        index = index % stages
        if n > 100:                             # never taken by the program's calls
            a[0] = cutlass.Int32(crossings + index)
        a[1] = n

    @cute.jit
    def host(a: cute.Tensor, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[1, 1, 1])
    with target("sm_90a"):
        return cute.compile(host, from_dlpack(np.zeros(4, np.int32)), 3)


@pytest.mark.parametrize("t, ops", [(cutlass.Int32, ("arith.divsi", "arith.remsi")),
                                    (cutlass.Int64, ("arith.divsi", "arith.remsi")),
                                    (cutlass.Uint32, ("arith.divui", "arith.remui"))])
def test_a_kernels_division_by_a_known_zero_is_its_instruction(t, ops):
    c = compile_kernel(t)
    for op in ops:
        assert f'"{op}"' in c.ir, c.ir
    assert c.cubin  # assembled: the undefined division is the compiler's to drop


def test_host_division_by_zero_is_refused_at_the_users_line():
    @cute.jit
    def host(n: cutlass.Int32):
        return cutlass.Int32(4) // 0  # DIVIDE

    with target("sm_90a"), pytest.raises(DSLValueError, match="integer division by zero") as e:
        cute.compile(host, 3)
    assert "test_kernel_division_by_known_zero.py:47" in str(e.value)
