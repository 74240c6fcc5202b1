"""Launch keywords (min_blocks_per_mp, use_pdl, cooperative, fallback_cluster, LaunchConfig) and keywords that
are not understood: each raises a TypeError naming it at the user's line instead of being ignored."""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, requires_gpu, target

pytestmark = pytest.mark.usefixtures("fresh_compilations")

THIS = os.path.abspath(__file__)


def line_of(text: str) -> int:
    return line_in(THIS, text)


@cute.kernel
def touch(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x[tidx] = 1.0


def compiled_with(**launch_kwargs):
    @cute.jit
    def host(x: cute.Tensor):
        touch(x).launch(**launch_kwargs)

    with target(launch_kwargs.pop("_arch", "sm_90a")):
        return cute.compile(host, from_dlpack(np.zeros(32, np.float32)))


def test_min_blocks_per_mp_reaches_the_ptx():
    c = compiled_with(grid=[1, 1, 1], block=[32, 1, 1], min_blocks_per_mp=3)
    assert ".minnctapersm 3" in c.ptx
    assert ".minnctapersm" not in compiled_with(grid=[1, 1, 1], block=[32, 1, 1]).ptx


def test_launch_attributes_are_recorded():
    c = compiled_with(grid=[4, 1, 1], block=[32, 1, 1], use_pdl=True, cooperative=True)
    (l,) = c.launches
    assert l.pdl and l.cooperative and l.preferred_cluster is None
    c = compiled_with(grid=[4, 1, 1], block=[32, 1, 1], cluster=[4, 1, 1], fallback_cluster=[2, 1, 1])
    (l,) = c.launches
    assert l.preferred_cluster == (4, 1, 1) and l.cluster == (2, 1, 1)
    assert ".reqnctapercluster" not in c.ptx  # the driver picks the cluster per launch
    fixed = compiled_with(grid=[4, 1, 1], block=[32, 1, 1], cluster=[2, 1, 1])
    assert ".reqnctapercluster 2, 1, 1" in fixed.ptx and fixed.launches[0].preferred_cluster is None


def test_a_one_block_cluster_is_launched_but_not_compiled_in():
    # As CuTe DSL's modules: its Hopper GEMMs with a 1x1 cluster launch with cluster (1, 1, 1) from a kernel that
    # declares no cluster shape (a cluster kernel of one block is another kind of module for the driver).
    c = compiled_with(grid=[4, 1, 1], block=[32, 1, 1], cluster=[1, 1, 1])
    assert ".reqnctapercluster" not in c.ptx and ".explicitcluster" not in c.ptx
    assert c.launches[0].cluster == (1, 1, 1)
    two = compiled_with(grid=[4, 2, 1], block=[32, 1, 1], cluster=[1, 2, 1])
    assert ".explicitcluster" in two.ptx and ".reqnctapercluster 1, 2, 1" in two.ptx


def test_launch_config_object():
    from warpweave._dsl.base.launch_config import LaunchConfig

    c = compiled_with(config=LaunchConfig(grid=[1, 1, 1], block=[32, 1, 1], min_blocks_per_mp=2))
    assert ".minnctapersm 2" in c.ptx


@cute.jit
def bad_keyword(x: cute.Tensor):
    touch(x).launch(grid=[1, 1, 1], block=[32, 1, 1], smem_bytes=0)  # not a launch keyword


@cute.jit
def bad_fallback(x: cute.Tensor):
    touch(x).launch(grid=[1, 1, 1], block=[32, 1, 1], fallback_cluster=[1, 1, 1])  # needs cluster=


@cute.jit
def bad_min_blocks(x: cute.Tensor):
    touch(x).launch(grid=[1, 1, 1], block=[32, 1, 1], min_blocks_per_mp=0)


@pytest.mark.parametrize("fn,exc,text,marker", [
    (bad_keyword, TypeError, "'smem_bytes'", "smem_bytes=0)  # not a launch keyword"),
    (bad_fallback, ValueError, "needs cluster=", "fallback_cluster=[1, 1, 1])  # needs cluster="),
    (bad_min_blocks, ValueError, "positive integer", "min_blocks_per_mp=0)"),
])
def test_bad_launch_keywords_name_the_line(fn, exc, text, marker):
    with target("sm_80"), pytest.raises(exc, match=text) as info:
        cute.compile(fn, from_dlpack(np.zeros(32, np.float32)))
    assert isinstance(info.value, cutlass.DSLError)
    assert info.value.location == (THIS, line_of(marker))


@cute.kernel
def copy_with_barrier(x: cute.Tensor):
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32)
    r = cute.make_rmem_tensor(cute.make_layout(1), cutlass.Float32)
    cute.copy(atom, x[None], r, tma_bar_ptr=None)  # an operand this atom does not take


@cute.jit
def launch_copy_with_barrier(x: cute.Tensor):
    copy_with_barrier(x).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_copy_refuses_operands_it_does_not_take():
    with target("sm_80"), pytest.raises(TypeError, match="'tma_bar_ptr'") as info:
        cute.compile(launch_copy_with_barrier, from_dlpack(np.zeros(1, np.float32)))
    assert info.value.location == (THIS, line_of("tma_bar_ptr=None)  # an operand"))


def test_other_keywords_are_not_swallowed():
    op = cute.nvgpu.MmaUniversalOp(cutlass.Float32)
    with pytest.raises(TypeError, match="permutaton_mnk"):
        cute.make_tiled_mma(op, (1, 1, 1), permutaton_mnk=None)  # misspelt
    with pytest.raises(TypeError, match="bogus"):
        cute.make_mma_atom(op, bogus=1)
    with pytest.raises(TypeError, match="num_bits"):
        cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32, num_bits=32)
    with pytest.raises(TypeError, match="mcast_mask"):
        cute.gemm(None, None, None, None, None, mcast_mask=1)
    with pytest.raises(TypeError, match="no_cache"):
        cute.jit(no_cache=True)
    with pytest.raises(TypeError, match="bogus"):
        from_dlpack(np.zeros(2, np.float32), bogus=True)
    from warpweave.pipeline import PipelineAsync

    with pytest.raises(TypeError, match="tx_count"):
        PipelineAsync.create(barrier_storage=None, num_stages=2, producer_group=None, consumer_group=None,
                             tx_count=128)
    # producer_mask is a keyword of create (a CTA rank): what it is given is checked, not dropped
    with pytest.raises(TypeError, match="producer_mask is None .this CTA. or a CTA rank"):
        PipelineAsync.create(barrier_storage=None, num_stages=2, producer_group=None, consumer_group=None,
                             producer_mask="rank 1")


def test_preprocessor_false_keeps_python_control_flow():
    calls = []

    @cute.jit(preprocessor=False)
    def host(n):
        for i in range(n):  # stays a Python loop: no IR
            calls.append(i)

    assert host.rewritten is host.fn


@cute.kernel
def loop_kernel(x: cute.Tensor, n: cutlass.Int32):
    for i in cutlass.range(n, unroll=2, prefetch_stages=2):  # a scheduling hint: accepted
        x[i] = 1.0
    for i in cutlass.range(n, unrol=2):  # misspelt
        x[i] = 2.0


@cute.jit
def loop_host(x: cute.Tensor, n: cutlass.Int32):
    loop_kernel(x, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_range_warns_of_unknown_keywords_at_their_line():
    """An unknown keyword is ignored, as CuTe DSL ignores it (shipped code misspells one), with a warning naming the
    user's line so that the misspelling is still seen."""
    with target("sm_80"), pytest.warns(SyntaxWarning, match="'unrol'") as seen:
        cute.compile(loop_host, from_dlpack(np.zeros(8, np.float32)), 8)
    assert [(w.filename, w.lineno) for w in seen if "'unrol'" in str(w.message)] == \
        [(THIS, line_of("unrol=2):  # misspelt"))]


@cute.kernel
def vectorized_kernel(x: cute.Tensor, n: cutlass.Int32):
    for i in cutlass.range(8, vectorize=True):  # static bounds: its trips are written out side by side
        x[i] = x[i] * 2.0
    for i in cutlass.range(n, vectorize=True):  # runtime bounds: a loop of the kernel still
        x[i] = x[i] + 1.0


@cute.jit
def vectorized_host(x: cute.Tensor, n: cutlass.Int32):
    vectorized_kernel(x, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_range_vectorize_unrolls_static_loops_and_keeps_runtime_ones():
    with target("sm_80"):
        c = cute.compile(vectorized_host, from_dlpack(np.zeros(8, np.float32)), 8)
    assert c.ir.count('"scf.for"') == 1
    assert c.ir.count("arith.mulf") == 8


# --- a launch the driver refuses: CuTe DSL's DSLCudaRuntimeError, with the error to compare ----------------------

def test_a_driver_error_becomes_a_cuda_runtime_error_with_its_code():
    from warpweave import _core
    from warpweave._dsl.base.errors import cuda_error
    from warpweave.cutlass_dsl import DSLCudaRuntimeError, DSLRuntimeError

    e = cuda_error(_core.CudaError("cuLaunchKernelEx failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (too many "
                                   "blocks in cooperative launch); grid (10000, 1, 1)"), ("prog.py", 7))
    assert isinstance(e, DSLCudaRuntimeError) and isinstance(e, DSLRuntimeError) and e.location == ("prog.py", 7)
    assert e.error_name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"
    runtime = pytest.importorskip("cuda.bindings.runtime")
    assert e.error_code == runtime.cudaError_t.cudaErrorCooperativeLaunchTooLarge
    assert cuda_error(RuntimeError("no error name here")).error_code is None


def test_a_driver_error_code_is_read_from_cuda_bindings_whose_enums_are_no_python_enums(monkeypatch):
    # cuda-bindings 13.5 and later make CUresult a class that cannot be indexed by name (CUresult[name] is a
    # TypeError); its members are ints that compare equal to the runtime's cudaError_t of the same number.
    driver = pytest.importorskip("cuda.bindings.driver")
    from warpweave import _core
    from warpweave._dsl.base.errors import cuda_error

    class PlainCUresult:
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE = 720

    monkeypatch.setattr(driver, "CUresult", PlainCUresult)
    e = cuda_error(_core.CudaError("cuLaunchKernelEx failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (too many "
                                   "blocks in cooperative launch); grid (10000, 1, 1)"))
    assert e.error_code == 720 and e.error_name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"


def test_check_cuda_errors_raises_the_cuda_runtime_error_of_its_code():
    runtime = pytest.importorskip("cuda.bindings.runtime")
    from warpweave.base_dsl.runtime.cuda import checkCudaErrors
    from warpweave.cutlass_dsl import DSLCudaRuntimeError

    bad = runtime.cudaError_t.cudaErrorMemoryAllocation
    with pytest.raises(DSLCudaRuntimeError) as e:
        checkCudaErrors((bad, None))  # the line named
    assert e.value.error_code == bad and e.value.location == (THIS, line_of("checkCudaErrors((bad, None))"))


@requires_gpu
def test_a_cooperative_grid_too_large_is_refused_with_its_code_on_the_gpu():
    import torch

    runtime = pytest.importorskip("cuda.bindings.runtime")
    from warpweave.cutlass_dsl import DSLCudaRuntimeError

    @cute.jit
    def host(x: cute.Tensor, grid: cutlass.Constexpr):
        touch(x).launch(grid=[grid, 1, 1], block=[1024, 1, 1], cooperative=True)

    x = torch.zeros(1024, device="cuda")
    with pytest.raises(DSLCudaRuntimeError) as e:
        host(from_dlpack(x), 100000)  # the launch refused
    assert e.value.error_code == runtime.cudaError_t.cudaErrorCooperativeLaunchTooLarge
    assert e.value.location == (THIS, line_of("host(from_dlpack(x), 100000)"))
    host(from_dlpack(x), 2)  # a grid that fits is launched
    torch.cuda.synchronize()
    assert bool((x == 1.0).all())
