"""Distributed shared memory (the Hopper backend's dsmem.py): cute.arch.map_dsmem_ptr (also
cute.arch.smem.map_dsmem_ptr) maps a pointer into this CTA's shared memory to the same offset in a peer CTA of the
cluster (mapa), and cpasync.CopyDsmemStoreOp stores registers there, completing their bytes on the peer's mbarrier
(st.async). Compiled for sm_90a, and for sm_100a through Blackwell's extending Hopper."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core, utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, sass_opcodes, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")


def line_of(text: str) -> int:
    return line_in(__file__, text)


def test_cute_arch_names_the_same_function_both_ways():
    from warpweave.backends.hopper import dsmem

    with target("sm_90a"):
        assert cute.arch.map_dsmem_ptr is dsmem.map_dsmem_ptr and cute.arch.smem.map_dsmem_ptr is dsmem.map_dsmem_ptr


def _dsmem_kernel(body, arch="sm_90a"):
    @cute.kernel
    def k(x: cute.Tensor):
        smem = utils.SmemAllocator()
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        mailbox = smem.allocate_array(cutlass.Float32, 8, byte_alignment=16)
        body(bar, mailbox)

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1))

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros(4, np.int32)))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])  # Blackwell has it by extending Hopper
def test_dsmem_store_reaches_the_peer_address_and_completes_on_its_barrier(arch):
    from warpweave.cute.arch.smem import map_dsmem_ptr
    from warpweave.backends.hopper import dsmem

    assert cute.arch.smem is dsmem and map_dsmem_ptr is dsmem.map_dsmem_ptr    # the backend's module

    def body(bar, mailbox):
        peer = cute.arch.block_idx_in_cluster() ^ 1
        remote_bar = map_dsmem_ptr(bar, peer)
        vals = cute.make_rmem_tensor(cute.make_layout(2), cutlass.Float32)
        vals[0] = 1.5
        vals[1] = 2.5
        dst = cute.make_tensor(map_dsmem_ptr(mailbox + 4, peer), cute.make_layout(2, stride=2))
        cute.copy(cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float32), vals, dst, mbar_ptr=remote_bar)

    c = _dsmem_kernel(body, arch)
    ptx = c.ptx
    assert len(re.findall(r"mapa\.shared::cluster\.u32", ptx)) == 2
    stores = re.findall(r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.b32 "
                        r"\[(%r\d+)\], (%r\d+|0f[0-9A-F]+), \[(%r\d+)\];", ptx)
    assert len(stores) == 2 and stores[0][2] == stores[1][2], ptx     # both on the one remote barrier
    assert stores[0][0] != stores[1][0]                                 # at two addresses (elements 4 and 6)
    # 1.5 and 2.5, their bits stored as they are
    assert re.search(r"\b(0f3FC00000|1069547520)\b", ptx) and re.search(r"\b(0f40200000|1075838976)\b", ptx), ptx


@pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
def test_dsmem_store_sass():
    from warpweave.cute.arch.smem import map_dsmem_ptr

    def body(bar, mailbox):
        v = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
        v[0] = 7.0
        dst = cute.make_tensor(map_dsmem_ptr(mailbox, 1), cute.make_layout(1))
        cute.copy(cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float32), v, dst,
                  mbar_ptr=map_dsmem_ptr(bar, 1))

    assert "STAS" in sass_opcodes(_dsmem_kernel(body).cubin)


def test_dsmem_store_refuses_what_it_cannot_do():
    from warpweave.cute.arch.smem import map_dsmem_ptr

    def no_barrier(bar, mailbox):
        v = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
        atom = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float32)
        cute.copy(atom, v, cute.make_tensor(map_dsmem_ptr(mailbox, 1), cute.make_layout(1)))  # no mbar_ptr

    def local_dst(bar, mailbox):
        v = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
        cute.copy(cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float32), v,
                  cute.make_tensor(mailbox, cute.make_layout(1)), mbar_ptr=map_dsmem_ptr(bar, 1))  # not mapped

    with pytest.raises(Exception, match="needs mbar_ptr=") as e:
        _dsmem_kernel(no_barrier)
    assert f"test_dsmem.py:{line_of('# no mbar_ptr')}" in str(e.value)
    with pytest.raises(Exception, match="map_dsmem_ptr pointer"):
        _dsmem_kernel(local_dst)
    with pytest.raises(Exception, match="32- or 64-bit values"):
        cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float16)


def test_a_tiled_copy_of_the_dsmem_store_partitions_as_a_one_thread_atom_does():
    # CuTe DSL programs tile the atom (num_bits_per_copy=128: four Float32 a thread) over a row of shared memory and
    # copy each thread's partition to the peer: one st.async a value, at the partition's own elements
    from warpweave.cute.arch.smem import map_dsmem_ptr

    def body(bar, mailbox):
        tidx, _, _ = cute.arch.thread_idx()
        atom = cute.make_copy_atom(cpasync.CopyDsmemStoreOp(), cutlass.Float32, num_bits_per_copy=128)
        assert atom.num_values == 4
        tiled = cute.make_tiled_copy(atom, cute.make_ordered_layout((2, 4), order=(1, 0)), (8,))
        thr = tiled.get_slice(tidx % 2)
        row = cute.make_tensor(mailbox, cute.make_layout(8))
        src = cute.make_rmem_tensor(thr.partition_S(row).shape, cutlass.Float32)
        src.fill(3.0)
        peer = cute.arch.block_idx_in_cluster() ^ 1
        remote = cute.make_tensor(map_dsmem_ptr(mailbox, peer), cute.make_layout(8))
        cute.copy(tiled, src, thr.partition_D(remote), mbar_ptr=map_dsmem_ptr(bar, peer))

    ptx = _dsmem_kernel(body).ptx
    stores = re.findall(r"st\.async\.shared::cluster\.mbarrier::complete_tx::bytes\.b32 \[(%r\d+)\]", ptx)
    assert len(stores) == 4 and len(set(stores)) == 4, ptx
