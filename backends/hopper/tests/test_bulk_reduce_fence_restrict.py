"""primitives.cp_reduce_async_bulk_global_shared_cta (a bulk reduction of a byte range into global memory, no tensor
map) and primitives.fence_sync_restrict (cluster-scope fences restricted to shared memory), with CuTe DSL's
signatures (QuACK's copy_utils.cpasync_bulk_s2g and pipeline.mbarrier_arrive_release_cluster call them)."""
import re
import subprocess
import shutil

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave.experimental import primitives as prims
from warpweave._mlir import ir
from warpweave._mlir.dialects import llvm

from dsl_helpers import target

# The pairs ptxas 13.0 assembles for a global destination (every other (operation, type) it refuses).
PTXAS_PAIRS = {"add.noftz.f16", "add.noftz.bf16", "add.u32", "add.u64", "add.s32", "add.f32", "add.f64", "min.f16",
               "min.bf16", "min.u32", "min.u64", "min.s32", "min.s64", "max.f16", "max.bf16", "max.u32", "max.u64",
               "max.s32", "max.s64", "inc.u32", "dec.u32", "and.b32", "and.b64", "or.b32", "or.b64", "xor.b32",
               "xor.b64"}


def ptx_of(body, arch="sm_90a"):
    @cute.kernel
    def k(g: cute.Tensor):
        buf = cutlass.Array(cutlass.Float32, 64, space=cutlass.AddressSpace.smem, alignment=128)
        body(g, buf)

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(64, np.float32))).info["ptx"]


def _every_form():
    for o in prims.CpReduceOp:
        for t in prims.CpReduceType:
            for noftz in (False, True):
                yield o, t, noftz


def test_each_pair_ptx_has_is_emitted_and_no_other():
    """Every (op, type, noftz) CuTe DSL's enumerations spell: the ones PTX has compile to that instruction, the
    others are refused before any code is generated."""
    made, refused = set(), set()
    for o, t, noftz in _every_form():
        name = f"{o.value}{'.noftz' if noftz else ''}.{t.value}"

        def body(g, buf, o=o, t=t, noftz=noftz):
            prims.cp_reduce_async_bulk_global_shared_cta(g.iterator, buf.data_ptr(), 256, op=o, type=t, noftz=noftz)

        try:
            ptx = ptx_of(body)
        except ValueError as e:
            assert "PTX has no reduction" in str(e)
            refused.add(name)
            continue
        assert re.search(rf"cp\.reduce\.async\.bulk\.global\.shared::cta\.bulk_group\.{re.escape(name)} "
                         r"\[%rd\d+\], \[%r\d+\], %r\d+;", ptx), name
        made.add(name)
    assert made == PTXAS_PAIRS
    assert len(made) + len(refused) == 2 * len(prims.CpReduceOp) * len(prims.CpReduceType)


def test_quacks_form_ir_pointers_runtime_size_and_cache_hint():
    """QuACK passes an addrspacecast global pointer and the shared tensor's LLVM pointer; the size may be a
    runtime Int32 and an L2 cache policy a 64-bit value."""
    def body(g, buf):
        gmem = llvm.addrspacecast(llvm.PointerType.get(cutlass.AddressSpace.gmem.value), g.iterator.to_llvm_ptr())
        n = cutlass.Int32(cute.arch.thread_idx()[0]) * 16 + 16
        prims.cp_reduce_async_bulk_global_shared_cta(gmem, buf.data_ptr().to_llvm_ptr(), n,
                                                     op=prims.CpReduceOp.ADD, type=prims.CpReduceType.BF16,
                                                     noftz=True, loc=None, ip=None)
        prims.cp_reduce_async_bulk_global_shared_cta(g, buf, 64, op=prims.CpReduceOp.MAX,
                                                     type=prims.CpReduceType.S32, l2_cache_hint=cutlass.Int64(5))

    ptx = ptx_of(body)
    assert re.search(r"cp\.reduce\.async\.bulk\.global\.shared::cta\.bulk_group\.add\.noftz\.bf16 \[%rd\d+\], "
                     r"\[%r\d+\], %r\d+;", ptx)
    assert re.search(r"cp\.reduce\.async\.bulk\.global\.shared::cta\.bulk_group\.L2::cache_hint\.max\.s32 "
                     r"\[%rd\d+\], \[%r\d+\], %r\d+, %rd\d+;", ptx)


@pytest.mark.parametrize("case, message", [
    ("bf16 add without noftz", "the f16/bf16 add takes noftz=True"),
    ("and of f32", "PTX has no reduction and.f32"),
    ("noftz on f32", "noftz applies to the f16/bf16 add only"),
    ("shared destination", "dst must be a pointer to global memory"),
    ("global source", "src must be a pointer to shared memory"),
])
def test_bad_arguments_are_named_at_the_users_line(case, message):
    calls = {
        "bf16 add without noftz": lambda g, b: prims.cp_reduce_async_bulk_global_shared_cta(g, b, 64),
        "and of f32": lambda g, b: prims.cp_reduce_async_bulk_global_shared_cta(
            g, b, 64, op=prims.CpReduceOp.AND, type=prims.CpReduceType.F32),
        "noftz on f32": lambda g, b: prims.cp_reduce_async_bulk_global_shared_cta(
            g, b, 64, type=prims.CpReduceType.F32, noftz=True),
        "shared destination": lambda g, b: prims.cp_reduce_async_bulk_global_shared_cta(
            b, b, 64, type=prims.CpReduceType.F32),
        "global source": lambda g, b: prims.cp_reduce_async_bulk_global_shared_cta(
            g, g, 64, type=prims.CpReduceType.F32),
    }

    def body(g, buf):
        calls[case](g.iterator, buf.data_ptr())

    with pytest.raises(Exception, match=re.escape(message)) as info:
        ptx_of(body)
    assert "test_bulk_reduce_fence_restrict.py:" in str(info.value)


def test_fence_sync_restrict_release_and_acquire():
    def body(g, buf):
        prims.fence_sync_restrict(prims.MemOrder.RELEASE, loc=None, ip=None)
        prims.fence_sync_restrict("acquire")

    ptx = ptx_of(body)
    assert "fence.release.sync_restrict::shared::cta.cluster;" in ptx
    assert "fence.acquire.sync_restrict::shared::cluster.cluster;" in ptx
    assert ptx.index("fence.release") < ptx.index("fence.acquire")


def test_fence_sync_restrict_takes_acquire_or_release_only():
    def body(g, buf):
        prims.fence_sync_restrict(prims.MemOrder.RELAXED)  # the user's line

    line = body.__code__.co_firstlineno + 1
    with pytest.raises(ValueError, match="fence_sync_restrict: order must be one of acquire, release") as info:
        ptx_of(body)
    assert f"test_bulk_reduce_fence_restrict.py:{line}" in str(info.value)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_ptxas_assembles_them_for_sm_90a(tmp_path):
    def body(g, buf):
        prims.fence_sync_restrict(prims.MemOrder.RELEASE)
        prims.cp_reduce_async_bulk_global_shared_cta(g, buf, 256, type=prims.CpReduceType.F32)
        prims.fence_sync_restrict(prims.MemOrder.ACQUIRE)

    src = tmp_path / "k.ptx"
    src.write_text(ptx_of(body))
    subprocess.run(["ptxas", "-arch=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")], check=True)


def test_quacks_cluster_release_arrival():
    """QuACK's mbarrier_arrive_release_cluster: a restricted release fence, then a relaxed arrival on the peer
    CTA's barrier (mapa of the LLVM pointer); a plain arrival stays a release."""
    def body(g, buf):
        bar = cutlass.Array(cutlass.Int64, 2, space=cutlass.AddressSpace.smem, alignment=8)
        prims.fence_sync_restrict(prims.MemOrder.RELEASE)
        remote = prims.mapa(bar.data_ptr().to_llvm_ptr(), 1)
        prims.mbarrier_arrive(remote, scope=prims.MemScope.CLUSTER, relaxed=True)
        prims.mbarrier_arrive(bar.data_ptr() + 1, relaxed=False)

    ptx = ptx_of(body)
    fence = ptx.index("fence.release.sync_restrict::shared::cta.cluster;")
    relaxed = re.search(r"mbarrier\.arrive\.relaxed\.cluster\.shared::cluster\.b64 _, \[%r\d+\];", ptx)
    assert relaxed and fence < relaxed.start()
    assert re.search(r"mbarrier\.arrive\.release\.cta\.shared::cta\.b64 %rd\d+, \[%r\d+\];", ptx)


def test_mbarrier_arrive_relaxed_is_a_python_bool():
    def body(g, buf):
        bar = cutlass.Array(cutlass.Int64, 1, space=cutlass.AddressSpace.smem, alignment=8)
        prims.mbarrier_arrive(bar, relaxed=g[0] > 0)  # the user's line

    line = body.__code__.co_firstlineno + 2
    with pytest.raises(TypeError, match="relaxed is a Python bool") as info:
        ptx_of(body)
    assert f"test_bulk_reduce_fence_restrict.py:{line}" in str(info.value)
