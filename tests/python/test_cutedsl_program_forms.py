"""Architecture-neutral forms CuTe DSL's Blackwell programs use, each refused or mis-traced before:

- cpasync.TmaInfo: what a TMA atom builder returns, unpacked as (atom, tensor) or kept whole and passed to a kernel,
  whose atom's per-call descriptor then becomes a kernel parameter;
- calling a @cute.jit function with no_cache=True: compiled for that call, kept in no cache;
- launch(smem_merge_branch_allocs=True): the branches of a runtime `if` carve shared memory from the same offset;
- a @cute.jit helper called in both branches of a runtime `if`, changing an object passed to it (a pipeline state
  advanced in a loop): the object is carried through the `if`, so the else branch does not see the then branch's
  values;
- `min(...)` of a runtime value in the bounds of a dynamic `cutlass.range` loop;
- cute.size_in_bytes of no layout, LayoutEnum.from_tensor of a host tensor, cute.prefetch of an atom without one;
- cuda.bindings.driver.cuInit / cuDeviceGetCount inside a compile-only session without a CUDA driver.
"""
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave import _core, utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack
from warpweave._dsl.base.errors import DSLTypeError

from dsl_helpers import fresh_compilations, line_in, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")

THIS = os.path.abspath(__file__)


def line_of(text: str) -> int:
    return line_in(THIS, text)


# --- TmaInfo ------------------------------------------------------------------------------------------------------

def test_tma_info_unpacks_as_atom_and_tensor_and_keeps_the_layout():
    atom, tensor, layout = object(), object(), cute.make_layout((8, 4, 2))
    info = cpasync.TmaInfo(atom, tensor, layout)
    a, t = info
    assert a is atom and t is tensor and info[0] is atom and info[1] is tensor and len(info) == 2
    assert info.atom is atom and info.tma_tensor is tensor and info.smem_layout is layout
    other = object()
    moved = info.replace(atom=other)
    assert moved.atom is other and moved.tma_tensor is tensor and moved.smem_layout is layout and info.atom is atom
    with pytest.raises(TypeError, match="no field 'atomm'"):
        info.replace(atomm=other)


def _tma_load_kernel(keep_whole: bool):
    """A kernel loading one 64x64 fp16 tile with TMA; the atom reaches it inside a TmaInfo (keep_whole) or as the
    unpacked atom and tensor."""

    @cute.kernel
    def k_whole(info: cpasync.TmaInfo):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float16, info.smem_layout, byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(info.tma_tensor, (64, 64), (0, 0))
        ts, tg = cpasync.tma_partition(info.atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        cute.copy(info.atom, tg, ts, tma_bar_ptr=bar)

    @cute.kernel
    def k_pair(atom: cute.CopyAtom, tensor: cute.Tensor, layout: cute.Layout):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float16, layout, byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.local_tile(tensor, (64, 64), (0, 0))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        cute.copy(atom, tg, ts, tma_bar_ptr=bar)

    @cute.jit
    def host(a: cute.Tensor):
        layout = cute.make_layout((64, 64), stride=(64, 1))
        info = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, layout, (64, 64))
        if cutlass.const_expr(keep_whole):
            k_whole(info).launch(grid=(1, 1, 1), block=(32, 1, 1))
        else:
            atom, tensor = info
            k_pair(atom, tensor, layout).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_tma_info_passed_whole_gives_the_kernel_the_descriptor_parameter(arch):
    a = np.zeros((128, 128), np.float16)
    with target(arch):
        ptx_whole = cute.compile(_tma_load_kernel(True), from_dlpack(a)).ptx
        ptx_pair = cute.compile(_tma_load_kernel(False), from_dlpack(a)).ptx
    for ptx in (ptx_whole, ptx_pair):
        # the 128-byte tensor map as a by-value parameter, its address the load's
        assert re.search(r"\.param \.align 64 \.b8 \w+_param_\d+\[128\]", ptx), ptx
        assert "cp.async.bulk.tensor.2d" in ptx
    body = lambda p: [l for l in p.splitlines() if "cp.async.bulk.tensor" in l]  # noqa: E731
    assert len(body(ptx_whole)) == len(body(ptx_pair)) == 1


# --- no_cache -----------------------------------------------------------------------------------------------------

@cute.kernel
def _touch(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x[tidx] = 1.0


@cute.jit
def _host_launching(x: cute.Tensor):
    _touch(x).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_no_cache_compiles_for_the_call_and_keeps_nothing(monkeypatch):
    from warpweave._dsl.registry import compile_only
    from warpweave._dsl.call import function_cache

    def no_lookup(*a, **k):
        raise AssertionError("no_cache=True looked in the function cache")

    monkeypatch.setattr(function_cache, "lookup", no_lookup)
    x = from_dlpack(np.zeros(32, np.float32))
    with target("sm_90a"), compile_only.compile_only(on_launch="skip") as session:
        assert _host_launching(x, no_cache=True) is None     # the launch is not made (compile-only)
        _host_launching(x, no_cache=True)
    assert len(session.compiled) == 2 and len(session.skipped) == 2   # compiled at each call
    assert session.compiled[0] is not session.compiled[1]
    assert not _host_launching._compiled                                 # and kept nowhere


def test_no_cache_takes_a_boolean_and_a_parameter_of_that_name_stays_the_functions():
    x = from_dlpack(np.zeros(32, np.float32))
    with pytest.raises(DSLTypeError, match="no_cache=...") as e:
        _host_launching(x, no_cache="yes")  # the bad call
    assert e.value.location[1] == line_of("no_cache=\"yes\")  # the bad call")

    seen = []

    @cute.jit
    def own(n: cutlass.Constexpr, no_cache: cutlass.Constexpr = False):
        seen.append(no_cache)

    with target("sm_90a"):
        own(1, no_cache=True)
    assert seen == [True]


# --- shared memory of mutually exclusive branches -------------------------------------------------------------------

def _branchy_smem(merge: bool):
    @cute.kernel
    def k(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        if tidx < 16:
            smem = utils.SmemAllocator()
            s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(1024), byte_alignment=16)  # 4096 bytes
            s[tidx] = 1.0
            x[tidx] = s[tidx]
        else:
            smem = utils.SmemAllocator()
            s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(512), byte_alignment=16)   # 2048 bytes
            s[tidx] = 2.0
            x[tidx] = s[tidx]
        after = utils.SmemAllocator()
        t = after.allocate_tensor(cutlass.Float32, cute.make_layout(64), byte_alignment=16)      # 256 bytes
        t[0] = 3.0

    @cute.jit
    def host(x: cute.Tensor):
        if cutlass.const_expr(merge):
            k(x).launch(grid=(1, 1, 1), block=(32, 1, 1), smem_merge_branch_allocs=True)
        else:
            k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def test_merged_branch_allocations_need_the_larger_branch_not_the_sum():
    x = from_dlpack(np.zeros(32, np.float32))
    with target("sm_90a"):
        merged = cute.compile(_branchy_smem(True), x)
        summed = cute.compile(_branchy_smem(False), x)
    assert merged.launches[0].smem == 4096 + 256
    assert summed.launches[0].smem == 4096 + 2048 + 256
    with pytest.raises(DSLTypeError, match="smem_merge_branch_allocs"):
        @cute.jit
        def bad(x: cute.Tensor):
            _touch(x).launch(grid=(1, 1, 1), block=(32, 1, 1), smem_merge_branch_allocs=1)

        with target("sm_90a"):
            cute.compile(bad, x)


# --- a helper changing an object, called in both branches of a runtime if --------------------------------------------

@cute.jit
def _consume(x: cute.Tensor, state, n: cutlass.Int32):
    for i in cutlass.range(n, unroll=1):
        x[state.index] = cutlass.Float32(state.phase)
        state.advance()


def test_helper_in_both_branches_changing_its_argument_compiles_and_carries_it():
    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 4)
        if tidx < 16:
            _consume(x, state, n)
        else:
            _consume(x, state, n + 1)
        x[31] = cutlass.Float32(state.count)   # after the if: whichever branch ran

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"):
        c = cute.compile(host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(3))
    assert c.ptx.count("st.global.b32") >= 3 and re.search(r"st\.global\.b32 \t\[%rd\d+\+124\], %r\d+;", c.ptx)


def test_min_of_a_runtime_value_bounds_a_dynamic_range():
    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.range(0, min(7, n), unroll=1):
            x[i] = 1.0

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_90a"):
        c = cute.compile(host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(3))
    assert re.search(r"\bmin\.s32\b", c.ptx), c.ptx


# --- small helpers --------------------------------------------------------------------------------------------------

def test_size_in_bytes_of_no_layout_is_zero_and_of_a_layout_its_cosize():
    assert cute.size_in_bytes(cutlass.Float16, None) == 0
    assert cute.size_in_bytes(cutlass.Float16, cute.make_layout((8, 4), stride=(1, 16))) == (7 + 3 * 16 + 1) * 2


def test_layout_enum_of_a_host_tensor_reads_its_strides():
    rows = np.zeros((8, 16), np.float16)
    assert utils.LayoutEnum.from_tensor(from_dlpack(rows)) is utils.LayoutEnum.ROW_MAJOR
    assert utils.LayoutEnum.from_tensor(from_dlpack(rows.T)) is utils.LayoutEnum.COL_MAJOR
    with pytest.raises(DSLTypeError, match="contiguous"):
        utils.LayoutEnum.from_tensor(from_dlpack(np.zeros((4, 4, 4), np.float16)[:, ::2, ::2]))


def test_prefetch_of_an_atom_without_one_is_refused_at_the_users_line():
    @cute.kernel
    def k(x: cute.Tensor):
        cute.prefetch(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), x)  # no prefetch

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_90a"), pytest.raises(DSLTypeError, match="has no prefetch") as e:
        cute.compile(host, from_dlpack(np.zeros(32, np.float32)))
    assert e.value.location[1] == line_of("x)  # no prefetch")


# --- the driver API of cuda-bindings in a compile-only run -----------------------------------------------------------

def test_compile_only_answers_cuinit_and_the_device_count_without_a_driver():
    driver = pytest.importorskip("cuda.bindings.driver")
    if _core.driver_available():
        pytest.skip("a CUDA driver is present: the real cuInit answers")
    from warpweave._dsl.registry import compile_only

    real_init, real_count = driver.cuInit, driver.cuDeviceGetCount
    with pytest.raises(RuntimeError):
        driver.cuInit(0)                                  # libcuda cannot be opened
    with compile_only.compile_only():
        assert driver.cuInit(0) == (driver.CUresult.CUDA_SUCCESS,)
        err, n = driver.cuDeviceGetCount()
        assert err == driver.CUresult.CUDA_SUCCESS and n == 1
    assert driver.cuInit is real_init and driver.cuDeviceGetCount is real_count


def test_compile_only_allocates_host_memory_for_cuda_malloc_without_a_driver():
    """A program that allocates with cuda-bindings' runtime before compiling (a grid barrier's word) gets host
    memory it can set, copy and free, and a pointer to it compiles; the launch is what is not made."""
    runtime = pytest.importorskip("cuda.bindings.runtime")
    if _core.driver_available():
        pytest.skip("a CUDA driver is present: the real cudaMalloc answers")
    import ctypes

    from warpweave._dsl.registry import compile_only

    ok = runtime.cudaError_t.cudaSuccess
    real = runtime.cudaMalloc

    @cute.kernel
    def k(p: cute.Pointer):
        cute.make_tensor(p, cute.make_layout(4))[0] = cutlass.Uint32(1)

    @cute.jit
    def host(p: cute.Pointer):
        k(p).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_80"), compile_only.compile_only() as session:
        err, a = runtime.cudaMalloc(16)
        err2, b = runtime.cudaMalloc(16)
        assert err == err2 == ok and a % 256 == 0 and b % 256 == 0 and abs(a - b) >= 16
        assert runtime.cudaMemset(a, 7, 16) == (ok,)
        assert ctypes.string_at(a, 16) == bytes([7]) * 16
        assert runtime.cudaMemcpy(b, a, 16, runtime.cudaMemcpyKind.cudaMemcpyDeviceToDevice) == (ok,)
        assert ctypes.string_at(b, 16) == bytes([7]) * 16
        assert runtime.cudaDeviceSynchronize() == (ok,)
        p = cute.runtime.make_ptr(cutlass.Uint32, a, cute.AddressSpace.gmem)
        with pytest.raises(compile_only.LaunchSkipped):
            host(p)
        assert len(session.compiled) == 1
        assert runtime.cudaFree(a) == (ok,) and runtime.cudaFree(b) == (ok,)
        assert runtime.cudaFree(a) == (runtime.cudaError_t.cudaErrorInvalidValue,)  # freed twice
    assert runtime.cudaMalloc is real


# --- testing.add_tensor_init_args / validate_tensor_init_args -------------------------------------------------------

def test_tensor_init_args_parse_and_refuse_what_cannot_be_honoured(capsys):
    import argparse

    from warpweave import testing

    def parser(ints):
        p = argparse.ArgumentParser(prog="prog")
        p.add_argument("--ab_dtype", type=cutlass.dtype, default=cutlass.Float16)
        return testing.add_tensor_init_args(p, supports_int_dtypes=ints)

    p = parser(False)
    a = p.parse_args([])
    assert (a.init_normal, a.normal_mean, a.normal_std) == (False, 0.0, 1.0)
    testing.validate_tensor_init_args(a, p)
    a = p.parse_args(["--init_normal", "--normal_mean", "0.5", "--normal_std", "2"])
    assert (a.init_normal, a.normal_mean, a.normal_std) == (True, 0.5, 2.0)
    testing.validate_tensor_init_args(a, p)
    for argv, why in ((["--normal_std", "0"], "--normal_std must be a positive number"),
                      (["--normal_std", "nan"], "--normal_std must be a positive number"),
                      (["--init_normal", "--ab_dtype", "Int8"], "needs floating-point inputs")):
        with pytest.raises(SystemExit) as e:
            testing.validate_tensor_init_args(p.parse_args(argv), p)
        assert e.value.code == 2 and why in capsys.readouterr().err
    q = parser(True)                      # a program that initialises integer inputs itself
    testing.validate_tensor_init_args(q.parse_args(["--init_normal", "--ab_dtype", "Int8"]), q)


# --- Pointer.load / store, basic_copy_if, `_` in a dynamic region ----------------------------------------------------

def test_pointer_load_and_store_and_predicated_basic_copy():
    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        smem = utils.SmemAllocator()
        buf = smem.allocate_array(cutlass.Float32, 8, byte_alignment=16)
        tidx, _, _ = cute.arch.thread_idx()
        (buf + tidx).store(x[tidx] * 2.0)
        cute.arch.barrier()
        r = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Float32)
        for i in cutlass.range_constexpr(4):
            r[i] = (buf + (tidx + i) % 8).load()
        pred = cute.make_rmem_tensor(cute.make_layout(4), cutlass.Boolean)
        for i in cutlass.range_constexpr(4):
            pred[i] = i < n
        cute.basic_copy_if(pred, r, cute.local_tile(x, (4,), (1,)))

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=(1, 1, 1), block=(8, 1, 1))

    with target("sm_90a"):
        ptx = cute.compile(host, from_dlpack(np.zeros(8, np.float32)), cutlass.Int32(3)).ptx
    assert len(re.findall(r"st\.shared\.(f32|b32)", ptx)) == 1 and len(re.findall(r"ld\.shared\.(f32|b32)", ptx)) == 4
    # four stores to x[4..8), each under its own predicate i < n (a branch around it, or the store's guard)
    stores = re.findall(r"st\.global\.(?:f32|b32) \t?\[%rd\d+\+(\d+)\]", ptx)
    assert sorted(int(o) for o in stores) == [16, 20, 24, 28], ptx
    assert len(set(re.findall(r"@!?(%p\d+) (?:bra|st\.global)", ptx))) >= 4, ptx


def test_underscore_is_not_carried_out_of_a_dynamic_region():
    @cute.kernel
    def k(x: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()               # `_` an Int32 here
        if tidx < 4:
            a, _ = x[tidx], cute.make_rmem_tensor(cute.make_layout(2), cutlass.Float32)  # a tensor there
            x[tidx] = a + 1.0

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(8, 1, 1))

    with target("sm_90a"):
        assert "st.global" in cute.compile(host, from_dlpack(np.zeros(8, np.float32))).ptx
