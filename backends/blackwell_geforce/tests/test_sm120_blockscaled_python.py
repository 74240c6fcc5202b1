"""The consumer Blackwell backend's Python: CuTe DSL's names of the block-scaled warp-level GEMM (CPU only).

Layouts are compared with what CuTe DSL 4.8.1 gives for the same calls on sm_120a (recorded from its compile-only
runs): the tile permutation, the scale factors' shared-memory layouts and their thread-value layouts.
"""
from __future__ import annotations

import pytest
from dsl_helpers import fresh_compilations, sass_opcodes, target  # noqa: F401

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave._dsl.base import trace
from warpweave._dsl.base.errors import DSLValueError

W = cute.nvgpu.warp


def _sm120():
    return trace.tracing(trace.TraceState(target={"name": "sm_120a"}))


def _ops():
    return {"nvf4": (W.MmaMXF4NVF4Op(cutlass.Float4E2M1FN, cutlass.Float32, cutlass.Float8E4M3FN), 16, False),
            "mxf4": (W.MmaMXF4Op(cutlass.Float4E2M1FN, cutlass.Float32, cutlass.Float8E8M0FNU), 32, False),
            "mxf8": (W.MmaMXF8Op(cutlass.Float8E4M3FN, cutlass.Float32, cutlass.Float8E8M0FNU), 32, True)}


def _tiled(kind, tile=(128, 128, 128)):
    import warpweave.utils.blackwell_helpers as h

    op, vec, use = _ops()[kind]
    perm = h.get_permutation_mnk(tile, vec, use)
    return cute.make_tiled_mma(op, cute.make_layout((4, 2, 1)), permutation_mnk=perm), vec


def test_public_modules_serve_both_generations():
    """utils.blackwell_helpers and utils.blockscaled_layout are one module each for sm_100 and sm_120 names, as in
    CuTe DSL: this backend claims them (it extends blackwell) and takes the rest from datacenter Blackwell's."""
    import warpweave.utils.blackwell_helpers as h
    import warpweave.utils.blockscaled_layout as bl
    from warpweave._dsl.registry import backend_python
    from warpweave.backends.blackwell import blockscaled_layout as bw_layout, helpers as bw_helpers

    assert backend_python.claimant("warpweave.utils.blackwell_helpers") == "blackwell_geforce"
    assert h.get_permutation_mnk.__module__.endswith("blackwell_geforce.helpers")
    assert h.make_trivial_tiled_mma is bw_helpers.make_trivial_tiled_mma
    assert bl.tile_atom_to_shape_SF is bw_layout.tile_atom_to_shape_SF
    assert bl.sm120_make_smem_layout_sfa.__module__.endswith("blackwell_geforce.blockscaled_layout")
    with pytest.raises(AttributeError):
        h.no_such_helper


def test_supported_pairs_and_op_errors_name_the_users_line():
    from warpweave.cute.nvgpu.warp.mma import MXF8F6F4_SUPPORTED_PAIRS

    f4, e4, e5 = cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, cutlass.Float8E5M2
    assert MXF8F6F4_SUPPORTED_PAIRS == {(f4, e4), (f4, e5), (e4, f4), (e5, f4)}
    for a, b in ((e4, e5), (cutlass.Float6E2M3FN, e5), (e4, e4)):
        with pytest.raises(DSLValueError, match="not a supported pair") as e:
            W.MmaMXF8F6F4Op(a, b, cutlass.Float32, cutlass.Float8E8M0FNU)
        assert e.value.location[0] == __file__
    with pytest.raises(DSLValueError, match="MmaMXF8Op: A and B are Float8E4M3FN or Float8E5M2") as e:
        W.MmaMXF8Op(f4, cutlass.Float32, cutlass.Float8E8M0FNU)
    assert e.value.location[0] == __file__


@pytest.mark.parametrize("kind, ident", [
    ("nvf4", "blackwell_geforce.mma.m16n8k64.mxf4nvf4.f32.e2m1.e2m1.ue4m3"),
    ("mxf4", "blackwell_geforce.mma.m16n8k64.mxf4.f32.e2m1.e2m1.ue8m0"),
    ("mxf8", "blackwell_geforce.mma.m16n8k32.mxf8f6f4.f32.e4m3.e4m3.ue8m0")])
def test_ops_select_their_instances(kind, ident):
    with _sm120():
        assert _ops()[kind][0].entry()[1]["id"] == ident


# CuTe DSL 4.8.1, sm_120a, tile (128, 128, 128), atoms (4, 2, 1):
REFERENCE = {
    "nvf4": dict(sfa="(((32,4),1),((16,4),1,2),1):(((16,4),512),((0,1),4,512),1024)",
                 sfa_tv="((2,2,8,4,2),(64,(2,1))):((8,0,1,16,0),(128,(64,0)))",
                 sfb_tv="((4,8,4,2),(64,(2,1))):((0,1,0,16),(32,(8,0)))", k=64),
    "mxf4": dict(sfa="(((32,4),1),((32,2),2,1),1):(((16,4),512),((0,1),2,512),512)",
                 sfa_tv="((2,2,8,4,2),(64,(2,1))):((8,0,1,16,0),(128,(64,0)))",
                 sfb_tv="((4,8,4,2),(64,(2,1))):((0,1,0,16),(32,(8,0)))", k=64),
    "mxf8": dict(sfa="(((32,4),1),((32,1),4,1),1):(((16,4),512),((0,1),1,512),512)",
                 # CuTe DSL writes the 32 values of K as (32,1):(128,0); the same function
                 sfa_tv="((2,2,8,4,2),(32,(2,1))):((8,0,1,16,0),(128,(64,0)))",
                 sfb_tv="((4,8,4,2),(32,(2,1))):((0,1,0,16),(32,(8,0)))", k=32),
}


@pytest.mark.parametrize("kind", sorted(REFERENCE))
def test_layouts_match_cute_dsl(kind):
    import warpweave.utils.blackwell_helpers as h
    import warpweave.utils.blockscaled_layout as bl

    ref = REFERENCE[kind]
    with _sm120():
        tm, vec = _tiled(kind)
        perm = h.get_permutation_mnk((128, 128, 128), vec, kind == "mxf8")
        assert (perm[0], str(perm[1]), perm[2]) == (128, "(8,2,2):(1,16,8)", ref["k"])
        assert str(bl.sm120_make_smem_layout_sfa(tm, (128, 128, 128), vec, 1)) == ref["sfa"]
        assert str(bl.sm120_make_smem_layout_sfb(tm, (128, 128, 128), vec, 1)) == ref["sfa"]
        assert str(h.get_layoutSFA_TV(tm)) == ref["sfa_tv"]
        assert str(h.get_layoutSFB_TV(tm)) == ref["sfb_tv"]


@pytest.mark.parametrize("kind, tile, sfa, sfb", [
    ("nvf4", (256, 128, 256), "(((32,4),2),((16,4),1,4),2):(((16,4),512),((0,1),4,1024),4096)",
     "(((32,4),1),((16,4),1,4),2):(((16,4),512),((0,1),4,512),2048)"),
    ("mxf4", (128, 256, 512), "(((32,4),1),((32,2),2,4),2):(((16,4),512),((0,1),2,512),2048)",
     "(((32,4),2),((32,2),2,4),2):(((16,4),512),((0,1),2,1024),4096)"),
    ("mxf8", (256, 128, 256), "(((32,4),2),((32,1),4,2),2):(((16,4),512),((0,1),1,1024),2048)",
     "(((32,4),1),((32,1),4,2),2):(((16,4),512),((0,1),1,512),1024)")])
def test_staged_scale_factor_layouts_of_larger_tiles_match_cute_dsl(kind, tile, sfa, sfb):
    import warpweave.utils.blockscaled_layout as bl

    with _sm120():
        tm, vec = _tiled(kind, tile)
        assert str(bl.sm120_make_smem_layout_sfa(tm, tile, vec, 2)) == sfa
        assert str(bl.sm120_make_smem_layout_sfb(tm, tile, vec, 2)) == sfb


def test_scale_factor_layout_errors_name_the_users_line():
    import warpweave.utils.blockscaled_layout as bl

    with _sm120():
        tm, vec = _tiled("nvf4")
        for tile, what in (((64, 128, 128), "not a multiple of 128"), ((128, 128, 32), "K \\(32\\)")):
            with pytest.raises(DSLValueError, match=what) as e:
                bl.sm120_make_smem_layout_sfa(tm, tile, vec, 1)
            assert e.value.location[0] == __file__
        with pytest.raises(DSLValueError, match="sf_vec_size is 16 or 32"):
            bl.sm120_make_smem_layout_sfb(tm, (128, 128, 128), 8, 1)


def test_companion_fragments_only_for_ops_that_take_them():
    from warpweave._dsl.atoms.mma import gemm
    from warpweave._dsl.base.errors import DSLTypeError

    with _sm120():
        tm = cute.make_tiled_mma(W.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
        with pytest.raises(DSLTypeError, match="does not take") as e:
            gemm(tm, None, [None, None], None, None)
        assert e.value.location[0] == __file__
        scaled, _ = _tiled("nvf4")
        with pytest.raises(DSLValueError, match="needs A and B each with its companion") as e:
            gemm(scaled, None, None, None, None)
        assert e.value.location[0] == __file__


# --- cute.gemm with scale factors, compiled for sm_120a -------------------------------------------------------------

def _scaled_mma_kernel(make_op, a_t, b_t, sf_t, k, vec):
    """One atom: A, B and the scale factors from x (per thread), D to out."""
    n_sf = k // vec

    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        tm = cute.make_tiled_mma(make_op())
        a = cute.make_rmem_tensor(cute.make_layout((k // 2, 1, 1)), a_t)
        b = cute.make_rmem_tensor(cute.make_layout((k // 4, 1, 1)), b_t)
        c = cute.make_rmem_tensor(cute.make_layout((4, 1, 1)), cutlass.Float32)
        sfa = cute.make_rmem_tensor(cute.make_layout(((vec, n_sf), 1, 1), stride=((0, 1), 0, 0)), sf_t)
        sfb = cute.make_rmem_tensor(cute.make_layout(((vec, n_sf), 1, 1), stride=((0, 1), 0, 0)), sf_t)
        ai, bi = cute.recast_tensor(a, cutlass.Int32), cute.recast_tensor(b, cutlass.Int32)
        for i in cutlass.range_constexpr(cute.size(ai)):
            ai[i] = x[tidx * 8 + i]
        for i in cutlass.range_constexpr(cute.size(bi)):
            bi[i] = x[tidx * 8 + 4 + i]
        sa = cute.recast_tensor(cute.filter_zeros(sfa), cutlass.Int8)
        sb = cute.recast_tensor(cute.filter_zeros(sfb), cutlass.Int8)
        for i in cutlass.range_constexpr(n_sf):
            sa[i] = cutlass.Int8(x[256 + tidx * 4 + i])
            sb[i] = cutlass.Int8(x[512 + tidx * 4 + i])
        c.fill(0.0)
        cute.gemm(tm, c, [a, sfa], [b, sfb], c)
        for i in cutlass.range_constexpr(4):
            out[tidx * 4 + i] = c[i]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        kern(x, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


F4, E4, E5, UE8 = cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float8E8M0FNU
# (op, A, B, scale type, K, vec): the PTX form and SASS opcode CuTe DSL 4.8.1 emits for the same kernel on sm_120a
# (selectors {0, 0}: byte 0 of thread 0 of each quad, the factors packed low byte first).
SCALED_CASES = {
    "nvf4": (lambda: W.MmaMXF4NVF4Op(F4, cutlass.Float32, E4), F4, F4, E4, 64, 16,
             "kind::mxf4nvf4.block_scale.scale_vec::4X.f32.e2m1.e2m1.f32.ue4m3",
             "OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X"),
    "mxf4": (lambda: W.MmaMXF4Op(F4, cutlass.Float32, UE8), F4, F4, UE8, 64, 32,
             "kind::mxf4.block_scale.scale_vec::2X.f32.e2m1.e2m1.f32.ue8m0", "OMMA.SF.16864.F32.E2M1.E2M1.E8"),
    "mxf8": (lambda: W.MmaMXF8Op(E4, cutlass.Float32, UE8), E4, E4, UE8, 32, 32,
             "kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e4m3.e4m3.f32.ue8m0", "QMMA.SF.16832.F32.E4M3.E4M3.E8"),
    "mxf8_e5m2": (lambda: W.MmaMXF8Op(E5, cutlass.Float32, UE8), E5, E5, UE8, 32, 32,
                  "kind::mxf8f6f4.block_scale.scale_vec::1X.f32.e5m2.e5m2.f32.ue8m0", "QMMA.SF.16832.F32.E5M2.E5M2.E8"),
}


@pytest.mark.parametrize("case", sorted(SCALED_CASES))
def test_gemm_with_scale_factors_emits_the_block_scaled_mma(case, fresh_compilations):
    import re

    import numpy as np

    from warpweave import _core
    from warpweave.cute.runtime import from_dlpack

    make_op, a_t, b_t, sf_t, k, vec, form, opcode = SCALED_CASES[case]
    with target("sm_120a"):
        c = cute.compile(_scaled_mma_kernel(make_op, a_t, b_t, sf_t, k, vec),
                         from_dlpack(np.zeros(1024, np.int32)), from_dlpack(np.zeros(128, np.float32)))
    mmas = [line.strip() for line in c.ptx.splitlines() if "mma.sync" in line]
    assert len(mmas) == 1 and form in mmas[0], mmas
    # D, A (4 registers), B (2), C, then each operand's one register of factors with selectors {0, 0}
    assert re.search(r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, \{%r\d+, %r\d+\}, \{[^}]*\}, %r\d+, \{0, 0\}, %r\d+, \{0, 0\};",
                     mmas[0]), mmas[0]
    if _core.sass_tool_available():
        ops = sass_opcodes(c.cubin)
        assert opcode in ops
        assert not {"LDL", "STL"} & {o.split(".")[0] for o in ops}   # no local memory


def _ldmatrix_kernel(make_op, ab_t, k, vec, sf_t):
    """A and B from shared memory with ldmatrix (16-bit matrices of 8-bit or 4-bit values, as CuTe DSL's sm_120
    GEMMs load them) into one atom's fragments, then the block-scaled MMA."""
    n_sf = k // vec

    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        tm = cute.make_tiled_mma(make_op())
        smem = utils.SmemAllocator()
        sA = smem.allocate_tensor(ab_t, cute.make_layout((16, k), stride=(k, 1)), byte_alignment=128)
        sB = smem.allocate_tensor(ab_t, cute.make_layout((8, k), stride=(k, 1)), byte_alignment=128)
        words = cute.recast_tensor(sA, cutlass.Int32)
        words[tidx] = x[tidx]
        thr = tm.get_slice(tidx)
        tCrA = tm.make_fragment_A(thr.partition_A(sA))
        tCrB = tm.make_fragment_B(thr.partition_B(sB))
        atom = cute.make_copy_atom(W.LdMatrix8x8x16bOp(False, 4), ab_t)
        tA = cute.make_tiled_copy_A(atom, tm)
        cA = tA.get_slice(tidx)
        cute.copy(tA, cA.partition_S(sA), cA.retile(tCrA))
        atom_b = cute.make_copy_atom(W.LdMatrix8x8x16bOp(False, 2), ab_t)
        tB = cute.make_tiled_copy_B(atom_b, tm)
        cB = tB.get_slice(tidx)
        cute.copy(tB, cB.partition_S(sB), cB.retile(tCrB))
        c = cute.make_rmem_tensor(cute.make_layout((4, 1, 1)), cutlass.Float32)
        sfa = cute.make_rmem_tensor(cute.make_layout(((vec, n_sf), 1, 1), stride=((0, 1), 0, 0)), sf_t)
        sfb = cute.make_rmem_tensor(cute.make_layout(((vec, n_sf), 1, 1), stride=((0, 1), 0, 0)), sf_t)
        sa = cute.recast_tensor(cute.filter_zeros(sfa), cutlass.Int8)
        sb = cute.recast_tensor(cute.filter_zeros(sfb), cutlass.Int8)
        for i in cutlass.range_constexpr(n_sf):
            sa[i] = cutlass.Int8(x[256 + i])
            sb[i] = cutlass.Int8(x[512 + i])
        c.fill(0.0)
        cute.gemm(tm, c, [tCrA, sfa], [tCrB, sfb], c)
        for i in cutlass.range_constexpr(4):
            out[tidx * 4 + i] = c[i]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor):
        kern(x, out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


@pytest.mark.parametrize("case", ["nvf4", "mxf8"])
def test_ldmatrix_of_narrow_values_feeds_the_block_scaled_mma(case, fresh_compilations):
    import numpy as np

    from warpweave import _core
    from warpweave.cute.runtime import from_dlpack

    make_op, ab_t, _, sf_t, k, vec, form, opcode = SCALED_CASES[case]
    with target("sm_120a"):
        c = cute.compile(_ldmatrix_kernel(make_op, ab_t, k, vec, sf_t), from_dlpack(np.zeros(1024, np.int32)),
                         from_dlpack(np.zeros(128, np.float32)))
    assert "ldmatrix.sync.aligned.m8n8.x4" in c.ptx and "ldmatrix.sync.aligned.m8n8.x2" in c.ptx
    assert form in c.ptx
    if _core.sass_tool_available():
        ops = sass_opcodes(c.cubin)
        assert opcode in ops and any(o.startswith("LDSM") for o in ops)
        assert not {"LDL", "STL"} & {o.split(".")[0] for o in ops}


def _pipelined_kernel(make_op, ab_t, k, vec, sf_t):
    """A main loop as CuTe DSL's sm_120 GEMMs write it: the fragments of the next k-block (A and B by ldmatrix, the
    scale factors by a vector copy) are loaded while the block-scaled MMA consumes the current ones, so that every
    fragment is carried from one iteration to the next."""
    n_sf = k // vec

    @cute.kernel
    def kern(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        tm = cute.make_tiled_mma(make_op())
        smem = utils.SmemAllocator()
        sA = smem.allocate_tensor(ab_t, cute.make_layout((16, k), stride=(k, 1)), byte_alignment=128)
        sB = smem.allocate_tensor(ab_t, cute.make_layout((8, k), stride=(k, 1)), byte_alignment=128)
        sSF = smem.allocate_tensor(sf_t, cute.make_layout((n_sf, 2)), byte_alignment=16)
        words = cute.recast_tensor(sA, cutlass.Int32)
        words[tidx] = x[tidx]
        thr = tm.get_slice(tidx)
        tCrA = tm.make_fragment_A(thr.partition_A(sA))
        tCrB = tm.make_fragment_B(thr.partition_B(sB))
        tA = cute.make_tiled_copy_A(cute.make_copy_atom(W.LdMatrix8x8x16bOp(False, 4), ab_t), tm)
        tB = cute.make_tiled_copy_B(cute.make_copy_atom(W.LdMatrix8x8x16bOp(False, 2), ab_t), tm)
        cA, cB = tA.get_slice(tidx), tB.get_slice(tidx)
        c = cute.make_rmem_tensor(cute.make_layout((4, 1, 1)), cutlass.Float32)
        sfa = cute.make_rmem_tensor(cute.make_layout(((vec, n_sf), 1, 1), stride=((0, 1), 0, 0)), sf_t)
        sfb = cute.make_rmem_tensor(cute.make_layout(((vec, n_sf), 1, 1), stride=((0, 1), 0, 0)), sf_t)

        def load():
            cute.copy(tA, cA.partition_S(sA), cA.retile(tCrA))
            cute.copy(tB, cB.partition_S(sB), cB.retile(tCrB))
            cute.autovec_copy(sSF[None, 0], cute.filter_zeros(sfa)[None, 0, 0])
            cute.autovec_copy(sSF[None, 1], cute.filter_zeros(sfb)[None, 0, 0])

        load()
        c.fill(0.0)
        for _ in cutlass.range(n):
            cute.gemm(tm, c, [tCrA, sfa], [tCrB, sfb], c)
            load()
        for i in cutlass.range_constexpr(4):
            out[tidx * 4 + i] = c[i]

    @cute.jit
    def host(x: cute.Tensor, out: cute.Tensor, n: cutlass.Int32):
        kern(x, out, n).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return host


@pytest.mark.parametrize("case", ["nvf4", "mxf4", "mxf8"])
def test_fragments_carried_through_the_main_loop_stay_whole_registers(case, fresh_compilations):
    """The fragments of narrow values (4- and 8-bit data, 8-bit scale factors) are written and read as whole 32-bit
    registers: no byte is taken out of a register and put back (no byte permutes, no 16-bit halves), so that the
    loop carries 32-bit registers, as many as the data needs; the ping-pong GEMM spilled 328 bytes where the bytes
    were carried one register each."""
    import re

    import numpy as np

    from warpweave.cute.runtime import from_dlpack

    make_op, ab_t, _, sf_t, k, vec, form, _ = SCALED_CASES[case]
    with target("sm_120a"):
        c = cute.compile(_pipelined_kernel(make_op, ab_t, k, vec, sf_t), from_dlpack(np.zeros(1024, np.int32)),
                         from_dlpack(np.zeros(128, np.float32)), cutlass.Int32(4))
    body = [line.strip() for line in c.ptx.splitlines()]
    assert any(form in line for line in body)
    shuffles = [line for line in body if re.match(r"(prmt|cvt\.u16\.u32|bfe|bfi)\b", line)
                or re.match(r"mov\.b32\s+\{%rs", line)]
    assert not shuffles, shuffles[:8]
    # fewer than four factors per atom: the one value of each operand widened to its 32-bit register, nothing more
    widened = [line for line in body if re.match(r"cvt\.u32\.u(8|16)\b", line)]
    assert len(widened) <= (0 if k // vec == 4 else 2), widened
    assert ".local" not in c.ptx


# make_fragment_A / make_fragment_B of the block-scaled MMAs in CuTe DSL 4.8.1 (sm_120a): the partition's element
# type, an unsigned integer one as the signed type of its width, whatever the atom's A and B types.
FRAGMENT_TYPES = {cutlass.Int8: cutlass.Int8, cutlass.Uint8: cutlass.Int8, cutlass.Uint16: cutlass.Int16,
                  cutlass.Float16: cutlass.Float16, cutlass.Float32: cutlass.Float32,
                  cutlass.Float8E4M3FN: cutlass.Float8E4M3FN}


@pytest.mark.parametrize("kind", ["mxf8f6f4", "mxf8", "mxf4"])
def test_fragments_take_the_partitions_element_type(kind):
    """A mixed FP4 x FP8 GEMM keeps the 4-bit operand unpacked in an Int8 shared tensor and shifts each value within
    its byte before the MMA: its fragment must hold those bytes, not the bytes converted to FP4 numbers (which cost
    the ping-pong GEMM 2008 bytes of spills)."""
    ops = {"mxf8f6f4": lambda: W.MmaMXF8F6F4Op(cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, cutlass.Float32,
                                               cutlass.Float8E8M0FNU),
           "mxf8": lambda: W.MmaMXF8Op(cutlass.Float8E4M3FN, cutlass.Float32, cutlass.Float8E8M0FNU),
           "mxf4": lambda: W.MmaMXF4Op(cutlass.Float4E2M1FN, cutlass.Float32, cutlass.Float8E8M0FNU)}
    with _sm120():
        tm = cute.make_tiled_mma(ops[kind](), cute.make_layout((2, 2, 1)))
        thr = tm.get_slice(0)
        for src, want in FRAGMENT_TYPES.items():
            t = cute.make_rmem_tensor(cute.make_layout((128, 64)), src)
            a, b = tm.make_fragment_A(thr.partition_A(t)), tm.make_fragment_B(thr.partition_B(t))
            assert (a.element_type, b.element_type) == (want, want), (kind, src)
            assert str(a.layout) == str(cute.make_fragment_like(thr.partition_A(t)).layout)
