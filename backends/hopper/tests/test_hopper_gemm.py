"""Hopper in the DSL: TMA atoms, warpgroup MMA, PipelineTmaAsync and frontend_python/examples/hopper/dense_gemm.py.

Without a GPU:
- the warpgroup tiled MMA's thread-value layouts against the PTX ISA's wgmma fragment formulas, and its A/B
  partitions of shared memory (each warpgroup's whole 64-row tile per thread);
- the shared-memory descriptor's (major, swizzle, LBO, SBO) of every layout atom, the conformance probe's
  no-swizzle layout (whose descriptor ran correctly on the H200) and the refusal of layouts wgmma cannot read;
- make_tiled_tma_atom's boxes and tensor-map attributes, tma_partition's per-CTA share with multicast, and the
  errors of bad TMA uses, naming the user's line;
- dense_gemm compiled for sm_90a: its SASS holds HGMMA (one per wgmma k-block issued), UTMALDG (.MULTICAST with
  clusters), SYNCS, UTMASTG (the TMA-store epilogue), and ptxas reports no stack frame and no spills (the report
  is printed).
On the GPU (skipped here): dense_gemm against a float32 torch reference on fresh random data, C poisoned with NaN
first, over sizes that are not multiples of the tile, every major, fp16, bf16 and fp8, L > 1, clusters 1x1, 2x1,
1x2, both epilogues; the error bound is relative to sum |a b| (accumulation) plus C's rounding.
"""
import os
import re
import sys

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core

from dsl_helpers import requires_gpu, sass_opcodes, target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "frontend_python", "examples", "hopper"))
import dense_gemm  # noqa: E402

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")


def hopper():
    from warpweave.cute.nvgpu import cpasync, warpgroup
    import warpweave.utils.hopper_helpers as sm90

    return cpasync, warpgroup, sm90


def test_backend_names_wrap_manifest_classes():
    """The Hopper package's warpgroup.MmaF16BF16Op (CuTe DSL's constructor, with majors) wraps the class the
    manifest's family makes, which ext.manifest_class still reaches; the accumulate field and the majors become
    the instruction's scale-d operand and transpose immediates."""
    from warpweave import ext

    _, warpgroup, _ = hopper()
    base = ext.manifest_class("warpgroup.MmaF16BF16Op")
    assert warpgroup.MmaF16BF16Op is not base and issubclass(warpgroup.MmaF16BF16Op, base)
    MN = warpgroup.OperandMajorMode.MN
    op = warpgroup.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (64, 96, 16), warpgroup.OperandSource.SMEM,
                                MN, warpgroup.OperandMajorMode.K)
    with target("sm_90a"):
        assert op.entry()[1]["id"] == "hopper.wgmma.m64n96k16.f32.bf16.bf16.ss"
    assert "MmaF16BF16Op" in dir(warpgroup) and "make_tiled_tma_atom" in dir(cute.nvgpu.cpasync)
    with pytest.raises(ext.DSLValueError, match="A from registers is K-major"):
        warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 64, 16), warpgroup.OperandSource.RMEM, MN)
    with pytest.raises(ext.DSLValueError, match="only 16-bit inputs may be MN-major"):
        warpgroup.MmaF8Op(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN, cutlass.Float32, (64, 64, 32),
                          warpgroup.OperandSource.SMEM, MN)
    with pytest.raises(ValueError, match="module>.<name>"):
        ext.register_python_name("no_module_part", object())


# --- warpgroup MMA layouts ------------------------------------------------------------------------------------------

def wgmma_d_coord(thread, i):
    """(row, column) of accumulator value i of a thread of one warpgroup (PTX ISA, wgmma D fragment)."""
    w, lane = thread // 32, thread % 32
    return 16 * w + lane // 4 + 8 * ((i // 2) % 2), 2 * (lane % 4) + i % 2 + 8 * (i // 4)


def test_tiled_mma_shape_and_tv_layouts_are_the_atoms():
    # CuTe DSL 4.8.1's printed values (sm_90a) for a (64,128,16) warpgroup MMA over (2,1,1) warpgroups: shape_mnk and
    # tv_layout_A/B/C are the atom's (attention kernels read tv_layout_C's strides as the accumulator's order).
    _, warpgroup, _ = hopper()
    K = warpgroup.OperandMajorMode.K
    with target("sm_90a"):
        op = warpgroup.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 128, 16), warpgroup.OperandSource.SMEM,
                                    K, K)
        tm = cute.make_tiled_mma(op, (2, 1, 1))
    assert tm.shape_mnk == (64, 128, 16) and tm.size == 256 and str(tm.thr_id) == "128:1"
    assert tuple(tm.get_tile_size(i) for i in range(3)) == (128, 128, 16)
    assert (str(tm.tv_layout_A), str(tm.tv_layout_B), str(tm.tv_layout_C)) == (
        "(128,(64,16)):(0,(1,64))", "(128,(128,16)):(0,(1,128))", "((4,8,4),(2,2,16)):((128,1,16),(64,8,512))")
    assert (str(tm.tv_layout_A_tiled), str(tm.tv_layout_B_tiled), str(tm.tv_layout_C_tiled)) == (
        "((128,2),((64,16),(1,1))):((0,64),((1,128),(0,0)))", "(256,((128,16),(1,1))):(0,((1,128),(0,0)))",
        "((4,8,8),((2,2,16),(1,1))):((256,1,16),((128,8,1024),(0,0)))")


@pytest.mark.parametrize("n,warpgroups", [(128, 2), (64, 1), (256, 1), (24, 2)])
def test_tiled_mma_c_layout_is_the_wgmma_fragment(n, warpgroups):
    _, warpgroup, sm90 = hopper()
    K = warpgroup.OperandMajorMode.K
    with target("sm_90a"):
        mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32,
                                          (warpgroups, 1, 1), tiler_mn=(64, n))
    assert mma.size == 128 * warpgroups
    assert mma.shape_mnk == (64, n, 16)          # the atom's; the tile is get_tile_size
    assert tuple(mma.get_tile_size(i) for i in range(3)) == (64 * warpgroups, n, 16)
    tv = mma.get_layoutC_TV()
    M = 64 * warpgroups
    seen = set()
    for t in range(128 * warpgroups):
        for i in range(n // 2):
            idx = tv((t, i))
            r, c = wgmma_d_coord(t % 128, i)
            assert (idx % M, idx // M) == (64 * (t // 128) + r, c), (t, i)
            seen.add(idx)
    assert len(seen) == M * n          # a bijection onto the tile


def test_tiled_mma_a_b_partitions_are_whole_tiles():
    # A from shared memory: every thread of a warpgroup names its warpgroup's whole (64, 16) A tile; B's (N, 16)
    # tile is the same for all threads.
    _, warpgroup, sm90 = hopper()
    K = warpgroup.OperandMajorMode.K
    with target("sm_90a"):
        mma = sm90.make_trivial_tiled_mma(cutlass.BFloat16, cutlass.BFloat16, K, K, cutlass.Float32, (2, 1, 1),
                                          tiler_mn=(64, 64))
    tva, tvb = mma.get_layoutA_TV(), mma.get_layoutB_TV()
    for t in (0, 1, 77, 127, 128, 200, 255):
        a = sorted(tva((t, v)) for v in range(64 * 16))
        wg = t // 128
        assert a == sorted(64 * wg + m + 128 * k for k in range(16) for m in range(64))
        b = sorted(tvb((t, v)) for v in range(64 * 16))
        assert b == list(range(64 * 16))
    # partition_A of an (M, K, stages) tile: (MMA, MMA_M, MMA_K, stages), value v of k-block kb at (m, 16 kb + k).
    cA = cute.make_identity_tensor((128, 64, 3))
    for t in (5, 130):
        p = mma.get_slice(t).partition_A(cA)
        assert cute.size(p, mode=[0]) == 64 * 16 and cute.size(p, mode=[1]) == 1
        assert cute.size(p, mode=[2]) == 4 and cute.size(p, mode=[3]) == 3
        for v in (0, 1, 63, 64, 1023):
            for kb in range(4):
                assert p[(v, 0, kb, 2)] == (64 * (t // 128) + v % 64, 16 * kb + v // 64, 2)


def test_accumulate_field_set_in_a_dynamic_loop_is_carried():
    """tiled_mma.set(Field.ACCUMULATE, True) inside a run-time loop: the first trip computes D = A * B, the
    following ones accumulate, so the wgmma's scale-d is a value carried around the loop, not the constant the
    loop body was traced with."""
    import numpy as np
    from warpweave.cute.runtime import from_dlpack

    _, warpgroup, sm90 = hopper()
    K = warpgroup.OperandMajorMode.K
    seen = {}

    @cute.kernel
    def k(g: cute.Tensor, trips: cutlass.Int32):
        mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32, (1, 1, 1),
                                          tiler_mn=(64, 64))
        layout = sm90.make_smem_layout_a(cutlass.utils.LayoutEnum.ROW_MAJOR, (64, 64, 64), cutlass.Float16, 1)
        smem = cutlass.utils.SmemAllocator()
        sA = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, swizzle=layout.inner)
        sB = smem.allocate_tensor(cutlass.Float16, layout.outer, 1024, swizzle=layout.inner)
        tidx, _, _ = cute.arch.thread_idx()
        thr = mma.get_slice(tidx)
        tCrA = mma.make_fragment_A(thr.partition_A(sA))
        tCrB = mma.make_fragment_B(thr.partition_B(sB))
        acc = cute.make_rmem_tensor(mma.partition_shape_C((64, 64)), cutlass.Float32)
        mma.set(warpgroup.Field.ACCUMULATE, False)
        for _ in cutlass.range(trips, unroll=1):
            warpgroup.fence()
            cute.gemm(mma, acc, tCrA[None, None, 0, 0], tCrB[None, None, 0, 0], acc)
            mma.set(warpgroup.Field.ACCUMULATE, True)
            warpgroup.commit_group()
            warpgroup.wait_group(0)
        seen["after"] = mma.get(warpgroup.Field.ACCUMULATE)
        g[tidx] = acc[0]

    @cute.jit
    def h(a, trips: cutlass.Int32):
        k(a, trips).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_90a"):
        compiled = cute.compile(h, from_dlpack(np.zeros(128, np.float32)), 3)
    assert isinstance(seen["after"], cutlass.Boolean) and not isinstance(seen["after"], bool)
    hgmma = [line for line in _core.disassemble_sass(compiled.cubin).splitlines() if "HGMMA" in line]
    # unroll=1 keeps one copy of the loop's body (nothing peeled): its wgmma's scale-d is the carried flag, a
    # predicate the loop computes; traced with the constant False it would overwrite (!UPT, or no C: RZ).
    assert len(hgmma) == 1 and re.search(r", UP[0-6], ", hgmma[0]) and ", RZ," not in hgmma[0], hgmma


# --- shared-memory descriptors --------------------------------------------------------------------------------------

class _Tile:
    def __init__(self, layout, dtype):
        self.layout, self.element_type = layout, dtype


def _form(layout, dtype, values):
    from warpweave.backends.hopper import wgmma

    return wgmma.SmemDescriptorKind().form({"name": "a", "values": values}, _Tile(layout, dtype))


def _mma_tile(staged, mn, k_elems):
    """The (MN, K) layout of the first wgmma tile (k-block 0, stage 0) of an (MN, K, stages) smem layout, as
    partition_A makes it: the stage composed with the (MN, K) corner of its (rows, K) domain."""
    rows = cute.size(staged.outer, mode=[0])
    outer = cute.composition(cute.slice_(staged.outer, (None, None, 0)),
                             cute.make_layout((mn, k_elems), stride=(1, rows)))
    return cute.make_composed_layout(staged.inner, 0, outer)


@pytest.mark.parametrize("dtype", [cutlass.Float16, cutlass.BFloat16])
@pytest.mark.parametrize("major,tile_k,want_swizzle", [("k", 64, 128), ("k", 32, 64), ("k", 16, 32),
                                                       ("m", 64, 128), ("m", 64, 128)])
def test_descriptor_of_helper_layouts(dtype, major, tile_k, want_swizzle):
    _, _, sm90 = hopper()
    layout = cutlass.utils.LayoutEnum.ROW_MAJOR if major == "k" else cutlass.utils.LayoutEnum.COL_MAJOR
    staged = sm90.make_smem_layout_a(layout, (128, 128, tile_k), dtype, 3)
    got = _form(_mma_tile(staged, 64, 16), dtype, 64 * 16)
    if major == "k":
        # rows of tile_k elements (tile_k * 2 bytes = the swizzle), 8-row groups 8 rows apart
        assert got == ("K", want_swizzle, 16, 8 * want_swizzle)
    else:
        # 64 M-contiguous elements per row of K; 8 rows of K apart = 1024 bytes; M = 64 fits one swizzle row
        assert got == ("MN", 128, 16, 1024)


def test_descriptor_of_mn_major_b_spans_swizzle_rows():
    # B (N=128, K), N-major: two 64-element swizzle rows along N, LBO between them = one (64, tile_k) column block.
    _, _, sm90 = hopper()
    staged = sm90.make_smem_layout_b(cutlass.utils.LayoutEnum.COL_MAJOR, (128, 128, 64), cutlass.Float16, 2)
    assert _form(_mma_tile(staged, 128, 16), cutlass.Float16, 128 * 16) == ("MN", 128, 64 * 64 * 2, 1024)


def test_descriptor_of_the_probe_layout():
    # The conformance probe's no-swizzle K-major layout (LBO 128, SBO 256 bytes), which ran on the H200:
    # element (row, k) of fp16 at (row % 8) * 8 + k % 8 + (row // 8) * 128 + (k // 8) * 64 elements.
    lay = cute.make_layout(((8, 8), (8, 2)), stride=((8, 128), (1, 64)))
    assert _form(lay, cutlass.Float16, 64 * 16) == ("K", 0, 128, 256)


def test_descriptor_refuses_unreadable_layouts():
    from warpweave import ext

    # row-major with a padded pitch (no canonical form), and a swizzle TMA/wgmma do not use
    with pytest.raises(ext.DSLValueError, match="not a layout wgmma reads"):
        _form(cute.make_layout((64, 16), stride=(24, 1)), cutlass.Float16, 64 * 16)
    with pytest.raises(ext.DSLValueError, match="swizzle"):
        _form(cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout((64, 16), stride=(64, 1))),
              cutlass.Float16, 64 * 16)
    with pytest.raises(ext.DSLValueError, match="neither along"):
        _form(cute.make_layout((64, 16), stride=(16 * 3, 3)), cutlass.Float16, 64 * 16)


def test_staged_layouts_slice_to_a_stage_and_name_their_major():
    _, warpgroup, sm90 = hopper()
    staged = sm90.make_smem_layout_b(cutlass.utils.LayoutEnum.ROW_MAJOR, (128, 128, 64), cutlass.Float16, 4)
    for s in range(4):
        one = cute.slice_(staged, (None, None, s))
        assert str(one.inner) == str(staged.inner) and cute.size(one) == 128 * 64
        for c in ((0, 0), (5, 17), (127, 63)):
            assert one(c) == staged((c[0], c[1], s))       # the same swizzled offsets as the staged layout
    assert cutlass.utils.LayoutEnum.ROW_MAJOR.sm90_mma_major_mode() == warpgroup.OperandMajorMode.K
    assert cutlass.utils.LayoutEnum.COL_MAJOR.sm90_mma_major_mode() == warpgroup.OperandMajorMode.MN


def test_local_tile_projection_keeps_trailing_coordinates():
    # CuTe DSL tiles (M, K, L) with an (M, N, K) tiler, an (m, n, k, l) coordinate and proj=(1, None, 1): the l
    # past the projection's end selects the batch.
    t = cute.make_identity_tensor((300, 200, 3))
    g = cute.local_tile(t, (128, 128, 64), (2, 7, None, 1), proj=(1, None, 1))
    assert g.shape == (128, 64, 4)
    assert g[(5, 6, 3)] == (2 * 128 + 5, 3 * 64 + 6, 1)


def test_smem_store_op_per_type():
    _, _, sm90 = hopper()
    row, col = cutlass.utils.LayoutEnum.ROW_MAJOR, cutlass.utils.LayoutEnum.COL_MAJOR
    with target("sm_90a"):
        assert sm90.sm90_get_smem_store_op(row, cutlass.Float16, cutlass.Float32).manifest["id"] == \
            "hopper.stmatrix.x4.b16"
        assert sm90.sm90_get_smem_store_op(col, cutlass.BFloat16, cutlass.Float32).manifest["id"] == \
            "hopper.stmatrix.x4.trans.b16"
        assert sm90.sm90_get_smem_store_op(row, cutlass.Float32, cutlass.Float32).manifest is None


# --- TMA atoms ------------------------------------------------------------------------------------------------------

def _atoms(layout_a, mnkl=(256, 192, 128, 2), tile=(128, 64), multicast=1, dtype=cutlass.Float16):
    """make_tiled_tma_atom in a @cute.jit function compiled with fake tensors; returns what it made."""
    cpasync, _, sm90 = hopper()
    made = {}
    M, N, K, L = mnkl

    @cute.jit
    def host(mA: cute.Tensor):
        staged = sm90.make_smem_layout_a(layout_a, (tile[0], 128, tile[1]), dtype, 2)
        one = cute.make_composed_layout(staged.inner, 0, cute.slice_(staged.outer, (None, None, 0)))
        op = cpasync.CopyBulkTensorTileG2SMulticastOp() if multicast > 1 else cpasync.CopyBulkTensorTileG2SOp()
        atom, tensor = cpasync.make_tiled_tma_atom(op, mA, one, tile, num_multicast=multicast)
        made["atom"], made["tensor"] = atom, tensor
        made["parts"] = [cpasync.tma_partition(atom, i, cute.make_layout(multicast), tensor, tensor)[1]
                         for i in range(multicast)]

    k_major = layout_a == cutlass.utils.LayoutEnum.ROW_MAJOR
    a = dense_gemm.fake_arguments("k" if k_major else "m", "k", "n", dtype, dtype, (M, N, K, L))[0]
    with target("sm_90a"):
        cute.compile(host, a)
    return made


def test_tma_atom_k_major():
    made = _atoms(cutlass.utils.LayoutEnum.ROW_MAJOR)
    atom = made["atom"]
    assert atom.dims == [1, 0, 2]                 # K innermost, then M, then L
    assert atom.box == (64, 128, 1) and atom.swizzle == 128
    assert atom.boxes == [((0, 0, 0), 0)]         # one box covers the (128, 64) tile
    assert atom.smem_bytes == 128 * 64 * 2
    h = atom.tma_desc
    assert h.producer.name == "hopper.tma_descriptor" and h.size == 128
    assert h.attrs["data_type"] == "f16" and h.attrs["swizzle"] == "128B"
    assert (h.attrs["box0"], h.attrs["box1"], h.attrs["box2"]) == (64, 128, 1)


def test_tma_atom_m_major_tiles_boxes_along_m():
    made = _atoms(cutlass.utils.LayoutEnum.COL_MAJOR)
    atom = made["atom"]
    assert atom.dims == [0, 1, 2]
    assert atom.box == (64, 64, 1)
    # two 64-row boxes along M, the second one (64 x 64) elements further in shared memory
    assert atom.boxes == [((0, 0, 0), 0), ((64, 0, 0), 64 * 64)]


def test_tma_partition_multicast_shares_rows():
    made = _atoms(cutlass.utils.LayoutEnum.ROW_MAJOR, multicast=2)
    atom = made["atom"]
    assert atom.num_multicast == 2 and atom.box == (64, 64, 1)      # each CTA loads half of the 128 rows
    assert atom.tma_desc.attrs["box1"] == 64
    first = [p[0] for p in made["parts"]]
    assert first[0] == (0, 0, 0) and first[1] == (64, 0, 0)          # CTA 1 starts 64 rows (M) further


def test_tma_host_descriptor_checks_the_tensor():
    from warpweave.backends.hopper import tma

    class T:
        data_ptr = 0x10000
        shape = (100, 30, 1)
        stride = (30, 1, 3000)

    attrs = dict(data_type="f16", rank=3, swizzle="128B", dims="1,0,2", ebytes=2, box0=64, box1=128, box2=1,
                 backend="hopper", hook="encode_tma_descriptor")
    with pytest.raises(ValueError, match="stride of 60 bytes"):
        tma.encode_descriptor(T(), **attrs)
    T.stride = (32, 2, 3200)
    with pytest.raises(ValueError, match="contiguous"):
        tma.encode_descriptor(T(), **attrs)
    # A mode of extent 1 (torch gives it stride 1) is never stepped along: its stride does not matter. Without a
    # driver the encoding itself then fails, after every check of the tensor passed.
    T.shape, T.stride = (100, 32, 1), (32, 1, 1)
    try:
        tma.encode_descriptor(T(), **attrs)
    except ValueError as e:
        pytest.fail(f"an extent-1 mode's stride was checked: {e}")
    except RuntimeError as e:
        assert "driver" in str(e) or "libcuda" in str(e) or "cuTensorMap" in str(e), e


def _call_symbols(h, T):
    """The host symbols of a call with tensor T, as the call path gives them: the atom's view is the argument
    itself here, so each runtime extent or stride that is one symbol is T's extent or stride of that mode."""
    order = [int(x) for x in h.attrs["dims"].split(",")]
    env = {}
    for i, mode in enumerate(order):
        for key, val in ((f"extent{i}", T.shape[mode]), (f"gstride{i}", T.stride[mode])):
            v = h.dynamic.get(key)
            if v is not None and len(_core.symbols_of(v)) == 1:
                env[int(_core.symbols_of(v)[0])] = val
    return env


@pytest.mark.parametrize("k_major", [True, False])
def test_tma_host_descriptor_attributes(monkeypatch, k_major):
    """What the host argument asks the plugin's encode_tma_descriptor for, per call: dimensions innermost first
    (the contiguous mode, then the others in order), byte strides of the outer ones, the boxes, the swizzle and the
    L2 promotion of whole 128-byte lines."""
    from warpweave.backends.hopper import tma

    calls = []
    monkeypatch.setattr(tma.ext, "host_call", lambda *a: calls.append(a) or bytes(128))
    M, K, L = 200, 264, 3

    class T:
        data_ptr = 0x7f0000001000
        shape = (M, K, L)
        stride = (K, 1, M * K) if k_major else (1, M, M * K)

    made = _atoms(cutlass.utils.LayoutEnum.ROW_MAJOR if k_major else cutlass.utils.LayoutEnum.COL_MAJOR,
                  mnkl=(M, 64, K, L))
    h = made["atom"].tma_desc
    env = _call_symbols(h, T)
    assert len(h.value(T(), env)) == 128
    assert h.value(T(), env) and len(calls) == 1                 # memoised on the tensor's address and layout
    backend, hook, attrs, size = calls[0]
    assert (backend, hook, size) == ("hopper", "encode_tma_descriptor", 128)
    inner, outer = (K, M) if k_major else (M, K)
    assert attrs == {"data_type": "f16", "rank": 3, "address": T.data_ptr, "swizzle": "128B", "l2_promotion": "128B",
                     "dim0": inner, "dim1": outer, "dim2": L, "stride1": inner * 2, "stride2": M * K * 2,
                     "box0": 64, "box1": 128 if k_major else 64, "box2": 1}


def test_tma_atom_errors_name_the_user_line():
    from warpweave import ext

    cpasync, _, _ = hopper()

    @cute.jit
    def bad_swizzle(mA: cute.Tensor):
        lay = cute.make_composed_layout(cute.make_swizzle(2, 4, 3), 0, cute.make_layout((64, 64), stride=(64, 1)))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, lay, (64, 64))  # the line named

    a = dense_gemm.fake_arguments("k", "k", "n", cutlass.Float16, cutlass.Float16)[0]
    with target("sm_90a"), pytest.raises(ext.DSLError) as e:
        cute.compile(bad_swizzle, a)
    assert "not one TMA applies" in str(e.value) and "test_hopper_gemm.py" in str(e.value)

    @cute.jit
    def bad_multicast(mA: cute.Tensor):
        lay = cute.make_layout((64, 64), stride=(64, 1))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), mA, lay, (64, 64), num_multicast=2)

    with target("sm_90a"), pytest.raises(ext.DSLError, match="num_multicast=2 needs"):
        cute.compile(bad_multicast, a)


# --- the stmatrix epilogue's partition -------------------------------------------------------------------------------

@pytest.mark.parametrize("transpose,tile,warpgroups", [(False, (128, 128), 2), (True, (128, 128), 2),
                                                       (False, (64, 256), 1), (True, (64, 64), 1)])
def test_stmatrix_tiled_copy_of_the_wgmma_accumulators(transpose, tile, warpgroups):
    """make_tiled_copy_C of stmatrix.x4 over the warpgroup MMA, simulated with the PTX ISA's stmatrix semantics:
    lane 8 j + i of a warp gives the address of row i of matrix j, and row i's elements c come from lane
    4 i + c / 2, register j, half c % 2 (transposed: row i is column i of the registers' matrix, element c from
    lane 4 c + i / 2, half i % 2). Every element of the tile must land where its accumulator belongs, once."""
    _, warpgroup, sm90 = hopper()
    K = warpgroup.OperandMajorMode.K
    bm, bn = tile
    with target("sm_90a"):
        mma = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, K, K, cutlass.Float32,
                                          (warpgroups, 1, 1), tiler_mn=(64, bn))
        atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(transpose, 4), cutlass.Float16)
        r2s = cute.make_tiled_copy_C(atom, mma)
    cS = cute.make_identity_tensor((bm, bn))
    regs, dst = {}, {}
    for t in range(128 * warpgroups):
        pc = mma.get_slice(t).partition_C(cS)               # accumulator index -> (m, n)
        rl = r2s.retile_layout(cute.make_layout(pc.shape))  # the copy's value q -> accumulator index
        regs[t] = [tuple(pc[rl(q)][:2]) for q in range(cute.size(rl))]
        d = r2s.get_slice(t).partition_D(cS)
        dst[t] = [tuple(d[q][:2]) for q in range(cute.size(d))]
    assert len(regs[0]) == len(dst[0]) == bm * bn // (128 * warpgroups)
    seen = set()
    for w in range(4 * warpgroups):
        for r in range(len(regs[0]) // 8):
            for j in range(4):
                for i in range(8):
                    m0, n0 = dst[w * 32 + 8 * j + i][8 * r]
                    for c in range(8):
                        want = (m0 + c, n0) if transpose else (m0, n0 + c)
                        assert dst[w * 32 + 8 * j + i][8 * r + c] == want      # the row is contiguous
                        lane, q = (4 * c + i // 2, 8 * r + 2 * j + i % 2) if transpose else \
                            (4 * i + c // 2, 8 * r + 2 * j + c % 2)
                        assert regs[w * 32 + lane][q] == want
                        seen.add(want)
    assert len(seen) == bm * bn


# --- cluster helpers, proxy fences, TMA store pipeline ---------------------------------------------------------------

def _ptx(body, cluster=(2, 1, 1)):
    import numpy as np
    from warpweave.cute.runtime import from_dlpack

    @cute.kernel
    def k(g: cute.Tensor):
        body(g)

    @cute.jit
    def h(a):
        k(a).launch(grid=[2 * cluster[0], cluster[1], 1], block=[128, 1, 1], cluster=list(cluster))

    with target("sm_90a"):
        return cute.compile(h, from_dlpack(np.zeros(64, np.int32))).info["ptx"]


def test_cluster_helpers_have_cute_dsl_signatures():
    def body(g):
        x, y, z = cute.arch.block_in_cluster_idx()
        cx, cy, _ = cute.arch.cluster_idx()
        dx, dy, _ = cute.arch.cluster_dim()
        nx, _, _ = cute.arch.block_in_cluster_dim()
        g[0] = x + y + z + cx + cy + dx + dy + nx + cute.arch.block_idx_in_cluster() + cute.arch.cluster_idx("y")
        cute.arch.fence_proxy("async.shared", space="cta")
        cute.arch.fence_proxy("async.global")

    ptx = _ptx(body)
    for reg in ("%cluster_ctaid.x", "%cluster_ctaid.y", "%cluster_ctaid.z", "%clusterid.x", "%clusterid.y",
                "%nclusterid.x", "%cluster_nctaid.x", "%cluster_ctarank"):
        assert reg in ptx, reg
    assert "fence.proxy.async.shared::cta;" in ptx and "fence.proxy.async.global;" in ptx


@pytest.mark.parametrize("cluster", [(1, 1), (2, 1), (2, 2)])
def test_pipeline_tma_async(cluster):
    """The TMA pipeline's barriers and signals: full barriers expect one arrival (the elected producer lane's
    expect_tx of tx_count bytes), empty ones (consumer warps) x (peer CTAs); consumers release in the peer CTAs
    through mapa and remote arrivals when the cluster has several CTAs."""
    import warpweave.pipeline as pipeline

    cm, cn = cluster
    peers = cm + cn - 1

    def body(g):
        smem = cutlass.utils.SmemAllocator()
        bars = smem.allocate_array(cutlass.Int64, 8, byte_alignment=8)
        p = pipeline.PipelineTmaAsync.create(
            barrier_storage=bars, num_stages=4, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4 * peers), tx_count=24576,
            cta_layout_vmnk=cute.make_layout((1, cm, cn, 1)))
        st = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 4)
        p.producer_acquire(st)
        cs = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 4)
        ok = p.consumer_try_wait(cs)
        p.consumer_wait(cs, ok)
        p.consumer_release(cs)

    ptx = _ptx(body, cluster=(cm, cn, 1))
    inits = re.findall(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], %r(\d+);", ptx)
    assert len(inits) == 8
    assert re.search(r"mov\.(?:b|u)32\s+%r\d+, 1;", ptx) and str(4 * peers) in ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx and "24576" in ptx
    assert "elect.sync" in ptx and "fence.mbarrier_init.release.cluster;" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    # Remote arrivals release at CTA scope (the default): a cluster-scope release is a MEMBAR.ALL.GPU per arrival.
    remote = "mbarrier.arrive.shared::cluster.b64" in ptx
    assert remote == (cluster != (1, 1)) and ("mapa.shared::cluster.u32" in ptx) == remote
    assert "mbarrier.arrive.release.cluster" not in ptx
    if cluster == (1, 1):
        assert "mbarrier.arrive.shared::cta.b64" in ptx


def test_pipeline_tma_async_refuses_bad_arguments():
    import warpweave.pipeline as pipeline

    def make(**kw):
        def body(g):
            smem = cutlass.utils.SmemAllocator()
            bars = smem.allocate_array(cutlass.Int64, 4, byte_alignment=8)
            args = dict(barrier_storage=bars, num_stages=2, producer_group=pipeline.CooperativeGroup(
                pipeline.Agent.Thread), consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 4),
                tx_count=1024)
            args.update(kw)
            pipeline.PipelineTmaAsync.create(**args)
        return _ptx(body, cluster=(1, 1, 1))

    with pytest.raises(Exception, match="tx_count"):
        make(tx_count=0)
    with pytest.raises(Exception, match=r"\(1, M, N, 1\)"):
        make(cta_layout_vmnk=cute.make_layout((2, 2)))


def test_fence_proxy_refuses_unknown_kinds():
    from warpweave import ext

    with pytest.raises(ext.DSLError, match="the fences are"):
        _ptx(lambda g: cute.arch.fence_proxy("async.shared", space="gpu"))


def test_tma_store_pipeline_and_named_sync():
    import warpweave.pipeline as pipeline

    def body(g):
        pipeline.sync(barrier_id=1, num_threads=128)
        store = pipeline.PipelineTmaStore.create(num_stages=3)
        store.producer_commit()
        store.producer_acquire()
        store.producer_tail()

    ptx = _ptx(body, cluster=(1, 1, 1))
    assert re.search(r"bar\.sync\s+1, 128;", ptx)
    assert ptx.count("cp.async.bulk.commit_group;") == 1
    assert "cp.async.bulk.wait_group.read 2;" in ptx and "cp.async.bulk.wait_group.read 0;" in ptx
    with pytest.raises(ValueError, match="at least one stage"):
        pipeline.PipelineTmaStore.create(num_stages=0)


# --- the example on sm_90a ------------------------------------------------------------------------------------------


def wgmma_gaps(cubin):
    """The opcodes between consecutive HGMMA/QGMMA of one wgmma group (the group ends at the one carrying gsb0)."""
    gaps, cur = [], None
    for line in _core.disassemble_sass(cubin).splitlines():
        m = re.match(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", line)
        if not m:
            continue
        if m.group(1).startswith(("HGMMA", "QGMMA")):
            if cur is not None:
                gaps.append(cur)
            cur = None if "gsb0" in line else []
        elif cur is not None:
            cur.append(m.group(1))
    return gaps


def ptxas_report(compiled):
    log = compiled.info["jit_log"]
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    regs = re.search(r"Used (\d+) registers", log)
    assert m and regs, log
    return int(m.group(1)), int(m.group(2)), int(m.group(3)), int(regs.group(1))


SASS_CASES = [
    # majors, C type, tile, cluster, epilogue, TMA loads of A per copy, of B per copy, TMA stores of C (boxes)
    ("kkn", cutlass.Float16, (128, 128), (1, 1), "tma", 1, 1, 2),
    ("mnm", cutlass.Float16, (128, 128), (1, 1), "tma", 2, 2, 2),
    ("kkn", cutlass.BFloat16, (64, 256), (1, 1), "tma", 1, 1, 4),
    ("kkn", cutlass.Float16, (128, 128), (2, 1), "tma", 1, 1, 2),
    ("knn", cutlass.Float16, (128, 256), (1, 2), "tma", 1, 4, 4),
    ("kkn", cutlass.Float32, (128, 128), (1, 1), "tma", 1, 1, 4),
    ("mnm", cutlass.Float32, (128, 128), (1, 1), "tma", 2, 2, 4),
    ("kkn", cutlass.Float16, (128, 128), (1, 1), "registers", 1, 1, 0),
]


@SASS
@pytest.mark.parametrize("majors,c_dtype,tile,cluster,epilogue,tma_a,tma_b,tma_c", SASS_CASES)
def test_dense_gemm_sass(majors, c_dtype, tile, cluster, epilogue, tma_a, tma_b, tma_c):
    gemm = dense_gemm.HopperDenseGemm(cutlass.Float32, tile, cluster, epilogue=epilogue)
    compiled = dense_gemm.compile_only(gemm, majors[0], majors[1], majors[2], cutlass.Float16, c_dtype,
                                       options="-v")
    print(compiled.info["jit_log"])
    ops = sass_opcodes(compiled.cubin)
    count = lambda prefix: sum(1 for o in ops if o.startswith(prefix))  # noqa: E731
    # Four k-blocks of 16 per 64-wide k-tile, issued in the peeled first k-tile and in the main loop.
    assert count(f"HGMMA.64x{tile[1]}x16.F32") == 8, ops
    # The two load sites (prologue, main loop); multicast for the operand shared across the cluster.
    mc_a, mc_b = cluster[1] > 1, cluster[0] > 1
    assert count("UTMALDG.3D.MULTICAST") == 2 * (tma_a * mc_a + tma_b * mc_b)
    assert count("UTMALDG.3D") == 2 * (tma_a + tma_b)
    # Two mbarriers per stage; as many 64-wide k-tile stages as shared memory holds (C's tile reuses them).
    stage_bytes = (tile[0] + tile[1]) * 64 * 2
    stages = min(8, (232448 - 1024) // stage_bytes)
    assert count("SYNCS.EXCH.64") == 2 * stages
    assert count("SYNCS.PHASECHK.TRANS64") >= 2 and count("SYNCS.ARRIVE") >= 2
    if cluster != (1, 1):
        assert count("SYNCS.ARRIVE.TRANS64.RED") >= 1     # stages released in the peer CTAs
    assert count("WARPGROUP.ARRIVE") == 2 and count("WARPGROUP.DEPBAR.LE") == 2
    assert count("UTMASTG.3D") == tma_c
    per_thread = tile[0] * tile[1] // gemm.num_threads
    if epilogue == "tma" and c_dtype.width == 16:
        # stmatrix: eight values (four 8x8 matrices per warp) per instruction, transposed into an M-major tile
        form = "STSM.16.M88.4" if majors[2] == "n" else "STSM.16.MT88.4"
        assert count(form) == per_thread // 8 and count("STS.") == 0 and count("STG") == 0
    elif epilogue == "tma":
        # fp32 C: adjacent column pairs with 64-bit stores into an N-major tile, one value at a time into M-major
        assert count("STS") == (per_thread // 2 if majors[2] == "n" else per_thread) and count("STG") == 0
    else:
        assert count("STG.E.U16") == tile[0] * tile[1] // gemm.num_threads
    assert not any(o.startswith(("LDL", "STL")) for o in ops)
    # The wgmma of a k-tile issue back to back: their descriptors are in uniform registers already (no R2UR moves
    # between them), and no memory barrier is waited on between k-tiles; the one MEMBAR.ALL.GPU allowed is the
    # cluster barrier's release before the CTA leaves.
    for between in wgmma_gaps(compiled.cubin):
        assert not any(o.startswith(("R2UR", "MEMBAR")) for o in between), between
    assert count("MEMBAR.ALL.GPU") <= (cluster != (1, 1))
    stack, spill_st, spill_ld, regs = ptxas_report(compiled)
    assert (stack, spill_st, spill_ld) == (0, 0, 0), compiled.info["jit_log"]
    assert "wgmma" not in compiled.info["jit_log"].lower() or "serializ" not in compiled.info["jit_log"].lower()
    assert regs <= 255


@SASS
@pytest.mark.parametrize("a,b", [(cutlass.Float8E4M3FN, cutlass.Float8E4M3FN),
                                 (cutlass.Float8E4M3FN, cutlass.Float8E5M2)])
def test_dense_gemm_fp8_sass(a, b):
    gemm = dense_gemm.HopperDenseGemm(cutlass.Float32, (128, 256), (2, 1))
    compiled = dense_gemm.compile_only(gemm, "k", "k", "n", a, cutlass.BFloat16, options="-v", b_dtype=b)
    print(compiled.info["jit_log"])
    ops = sass_opcodes(compiled.cubin)
    names = {cutlass.Float8E4M3FN: "E4M3", cutlass.Float8E5M2: "E5M2"}
    # 128 bytes of K per k-tile: four k-blocks of 32 fp8 values
    assert sum(o == f"QGMMA.64x256x32.F32.{names[a]}.{names[b]}" for o in ops) == 8
    assert sum(o == "UTMALDG.3D.MULTICAST" for o in ops) == 2     # B shared by the two CTAs of a cluster column
    assert ptxas_report(compiled)[:3] == (0, 0, 0)


def test_dense_gemm_fp8_must_be_k_major():
    gemm = dense_gemm.HopperDenseGemm(cutlass.Float32, (128, 128))
    with pytest.raises(Exception, match="8-bit inputs are K-major"):
        dense_gemm.compile_only(gemm, "m", "k", "n", cutlass.Float8E4M3FN, cutlass.Float16)


def test_dense_gemm_compiles_without_a_gpu(capsys):
    if os.environ.get("WARPWEAVE_ARCH") is None and _core.driver_available() and _core.device_count() > 0:
        pytest.skip("a GPU is present: the example runs instead (see the GPU tests)")
    assert dense_gemm.main(["--cluster_shape_mn", "2,1", "--a_dtype", "BFloat16", "--b_dtype", "BFloat16"]) == 0
    assert "compiled dense_gemm for sm_90a" in capsys.readouterr().out


def test_dense_gemm_refuses_bad_configurations():
    with pytest.raises(ValueError, match="tile M"):
        dense_gemm.HopperDenseGemm(cutlass.Float32, (96, 128))
    with pytest.raises(ValueError, match="tile N"):
        dense_gemm.HopperDenseGemm(cutlass.Float32, (128, 120))
    with pytest.raises(ValueError, match="cluster"):
        dense_gemm.HopperDenseGemm(cutlass.Float32, (128, 128), (4, 4))
    with pytest.raises(ValueError, match="epilogue"):
        dense_gemm.HopperDenseGemm(cutlass.Float32, (128, 128), epilogue="stsm")


# --- on the GPU -----------------------------------------------------------------------------------------------------

GPU_CASES = [
    # mnkl, majors, ab, c, tile, cluster[, epilogue]
    ((200, 136, 264, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1), "registers"),
    ((200, 136, 264, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1)),
    ((200, 136, 264, 1), "kkn", cutlass.BFloat16, cutlass.BFloat16, (128, 128), (1, 1)),
    ((136, 200, 520, 1), "mnm", cutlass.Float16, cutlass.Float32, (128, 128), (1, 1)),
    ((264, 72, 1000, 3), "knn", cutlass.BFloat16, cutlass.BFloat16, (64, 256), (1, 1)),
    ((1000, 520, 136, 1), "mkn", cutlass.Float16, cutlass.Float16, (128, 256), (1, 1)),
    ((520, 264, 400, 2), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (2, 1)),
    ((520, 264, 400, 1), "mnn", cutlass.BFloat16, cutlass.BFloat16, (128, 128), (1, 2)),
    ((8, 16, 8, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1)),
    ((1024, 1024, 2048, 1), "kkn", cutlass.Float16, cutlass.Float16, (128, 256), (2, 1)),
    ((200, 136, 264, 2), "kkm", cutlass.Float16, cutlass.Float16, (128, 128), (1, 1)),       # stmatrix.trans
    ((200, 136, 264, 1), "kkn", cutlass.BFloat16, cutlass.Float32, (128, 128), (1, 1)),     # fp32 C
    ((200, 136, 272, 2), "kkn", cutlass.Float8E4M3FN, cutlass.Float16, (128, 128), (1, 1)),  # K: 16-byte rows
    ((520, 264, 1040, 1), "kkn", cutlass.Float8E5M2, cutlass.BFloat16, (128, 256), (2, 1)),
]


@requires_gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "-".join(str(x) for x in c))
def test_dense_gemm_matches_torch(case):
    mnkl, majors, ab, c, tile, cluster = case[:6]
    epilogue = case[6] if len(case) > 6 else "tma"
    dense_gemm.run(mnkl, ab, ab, c, cutlass.Float32, majors[0], majors[1], majors[2], tile, cluster, iterations=0,
                   epilogue=epilogue)


def test_tma_atom_leaves_out_modes_of_one_element():
    """A tensor of six modes, two of them of one element that the tile takes one of (QuACK's W4 operands), where a
    tensor map holds at most five: their coordinate is always 0, and the map holds the four others (a tensor that
    fits keeps its modes of one element, as Blackwell's fp4 operands (m, k, 1) do)."""
    cpasync, _, _ = hopper()
    from warpweave.cute.runtime import make_fake_compact_tensor
    made = {}

    @cute.jit
    def host(m: cute.Tensor):
        g = cute.make_tensor(m.iterator, cute.make_layout((256, 8, 1, 16, 32, 1),
                                                          stride=(1, 256, 65536, 65536, 2048, 1)))
        smem = cute.make_layout((256, 8, 1), stride=(1, 256, 2048))
        made["atom"], made["tensor"] = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), g, smem,
                                                                   (256, 8, 1))

    with target("sm_90a"):
        cute.compile(host, make_fake_compact_tensor(cutlass.Uint8, (1 << 21,)))
    atom = made["atom"]
    assert atom.dims == [0, 1, 3, 4] and atom.box == (256, 8, 1, 1)
    assert [atom.tma_desc.attrs[f"extent{i}"] for i in range(4)] == [256, 8, 16, 32]
