"""A register fragment loaded with wide accesses and converted element by element unpacks each element as its
conversion needs it (compiler/sunk_vector_extracts.cpp), not all of them right after the loads.

The code generator schedules a block in the IR's order, and the optimiser leaves every element's extraction from the
loaded vectors right after the loads: CuTe DSL's fp16_gemm_6 tutorial, which dequantises 128 Int8 values per thread
(loads, a signal that the dependent grid may start, conversion to Float32, scaling, packing to Float16, stores),
held all 128 unpacked bytes at once under ptxas (which does not move them back past the signal, an instruction with
side effects): 75 registers where CuTe DSL takes 56; 48 now. The kernel below does the same: 75 before, 48 now."""
import os
import re
import shutil

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

PER_THREAD, THREADS, BLOCKS = 128, 64, 2


def _dequantize():
    @cute.kernel
    def kern(src: cute.Tensor, scale: cutlass.Float32, dst: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        per_block, _, _ = cute.arch.block_dim()
        row = tidx + bidx * per_block
        s = cute.zipped_divide(src, (1, PER_THREAD))
        d = cute.zipped_divide(dst, (1, PER_THREAD))
        r = cute.make_rmem_tensor(s[None, 0].shape, cutlass.Int8)
        cute.autovec_copy(s[None, row], r)
        # the dependent grid may start: the loads are issued (as the tutorial signals it)
        cute.arch.griddepcontrol_launch_dependents()
        d[None, row].store((r.load() * scale).to(cutlass.Float16))

    @cute.jit
    def host(src: cute.Tensor, scale: cutlass.Float32, dst: cute.Tensor):
        kern(src, scale, dst).launch(grid=[BLOCKS, 1, 1], block=[THREADS, 1, 1])

    return host


def _compile(**options):
    rows = THREADS * BLOCKS
    with target("sm_100a"):
        return cute.compile(_dequantize(), from_dlpack(np.zeros((rows, PER_THREAD), np.int8)), cutlass.Float32(0.5),
                            from_dlpack(np.zeros((rows, PER_THREAD), np.float16)), **options)


def test_bytes_are_unpacked_as_they_are_converted(fresh_compilations):
    ptx = _compile().ptx
    body = ptx[ptx.index(".entry"):]
    unpacks = [m.start() for m in re.finditer(r"\bprmt\.b32|\bcvt\.s8\.s32|\bbfe\.s32", body)]
    converts = [m.start() for m in re.finditer(r"\bcvt\.rn\.f32\.s(?:8|16|32)", body)]
    assert len(converts) == PER_THREAD, len(converts)
    # the first conversion comes after the first few unpackings, not after all of them (one per byte but the
    # low ones, 96 before)
    assert sum(u < converts[0] for u in unpacks) <= 8, (sum(u < converts[0] for u in unpacks), len(unpacks))


def test_registers_under_ptxas(fresh_compilations, monkeypatch):
    if not (shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas")):
        pytest.skip("no ptxas to report the registers of a whole-program assembly")
    monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", "ptxas")
    log = _compile(options="-v").info["jit_log"]
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", log)]
    # recorded: 48 (75 with the bytes unpacked up front; CuTe DSL's fp16_gemm_6 dequantize takes 56)
    assert regs and max(regs) <= 56, log


@requires_gpu
def test_values_on_the_gpu():
    import torch

    rows = THREADS * BLOCKS
    src = torch.randint(-128, 128, (rows, PER_THREAD), dtype=torch.int8, device="cuda")
    dst = torch.zeros((rows, PER_THREAD), dtype=torch.float16, device="cuda")
    _dequantize()(from_dlpack(src), cutlass.Float32(0.5), from_dlpack(dst))
    torch.testing.assert_close(dst, (src.float() * 0.5).half(), rtol=0, atol=0)
