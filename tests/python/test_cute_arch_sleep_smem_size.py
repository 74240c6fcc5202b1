"""cute.arch.nanosleep and cute.arch.dynamic_smem_size."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def _program(body, smem=None):
    @cute.kernel
    def k(x: cute.Tensor):
        body(x)

    @cute.jit
    def h(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[1, 1, 1], smem=smem)
    return h


def test_nanosleep_takes_static_and_runtime_durations():
    def body(x):
        cute.arch.nanosleep(sleep_time=250)
        cute.arch.nanosleep(sleep_time=x[0])

    with target("sm_80"):
        ptx = cute.compile(_program(body), from_dlpack(np.zeros(4, np.int32))).info["ptx"]
    sleeps = re.findall(r"nanosleep\.u32\s+([^;]+);", ptx)
    assert len(sleeps) == 2 and sleeps[0].strip() == "250" and sleeps[1].strip().startswith("%r")


@pytest.mark.parametrize("bad,msg", [(-1, r"\[0, 2\*\*32\)"), (1.5, "integer number of nanoseconds")])
def test_nanosleep_refuses_what_is_no_duration(bad, msg):
    def body(x):
        cute.arch.nanosleep(sleep_time=bad)

    with target("sm_80"), pytest.raises(DSLError, match=msg) as e:
        cute.compile(_program(body), from_dlpack(np.zeros(4, np.int32)))
    assert "test_cute_arch_sleep_smem_size.py" in str(e.value)


def test_dynamic_smem_size_reads_the_special_register():
    def body(x):
        x[0] = cute.arch.dynamic_smem_size()

    with target("sm_90a"):
        ptx = cute.compile(_program(body, smem=4096), from_dlpack(np.zeros(4, np.int32))).info["ptx"]
    assert re.search(r"mov\.u32\s+%r\d+, %dynamic_smem_size;", ptx)


@requires_gpu
@pytest.mark.parametrize("smem", [0, 1024, 48 * 1024])
def test_dynamic_smem_size_is_the_launchs(smem):
    import torch

    def body(x):
        x[0] = cute.arch.dynamic_smem_size()

    out = torch.full((4,), -1, dtype=torch.int32, device="cuda")
    _program(body, smem=smem)(from_dlpack(out))
    torch.cuda.synchronize()
    assert int(out[0]) == smem


def test_get_dyn_smem_is_the_start_of_dynamic_shared_memory():
    # a kernel that lays out the launch's smem= bytes itself: the pointer is the dynamic shared memory's first byte,
    # of the element type asked for
    seen = {}

    def body(x):
        p = cute.arch.get_dyn_smem(cutlass.Float32, alignment=16)
        seen.update(dtype=p.dtype, memspace=p.memspace)
        t = cute.make_tensor(p + 2, cute.make_layout(4))
        t[0] = cutlass.Float32(1.0)
        x[0] = cutlass.Int32(t[0])

    with target("sm_90a"):
        ptx = cute.compile(_program(body, smem=64), from_dlpack(np.zeros(4, np.int32))).info["ptx"]
    assert seen["dtype"] is cutlass.Float32 and seen["memspace"] == "smem"
    # the store lands 8 bytes into the dynamic shared memory
    assert re.search(r"st\.shared\.(?:b32|f32)\s+\[__ww_dynamic_smem\+8\]", ptx), ptx
    with pytest.raises(DSLError, match="alignment is a power of two"):
        with target("sm_90a"):
            cute.compile(_program(lambda x: cute.arch.get_dyn_smem(cutlass.Float32, alignment=3)),
                         from_dlpack(np.zeros(4, np.int32)))


def test_arch_exp2_and_exp_are_the_approximate_exponentials():
    # CuTe DSL's cute.arch.exp2 / exp: ex2.approx.ftz of a Float32 (exp: of a * log2(e)), as attention softmaxes use
    def body(x):
        f = cute.make_rmem_tensor(cute.make_layout(2), cutlass.Float32)
        f[0] = cutlass.Float32(x[0])
        f[1] = cutlass.Float32(x[1])
        x[2] = cutlass.Int32(cute.arch.exp2(f[0]) + cute.arch.exp(f[1]))

    with target("sm_90a"):
        ptx = cute.compile(_program(body), from_dlpack(np.zeros(4, np.int32))).info["ptx"]
    assert len(re.findall(r"ex2\.approx\.ftz\.f32", ptx)) == 2
    assert re.search(r"mul(?:\.rn)?\.f32\s+%r\d+, %r\d+, 0f3FB8AA3B;", ptx), ptx   # log2(e)
    assert cute.arch.exp2(3.0).value == 8.0   # a Python number: a Float32 of the exact value
