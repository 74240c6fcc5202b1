"""utils.TensorMapManager / TensorMapUpdateMode and cpasync.update_tma_descriptor and the tensor-map fences: a
kernel copies a TMA atom's tensor map (made for A) into a workspace in global memory, retargets it to another
tensor B of other extents and strides (in place, GMEM, or through a shared-memory copy, SMEM), publishes it, and
loads a tile of B with cute.copy(..., tma_desc_ptr=) through it. On the CPU: the PTX edits the fields that differ
(global address, each dimension's extent, the outer dimension's byte stride) where the mode says, releases the
writes, acquires the map before the copy, and copies with the workspace's map rather than the parameter; mistakes
at the user's line. On the GPU: the tile read is B's."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

TILE = (64, 64)
A_SHAPE, B_SHAPE = (64, 64), (256, 192)


@pytest.fixture(autouse=True)
def _fresh_compilations(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def smem_tile():
    return cute.make_layout(TILE, stride=(TILE[1], 1))


def nvvm_load(smem_ptr, desc_ptr, bar, tile_mn):
    """The load as CuTe DSL's Hopper grouped GEMM writes it: NVVM's TMA op under an elect.sync predicate."""
    from warpweave._mlir.dialects import llvm, nvvm

    desc = llvm.addrspacecast(llvm.PointerType.get(cute.AddressSpace.generic), desc_ptr.llvm_ptr)
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
        smem_ptr.llvm_ptr, desc, [cutlass.Int32(tile_mn[1] * TILE[1]).ir_value(),
                                  cutlass.Int32(tile_mn[0] * TILE[0]).ir_value()],
        bar.llvm_ptr, [], predicate=nvvm.elect_sync(), mode=nvvm.TMALoadMode.TILE)


def make_host(mode, tile_mn=(1, 1), through_nvvm=False):
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def k(atom: cute.CopyAtom, coords_b: cute.Tensor, gB: cute.Tensor, ws: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float16, smem_tile(), byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        copy = smem.allocate_array(cutlass.Int64, 16, byte_alignment=128)
        mgr = utils.TensorMapManager(mode, 128)
        gptr = mgr.get_tensormap_ptr(ws.iterator)
        mgr.init_tensormap_from_atom(atom, gptr, 0)
        mgr.fence_tensormap_initialization()
        mgr.update_tensormap((gB,), (atom,), (gptr,), 0, (copy,))
        mgr.fence_tensormap_update(gptr)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        g = cute.local_tile(coords_b, TILE, tile_mn)
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, TILE[0] * TILE[1] * 2)
            if cutlass.const_expr(through_nvvm):
                nvvm_load(s.iterator, mgr.get_tensormap_ptr(gptr), bar, tile_mn)
            else:
                cute.copy(atom, tg, ts, tma_bar_ptr=bar,
                          tma_desc_ptr=mgr.get_tensormap_ptr(gptr, cute.AddressSpace.generic))
        cute.arch.mbarrier_wait(bar, 0)
        for i in cutlass.range_constexpr(TILE[0] * TILE[1] // 128):
            e = i * 128 + tidx
            out[e // TILE[1], e % TILE[1]] = s[e // TILE[1], e % TILE[1]]

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, ws: cute.Tensor, out: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, smem_tile(), TILE)
        k(atom, cute.make_identity_tensor(b.shape), b, ws, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def fake_args():
    return (from_dlpack(np.zeros(A_SHAPE, np.float16)), from_dlpack(np.zeros(B_SHAPE, np.float16)),
            from_dlpack(np.zeros(16, np.int64)), from_dlpack(np.zeros(TILE, np.float16)))


def lines(ptx, pattern):
    return [l.strip() for l in ptx.splitlines() if re.search(pattern, l)]


@pytest.mark.parametrize("mode,space", [("GMEM", "global"), ("SMEM", "shared::cta")])
def test_the_map_is_retargeted_where_the_mode_says_and_published(mode, space):
    with target("sm_90a"):
        ptx = cute.compile(make_host(getattr(utils.TensorMapUpdateMode, mode)), *fake_args()).info["ptx"]
    edits = lines(ptx, r"tensormap\.replace")
    fields = sorted(re.search(r"tile\.(\w+)", e).group(1) + (re.search(r"\], (\d+),", e).group(1)
                                                          if "global_address" not in e else "") for e in edits)
    # B's address, both extents, the row's byte stride (dimension 1; dimension 0 is contiguous)
    assert fields == ["global_address", "global_dim0", "global_dim1", "global_stride0"]
    assert all(f".{space}." in e for e in edits)
    order = [l for l in ptx.splitlines() if re.search(r"tensormap\.replace|fence\.proxy\.tensormap|cp\.async\.bulk\.tensor",
                                                      l)]
    kinds = ["edit" if "replace" in l else "release" if "release" in l else "acquire" if "acquire" in l else "copy"
             for l in order]
    # initialization released, edits, released, acquired, then the copy
    assert kinds[0] == "release" and kinds[-1] == "copy" and kinds[-2] == "acquire"
    last_edit = max(i for i, k in enumerate(kinds) if k == "edit")
    assert "release" in kinds[last_edit:-2]
    # the copy names the workspace's map (a register), not the kernel parameter
    (copy_line,) = lines(ptx, r"cp\.async\.bulk\.tensor")
    tmap = re.search(r"\], \[(%rd\d+), \{", copy_line).group(1)
    assert "param" not in tmap


def test_nvvm_tma_load_under_an_elected_lane():
    with target("sm_90a"):
        ptx = cute.compile(make_host(utils.TensorMapUpdateMode.GMEM, (1, 2), True), *fake_args()).info["ptx"]
    assert re.search(r"elect\.sync _\|p, 0xffffffff", ptx)
    (load,) = lines(ptx, r"cp\.async\.bulk\.tensor")
    assert load.startswith("@p cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes")


def test_update_tma_descriptor_needs_a_tma_atom():
    @cute.kernel
    def k(gB: cute.Tensor, ws: cute.Tensor):
        from warpweave.cute.nvgpu import cpasync
        cpasync.update_tma_descriptor(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16), gB,
                                      ws.iterator)  # not a TMA atom

    @cute.jit
    def host(b: cute.Tensor, ws: cute.Tensor):
        k(b, ws).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"), pytest.raises(TypeError, match="expected a TMA atom") as e:
        cute.compile(host, fake_args()[1], fake_args()[2])
    assert "test_tensormap_update.py" in str(e.value)


def test_a_manager_takes_an_update_mode():
    with pytest.raises(TypeError, match="TensorMapUpdateMode"):
        utils.TensorMapManager("gmem", 128)
    with pytest.raises(ValueError, match="128 bytes"):
        utils.TensorMapManager(utils.TensorMapUpdateMode.GMEM, 64)


@requires_gpu
@pytest.mark.parametrize("through_nvvm", [False, True])
@pytest.mark.parametrize("mode", ["GMEM", "SMEM"])
@pytest.mark.parametrize("tile_mn", [(0, 0), (3, 2)])
def test_the_retargeted_map_loads_the_other_tensor(mode, tile_mn, through_nvvm):
    import torch

    a = torch.zeros(A_SHAPE, dtype=torch.float16, device="cuda")
    b = torch.randn(B_SHAPE, device="cuda").to(torch.float16)
    ws = torch.zeros(16, dtype=torch.int64, device="cuda")
    out = torch.zeros(TILE, dtype=torch.float16, device="cuda")
    make_host(getattr(utils.TensorMapUpdateMode, mode), tile_mn, through_nvvm)(
        from_dlpack(a), from_dlpack(b), from_dlpack(ws), from_dlpack(out))
    torch.cuda.synchronize()
    m, n = tile_mn
    assert torch.equal(out, b[m * 64:(m + 1) * 64, n * 64:(n + 1) * 64])
