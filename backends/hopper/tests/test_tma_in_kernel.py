"""TMA atoms made inside a kernel (tma_in_kernel.py): a kernel makes an atom for a view of B whose rows come from
a tensor (known only at run time), writes its tensor map into a workspace with cpasync.copy_tensormap, and a later
kernel loads a tile through that map (cute.copy(..., tma_desc_ptr=)). On the CPU: the first kernel gains a
grid-constant parameter, the map's template, as its tracing asks for it (its last parameter), copies it and
replaces the fields that depend on the view; the template's attributes are one box of the atom's own choices;
mistakes at the user's line. On the GPU: the tile read is B's."""
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.entry_name import entry_name
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

TILE = (64, 64)
B_SHAPE = (256, 192)


@pytest.fixture(autouse=True)
def _fresh_compilations(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


def smem_tile():
    return cute.make_layout(TILE, stride=(TILE[1], 1))


@cute.jit
def through_map(atom, coords_b, tile_mn, desc, out):
    """Tile tile_mn of B loaded through the map at desc (warp 0 issues the copy), then written to out by the block's
    128 threads, half a row each."""
    from warpweave.cute.nvgpu import cpasync

    t = cute.arch.thread_idx()[0]
    alloc = cutlass.utils.SmemAllocator()
    full = alloc.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    tile = alloc.allocate_tensor(cutlass.Float16, smem_tile(), byte_alignment=128)
    if t == 0:
        cute.arch.mbarrier_init(full, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    region = cute.group_modes(cute.local_tile(coords_b, TILE, tile_mn), 0, 2)
    dst, src = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(tile, 0, 2), region)
    if cute.arch.warp_idx() == 0:
        if t == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(full, TILE[0] * TILE[1] * 2)
        cute.copy(atom, src, dst, tma_bar_ptr=full, tma_desc_ptr=desc)
    cute.arch.mbarrier_wait(full, 0)
    row, half = t // 2, (t % 2) * (TILE[1] // 2)
    for j in cutlass.range_constexpr(TILE[1] // 2):
        out[row, half + j] = tile[row, half + j]


def make_host(twice=False, tile_mn=(1, 1)):
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def init(gB: cute.Tensor, rows: cute.Tensor, ws: cute.Tensor):
        # the view's extent is read from memory: only the kernel knows it
        view = cute.make_tensor(gB.iterator, cute.make_layout((rows[0], gB.shape[1]), stride=(gB.stride[0], 1)))
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), view, smem_tile(), TILE)
        cpasync.copy_tensormap(atom, ws.iterator)
        if cutlass.const_expr(twice):
            again, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), view, smem_tile(), TILE)
            cpasync.copy_tensormap(again, ws.iterator + 16)

    @cute.kernel
    def load(atom: cute.CopyAtom, coords_b: cute.Tensor, ws: cute.Tensor, out: cute.Tensor):
        through_map(atom, coords_b, tile_mn, ws.iterator, out)

    @cute.jit
    def host(b: cute.Tensor, rows: cute.Tensor, ws: cute.Tensor, out: cute.Tensor):
        init(b, rows, ws).launch(grid=(1, 1, 1), block=(32, 1, 1))
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b, smem_tile(), TILE)
        load(atom, cute.make_identity_tensor(b.shape), ws, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def fake_args():
    return (from_dlpack(np.zeros(B_SHAPE, np.float16)), from_dlpack(np.array([B_SHAPE[0]], np.int32)),
            from_dlpack(np.zeros(32, np.int64)), from_dlpack(np.zeros(TILE, np.float16)))


def kernel_text(ptx, name):
    start = ptx.index(f".entry {entry_name(name)}(")
    end = ptx.find(".entry", start + 1)
    return ptx[start:end if end > 0 else len(ptx)]


def test_the_kernel_gets_the_template_and_completes_it():
    with target("sm_90a"):
        compiled = cute.compile(make_host(), *fake_args())
    init = kernel_text(compiled.info["ptx"], "init")
    params = re.findall(rf"\.param (.*?) {entry_name('init')}_param_(\d+)(\[\d+\])?", init)
    # the template: the kernel's last parameter, a grid-constant tensor map
    assert params[-1][0] == ".align 64 .b8" and params[-1][2] == "[128]"
    assert not any(p[2] for p in params[:-1])
    edits = re.findall(r"tensormap\.replace\.tile\.(\w+)\.global\.b1024\.b\d+ \[%rd\d+\],(?: (\d+),)?", init)
    assert sorted(f + o for f, o in edits) == ["global_address", "global_dim0", "global_dim1", "global_stride0"]
    # the 128 bytes come from the parameter, written before the first edit: a word a trip of a loop kept rolled
    body = init[init.index("{"):]
    first_edit = body.index("tensormap.replace")
    copy = body[:first_edit]
    assert '.pragma "nounroll"' in copy and re.search(r"@%p\d+ bra\s+\$L__BB\d+_\d+;", copy)
    assert len(re.findall(r"ld\.param\.b64 \s*%rd\d+, \[%rd\d+\];", copy)) == 1
    assert len(re.findall(r"st\.global\.b64", copy)) == 1
    assert re.search(r"setp\.ne\.b32 \s*%p\d+, %r\d+, 128;", copy)    # 128 bytes, 8 a trip
    # the template is a host argument of one box, computed at each call like any tensor map
    (template,) = [h for h in compiled.host_arguments.values() if h.attrs.get("extent0") == TILE[1]]
    a = template.attrs
    assert (a["extent1"], a["gstride0"], a["offset"]) == (TILE[0], 1, 0) and a["gstride1"] * 2 % 16 == 0
    assert not template.dynamic


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_a_kernel_that_writes_a_map_holds_no_copy_of_it_in_registers(arch):
    """The template's copy is not read into registers all at once: a kernel that only writes a map (a grouped
    GEMM's descriptor kernel) takes fewer registers than the map's 128 bytes would (32), as one that encodes the
    map in registers does. Unrolled, the assembler issued the 16 reads ahead of the stores (40 registers)."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "benchmarks",
                                    "python"))
    from bench_cubin_tools import cubin_resources

    with target(arch):
        compiled = cute.compile(make_host(), *fake_args())
    init = cubin_resources(bytes(compiled.cubin))[entry_name("init")]
    assert init.get("stack", 0) == 0 and init["registers"] < 32, init


def test_one_template_per_request_in_a_kernel():
    with target("sm_90a"):
        compiled = cute.compile(make_host(twice=True), *fake_args())
    init = kernel_text(compiled.info["ptx"], "init")
    assert len(re.findall(rf"\.param \.align 64 \.b8 {entry_name('init')}_param_\d+\[128\]", init)) == 1
    assert len(re.findall(r"tensormap\.replace\.tile\.global_address", init)) == 2


@pytest.mark.parametrize("ebytes,pack,boxes", [(2, 1, (64, 64)), (1, 1, (128, 32)), (4, 1, (8, 16, 1)),
                                                (1, 2, (32, 128)), (2, 1, (16, 3, 5, 7, 2)), (8, 1, (2, 1))])
def test_template_attributes_are_one_compact_box(ebytes, pack, boxes):
    import importlib

    with target("sm_90a"):
        cute.nvgpu.cpasync.copy_tensormap  # noqa: B018 - mounts the backend's package
        mod = importlib.import_module("warpweave.backends.hopper.tma_in_kernel")
    attrs = {"rank": len(boxes), "pack": pack, "ebytes": ebytes, "data_type": "u8", "swizzle": "none",
             "dims": ",".join(map(str, range(len(boxes)))), "backend": "hopper", "hook": "h", "offset": 12345}
    for i, b in enumerate(boxes):
        attrs[f"box{i}"], attrs[f"extent{i}"], attrs[f"gstride{i}"] = b, object(), object()
    t = mod.template_attributes(attrs)
    assert t["offset"] == 0 and t["gstride0"] == 1 and t["extent0"] == boxes[0] * pack
    row = boxes[0] * ebytes
    for i in range(1, len(boxes)):
        stride_bytes = t[f"gstride{i}"] // pack * ebytes
        assert t[f"extent{i}"] == boxes[i] and stride_bytes % 16 == 0
        assert stride_bytes >= row           # dimensions do not overlap
        row = stride_bytes * boxes[i]
    assert {k: v for k, v in t.items() if not k.startswith(("extent", "gstride", "offset"))} == \
        {k: v for k, v in attrs.items() if not k.startswith(("extent", "gstride", "offset"))}


def refused(kernel, exc, match):
    """Compiling a launch of kernel(B, workspace) (one warp) fails with exc at this file's line."""
    @cute.jit
    def host(b: cute.Tensor, ws: cute.Tensor):
        kernel(b, ws).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"), pytest.raises(exc, match=match) as e:
        cute.compile(host, fake_args()[0], fake_args()[2])
    assert "test_tma_in_kernel.py" in str(e.value)


@pytest.mark.parametrize("ebytes,boxes", [(1, (64, 2, 1, 1)), (4, (8, 3, 2)), (2, (16, 1, 1, 4, 2))])
def test_a_blocked_maps_template_is_one_compact_box(ebytes, boxes):
    import importlib

    with target("sm_90a"):
        cute.nvgpu.cpasync.copy_tensormap  # noqa: B018 - mounts the backend's package
        mod = importlib.import_module("warpweave.backends.hopper.tma_in_kernel")
    attrs = {"data_type": "u8", "rank": len(boxes), "backend": "hopper", "hook": "h", "ebytes": ebytes}
    for i, b in enumerate(boxes):
        attrs[f"box{i}"], attrs[f"dim{i}"], attrs[f"stride{i}"] = b, (b if i == 0 else object()), object()
    t = mod.template_attributes(attrs)
    assert t["dim0"] == boxes[0] and "stride0" not in t
    row = boxes[0] * ebytes
    for i in range(1, len(boxes)):
        assert t[f"dim{i}"] == boxes[i] and t[f"stride{i}"] % 16 == 0 and t[f"stride{i}"] >= row
        row = t[f"stride{i}"] * boxes[i]
    assert {k: v for k, v in t.items() if not k.startswith(("dim", "stride"))} == \
        {k: v for k, v in attrs.items() if not k.startswith(("dim", "stride"))}


def test_an_atom_made_in_a_kernel_copies_only_through_memory():
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def k(gB: cute.Tensor, ws: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float16, smem_tile(), byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        atom, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gB, smem_tile(), TILE)
        g = cute.local_tile(coords, TILE, (0, 0))
        cute.copy(atom, cute.group_modes(g, 0, 2), cute.group_modes(s, 0, 2), tma_bar_ptr=bar)  # no map in memory

    refused(k, TypeError, "copy_tensormap")


def test_copy_tensormap_takes_an_atom_and_a_memory_pointer():
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def k(gB: cute.Tensor, ws: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gB, smem_tile(), TILE)
        regs = cute.make_rmem_tensor((16,), cutlass.Int64)
        cpasync.copy_tensormap(atom, regs.iterator)   # registers: not where TMA reads maps

    refused(k, TypeError, "global or shared memory")


@requires_gpu
@pytest.mark.parametrize("rows,tile_mn", [(256, (3, 2)), (128, (1, 0)), (100, (1, 1))])
def test_the_map_written_in_a_kernel_loads_the_view(rows, tile_mn):
    import torch

    b = torch.randn(B_SHAPE, device="cuda").to(torch.float16)
    ws = torch.full((32,), -1, dtype=torch.int64, device="cuda")
    out = torch.zeros(TILE, dtype=torch.float16, device="cuda")
    n = torch.tensor([rows], dtype=torch.int32, device="cuda")
    make_host(tile_mn=tile_mn)(from_dlpack(b), from_dlpack(n), from_dlpack(ws), from_dlpack(out))
    torch.cuda.synchronize()
    m, c = tile_mn
    want = torch.zeros(TILE, dtype=torch.float16, device="cuda")
    part = b[m * 64:min(rows, (m + 1) * 64), c * 64:(c + 1) * 64]   # rows past the view's extent read as zero
    want[:part.shape[0]] = part
    assert torch.equal(out, want)


def make_pointer_host(space_of_ptr="generic"):
    """The pointer plumbing of programs that keep maps in a workspace (CuTe DSL's MoE utilities): the workspace's
    address cast to the generic space with the IR, made a pointer again, recast to a tensor-map pointer with the
    cute dialect's typed-pointer recast, prefetched and copied through."""
    from warpweave._mlir.dialects import cute as cute_ir, cute_nvgpu as cute_nvgpu_ir, llvm
    from warpweave.cute.arch import nvvm_wrappers
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def k(atom: cute.CopyAtom, coords_b: cute.Tensor, ws: cute.Tensor, out: cute.Tensor):
        space = getattr(cute.AddressSpace, space_of_ptr)
        generic = llvm.addrspacecast(llvm.PointerType.get(cute.AddressSpace.generic), ws.iterator.to_llvm_ptr())
        p = cute.make_ptr(cutlass.Int64, generic, space, assumed_align=128)
        desc = cute_ir.recast_iter(cute_ir.PtrType.get(cute_nvgpu_ir.TmaDescriptorTiledType.get(), p.memspace,
                                                       p.alignment), p)
        nvvm_wrappers.prefetch(desc.to_llvm_ptr(), tensormap=True)
        through_map(atom, coords_b, (0, 0), desc, out)

    @cute.jit
    def host(b: cute.Tensor, ws: cute.Tensor, out: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b, smem_tile(), TILE)
        k(atom, cute.make_identity_tensor(b.shape), ws, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def _pointer_args():
    b, _, ws, out = fake_args()
    return b, ws, out


def test_a_map_pointer_made_with_the_ir_prefetches_and_copies():
    with target("sm_90a"):
        ptx = cute.compile(make_pointer_host(), *_pointer_args()).info["ptx"]
    body = kernel_text(ptx, "k")
    (prefetch,) = re.findall(r"prefetch\.tensormap \[(%rd\d+)\]", body)
    (copy,) = [l for l in body.splitlines() if "cp.async.bulk.tensor" in l]
    assert "param" not in copy     # through the workspace's map, not the atom's parameter


def test_an_ir_pointer_of_another_space_is_refused_at_the_users_line():
    with target("sm_90a"), pytest.raises(TypeError, match="not a pointer of gmem memory") as e:
        cute.compile(make_pointer_host("gmem"), *_pointer_args())
    assert "test_tma_in_kernel.py" in str(e.value)


def test_a_data_prefetch_is_refused():
    from warpweave.cute.arch import nvvm_wrappers

    @cute.kernel
    def k(gB: cute.Tensor, ws: cute.Tensor):
        nvvm_wrappers.prefetch(ws.iterator.to_llvm_ptr())   # no tensormap=True: a cache-level data prefetch

    refused(k, ValueError, "tensormap=True")


def test_the_template_needs_an_aligned_tensor_argument():
    from warpweave.cute.nvgpu import cpasync

    @cute.kernel
    def k(gB: cute.Tensor, ws: cute.Tensor):
        atom, _ = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), gB, smem_tile(), TILE)
        cpasync.copy_tensormap(atom, ws.iterator)

    @cute.jit
    def host(b: cute.Tensor, ws: cute.Tensor):
        k(b, ws).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_90a"), pytest.raises(ValueError, match="aligned to 16 bytes") as e:
        cute.compile(host, from_dlpack(np.zeros(B_SHAPE, np.float16), assumed_align=2),
                     from_dlpack(np.zeros(32, np.int64), assumed_align=8))
    assert "test_tma_in_kernel.py" in str(e.value)
