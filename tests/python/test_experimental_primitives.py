"""cutlass.experimental.primitives: the functions the backends adapt onto their instructions (red, shfl_sync,
redux_sync, vote_sync, mbarrier arrivals, mapa, elect_sync, cp.async, ldmatrix / stmatrix), stated as the PTX
they compile to per target and the errors that name the user's line or the targets that have an instruction."""
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave.experimental import primitives as prims

from dsl_helpers import compile_in_fresh_process, line_in, target

THIS = os.path.abspath(__file__)
FULL = 0xFFFFFFFF


def ptx_of(body, arch="sm_90a", n=128, dtypes=(np.float32, np.int32)):
    """The PTX of a kernel whose body is body(gF, gI, tidx, smem) (smem: 64 Int32 and 4 Int64 shared arrays)."""
    @cute.kernel
    def k(gF: cute.Tensor, gI: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        words = cutlass.Array(cutlass.Int32, 64, space=cutlass.AddressSpace.smem, alignment=16)
        bars = cutlass.Array(cutlass.Int64, 4, space=cutlass.AddressSpace.smem, alignment=8)
        body(gF, gI, tidx, (words, bars))

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(n, dtypes[0])), from_dlpack(np.zeros(n, dtypes[1]))).info["ptx"]


def instructions(ptx, prefix):
    return re.findall(rf"^\s*({re.escape(prefix)}[^;]*);", ptx, re.M)


def test_the_examples_names_resolve_and_enums_spell_ptx():
    for name in ("elect_sync", "barrier_cta_sync", "barrier_cta_sync_aligned", "barrier_cta_arrive", "barrier_cta_red",
                 "barrier_cluster_arrive", "barrier_cluster_arrive_relaxed", "barrier_cluster_wait", "bar_warp_sync",
                 "shfl_sync", "vote_sync", "redux_sync", "red", "mbarrier_init", "mbarrier_inval", "mbarrier_arrive",
                 "mbarrier_arrive_expect_tx", "mbarrier_expect_tx", "mbarrier_try_wait_parity",
                 "mbarrier_wait_parity", "mbarrier_try_wait_timelimit", "fence_mbarrier_init", "mapa",
                 "cluster_ctarank", "cp_async_shared_global", "cp_async_commit_group", "cp_async_wait_group",
                 "cp_async_mbarrier_arrive", "cp_async_bulk_shared_cluster_global", "cp_async_bulk_global_shared_cta",
                 "cp_async_bulk_prefetch", "cp_async_bulk_commit_group", "cp_async_bulk_wait_group", "ldmatrix",
                 "stmatrix"):
        assert callable(getattr(prims, name)), name
    assert prims.Shfl.BFLY.value == "bfly" and prims.VoteSync.BALLOT.value == "ballot"
    assert prims.ReductionType.BF16.value == "bf16" and prims.ReductionOp.XOR.value == "xor"
    assert prims.LoadSrcFormat.B8X16_B6X16_P32.value == "b8x16.b6x16_p32"
    with pytest.raises(AttributeError, match="primitives.no_such_instruction"):
        prims.no_such_instruction


def test_red_state_space_follows_the_pointer_and_register_the_type():
    def body(gF, gI, t, smem):
        words, _ = smem
        v = gI[t]
        prims.red(prims.ReductionOp.ADD, prims.ReductionType.F32, gF.iterator + 1, gF[t])
        prims.red(prims.ReductionOp.MAX, prims.ReductionType.S32, words.data_ptr() + 2, v,
                  mem_order=prims.MemOrder.RELEASE, mem_scope=prims.MemScope.CTA)
        prims.red(prims.ReductionOp.ADD, prims.ReductionType.U64, gI.iterator, cutlass.Int64(v))
        prims.red(prims.ReductionOp.ADD, prims.ReductionType.BF16, gF.iterator, gF[t])
        prims.red(prims.ReductionOp.XOR, prims.ReductionType.B32, prims.mapa(words.data_ptr(), 1), v,
                  mem_scope=prims.MemScope.CLUSTER)

    reds = instructions(ptx_of(body), "red.")
    # The element offset of `gF.iterator + 1` is the address's constant displacement (4 bytes).
    assert re.fullmatch(r"red\.relaxed\.gpu\.global\.add\.f32 \[%rd\d+\+4\], %r\d+", reds[0]), reds
    assert re.fullmatch(r"red\.release\.cta\.shared::cta\.max\.s32 \[%r\d+\], %r\d+", reds[1]), reds
    assert re.fullmatch(r"red\.relaxed\.gpu\.global\.add\.u64 \[%rd\d+\], %rd\d+", reds[2]), reds
    assert re.fullmatch(r"red\.relaxed\.gpu\.global\.add\.noftz\.bf16 \[%rd\d+\], %rs\d+", reds[3]), reds
    assert re.fullmatch(r"red\.relaxed\.cluster\.shared::cluster\.xor\.b32 \[%r\d+\], %r\d+", reds[4]), reds


def test_red_refuses_what_the_instruction_lacks_at_the_users_line():
    with pytest.raises(ValueError, match="and takes b32, b64, not f32") as e:
        ptx_of(lambda gF, gI, t, s: prims.red(prims.ReductionOp.AND, prims.ReductionType.F32, gF.iterator, gF[t]))
    assert f"{THIS}:{line_in(THIS, 'prims.ReductionOp.AND, prims.ReductionType.F32')}" in str(e.value)
    with pytest.raises(ValueError, match="mem_scope cluster is not offered on global"):
        ptx_of(lambda gF, gI, t, s: prims.red(prims.ReductionOp.ADD, prims.ReductionType.S32, gI.iterator, 1,
                                              mem_scope=prims.MemScope.CLUSTER))
    with pytest.raises(ValueError, match="mem_order must be one of relaxed, release"):
        ptx_of(lambda gF, gI, t, s: prims.red(prims.ReductionOp.ADD, prims.ReductionType.S32, gI.iterator, 1,
                                              mem_order=prims.MemOrder.ACQUIRE))
    with pytest.raises(TypeError, match="red: ptr is a pointer, a cutlass.Array or a tensor, got int"):
        ptx_of(lambda gF, gI, t, s: prims.red(prims.ReductionOp.ADD, prims.ReductionType.S32, 3, 1))
    with pytest.raises(TypeError, match="global or shared memory"):
        ptx_of(lambda gF, gI, t, s: prims.red(prims.ReductionOp.ADD, prims.ReductionType.S32,
                                              cute.make_rmem_tensor((4,), cutlass.Int32).iterator, 1))


def test_shfl_sync_modes_and_the_validity_predicate():
    def body(gF, gI, t, smem):
        x = gF[t]
        up, ok = prims.shfl_sync(FULL, x, 1, 0, prims.Shfl.UP, return_value_and_is_valid=True)
        assert isinstance(up, cutlass.Float32) and isinstance(ok, cutlass.Boolean)
        b = prims.shfl_sync(FULL, gI[t], 4, 0x1F, prims.Shfl.BFLY)
        h = prims.shfl_sync(FULL, cutlass.Float16(x), 2, 0x1F, prims.Shfl.DOWN)  # 16 bits: through cute.arch
        gF[t] = up + cutlass.Float32(ok) + cutlass.Float32(h)
        gI[t] = b

    ptx = ptx_of(body)
    assert re.search(r"shfl\.sync\.up\.b32 %r\d+\|%p\d+, %r\d+, %r\d+, %r\d+, %r\d+;", ptx)
    assert re.search(r"shfl\.sync\.bfly\.b32 %r\d+\|%p\d+, %r\d+, %r\d+, %r\d+, %r\d+;", ptx)
    assert "shfl.sync.down.b32" in ptx
    with pytest.raises(TypeError, match="needs a 32-bit value, got Float16"):
        ptx_of(lambda gF, gI, t, s: prims.shfl_sync(FULL, cutlass.Float16(gF[t]), 1, 0, prims.Shfl.UP,
                                                    return_value_and_is_valid=True))
    with pytest.raises(ValueError, match="mode must be one of idx, up, down, bfly"):
        ptx_of(lambda gF, gI, t, s: prims.shfl_sync(FULL, gF[t], 1, 0, "rotate"))


def test_vote_sync_modes():
    def body(gF, gI, t, smem):
        p = gI[t] > 0
        ballot = prims.vote_sync(FULL, p, prims.VoteSync.BALLOT)
        assert isinstance(ballot, cutlass.Int32)
        flags = [prims.vote_sync(FULL, p, m) for m in (prims.VoteSync.ALL, prims.VoteSync.ANY, prims.VoteSync.UNI)]
        assert all(isinstance(f, cutlass.Boolean) for f in flags)
        gI[t] = ballot + sum(cutlass.Int32(f) for f in flags)

    ptx = ptx_of(body, "sm_80")
    for q in ("ballot.b32", "all.pred", "any.pred", "uni.pred"):
        assert f"vote.sync.{q}" in ptx


def test_redux_sync_signedness_comes_from_the_kind_and_floats_need_sm100():
    def body(gF, gI, t, smem):
        v = gI[t]
        gI[t] = (prims.redux_sync(v, prims.ReductionKind.MIN, FULL) + prims.redux_sync(v, prims.ReductionKind.UMAX)
                 + prims.redux_sync(v, prims.ReductionKind.XOR, FULL))

    ptx = ptx_of(body, "sm_80")
    assert "redux.sync.min.s32" in ptx and "redux.sync.max.u32" in ptx and "redux.sync.xor.b32" in ptx

    def floats(gF, gI, t, smem):
        gF[t] = prims.redux_sync(gF[t], prims.ReductionKind.FMAX, FULL, abs=True, nan=True)

    assert "redux.sync.max.abs.NaN.f32" in ptx_of(floats, "sm_100a")
    with pytest.raises(ValueError, match=r"exists \(blackwell\.redux\.sync\.f32\.abs\.nan for sm_100a, sm_103a\) but "
                                         r"not for the current target sm_90a") as e:
        ptx_of(floats, "sm_90a")
    assert f"{THIS}:{line_in(THIS, 'prims.ReductionKind.FMAX, FULL, abs=True, nan=True')}" in str(e.value)
    with pytest.raises(TypeError, match="FMIN needs a Float32 value, got Int32"):
        ptx_of(lambda gF, gI, t, s: prims.redux_sync(gI[t], prims.ReductionKind.FMIN), "sm_100a")


def test_mbarrier_arrivals_local_state_and_remote():
    def body(gF, gI, t, smem):
        _, bars = smem
        prims.mbarrier_init(bars, 1)
        prims.fence_mbarrier_init()
        state = prims.mbarrier_arrive(bars)
        assert isinstance(state, cutlass.Int64)
        assert prims.mbarrier_arrive(prims.mapa(bars.subview(1), 1), scope=prims.MemScope.CLUSTER) is None
        done = prims.mbarrier_try_wait_timelimit(bars, state, 1000)
        quick = prims.mbarrier_try_wait_parity(bars, 0)
        slow = prims.mbarrier_try_wait_parity(bars, 0, time_limit=5000)
        gI[t] = cutlass.Int32(done) + cutlass.Int32(quick) + cutlass.Int32(slow)

    ptx = ptx_of(body)
    assert re.search(r"mbarrier\.arrive\.release\.cta\.shared::cta\.b64 %rd\d+, \[%r\d+\];", ptx)
    assert re.search(r"mbarrier\.arrive\.release\.cluster\.shared::cluster\.b64 _, \[%r\d+\];", ptx)
    assert re.search(r"mbarrier\.try_wait\.shared::cta\.b64 %p\d+, \[%r\d+\], %rd\d+, %r\d+;", ptx)
    waits = instructions(ptx, "mbarrier.try_wait.parity")
    assert sorted(w.count(",") for w in waits) == [2, 3], waits
    with pytest.raises(ValueError, match="scope must be one of cta, cluster"):
        ptx_of(lambda gF, gI, t, s: prims.mbarrier_arrive(s[1], scope=prims.MemScope.GPU))
    with pytest.raises(TypeError, match="must be a pointer to shared memory"):
        ptx_of(lambda gF, gI, t, s: prims.mbarrier_arrive(gI))


def test_mbarrier_wait_parity_blocks_or_peeks_by_its_kind():
    def body(gF, gI, t, smem):
        _, bars = smem
        prims.mbarrier_init(bars, 1)
        tried = prims.mbarrier_wait_parity(bars, 0, prims.MBarrierWait.TRY)
        tested = prims.mbarrier_wait_parity(bars, 1, prims.MBarrierWait.TEST)
        assert isinstance(tried, cutlass.Boolean) and isinstance(tested, cutlass.Boolean)
        gI[t] = cutlass.Int32(tried) + cutlass.Int32(tested)
        assert prims.mbarrier_wait_parity(bars, 0) is None

    ptx = ptx_of(body)
    # the peeks are one instruction each; the blocking wait is a loop of try_wait (a branch back to it)
    assert len(instructions(ptx, "mbarrier.test_wait.parity")) == 1
    assert len(instructions(ptx, "mbarrier.try_wait.parity")) == 1
    assert len(re.findall(r"mbarrier\.try_wait\.parity", ptx)) == 2 and re.search(r"@!ww_done bra", ptx)
    with pytest.raises(ValueError, match="kind must be one of try, test") as e:
        ptx_of(lambda gF, gI, t, s: prims.mbarrier_wait_parity(s[1], 0, "sleep"))
    assert e.value.location[1] == line_in(THIS, 'prims.mbarrier_wait_parity(s[1], 0, "sleep")')


def test_elect_sync_membermask_and_cluster_names():
    def body(gF, gI, t, smem):
        gI[t] = cutlass.Int32(prims.elect_sync(membermask=0x0000FFFF)) + prims.cluster_ctarank()
        prims.barrier_cluster_arrive_relaxed()
        prims.barrier_cluster_wait()

    ptx = ptx_of(body)
    assert re.search(r"elect\.sync \w+\|%p\d+, 0xffff;", ptx)
    assert "%cluster_ctarank" in ptx and "barrier.cluster.arrive.relaxed.aligned" in ptx


def test_an_instruction_of_a_later_generation_names_its_targets():
    with pytest.raises(ValueError, match=r"arch\.mapa.*exists \(hopper\.cluster\.mapa for sm_90a, sm_90.*current "
                                         r"target sm_80") as e:
        ptx_of(lambda gF, gI, t, s: prims.mapa(s[0], 1), "sm_80")
    assert f"{THIS}:{line_in(THIS, 'prims.mapa(s[0], 1), ' + chr(34) + 'sm_80')}" in str(e.value)


def test_cta_barriers_are_not_aligned_unless_asked_and_reduce_predicates():
    def body(gF, gI, t, smem):
        prims.barrier_cta_sync(0)
        prims.barrier_cta_sync(1, thread_count=64)
        prims.barrier_cta_sync_aligned(barrier_id=2)
        prims.barrier_cta_arrive(3, 64)
        gI[t] = cutlass.Int32(prims.barrier_cta_red(t == 0, barrier_id=4, kind="or", thread_count=128))
        prims.bar_warp_sync(FULL)

    ptx = ptx_of(body, "sm_80")
    assert re.search(r"barrier\.sync %r\d+;", ptx) and re.search(r"barrier\.sync %r\d+, %r\d+;", ptx)
    assert re.search(r"barrier\.sync\.aligned %r\d+;", ptx) and re.search(r"barrier\.arrive %r\d+, %r\d+;", ptx)
    assert re.search(r"barrier\.red\.or\.pred %p\d+, %r\d+, %r\d+, %p\d+;", ptx)
    assert "bar.warp.sync" in ptx
    with pytest.raises(ValueError, match="kind=popc is not one of and, or"):
        ptx_of(lambda gF, gI, t, s: prims.barrier_cta_red(t == 0, barrier_id=0, kind="popc"), "sm_80")


def test_cp_async_modifier_and_size():
    def body(gF, gI, t, smem):
        words, bars = smem
        prims.cp_async_shared_global(words.data_ptr() + t % 16 * 4, gI.iterator + t % 16 * 4, 16, "cg")
        prims.cp_async_shared_global(words.data_ptr() + t % 16, gI.iterator + t % 16, 4)
        prims.cp_async_mbarrier_arrive(bars, noinc=True)
        prims.cp_async_mbarrier_arrive(bars)
        prims.cp_async_commit_group()
        prims.cp_async_wait_group(0)

    ptx = ptx_of(body, "sm_80")
    assert re.search(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16;", ptx)
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4;", ptx)
    assert "cp.async.mbarrier.arrive.noinc.shared.b64" in ptx and "cp.async.mbarrier.arrive.shared.b64" in ptx
    # cute.arch's name of the noinc arrival (a pipeline producer's commit) is the same instruction
    ptx = ptx_of(lambda gF, gI, t, smem: cute.arch.cp_async_mbarrier_arrive_noinc(smem[1].data_ptr()), "sm_80")
    assert "cp.async.mbarrier.arrive.noinc.shared.b64" in ptx
    with pytest.raises(ValueError, match="the cg modifier copies 16 bytes, not 8"):
        ptx_of(lambda gF, gI, t, s: prims.cp_async_shared_global(s[0], gI, 8, "cg"), "sm_80")
    with pytest.raises(TypeError, match="dst must be a pointer to shared memory"):
        ptx_of(lambda gF, gI, t, s: prims.cp_async_shared_global(gI, gI, 4), "sm_80")


def test_ldmatrix_words_and_stmatrix_shapes_per_target():
    def body(gF, gI, t, smem):
        words, _ = smem
        w = prims.ldmatrix(words.data_ptr() + t % 8 * 4, 4, prims.MMALayout.COL)
        assert len(w) == 4 and all(isinstance(x, cutlass.Int32) for x in w)
        prims.stmatrix(words.data_ptr() + t % 8 * 4, w[:2], prims.MMALayout.ROW)

    ptx = ptx_of(body)
    assert re.search(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16 "
                     r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, \[%r\d+\];", ptx)
    assert re.search(r"stmatrix\.sync\.aligned\.m8n8\.x2\.shared\.b16 \[%r\d+\], \{%r\d+, %r\d+\};", ptx)

    def b8(gF, gI, t, smem):
        words, _ = smem
        w = prims.ldmatrix(words.data_ptr(), 2, prims.MMALayout.COL, shape=prims.LoadShape.M16N16,
                           src_format=prims.LoadSrcFormat.B8)
        prims.stmatrix(words.data_ptr(), w, prims.MMALayout.COL, shape=prims.StoreShape.M16N8)

    ptx = ptx_of(b8, "sm_100a")
    assert "ldmatrix.sync.aligned.m16n16.x1.trans.shared.b8" in ptx
    assert "stmatrix.sync.aligned.m16n8.x2.trans.shared.b8" in ptx
    with pytest.raises(ValueError, match="but not for the current target sm_90a"):
        ptx_of(b8, "sm_90a")
    with pytest.raises(ValueError, match="no loaded backend offers primitives.ldmatrix with"):
        ptx_of(lambda gF, gI, t, s: prims.ldmatrix(s[0], 3, prims.MMALayout.ROW))


def test_bulk_copies_take_array_tensor_and_ir_pointer_operands():
    def body(gF, gI, t, smem):
        words, bars = smem
        prims.mbarrier_arrive_expect_tx(bars, 64)
        prims.cp_async_bulk_shared_cluster_global(words, gI, bars, 64)
        prims.cp_async_bulk_global_shared_cta(gI.iterator, words.data_ptr(), 64)
        prims.cp_async_bulk_prefetch(gI, 64)
        prims.cp_async_bulk_commit_group()
        prims.cp_async_bulk_wait_group(0, read=True)

    ptx = ptx_of(body)
    assert re.search(r"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes \[%r\d+\], \[%rd\d+\], "
                     r"%r\d+, \[%r\d+\];", ptx)
    assert re.search(r"cp\.async\.bulk\.global\.shared::cta\.bulk_group \[%rd\d+\], \[%r\d+\], %r\d+;", ptx)
    assert "cp.async.bulk.prefetch.L2.global" in ptx and "cp.async.bulk.wait_group.read 0" in ptx


def test_fences_registers_exit_and_printing():
    def body(gF, gI, t, smem):
        prims.fence_proxy(prims.Proxy.ASYNC_SHARED, space=prims.SharedSpace.shared_cta)
        prims.fence_proxy("async_shared", space=prims.SharedSpace.shared_cluster)
        prims.fence_proxy(prims.Proxy.ASYNC_GLOBAL)
        prims.fence_proxy_release(prims.MemScope.GPU, from_proxy=prims.Proxy.GENERIC, to_proxy=prims.Proxy.TENSORMAP)
        prims.fence_proxy_acquire(prims.MemScope.GPU, gI.iterator, 128, from_proxy=prims.Proxy.GENERIC,
                                  to_proxy=prims.Proxy.TENSORMAP)
        prims.setmaxregister(40, prims.SetMaxRegisterAction.DECREASE)
        prims.print_runtime("thread {}\n", t)
        prims.exit()

    ptx = ptx_of(body)
    for text in ("fence.proxy.async.shared::cta;", "fence.proxy.async.shared::cluster;", "fence.proxy.async.global;",
                 "fence.proxy.tensormap::generic.release.gpu;", "setmaxnreg.dec.sync.aligned.u32 40;", "exit;",
                 "vprintf"):
        assert text in ptx, text
    assert re.search(r"fence\.proxy\.tensormap::generic\.acquire\.gpu \[%rd\d+\], 128;", ptx)
    with pytest.raises(ValueError, match="space applies to Proxy.ASYNC_SHARED"):
        ptx_of(lambda gF, gI, t, s: prims.fence_proxy(prims.Proxy.ASYNC, space=prims.SharedSpace.shared_cta))
    with pytest.raises(ValueError, match="to_proxy must be one of tensormap"):
        ptx_of(lambda gF, gI, t, s: prims.fence_proxy_release(prims.MemScope.GPU, to_proxy=prims.Proxy.ASYNC))


FRESH_PROCESS_SCRIPT = """
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave.experimental import primitives as prims

@cute.kernel
def k(g: cute.Tensor):
    bars = cutlass.Array(cutlass.Int64, 1, space=cutlass.AddressSpace.smem, alignment=8)
    prims.mbarrier_init(bars, 1)
    g[0] = cutlass.Float32(prims.mbarrier_try_wait_parity(bars, 0))  # the Hopper instruction

@cute.jit
def h(a):
    k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


def compile_program():
    cute.compile(h, from_dlpack(np.zeros(32, np.float32)))
"""


def test_a_primitive_of_a_later_generation_in_a_fresh_process(tmp_path):
    # A process of its own: compiling for sm_80 loads only Ampere's backend, so the name must be looked for in the
    # others before it can be refused with the targets that have it (mbarrier_init itself is Ampere's too).
    script, out = compile_in_fresh_process(tmp_path, "primitive_target.py", FRESH_PROCESS_SCRIPT, "sm_80", "sm_90a")
    kind, message, location = out["sm_80"]
    line = FRESH_PROCESS_SCRIPT.splitlines().index(
        "    g[0] = cutlass.Float32(prims.mbarrier_try_wait_parity(bars, 0))  # the Hopper instruction") + 1
    assert location == [str(script), line], (location, message)
    assert "primitives.mbarrier_try_wait_parity" in message and "sm_90a" in message and "sm_80" in message, message
    assert out["sm_90a"] == "compiled", out


def test_prmt_modes_and_operands():
    """prims.prmt(lo, selector, mode, hi=): one byte permute of the word pair (hi 0 when not given), of Int32,
    Uint32 or int operands, its mode as the instruction's qualifier (none for DEFAULT)."""
    def body(gF, gI, tidx, smem):
        w = cutlass.Uint32(gI[tidx])
        gI[tidx] = prims.prmt(w, 0x4140, prims.PermuteMode.DEFAULT, hi=0) + \
            prims.prmt(w, 0x3210, prims.PermuteMode.ECL, hi=cutlass.Int32(tidx)) + \
            prims.prmt(0xDEADBEEF, tidx, prims.PermuteMode.RC16)

    ptx = ptx_of(body)
    found = sorted(i.split()[0] for i in instructions(ptx, "prmt"))
    assert found == ["prmt.b32", "prmt.b32.ecl", "prmt.b32.rc16"], found
    # cute.arch.prmt(src, src_reg_shifted, indices): the default mode over the register pair
    ptx = ptx_of(lambda gF, gI, tidx, smem: gI.__setitem__(tidx, cute.arch.prmt(gI[tidx], tidx, 0x5410)))
    assert [i.split()[0] for i in instructions(ptx, "prmt")] == ["prmt.b32"]
    with pytest.raises(cutlass.DSLError, match="prmt: lo must be a 32-bit integer") as e:
        ptx_of(lambda gF, gI, tidx, smem: prims.prmt(cutlass.Float32(1.0), 0, prims.PermuteMode.DEFAULT))  # FLOAT
    assert e.value.location == (THIS, line_in(THIS, "# FLOAT"))


def test_mov_b32_reinterprets_the_bits_without_an_instruction():
    """prims.mov_b32(x, target_type=): x's 32 bits as Int32, Uint32 or Float32; a constant folds to its bit pattern
    (1.0 is 0x3F800000), and a round trip through the integer is the same float."""
    def body(gF, gI, tidx, smem):
        x = cutlass.Float32(gF[tidx])
        bits = prims.mov_b32(x, target_type=cutlass.Uint32)
        gI[tidx] = prims.mov_b32(bits) + prims.mov_b32(1.0, target_type=cutlass.Int32)
        gF[tidx] = prims.mov_b32(bits, target_type=cutlass.Float32)

    ptx = ptx_of(body)
    assert "1065353216" in ptx, ptx[-1500:]
    with pytest.raises(cutlass.DSLError, match="target_type is Int32, Uint32 or Float32") as e:
        ptx_of(lambda gF, gI, tidx, smem: prims.mov_b32(tidx, target_type=cutlass.Int16))  # NARROW
    assert e.value.location == (THIS, line_in(THIS, "# NARROW"))
