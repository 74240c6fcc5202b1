"""A tensor-memory pointer's address (Pointer.toint, and the IR value CuTe DSL's protocol extracts from it) counts
32-bit columns, with lanes in the high half, as the tcgen05 MMA and tensor-memory copy atoms address the same
element (tcgen05_mma.tmem_address): element offsets of 8/16-bit values step a column per 4/2 values, 32-bit values
one per value, and a lane step of the layouts (32 / width) << 16 elements is a lane of the address."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import target

BASE = (3 << 16) | 64          # lane 3, column 64


def _differences(dtype, static_offsets):
    """PTX of a kernel storing, for each offset (static, then the thread index times 4 and that plus a lane step),
    toint() and the extracted IR value minus the atoms' address of the same element: all zero when they agree."""
    from warpweave.backends.blackwell import tcgen05_mma   # loaded with the backend, at the first compile

    lane = (32 // dtype.width) << 16
    n = 2 * (len(static_offsets) + 2)

    @cute.kernel
    def k(out: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        ptr = cute.make_ptr(dtype, BASE, cute.AddressSpace.tmem)
        offs = list(static_offsets) + [cutlass.Int32(tid) * 4, cutlass.Int32(tid) * 4 + lane]
        for i, off in enumerate(offs):
            p = ptr + off
            atoms = tcgen05_mma.tmem_address(cute.make_tensor(ptr, cute.make_layout(1)), off)
            out[2 * i] = p.toint() - cutlass.Int32.from_ir(atoms)
            extracted = p.__extract_mlir_values__()[0]
            out[2 * i + 1] = cute.make_ptr(dtype, extracted, cute.AddressSpace.tmem).toint() - cutlass.Int32.from_ir(atoms)

    @cute.jit
    def host(out):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(n, np.int32))).ptx
    return ptx, n


@pytest.mark.parametrize("dtype, offsets", [
    (cutlass.Float32, [0, 5, 7 << 16]),
    (cutlass.Float16, [0, 6, (2 << 16) * 3 + 8]),
    (cutlass.Float8E4M3FN, [0, 12, (4 << 16) * 5 + 4]),
])
def test_tmem_pointer_addresses_are_the_atoms_addresses(dtype, offsets):
    ptx, n = _differences(dtype, offsets)
    # every difference folds to 0: nothing is computed from the thread index, and all that is stored is zeros
    assert "%tid" not in ptx and not re.search(r"\b(add|sub|shr|shl|mul|mad)\.", ptx), ptx
    stored = re.findall(r"st\.global[^\]]*\],\s*([^;]+);", ptx)
    assert stored and all(re.fullmatch(r"\{?(%r\w*|0)(, (%r\w*|0))*\}?", v) for v in stored), stored
    assert set(re.findall(r"mov\.b32\s+%r\d+, (-?\d+);", ptx)) <= {"0"}, ptx


def test_a_fragment_laid_out_from_a_shape_starts_at_address_0():
    """Accumulator fragments made from a partition shape have no allocation's address (kernels that allocate all of
    tensor memory offset them): their addresses are those of address 0, as the atoms address them, and as CuTe
    DSL's toint() gives (attention kernels pass tCrA.iterator.toint() to inline PTX)."""
    from warpweave.cute.nvgpu import tcgen05 as t

    @cute.kernel
    def k(out: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        tm = cute.make_tiled_mma(t.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (128, 64, 16), t.CtaGroup.ONE))
        acc = tm.make_fragment_C(tm.partition_shape_C((128, 64)))
        out[0] = acc.iterator.toint()
        out[1] = (acc.iterator + 96).toint()
        out[2] = (acc.iterator + cutlass.Int32(tid) * 2).toint() - cutlass.Int32(tid) * 2

    @cute.jit
    def host(out):
        k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_100a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(3, np.int32))).ptx
    stored = re.findall(r"st\.global[^\]]*\],\s*([^;]+);", ptx)
    consts = re.findall(r"mov\.b32\s+%r\d+, (-?\d+);", ptx)
    # 0, 96 and 0: the stores are of zero registers and 96, nothing from a pointer argument or the thread index
    assert "%tid" not in ptx and set(consts) <= {"0", "96"} and "96" in "".join(stored + consts), ptx
