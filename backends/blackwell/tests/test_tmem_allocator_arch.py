"""TmemAllocator takes CuTe DSL's arch= (the generation whose tensor memory it allocates): a datacenter Blackwell
name compiles as the default does; a name without tensor memory is refused at the user's line."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import pipeline, utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, target  # noqa: F401


def _compile_with(make_allocator, ctas=1):
    """PTX of a kernel whose allocator make_allocator() makes (inside the kernel) allocates, waits, frees."""
    @cute.kernel
    def kern(g: cute.Tensor):
        tmem = make_allocator()
        tmem.allocate(32)
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr(cutlass.Float32)
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(ptr)

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[ctas, 1, 1], block=[128, 1, 1], cluster=[ctas, 1, 1])

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(4, np.float32))).ptx


def _compile(arch):
    def make():
        hold = utils.SmemAllocator().allocate_array(cutlass.Int32, 1, byte_alignment=4)
        kw = {} if arch is None else {"arch": arch}
        return utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128), **kw)
    return _compile_with(make)


@pytest.mark.parametrize("arch", ["sm_100", "sm_100a", "sm_103a"])
def test_a_datacenter_blackwell_arch_allocates_as_the_default_does(arch, fresh_compilations):
    assert _compile(arch) == _compile(None)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_120a", 100])
def test_an_arch_without_tensor_memory_is_refused_at_the_users_line(arch):
    with pytest.raises(ValueError) as e:
        _compile(arch)
    assert "tensor memory" in str(e.value) and "test_tmem_allocator_arch.py" in str(e.value), str(e.value)


def _compile_own_word(two_cta):
    """A TmemAllocator given no shared-memory word for the address (nor, for a CTA pair, for the dealloc barrier),
    as later CuTe DSL releases allow (QuACK's Blackwell GEMM): it keeps its own."""
    return _compile_with(lambda: utils.TmemAllocator(barrier_for_retrieve=pipeline.NamedBarrier(1, 128),
                                                     is_two_cta=two_cta), ctas=2 if two_cta else 1)


@pytest.mark.parametrize("two_cta", [False, True])
def test_an_allocator_without_a_word_keeps_its_own_in_shared_memory(two_cta, fresh_compilations):
    ptx = _compile_own_word(two_cta)
    # the allocation writes its address to a word of the kernel's shared memory, which the threads read back
    assert re.search(r"tcgen05\.alloc\.cta_group::%d\.sync\.aligned\.shared::cta\.b32" % (2 if two_cta else 1),
                     ptx), ptx
    assert "ld.shared.u32" in ptx or "ld.shared.b32" in ptx, ptx
    if two_cta:
        assert "mbarrier.init.shared" in ptx, ptx  # the pair's dealloc barrier, in its own word
