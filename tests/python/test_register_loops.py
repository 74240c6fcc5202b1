"""`for i in range(static)` loops that index a register tensor with i are unrolled while tracing, so the tensor
stays in registers (CuTe DSL programs write `for i in range(cute.size(acc)): acc[i] = acc[i] + tmp[i]`); loops
over memory tensors, with runtime bounds, or with an explicit unroll= stay loops. IR and PTX on the CPU, values on a
GPU."""
import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


@cute.kernel
def promote_kernel(gIn: cute.Tensor, gOut: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    acc = cute.make_rmem_tensor((32,), cutlass.Float32)
    tmp = cute.make_rmem_tensor((32,), cutlass.Float32)
    acc.fill(0.0)
    for k in range(n):                                  # runtime bound: stays a loop
        for i in range(cute.size(tmp)):                 # static, indexes registers: unrolled
            tmp[i] = gIn[tidx, i] * cutlass.Float32(k + 1)
        for i in range(cute.size(acc)):
            acc[i] = acc[i] + tmp[i]
    for i in range(32):                                 # static, but only memory indexed by i... and acc: unrolled
        gOut[tidx, i] = acc[i]


@cute.jit
def promote(a, out, n: cutlass.Int32):
    promote_kernel(a, out, n).launch(grid=[1, 1, 1], block=[4, 1, 1])


@cute.kernel
def memory_loop_kernel(gIn: cute.Tensor, gOut: cute.Tensor):
    for i in range(64):                                 # static, memory only: stays a loop
        gOut[i] = gIn[i] + 1.0
    r = cute.make_rmem_tensor((8,), cutlass.Float32)
    r.fill(1.0)
    for i in cutlass.range(8, unroll=1):                # registers, but the user asked for a loop
        gOut[i] = r[i]


@cute.jit
def memory_loop(a, out):
    memory_loop_kernel(a, out).launch(grid=[1, 1, 1], block=[1, 1, 1])


def f32(shape):
    return from_dlpack(np.zeros(shape, dtype=np.float32))


def test_register_indexed_loops_unroll_and_leave_no_local_memory():
    with target("sm_80"):
        c = cute.compile(promote, f32((4, 32)), f32((4, 32)), 3)
    assert c.ir.count('"scf.for"') == 1                 # only the runtime-bound loop
    assert ".local" not in c.ptx and "ld.local" not in c.ptx and "st.local" not in c.ptx


def test_memory_loops_and_explicit_unroll_stay_loops():
    with target("sm_80"):
        c = cute.compile(memory_loop, f32(64), f32(64))
    assert c.ir.count('"scf.for"') == 2


@requires_gpu
@pytest.mark.parametrize("n", [0, 1, 3])
def test_register_loop_values(n):
    import torch

    a = torch.randn(4, 32, device="cuda")
    out = torch.full((4, 32), float("nan"), device="cuda")
    promote(from_dlpack(a), from_dlpack(out), n)
    torch.cuda.synchronize()
    want = a.double() * sum(k + 1 for k in range(n))
    assert torch.allclose(out.double(), want, rtol=1e-6, atol=1e-6)
