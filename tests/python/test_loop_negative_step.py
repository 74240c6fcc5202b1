"""A run-time loop with a negative step (`for i in range(n, -1, -1)`, as CuTe DSL's attention kernels walk their
key blocks from the last): it runs its trips in that order. The IR's loop counts up, so such a loop counts its trips
up and derives its variable; before, it ran no trip at all (its bound lies below its start)."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


@cute.kernel
def _down(x: cute.Tensor, n: cutlass.Int32, stop: cutlass.Int32):
    k = cutlass.Int32(0)
    for i in range(n, stop, -3):  # the order of the trips: x[k] is the k-th trip's variable
        x[k] = cutlass.Float32(i)
        k = k + 1
    x[31] = cutlass.Float32(k)


@cute.jit
def _down_host(x: cute.Tensor, n: cutlass.Int32, stop: cutlass.Int32):
    _down(x, n, stop).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_a_loop_with_a_negative_step_keeps_its_body():
    with target("sm_80"):
        ptx = cute.compile(_down_host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(9),
                           cutlass.Int32(-1)).ptx
    # the body's store (the trip's variable, converted) is in the kernel, inside a loop that branches back
    assert re.search(r"cvt\.rn\.f32\.s32", ptx), ptx
    assert len(re.findall(r"st\.global\.(?:b32|f32)", ptx)) >= 2, ptx
    assert re.search(r"@%p\d+ bra \t\$L__BB0_\d+;", ptx), ptx


@requires_gpu
@pytest.mark.parametrize("n, stop", [(9, -1), (9, 0), (2, 2), (0, 5), (-1, -1), (7, -8)])
def test_a_loop_with_a_negative_step_runs_its_trips_in_order(n, stop):
    import torch
    x = torch.full((32,), -100.0, device="cuda")
    c = cute.compile(_down_host, from_dlpack(x), cutlass.Int32(n), cutlass.Int32(stop))
    c(from_dlpack(x), cutlass.Int32(n), cutlass.Int32(stop))
    torch.cuda.synchronize()
    want = list(range(n, stop, -3))
    assert x[:len(want)].tolist() == [float(v) for v in want] and x[31].item() == len(want), x.tolist()
