"""Register fragments that CuTe DSL's kernels keep in registers stay there: the PTX declares no local-memory frame
and ptxas reports a stack frame of 0 bytes, for the patterns that once put them in local memory.

- 4-bit integers read element by element from a fragment filled as bytes (a mixed-input GEMM's int4 operand
  converted to bf16): LLVM made them a vector of 4-bit elements, which NVPTX extracts through a stack slot it leaves
  in the frame (the compiler now reads them as bit fields, compiler/sub_byte_vectors.cpp).
- A fragment made by make_rmem_tensor_like from a tensor with a broadcast (stride-0) mode, indexed along that mode
  at a runtime coordinate (the scales of mixed_input_fmha_decode): the mode takes no registers, as in CuTe DSL, so
  the index is a static offset; a fragment that gave it registers was indexed dynamically and lived in local
  memory.
- The grid's extents read once and used by several warp roles (a persistent tile scheduler's grid size): the
  optimiser merges the reads into one at the kernel's entry, a value live across every role that the assembler
  spilled where a role ran at its register ceiling (mixed_input_gemm); each role now reads them itself
  (compiler/launch_constants.cpp).
"""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from dsl_helpers import fresh_compilations, requires_gpu, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.runtime import from_dlpack


def _ptxas():
    found = shutil.which("ptxas")
    if found is None and os.environ.get("CUDA_HOME"):
        candidate = os.path.join(os.environ["CUDA_HOME"], "bin", "ptxas")
        found = candidate if os.path.exists(candidate) else None
    return found


def _stack_frames(ptx: str, arch: str, tmp_path) -> list[int]:
    """ptxas -v's stack frame (bytes) of each function of the PTX."""
    ptxas = _ptxas()
    if ptxas is None:
        pytest.skip("ptxas is not installed")
    src = tmp_path / "k.ptx"
    src.write_text(ptx)
    log = subprocess.run([ptxas, "-v", f"-arch={arch}", str(src), "-o", os.devnull], capture_output=True, text=True,
                         check=True).stderr
    return [int(n) for n in re.findall(r"(\d+) bytes stack frame", log)]


def _assert_registers_only(ptx: str, arch: str, tmp_path):
    assert ".local" not in ptx and "__local_depot" not in ptx, [
        line.strip() for line in ptx.splitlines() if "local" in line][:6]
    frames = _stack_frames(ptx, arch, tmp_path)
    assert frames and all(f == 0 for f in frames), frames


def _int4_to_bf16(rows):
    """Each thread copies `rows` runs of eight int4 values from shared memory (another thread's, after a barrier, so
    that the values come from the shared-memory load) into a fragment, a 32-bit copy each, converts them to bf16,
    scales them pairwise and writes them back."""

    @cute.kernel
    def kern(x: cute.Tensor, scale: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Int4, cute.make_layout((8, rows, 32)), byte_alignment=16)
        o = smem.allocate_tensor(cutlass.BFloat16, cute.make_layout((8, rows, 32)), byte_alignment=16)
        words = cute.recast_tensor(s, cutlass.Int32)
        for r in cutlass.range_constexpr(rows):
            words[0, r, tidx] = x[r * 32 + tidx]
        cute.arch.sync_threads()
        frag = cute.make_rmem_tensor(cute.make_layout((8, rows)), cutlass.Int4)
        cute.autovec_copy(s[None, None, (tidx + 1) % 32], frag)
        sc = cute.make_rmem_tensor(cute.make_layout((8, rows)), cutlass.BFloat16)
        for i in cutlass.range_constexpr(8 * rows):
            sc[i] = cutlass.BFloat16(scale[i])
        res = cute.make_rmem_tensor(cute.make_layout((8, rows)), cutlass.BFloat16)
        res.store(frag.load().to(cutlass.BFloat16) * sc.load())
        cute.autovec_copy(res, o[None, None, tidx])
        for i in cutlass.range_constexpr(8 * rows):
            out[i * 32 + tidx] = o[i % 8, i // 8, tidx].to(cutlass.Float32)

    @cute.jit
    def host(x: cute.Tensor, scale: cute.Tensor, out: cute.Tensor):
        kern(x, scale, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


@pytest.mark.parametrize("rows", [1, 2])
def test_int4_fragment_converted_to_bf16_has_no_stack_frame(rows, fresh_compilations, tmp_path):
    with target("sm_100a"):
        c = cute.compile(_int4_to_bf16(rows), from_dlpack(np.zeros(32 * rows, np.int32)),
                         from_dlpack(np.zeros(8 * rows, np.float32)), from_dlpack(np.zeros(256 * rows, np.float32)))
    # The nibbles are converted one by one from 32-bit words read whole (to f32, then rounded to bf16 in pairs).
    assert len(re.findall(r"cvt\.rn\.f32\.s32", c.ptx)) == 8 * rows
    _assert_registers_only(c.ptx, "sm_100a", tmp_path)


def _broadcast_scales():
    """Scales in shared memory broadcast along a mode of 4 (stride 0), copied into a fragment like them and read at
    a runtime coordinate of that mode in a loop."""

    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float32, cute.make_layout((8, 32)), byte_alignment=16)
        for i in cutlass.range_constexpr(8):
            s[i, tidx] = x[i * 32 + tidx]
        view = cute.make_tensor(s[None, tidx].iterator, cute.make_layout((8, 2, 4), stride=(1, 0, 0)))
        frag = cute.make_rmem_tensor_like(view)
        cute.autovec_copy(view, frag)
        acc = cute.make_rmem_tensor(cute.make_layout(8), cutlass.Float32)
        acc.fill(0.0)
        for k in cutlass.range(n):
            acc.store(acc.load() + frag[None, k % 2, k % 4].load())
        cute.autovec_copy(acc, out[None, tidx])

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        kern(x, out, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


def test_broadcast_mode_indexed_at_runtime_stays_in_registers(fresh_compilations, tmp_path):
    with target("sm_100a"):
        c = cute.compile(_broadcast_scales(), from_dlpack(np.zeros(256, np.float32)),
                         from_dlpack(np.zeros((32, 8), np.float32).T), cutlass.Int32(3))
    _assert_registers_only(c.ptx, "sm_100a", tmp_path)


def _roles_reading_the_grid():
    """Warp 0 loops over a runtime count, reading memory at places made of the grid's width and the block's index;
    the other warps use them once and write elsewhere (roles that share no code). The program reads both once, at
    the top."""

    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor, other: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        gx, _, _ = cute.arch.grid_dim()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            acc = cutlass.Int32(0)
            for i in cutlass.range(n):
                acc += x[(bidx + i * gx) % 128] * tidx
            out[bidx * 64 + tidx] = acc
        else:
            other[tidx - 32, bidx] = gx * 3 + tidx

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor, other: cute.Tensor, n: cutlass.Int32):
        kern(x, out, other, n).launch(grid=(2, 1, 1), block=(64, 1, 1))

    return host


def _loop_bodies(body: str) -> list[str]:
    """The text of each loop of a PTX function: from a label to a later branch back to it."""
    loops = []
    for m in re.finditer(r"^(\$\w+):", body, re.M):
        back = body.rfind(f"\t{m.group(1)};")
        if back > m.end():
            loops.append(body[m.end():back])
    return loops


def test_each_warp_role_reads_the_grid_extent_itself(fresh_compilations):
    with target("sm_100a"):
        c = cute.compile(_roles_reading_the_grid(), from_dlpack(np.zeros(128, np.int32)),
                         from_dlpack(np.zeros(128, np.int32)), from_dlpack(np.zeros((32, 2), np.int32)),
                         cutlass.Int32(3))
    body = c.ptx[c.ptx.index(".entry"):]
    before_roles = body[:body.index("bra")]
    assert "nctaid" not in before_roles, before_roles
    assert len(re.findall(r"%nctaid\.x", body)) >= 2, body
    # warp 0's loop does not read it: its read stays before the loop, where the optimiser had put the entry's.
    # (The block's index is left where the optimiser put it: see core/compiler/launch_constants.cpp.)
    loops = _loop_bodies(body)
    assert loops and not any("nctaid" in loop for loop in loops), loops


@requires_gpu
def test_the_kernels_values_on_the_gpu():
    """The values the kernels compute: each nibble's signed value times its scale (exact in bf16), n steps of summing
    the broadcast scales, and each warp role's use of the grid's width."""
    import torch

    rows = 2
    rng = np.random.default_rng(3)
    nibbles = rng.integers(-8, 8, (32, rows, 8))
    words = np.zeros((rows, 32), np.int64)
    for j in range(8):
        words |= (nibbles.transpose(1, 0, 2)[:, :, j] & 15).astype(np.int64) << (4 * j)
    scale = rng.choice([0.5, 1.0, -2.0], 8 * rows).astype(np.float32)
    x = torch.tensor(words.astype(np.uint32).view(np.int32).reshape(-1), device="cuda")
    sc, out = torch.tensor(scale, device="cuda"), torch.full((256 * rows,), float("nan"), device="cuda")
    _int4_to_bf16(rows)(from_dlpack(x), from_dlpack(sc), from_dlpack(out))
    got = out.cpu().numpy().reshape(8 * rows, 32)
    # Thread t read column t + 1's words; value i of a thread is nibble i % 8 of its word i // 8.
    src = np.roll(nibbles, -1, axis=0)
    want = np.stack([src[:, i // 8, i % 8] * scale[i] for i in range(8 * rows)])
    np.testing.assert_array_equal(got, want.astype(np.float32))

    vals = torch.randn(256, device="cuda")
    acc = torch.full((32, 8), float("nan"), device="cuda")
    _broadcast_scales()(from_dlpack(vals), from_dlpack(acc.T), cutlass.Int32(5))
    np.testing.assert_allclose(acc.cpu().numpy(), 5 * vals.cpu().numpy().reshape(8, 32).T, rtol=1e-6)

    x = torch.randint(-50, 50, (128,), dtype=torch.int32)
    out = torch.full((128,), -1, dtype=torch.int32, device="cuda")
    other = torch.full((32, 2), -1, dtype=torch.int32, device="cuda")
    _roles_reading_the_grid()(from_dlpack(x.cuda()), from_dlpack(out), from_dlpack(other), cutlass.Int32(4))
    tid, bid, xs = np.arange(32), np.arange(2)[:, None], x.numpy()
    want = sum(xs[(bid + i * 2) % 128] * tid for i in range(4))
    np.testing.assert_array_equal(out.cpu().numpy().reshape(2, 64)[:, :32], want)
    np.testing.assert_array_equal(out.cpu().numpy().reshape(2, 64)[:, 32:], -1)
    np.testing.assert_array_equal(other.cpu().numpy(), np.broadcast_to((2 * 3 + 32 + tid)[:, None], (32, 2)))
