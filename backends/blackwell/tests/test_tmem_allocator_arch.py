"""TmemAllocator takes CuTe DSL's arch= (the generation whose tensor memory it allocates): a datacenter Blackwell
name compiles as the default does; a name without tensor memory is refused at the user's line."""
from __future__ import annotations

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import pipeline, utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, target  # noqa: F401


def _compile(arch):
    @cute.kernel
    def kern(g: cute.Tensor):
        smem = utils.SmemAllocator()
        hold = smem.allocate_array(cutlass.Int32, 1, byte_alignment=4)
        kw = {} if arch is None else {"arch": arch}
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128), **kw)
        tmem.allocate(32)
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr(cutlass.Float32)
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(ptr)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(4, np.float32))).ptx


@pytest.mark.parametrize("arch", ["sm_100", "sm_100a", "sm_103a"])
def test_a_datacenter_blackwell_arch_allocates_as_the_default_does(arch, fresh_compilations):
    assert _compile(arch) == _compile(None)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_120a", 100])
def test_an_arch_without_tensor_memory_is_refused_at_the_users_line(arch):
    with pytest.raises(ValueError) as e:
        _compile(arch)
    assert "tensor memory" in str(e.value) and "test_tmem_allocator_arch.py" in str(e.value), str(e.value)
