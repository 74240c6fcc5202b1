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


@cute.kernel
def _any_step(x: cute.Tensor, n: cutlass.Int32, stop: cutlass.Int32, step: cutlass.Int32):
    k = cutlass.Int32(0)
    for i in range(n, stop, step):  # a step known at run time only: either sign
        x[k] = cutlass.Float32(i)
        k = k + 1
    x[31] = cutlass.Float32(k)


@cute.jit
def _any_step_host(x: cute.Tensor, n: cutlass.Int32, stop: cutlass.Int32, step: cutlass.Int32):
    _any_step(x, n, stop, step).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_a_loop_whose_step_is_a_run_time_value_reads_its_sign():
    with target("sm_80"):
        ptx = cute.compile(_any_step_host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(9), cutlass.Int32(-1),
                           cutlass.Int32(-2)).ptx
    # the step's sign picks the bounds walked (a comparison of the step parameter with 0, then selections)
    assert re.search(r"setp\.(?:lt|gt|ge|le)\.s32\s+%p\d+, %r\d+, (?:0|-1);", ptx), ptx
    assert re.search(r"selp\.b32", ptx), ptx


@requires_gpu
@pytest.mark.parametrize("n, stop, step", [(9, -1, -1), (9, -1, -2), (0, 10, 3), (0, 10, 1), (5, 5, 1), (5, 5, -1),
                                           (3, 10, -1), (10, 3, 2), (-4, 6, 5)])
def test_a_loop_whose_step_is_a_run_time_value_runs_pythons_trips(n, stop, step):
    import torch
    x = torch.full((32,), -100.0, device="cuda")
    args = (cutlass.Int32(n), cutlass.Int32(stop), cutlass.Int32(step))
    cute.compile(_any_step_host, from_dlpack(x), *args)(from_dlpack(x), *args)
    torch.cuda.synchronize()
    want = list(range(n, stop, step))
    assert x[:len(want)].tolist() == [float(v) for v in want] and x[31].item() == len(want), x.tolist()
