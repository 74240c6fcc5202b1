"""`x in seq` / `x not in seq` in traced code: of a runtime number and a tuple, list or range of values, a runtime
Boolean (x equals one of them), as CuTe DSL's programs test `warpgroup_idx in self.cvt_warpgroup_ids`; of Python
values, Python's test. IR on the CPU, values on a GPU."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

GROUPS = (1, 3)


@cute.kernel
def membership_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    v = cutlass.Int32(0)
    if tidx in GROUPS:
        v = v + 1
    if tidx not in [0, 1, 2]:
        v = v + 10
    if 2 in GROUPS:                  # Python values: Python's test, no IR
        v = v + 100
    out[tidx] = v


@cute.jit
def membership(out):
    membership_kernel(out).launch(grid=[1, 1, 1], block=[8, 1, 1])


def expected():
    return [(1 if t in GROUPS else 0) + (10 if t not in (0, 1, 2) else 0) for t in range(8)]


def test_runtime_membership_compiles_to_comparisons():
    with target("sm_80"):
        c = cute.compile(membership, from_dlpack(np.zeros(8, dtype=np.int32)))
    # one comparison per element of each runtime test (2 + 3); the static test adds nothing
    assert c.ir.count("arith.cmpi eq") + c.ir.count('arith.cmpi"') >= 5
    assert "value = 100 : i32" not in c.ir and "value = 111 : i32" not in c.ir
    assert c.cubin[:4] == b"\x7fELF"


def test_helper_semantics():
    from warpweave._dsl.tracing.control_flow import contains

    assert contains(2, (1, 2)) is True and contains("a", {"a": 1}) is True and contains(5, range(3)) is False
    assert contains(cutlass.Int32(3), (1, 3)).value is True
    assert contains(cutlass.Int32(4), [1, 3]).value is False
    assert contains(cutlass.Int32(4), ()).value is False


@requires_gpu
def test_runtime_membership_values():
    import torch

    out = torch.zeros(8, dtype=torch.int32, device="cuda")
    membership(from_dlpack(out))
    torch.cuda.synchronize()
    assert out.cpu().tolist() == expected()
