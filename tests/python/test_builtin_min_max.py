"""Python's min and max inside kernels: with a DSL number among the arguments they compare at run time (as CuTe DSL
programs write `min(k_pipe_mmas, k_tile_cnt)`); on Python values they stay Python (usable as static bounds); a
user's own min/max is left alone. IR on the CPU, values on a GPU."""
import builtins

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


@cute.kernel
def minmax_kernel(gOut: cute.Tensor, n: cutlass.Int32):
    k = cute.size(gOut, mode=[0]) - n                # a runtime Int32
    gOut[0] = min(3, n)
    gOut[1] = max(n, k, 2)
    gOut[2] = min(n * 2, 7) + max(1, 0)              # Python part stays Python
    static = 0
    for i in cutlass.range_constexpr(min(4, 8)):     # a static bound: min of Python ints is an int
        static = static + i
    gOut[3] = static


@cute.jit
def minmax(out, n: cutlass.Int32):
    minmax_kernel(out, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


def expected(n, size=16):
    k = size - n
    return [builtins.min(3, n), builtins.max(n, k, 2), builtins.min(n * 2, 7) + 1, 6]


def test_runtime_min_max_compile_to_comparisons():
    with target("sm_80"):
        c = cute.compile(minmax, from_dlpack(np.zeros(16, dtype=np.int32)).mark_layout_dynamic(), 5)
    # min and max of runtime values are IR (the algebra may fold min into max of negations); four stores.
    assert "arith.maxsi" in c.ir and c.ir.count('"llvm.store"') + c.ir.count("llvm.store ") >= 4
    # The static loop runs min(4, 8) = 4 times: its sum 0+1+2+3 is a constant (a shadowed min made it 66).
    assert "value = 6 : i32" in c.ir and "value = 66 : i32" not in c.ir
    assert c.cubin[:4] == b"\x7fELF"


def test_helper_keeps_python_values_python():
    from warpweave._dsl.tracing.control_flow import builtin_min_max

    assert builtin_min_max(builtins.min, "min", 4, 8) == 4 and type(builtin_min_max(builtins.max, "max", 4, 8)) is int
    assert builtin_min_max(builtins.min, "min", [3, 1, 2]) == 1          # one iterable argument: the builtin
    assert builtin_min_max(builtins.max, "max", cutlass.Int32(3), 5).value == 5


@requires_gpu
@pytest.mark.parametrize("n", [0, 2, 5, 9, 16])
def test_runtime_min_max_values(n):
    import torch

    out = torch.zeros(16, dtype=torch.int32, device="cuda")
    minmax(from_dlpack(out), n)
    torch.cuda.synchronize()
    assert out[:4].tolist() == expected(n)


def test_a_shadowing_min_is_called_as_written():
    # In a module of its own: a module-level min shadows the builtin for every kernel of its module (this one's
    # kernels above call Python's).
    from min_shadowing_kernel import shadow

    with target("sm_80"):
        c = cute.compile(shadow, from_dlpack(np.zeros(4, dtype=np.int32)), 5)
    assert "arith.minsi" not in c.ir and "arith.addi" in c.ir
