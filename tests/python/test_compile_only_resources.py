"""What a resource comparison reads of a compile-only run (benchmarks/python/bench_resources.py): the summary names
each launch's dynamic shared memory where the launch fixes it, and kept artefacts of two modules whose first kernels
share a name are two sets of files, not one overwritten."""
import os
import sys

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.registry import compile_only
from warpweave.cute.runtime import from_dlpack

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "python"))


def _program(smem: int, scale: float):
    @cute.kernel
    def kernel(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        x[tidx] = x[tidx] * scale

    @cute.jit
    def host(x: cute.Tensor):
        kernel(x).launch(grid=(1, 1, 1), block=(32, 1, 1), smem=smem)

    return host


def test_summary_names_each_launchs_dynamic_shared_memory(fresh_compilations):
    x = from_dlpack(np.zeros(32, np.float32))
    with target("sm_80"), compile_only.compile_only(on_launch="skip") as session:
        for smem in (0, 4096):
            _program(smem, 2.0)(x)
        summary = session.summary()
    assert "kernel (0 bytes dynamic shared memory)" in summary
    assert "kernel (4096 bytes dynamic shared memory)" in summary


def test_kept_modules_of_one_kernel_name_keep_their_own_files(tmp_path, monkeypatch, fresh_compilations):
    monkeypatch.setenv("WARPWEAVE_KEEP", "ptx")
    monkeypatch.setenv("WARPWEAVE_DUMP_DIR", str(tmp_path))
    x = from_dlpack(np.zeros(32, np.float32))
    with target("sm_80"):
        for scale in (2.0, 3.0):
            cute.compile(_program(0, scale), x)
    ptx = sorted(p for p in os.listdir(tmp_path) if p.endswith(".ptx"))
    assert len(ptx) == 2, ptx
    texts = [open(tmp_path / p).read() for p in ptx]
    assert texts[0] != texts[1]      # the two scales: each file is its own module


def test_shared_allocations_of_the_ir_laid_end_to_end():
    """CuTe DSL's kept IR: each kernel's shared allocations at their alignments, summed per kernel in order."""
    bench = pytest.importorskip("bench_resources")
    ir = "\n".join([
        '!memref_smem_i8 = !cute.memref<i8, smem, align<8>, "144:1">',
        '!memref_smem_i8_1 = !cute.memref<i8, smem, align<128>, "114688:1">',
        '!memref_smem_f16 = !cute.memref<f16, smem, align<1024>, "512:1">',
        "    cuda.kernel @k0(%arg0: i32) attributes {cute.kernel} {",
        "      %smem = cute.memref.alloca() {smem.partition_id = 1 : i32} : !memref_smem_i8",
        "      %smem_9 = cute.memref.alloca() {smem.partition_id = 1 : i32} : !memref_smem_i8_1",
        "    cuda.kernel @k1(%arg0: i32) attributes {cute.kernel} {",
        "      %smem = cute.memref.alloca() : !memref_smem_f16",
        "    cuda.kernel @k2(%arg0: i32) attributes {cute.kernel} {",
    ])
    assert bench.storage_bytes(ir) == [256 + 114688, 1024, 0]


def test_warpweaves_own_launches_do_not_end_the_program(fresh_compilations):
    """cute.testing.convert launches warpweave's conversion kernel to prepare data: in a compile-only run that stops at
    the first launch, the program still goes on to compile (and stop at) its own kernel."""
    x = from_dlpack(np.zeros(32, np.float32))
    y = from_dlpack(np.zeros(32, np.float16))
    with target("sm_80"), compile_only.compile_only(on_launch="stop") as session:
        with pytest.raises(compile_only.LaunchSkipped, match="would launch kernel"):
            cute.testing.convert(x, y)
            _program(0, 2.0)(x)
    names = [c.jit_function.fn.__name__ for c in session.compiled]
    assert names == ["_convert", "host"], names
    assert [name for name, _ in session.skipped] == ["host"]
