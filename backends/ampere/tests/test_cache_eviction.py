"""cute.autovec_copy(src, dst, l1c_evict_priority=cute.nvgpu.CacheEvictionPriority.X), compiled on the CPU.

- Every global store (or load) of the copy carries the priority's L1 qualifier, and together those accesses move
  exactly the tensor's bytes, in accesses no wider than 16 bytes nor than the alignment proven; the register side
  is untouched by the priority (no qualified access there).
- EVICT_NORMAL is the plain access (no qualifier), as a copy without the argument.
- The same PTX on sm_80 and on sm_100a (Blackwell builds on the same accesses); SASS stores of the same count.
- A priority that is not a CacheEvictionPriority, and a copy that converts between element types, are errors at the
  user's line.
"""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, sass_opcodes, target  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_compilations")
THIS = os.path.abspath(__file__)
SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")

_BYTES = {"b8": 1, "b16": 2, "b32": 4}
_DTYPES = {"f16": (cutlass.Float16, np.float16), "f32": (cutlass.Float32, np.float32),
           "i8": (cutlass.Int8, np.int8), "f64": (cutlass.Float64, np.float64)}


def _compile(dtype: str, n: int, store: bool, priority, arch="sm_100a"):
    dt, npt = _DTYPES[dtype]

    @cute.kernel
    def k(g: cute.Tensor):
        frag = cute.make_rmem_tensor(cute.make_layout(n), dt)
        mine = cute.local_tile(g, (n,), (cute.arch.thread_idx()[0],))
        if cutlass.const_expr(store):
            frag.fill(dt(1))
            cute.autovec_copy(frag, mine, l1c_evict_priority=priority())
        else:
            cute.autovec_copy(mine, frag, l1c_evict_priority=priority())
            mine[0] = frag[n - 1]   # keeps the load

    @cute.jit
    def host(g: cute.Tensor):
        k(g).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros(32 * n, npt), assumed_align=16))


def _qualified(ptx: str, op: str, qualifier: str):
    """(bytes, vector width) of each `op`.global access of the qualifier."""
    out = []
    for vec, ty in re.findall(rf"{op}\.global\.L1::{qualifier}(?:\.v(\d))?\.(b\d+)", ptx):
        out.append(int(vec or 1) * _BYTES[ty])
    return out


_PRIORITIES = ["EVICT_FIRST", "EVICT_LAST", "EVICT_UNCHANGED", "NO_ALLOCATE"]


@pytest.mark.parametrize("name", _PRIORITIES)
@pytest.mark.parametrize("dtype,n", [("f16", 16), ("f32", 8), ("i8", 16), ("f64", 2), ("f16", 1), ("i8", 3)])
def test_stores_carry_the_priority_and_move_the_tensors_bytes(name, dtype, n):
    ptx = _compile(dtype, n, True, lambda: getattr(cute.nvgpu.CacheEvictionPriority, name)).ptx
    q = getattr(cute.nvgpu.CacheEvictionPriority, name).value
    sizes = _qualified(ptx, "st", q)
    assert sum(sizes) == n * _DTYPES[dtype][0].width // 8, (sizes, ptx)
    assert all(s <= 16 for s in sizes)
    assert not re.search(r"st\.global(?!\.L1::)", ptx)          # no store of the copy left without its qualifier
    assert "ld.global.L1::" not in ptx and "st.local" not in ptx


@pytest.mark.parametrize("name", ["EVICT_LAST", "NO_ALLOCATE"])
@pytest.mark.parametrize("dtype,n", [("f32", 8), ("f16", 6), ("i8", 4)])
def test_loads_carry_the_priority_and_move_the_tensors_bytes(name, dtype, n):
    ptx = _compile(dtype, n, False, lambda: getattr(cute.nvgpu.CacheEvictionPriority, name)).ptx
    q = getattr(cute.nvgpu.CacheEvictionPriority, name).value
    assert sum(_qualified(ptx, "ld", q)) == n * _DTYPES[dtype][0].width // 8, ptx
    assert "st.global.L1::" not in ptx     # the element written back is a plain store


def _compile_without_priority():
    @cute.kernel
    def k(g: cute.Tensor):
        frag = cute.make_rmem_tensor(cute.make_layout(8), cutlass.Float32)
        frag.fill(cutlass.Float32(1))
        cute.autovec_copy(frag, cute.local_tile(g, (8,), (cute.arch.thread_idx()[0],)))

    @cute.jit
    def host(g: cute.Tensor):
        k(g).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        return cute.compile(host, from_dlpack(np.zeros(32 * 8, np.float32), assumed_align=16)).ptx


def test_evict_normal_is_the_plain_access():
    plain = _compile("f32", 8, True, lambda: cute.nvgpu.CacheEvictionPriority.EVICT_NORMAL).ptx
    assert "L1::" not in plain
    assert re.findall(r"st\.global\.\S+", plain) == re.findall(r"st\.global\.\S+", _compile_without_priority())


def test_sm80_and_sm100a_write_the_same_accesses():
    def qualified(arch):
        ptx = _compile("f16", 16, True, lambda: cute.nvgpu.CacheEvictionPriority.NO_ALLOCATE, arch).ptx
        return re.findall(r"st\.global\.L1::\S+", ptx)

    assert qualified("sm_80") == qualified("sm_100a") == ["st.global.L1::no_allocate.v4.b32"] * 2


@SASS
def test_sass_stores():
    ops = sass_opcodes(_compile("f16", 16, True, lambda: cute.nvgpu.CacheEvictionPriority.NO_ALLOCATE).cubin)
    assert len([o for o in ops if o.startswith("STG")]) == 2, ops


def test_bad_priority_and_converting_copy_are_errors_at_the_users_line():
    @cute.kernel
    def k(g: cute.Tensor, h: cute.Tensor):
        frag = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        cute.autovec_copy(frag, g, l1c_evict_priority="no_allocate")  # a string

    @cute.kernel
    def k2(g: cute.Tensor, h: cute.Tensor):
        frag = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Int32)
        cute.autovec_copy(frag, g, l1c_evict_priority=cute.nvgpu.CacheEvictionPriority.EVICT_FIRST)  # converts

    for kern, match, mark in ((k, "is a cute.nvgpu.CacheEvictionPriority", "# a string"),
                              (k2, "Int32 to Float32 converts", "# converts")):
        @cute.jit
        def host(g: cute.Tensor, h: cute.Tensor):
            kern(g, h).launch(grid=(1, 1, 1), block=(32, 1, 1))

        with target("sm_100a"), pytest.raises(Exception, match=match) as e:
            a = from_dlpack(np.zeros(4, np.float32))
            cute.compile(host, a, a)
        assert f"test_cache_eviction.py:{line_in(THIS, mark)}" in str(e.value)
