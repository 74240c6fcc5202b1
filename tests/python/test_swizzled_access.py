"""Pointer.load_swizzled / store_swizzled (CuTe DSL's experimental accesses of a tile a TMA copy wrote swizzled):
each of the `count` elements is at its own address permuted by the swizzle. Consecutive elements stay consecutive
only inside one unit of 2**mbase bytes (16 for TMA's modes), so a run of 32 or 64 bytes is one vector access per
unit, each at its own swizzled address (reading the run from the first element's swizzled address, as a plain
vector, returns other elements in every row the swizzle moves). Checked in the PTX for every mode and run length,
and in shared memory on a GPU against Swizzle.apply."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

ROWS, COLS = 32, 64            # 16-bit values: a 128-byte row per thread


def swizzle_kernel(name, chunk, store):
    sw = cutlass.Swizzle.from_name(name)

    @cute.kernel
    def k(src: cute.Tensor, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = cutlass.Array(cutlass.Float16, ROWS * COLS, space=cutlass.AddressSpace.smem, alignment=1024)
        sp = smem.data_ptr()
        gp, dp = src.iterator, dst.iterator
        row = sp + tidx * COLS
        if cutlass.const_expr(store):
            # swizzled writes of runs of `chunk`, plain reads back: dst holds the tile as laid out in shared memory
            for i in cutlass.range_constexpr(COLS // chunk):
                (row + i * chunk).store_swizzled(sw, (gp + tidx * COLS + i * chunk).load(count=chunk))
            cute.arch.sync_threads()
            for i in cutlass.range_constexpr(COLS // 8):
                (dp + tidx * COLS + i * 8).store((row + i * 8).load(count=8))
        else:
            # plain writes, swizzled reads of runs of `chunk`
            for i in cutlass.range_constexpr(COLS // 8):
                (row + i * 8).store((gp + tidx * COLS + i * 8).load(count=8))
            cute.arch.sync_threads()
            for i in cutlass.range_constexpr(COLS // chunk):
                (dp + tidx * COLS + i * chunk).store((row + i * chunk).load_swizzled(sw, count=chunk))

    @cute.jit
    def h(src: cute.Tensor, dst: cute.Tensor):
        k(src, dst).launch(grid=[1, 1, 1], block=[ROWS, 1, 1])

    return h


def compiled_ptx(name, chunk, store):
    a = from_dlpack(np.zeros(ROWS * COLS, np.float16), assumed_align=16)
    with target("sm_90a"):
        return cute.compile(swizzle_kernel(name, chunk, store), a, a).info["ptx"]


SHARED = re.compile(r"^\s*(ld|st)\.shared(\.v(\d))?\.b(\d+)\s+(.*);", re.M)


@pytest.mark.parametrize("store", [False, True], ids=["load", "store"])
@pytest.mark.parametrize("name", ["s32b", "s64b", "s128b"])
@pytest.mark.parametrize("chunk", [8, 16, 32, 64])
def test_a_swizzled_run_is_one_access_per_unit_each_at_its_own_address(name, chunk, store):
    sw = cutlass.Swizzle.from_name(name)
    unit = 1 << sw.mbase
    ptx = compiled_ptx(name, chunk, store)
    swizzled_kind = "st" if store else "ld"
    accesses = [m for m in SHARED.finditer(ptx) if m.group(1) == swizzled_kind]
    widths = [int(m.group(3) or 1) * int(m.group(4)) // 8 for m in accesses]
    assert sum(widths) == COLS * 2                      # the row, once
    assert all(w <= unit for w in widths)
    # no access addresses a constant past another's swizzled address inside one swizzle span: every unit's
    # address is swizzled on its own
    operands = [m.group(5) for m in accesses]
    addresses = [o.split("[", 1)[1].split("]", 1)[0] if store else o.rsplit("[", 1)[1].split("]", 1)[0]
                 for o in operands]
    for a in addresses:
        off = re.search(r"\+(\d+)$", a)
        assert off is None or int(off.group(1)) % sw.span_bytes == 0, (a, ptx)


def test_an_identity_swizzle_keeps_the_run_in_one_access():
    ptx = compiled_ptx("none", 8, False)
    loads = [m for m in SHARED.finditer(ptx) if m.group(1) == "ld"]
    assert all(int(m.group(3) or 1) * int(m.group(4)) == 128 for m in loads)


@requires_gpu
@pytest.mark.parametrize("store", [False, True], ids=["load", "store"])
@pytest.mark.parametrize("name", ["s32b", "s64b", "s128b"])
@pytest.mark.parametrize("chunk", [8, 16, 64])
def test_swizzled_runs_land_where_the_swizzle_puts_each_element(name, chunk, store):
    import torch

    sw = cutlass.Swizzle.from_name(name)
    src = torch.arange(ROWS * COLS, dtype=torch.float16, device="cuda")
    dst = torch.zeros_like(src)
    swizzle_kernel(name, chunk, store)(from_dlpack(src, assumed_align=16), from_dlpack(dst, assumed_align=16))
    torch.cuda.synchronize()
    where = np.array([sw.apply(2 * e) // 2 for e in range(ROWS * COLS)])   # element e's place in shared memory
    s, d = src.cpu().numpy(), dst.cpu().numpy()
    if store:
        want = np.empty_like(s)
        want[where] = s
    else:
        want = s[where]
    assert np.array_equal(d, want)
