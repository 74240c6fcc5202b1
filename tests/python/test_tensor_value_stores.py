"""A TensorSSA stored into a kernel's global- or shared-memory tensor (t.store(values), as CuTe DSL's elementwise
kernels write their results: the fp16_gemm tutorial's dequantization) goes out in stores as wide as the tensor's
layout and alignment allow, not one store per element: each element store needs its value in a register of its own
until it issues (that kernel used 76 registers against CuTe DSL's 56, and 48 now). The values stored are the same."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack, make_fake_tensor

from dsl_helpers import requires_gpu, target

PER_THREAD = 128


def _program():
    @cute.kernel
    def scale(src: cute.Tensor, factor: cutlass.Float32, dst: cute.Tensor):
        tiles_src = cute.zipped_divide(src, (1, PER_THREAD))
        tiles_dst = cute.zipped_divide(dst, (1, PER_THREAD))
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        idx = tidx + bidx * 32
        frag = cute.make_rmem_tensor(tiles_src[None, 0].shape, cutlass.Int8)
        cute.autovec_copy(tiles_src[None, idx], frag)
        tiles_dst[None, idx].store((frag.load() * factor).to(dst.element_type))

    @cute.jit
    def run(src: cute.Tensor, factor: cutlass.Float32, dst: cute.Tensor):
        scale(src, factor, dst).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return run


def _tensors(device=None):
    import torch
    src = torch.arange(8 * 4 * PER_THREAD, dtype=torch.int32, device=device).remainder(200).sub(100).to(torch.int8)
    src = src.reshape(8, 4 * PER_THREAD)
    dst = torch.zeros(8, 4 * PER_THREAD, dtype=torch.float16, device=device)
    return src, dst


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a"])
def test_a_threads_values_go_out_in_wide_stores(arch):
    # rows of a run-time count and stride, as a tensor marked dynamic with its last mode contiguous
    rows, stride = cute.sym_int(), cute.sym_int(divisibility=PER_THREAD)
    src = make_fake_tensor(cutlass.Int8, (rows, PER_THREAD * 4), (stride, 1), assumed_align=32)
    dst = make_fake_tensor(cutlass.Float16, (rows, PER_THREAD * 4), (stride, 1), assumed_align=32)
    with target(arch):
        ptx = cute.compile(_program(), src, 0.5, dst).info["ptx"]
    stores = [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("st.global")]
    # 256 bytes a thread: 16-byte (or wider) vector stores, and no 2-byte one
    assert stores and all(".v" in s for s in stores), stores
    assert len(stores) <= 256 // 16, stores


@requires_gpu
def test_the_stored_values_on_the_gpu():
    import torch
    src, dst = _tensors("cuda")
    run = _program()
    s = from_dlpack(src, assumed_align=32).mark_layout_dynamic(leading_dim=1)
    d = from_dlpack(dst, assumed_align=32).mark_layout_dynamic(leading_dim=1)
    cute.compile(run, s, 0.5, d)(s, 0.5, d)
    torch.cuda.synchronize()
    assert torch.equal(dst.cpu(), (src.cpu().float() * 0.5).half())
