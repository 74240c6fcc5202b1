"""cute.arch's warp collectives, atomics, float min/max, clocks, and the backend-provided operations (packed
f32x2, grid dependency control): the PTX they compile to per target, errors naming the target or the user's
line, and (on a GPU) their results against numpy."""
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import compile_in_fresh_process, requires_gpu, target

THIS = os.path.abspath(__file__)


def compile_kernel(body, arch="sm_90a", n=64, dtypes=(np.float32, np.float32), threads=64):
    """Compiles a kernel whose body is body(gA, gB, tidx) for `arch`; returns the compiled function."""
    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        body(gA, gB, tidx)

    @cute.jit
    def h(a, b):
        k(a, b).launch(grid=[1, 1, 1], block=[threads, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(n, dtypes[0])), from_dlpack(np.zeros(n, dtypes[1])))


def ptx_of(body, arch="sm_90a", **kw):
    return compile_kernel(body, arch, **kw).info["ptx"]


def count(pattern, text):
    return len(re.findall(pattern, text))


def test_constants():
    assert cute.arch.WARP_SIZE == 32
    assert cute.arch.FULL_MASK == 0xFFFFFFFF
    assert cutlass.Int32(cute.arch.FULL_MASK).value == -1


@pytest.mark.parametrize("kind", ["", "_up", "_down", "_bfly"])
def test_shuffle_kinds_and_widths(kind):
    fn = getattr(cute.arch, "shuffle_sync" + kind)

    def body(gA, gB, tidx):
        x = gA[tidx]
        f16 = fn(cutlass.Float16(x), 1)
        i64 = fn(cutlass.Int64(tidx) * 3, 2)
        b = fn(x > 0.0, 1)
        gB[tidx] = fn(x, 1) + cutlass.Float32(f16) + cutlass.Float32(i64) + cutlass.Float32(b)

    ptx = ptx_of(body)
    name = {"": "idx", "_up": "up", "_down": "down", "_bfly": "bfly"}[kind]
    # f32, f16 (widened), i64 (two halves), Boolean (widened): five shuffles of 32 bits.
    assert count(rf"shfl\.sync\.{name}\.b32", ptx) == 5
    assert count(r"shfl\.sync\.(?!%s)" % name, ptx) == 0


def test_shuffle_defaults_are_a_whole_warp():
    ptx = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.shuffle_sync_down(gA[t], 4)))
    assert re.search(r"shfl\.sync\.down\.b32\s+%r\d+, %r\d+, 4, 31, -1;", ptx)
    ptx = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.shuffle_sync_up(gA[t], 1)))
    assert re.search(r"shfl\.sync\.up\.b32\s+%r\d+, %r\d+, 1, 0, -1;", ptx)


class _Kind:   # an enum-like kind, as CuTe DSL passes its ShflKind
    def __init__(self, name):
        self.name = name


@pytest.mark.parametrize("kind", ["idx", "up", "down", "bfly"])
def test_shuffle_sync_op_is_the_named_kinds_shuffle(kind):
    # CuTe DSL's positional form (value, offset, mask, mask_and_clamp[, kind]), as its attention kernels call it.
    ptx = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.shuffle_sync_op(gA[t], 3, 0xFFFFFFFF, 7199,
                                                                                _Kind(kind))))
    assert re.search(rf"shfl\.sync\.{kind}\.b32\s+%r\d+, %r\d+, 3, 7199, -1;", ptx), ptx
    default = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.shuffle_sync_op(gA[t], 2)))
    assert re.search(r"shfl\.sync\.idx\.b32\s+%r\d+, %r\d+, 2, 31, -1;", default)
    with pytest.raises(Exception, match="kind is one of idx, up, down, bfly, got 'left'"):
        ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.shuffle_sync_op(gA[t], 2, kind="left")))


def test_votes():
    def body(gA, gB, tidx):
        x = gA[tidx]
        ballot = cute.arch.vote_ballot_sync(x > 0.0)
        a = cute.arch.vote_any_sync(x > 1.0)
        b = cute.arch.vote_all_sync(x > 2.0, mask=0xFFFF)
        u = cute.arch.vote_uni_sync(x > 3.0)
        gB[tidx] = cutlass.Float32(ballot) + cutlass.Float32(a) + cutlass.Float32(b) + cutlass.Float32(u) \
            + cutlass.Float32(cute.arch.popc(ballot))

    ptx = ptx_of(body)
    for kind in ("ballot.b32", "any.pred", "all.pred", "uni.pred"):
        assert count(rf"vote\.sync\.{kind}", ptx) == 1, kind
    assert re.search(r"vote\.sync\.all\.pred\s+%p\d+, %p\d+, 65535;", ptx)
    assert "popc.b32" in ptx


@pytest.mark.parametrize("group", [1, 2, 4, 8, 16, 32])
def test_warp_reduction_is_log2_butterflies(group):
    ptx = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.warp_reduction_sum(gA[t], threads_in_group=group)))
    assert count(r"shfl\.sync\.bfly\.b32", ptx) == group.bit_length() - 1
    ptx = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.warp_reduction_max(gA[t], threads_in_group=group)))
    assert count(r"\bmax\.f32", ptx) == group.bit_length() - 1


def test_warp_reduction_with_a_function_and_integers():
    import operator

    def body(gA, gB, tidx):
        i = cute.arch.warp_reduction(cutlass.Int32(tidx), operator.xor)
        m = cute.arch.warp_reduction(cutlass.Int32(tidx), cute.ReductionOp.MIN, threads_in_group=4)
        gB[tidx] = cutlass.Float32(i + m)

    ptx = ptx_of(body)
    assert count(r"shfl\.sync\.bfly\.b32", ptx) == 5 + 2
    assert "xor.b32" in ptx and re.search(r"min\.s32", ptx)


def test_warp_reduction_refuses_a_group_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="power of two") as e:
        ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.warp_reduction_sum(gA[t], threads_in_group=12)))
    assert f"{THIS}:" in str(e.value)


def test_make_warp_uniform_broadcasts_lane_0():
    def body(gA, gB, tidx):
        w = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        gB[tidx] = cutlass.Float32(w) + cutlass.Float32(cute.arch.make_warp_uniform(5))

    ptx = ptx_of(body)
    assert re.search(r"shfl\.sync\.idx\.b32\s+%r\d+, %r\d+, 0, 31, -1;", ptx)
    assert count(r"shfl\.sync", ptx) == 1   # the static 5 needs none


def test_fmax_fmin():
    ptx = ptx_of(lambda gA, gB, t: gB.__setitem__(t, cute.arch.fmax(gA[t], 1.5) + cute.arch.fmin(gA[t], gB[t])))
    assert count(r"\bmax\.f32", ptx) == 1 and count(r"\bmin\.f32", ptx) == 1
    assert cute.arch.fmax(cutlass.Float32(float("nan")), 2.0).value == 2.0  # NaN ignored, as max.f32 does


def test_clocks():
    def body(gA, gB, tidx):
        t0 = cute.arch.clock64()
        t1 = cute.arch.globaltimer()
        c = cute.arch.clock()
        gB[tidx] = cutlass.Float32(t1 - t0) + cutlass.Float32(c)

    ptx = ptx_of(body)
    assert "%clock64" in ptx and "%globaltimer" in ptx and re.search(r"%clock\b", ptx)


# --- atomics ----------------------------------------------------------------------------------------------------

def test_atomics_on_global_memory():
    def body(gA, gI, tidx):
        old = cute.arch.atomic_add(gI.iterator, cutlass.Int32(1))
        cute.arch.atomic_add(gA.iterator + 3, 2.5)
        cute.arch.atomic_max(gI.iterator + 1, tidx, scope="cta")
        cute.arch.atomic_min(gI.iterator + 2, tidx, sem="acq_rel", scope="sys")
        cute.arch.atomic_or(gI.iterator.llvm_ptr + 4, old)
        cute.arch.atomic_exch(gI.iterator + 5, 7)
        cute.arch.atomic_cas(gI.iterator + 6, 0, tidx)

    ptx = ptx_of(body, dtypes=(np.float32, np.int32))
    assert re.search(r"atom\.global\.add\.u32", ptx)
    assert re.search(r"atom\.global\.add\.f32", ptx)
    # Scope cta runs at GPU scope (a superset); sys uses the system-scope atom; orderings are fences around it.
    assert re.search(r"atom\.global\.max\.s32", ptx)
    assert re.search(r"fence\.(release|acq_rel)\.sys;[^;]*;?\s+atom\.sys\.min\.s32[^\n]*\n"
                     r"\s+fence\.(acquire|acq_rel)\.sys;", ptx)
    assert re.search(r"atom\.global\.or\.b32", ptx)
    assert re.search(r"atom\.global\.exch\.b32", ptx)
    assert re.search(r"atom\.relaxed\.gpu\.global\.cas\.b32", ptx)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_atomic_orderings_are_fences_at_the_scope(arch):
    def body(gA, gI, tidx):
        cute.arch.atomic_add(gI.iterator, tidx, sem="acquire", scope="gpu")
        cute.arch.atomic_add(gA.iterator, 1.0, sem="release", scope="cta")
        cute.arch.atomic_cas(gI.iterator + 6, 0, tidx, sem="acquire", scope="cta")

    ptx = ptx_of(body, arch, dtypes=(np.float32, np.int32))
    assert re.search(r"atom\.global\.add\.u32[^\n]*\n\s+fence\.(acquire|acq_rel)\.gpu;", ptx)
    assert re.search(r"fence\.(release|acq_rel)\.cta;\s+atom\.global\.add\.f32", ptx)
    assert re.search(r"atom\.acquire\.cta\.global\.cas\.b32", ptx)


def test_cluster_scope_needs_clusters():
    body = lambda gA, gB, t: cute.arch.atomic_add(gA.iterator, 1.0, sem="acq_rel", scope="cluster")  # noqa: E731
    ptx = ptx_of(body, "sm_90a")
    assert "fence.release.cluster" in ptx and "fence.acquire.cluster" in ptx
    with pytest.raises(ValueError, match="compiling for sm_80"):
        ptx_of(body, "sm_80")


def test_unsigned_and_shared_memory_atomics():
    @cute.kernel
    def k(gU: cute.Tensor):
        smem = cutlass.utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(4), 16)
        cute.arch.atomic_add(s.iterator, 1.0, scope="cta")
        cute.arch.atomic_max(gU.iterator, cutlass.Uint32(3))
        gU[1] = cutlass.Uint32(s[0])

    @cute.jit
    def h(u):
        k(u).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        ptx = cute.compile(h, from_dlpack(np.zeros(4, np.uint32))).info["ptx"]
    assert re.search(r"atom\.relaxed\.cta\.shared\.add\.f32|atom\.shared\.add\.f32", ptx)
    assert re.search(r"atom\.global\.max\.u32", ptx)


def test_atomic_fmax_without_sign_is_one_integer_max():
    cas = ptx_of(lambda gA, gB, t: cute.arch.atomic_fmax(gA.iterator, gB[t]))
    assert "atom.relaxed.gpu.global.cas.b32" in cas  # a compare-and-swap loop, at the requested scope
    nonneg = ptx_of(lambda gA, gB, t: cute.arch.atomic_fmax(gA.iterator, gB[t], sign_bit=False))
    assert re.search(r"atom\.global\.max\.s32", nonneg) and "cas" not in nonneg


def test_atomic_errors_name_the_problem():
    with pytest.raises(TypeError, match="needs integers"):
        ptx_of(lambda gA, gB, t: cute.arch.atomic_or(gA.iterator, 1))
    with pytest.raises(ValueError, match="scope='block' is not one of"):
        ptx_of(lambda gA, gB, t: cute.arch.atomic_add(gA.iterator, 1.0, scope="block"))
    with pytest.raises(TypeError, match="expected a pointer"):
        ptx_of(lambda gA, gB, t: cute.arch.atomic_add(3, 1.0))

    def rmem(gA, gB, t):
        r = cute.make_rmem_tensor((4,), cutlass.Float32)
        cute.arch.atomic_add(r.iterator, 1.0)

    with pytest.raises(TypeError, match="global or shared memory"):
        ptx_of(rmem)


# --- operations from the backends -------------------------------------------------------------------------------

def packed_body(gA, gB, tidx):
    x, y = gA[tidx], gB[tidx]
    s = cute.arch.add_packed_f32x2((x, y), (y, 1.0))
    d = cute.arch.sub_packed_f32x2(s, (x, x))
    m = cute.arch.mul_packed_f32x2(d, (2.0, 3.0))
    f = cute.arch.fma_packed_f32x2(m, (x, y), s)
    gB[tidx] = f[0] + f[1]


def test_packed_f32x2_on_blackwell():
    ptx = ptx_of(packed_body, "sm_100a")
    for op in ("add", "sub", "mul", "fma"):
        assert count(rf"\b{op}\.rn\.f32x2\b", ptx) == 1, op


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_packed_f32x2_elsewhere_names_the_target(arch):
    with pytest.raises(TypeError) as e:
        ptx_of(packed_body, arch)
    msg = str(e.value)
    assert f"compiling for {arch}" in msg and "blackwell for sm_100a" in msg and f"{THIS}:" in msg


def rounded_body(gA, gB, tidx):
    x, y = gA[tidx], gB[tidx]
    s = cute.arch.add_packed_f32x2((x, y), (y, 1.0), rnd="rm")
    d = cute.arch.sub_packed_f32x2(s, (x, x), rnd="rz")
    m = cute.arch.mul_packed_f32x2(d, (2.0, 3.0), rnd="rp")
    f = cute.arch.fma_packed_f32x2(m, (x, y), s, rnd="none")
    gB[tidx] = f[0] + f[1]


def test_packed_f32x2_take_cute_dsls_rounding_modes():
    # rnd= (CuTe DSL's): toward minus / plus infinity, toward zero, or "none" (to nearest even, the default)
    ptx = ptx_of(rounded_body, "sm_100a")
    for op, r in (("add", "rm"), ("sub", "rz"), ("mul", "rp"), ("fma", "rn")):
        assert count(rf"\b{op}\.{r}\.f32x2\b", ptx) == 1 and count(rf"\b{op}\.r[nzmp]\.f32x2\b", ptx) == 1, op
    with pytest.raises(TypeError, match=r"rnd is one of rn, rz, rm, rp or none"):
        ptx_of(lambda gA, gB, t: cute.arch.add_packed_f32x2((gA[t], gA[t]), (gB[t], gB[t]), rnd="rx"), "sm_100a")


def test_packed_operands_are_pairs():
    with pytest.raises(TypeError, match="pair"):
        ptx_of(lambda gA, gB, t: cute.arch.add_packed_f32x2(gA[t], gB[t]), "sm_100a")


def grid_body(gA, gB, tidx):
    cute.arch.griddepcontrol_wait()
    gB[tidx] = gA[tidx]
    cute.arch.griddepcontrol_launch_dependents()


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_griddepcontrol_from_hopper_and_blackwell(arch):
    ptx = ptx_of(grid_body, arch)
    assert count(r"griddepcontrol\.wait;", ptx) == 1
    assert count(r"griddepcontrol\.launch_dependents;", ptx) == 1


def test_griddepcontrol_on_sm80_names_the_target():
    with pytest.raises(TypeError) as e:
        ptx_of(grid_body, "sm_80")
    assert "griddepcontrol_wait is not available when compiling for sm_80" in str(e.value)
    assert "hopper for sm_90a" in str(e.value)



WRONG_TARGET_SCRIPT = r"""
import numpy as np
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

@cute.kernel
def k(gA: cute.Tensor):
    cute.arch.cluster_arrive()  # the Hopper name

@cute.jit
def h(a: cute.Tensor):
    k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


def compile_program():
    cute.compile(h, from_dlpack(np.zeros(32, np.float32)))
"""


def test_a_name_of_another_generation_names_where_it_exists(tmp_path):
    # A process of its own: a trace loads only its target's backends, which is where the hint was lost.
    script, out = compile_in_fresh_process(tmp_path, "wrong_target.py", WRONG_TARGET_SCRIPT, "sm_80", "sm_90a")
    kind, message, location = out["sm_80"]
    line = WRONG_TARGET_SCRIPT.splitlines().index("    cute.arch.cluster_arrive()  # the Hopper name") + 1
    assert location == [str(script), line], (location, message)
    assert "sm_80" in message and "hopper" in message and "sm_90a" in message, message
    assert "no loaded backend offers" not in message, message
    assert out["sm_90a"] == "compiled", out  # the miss on sm_80 is not remembered for other targets

# --- printf end=, register tensor bounds --------------------------------------------------------------------------

def test_printf_end():
    def body(gA, gB, tidx):
        cute.printf("a={}", tidx, end="")
        cute.printf("b={}", tidx, end=" | ")
        cute.printf("c={}", tidx)

    c = compile_kernel(body, "sm_80")
    assert '"a=%d\\00"' in c.ir and '"b=%d | \\00"' in c.ir and '"c=%d\\0A\\00"' in c.ir


def test_print_tensor_prints_rows():
    def body(gA, gB, tidx):
        r = cute.make_rmem_tensor((2, 3), cutlass.Float32)
        for i in cutlass.range_constexpr(6):
            r[i] = gA[i]
        cute.print_tensor(r)
        cute.print_tensor(r.load())

    c = compile_kernel(body, "sm_80")
    assert c.ir.count("[%f, %f, %f]") == 4 and "data=" in c.ir


def test_static_out_of_range_register_index_is_warned_of_and_made_harmless():
    # CuTe DSL compiles an access past a fragment's end (shipped libraries have loops that run past one), so it is
    # compiled here too: a warning at the user's line, the write writing nothing, the read an undefined value that
    # no in-range element is affected by.
    import warnings

    from warpweave._dsl.values.tensor_type import DSLIndexWarning

    def body(gA, gB, tidx):
        r = cute.make_rmem_tensor((4,), cutlass.Float32)
        r[3] = gA[0]
        r[10] = gA[1]  # out of range
        gB[0] = r[3]
        gB[1] = r[12]  # out of range

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ptx = ptx_of(body)
    hits = [w for w in seen if issubclass(w.category, DSLIndexWarning)]
    lines = open(THIS).read().splitlines()
    assert len(hits) == 2 and all(w.filename == THIS and "out of range" in lines[w.lineno - 1] for w in hits)
    assert "writes nothing" in str(hits[0].message) and "undefined value" in str(hits[1].message)
    assert "shape (4,)" in str(hits[0].message)
    # gA[0] reaches gB[0]; gA[1] is never stored anywhere (only the in-range write and read remain)
    assert ptx.count("ld.global") == 1, ptx

    def negative(gA, gB, tidx):
        r = cute.make_rmem_tensor(cute.make_layout((2, 2)), cutlass.Float32)
        gB[0] = r[1, 2]

    with pytest.warns(DSLIndexWarning):
        ptx_of(negative)


# --- on the GPU -------------------------------------------------------------------------------------------------

def _run(body, a, b, threads=64, grid=1):
    import torch

    @cute.kernel
    def k(gA: cute.Tensor, gB: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        body(gA, gB, tidx)

    @cute.jit
    def h(x, y):
        k(x, y).launch(grid=[grid, 1, 1], block=[threads, 1, 1])

    h(from_dlpack(a), from_dlpack(b))
    torch.cuda.synchronize()


@requires_gpu
@pytest.mark.parametrize("group", [2, 8, 32])
def test_warp_reductions_on_the_gpu(group):
    import torch

    x = torch.randn(128, device="cuda")
    out = torch.full((3, 128), float("nan"), device="cuda")

    def body(gA, gB, t):
        v = gA[t]
        gB[0, t] = cute.arch.warp_reduction_sum(v, threads_in_group=group)
        gB[1, t] = cute.arch.warp_reduction_max(v, threads_in_group=group)
        gB[2, t] = cute.arch.shuffle_sync_bfly(v, 1)

    _run(body, x, out, threads=128)
    xs = x.cpu().numpy().astype(np.float64).reshape(-1, group)
    got = out.cpu().numpy()
    np.testing.assert_allclose(got[0], np.repeat(xs.sum(1), group), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], np.repeat(xs.max(1), group).astype(np.float32))
    np.testing.assert_array_equal(got[2], x.cpu().numpy().reshape(-1, 2)[:, ::-1].reshape(-1))


@cute.kernel
def _ballot_and_atomics(gA: cute.Tensor, gB: cute.Tensor):
    t, _, _ = cute.arch.thread_idx()
    ballot = cute.arch.vote_ballot_sync(gA[t] > 0.0)
    if t % 32 == 0:
        cute.arch.atomic_add(gB.iterator + 1, cute.arch.popc(ballot))
        cute.arch.atomic_xor(gB.iterator + 2, ballot)
    cute.arch.atomic_add(gB.iterator, cutlass.Int32(1))
    cute.arch.atomic_max(gB.iterator + 3, cutlass.Int32(t))


@cute.jit
def _ballot_and_atomics_host(a, b):
    _ballot_and_atomics(a, b).launch(grid=[1, 1, 1], block=[64, 1, 1])


def test_ballot_and_atomics_compile():
    with target("sm_80"):
        ptx = cute.compile(_ballot_and_atomics_host, from_dlpack(np.zeros(64, np.float32)),
                           from_dlpack(np.zeros(8, np.int32))).info["ptx"]
    assert "vote.sync.ballot.b32" in ptx and "popc.b32" in ptx and "atom.global.xor.b32" in ptx


@requires_gpu
def test_ballot_and_atomics_on_the_gpu():
    import torch

    x = torch.randn(64, device="cuda")
    out = torch.zeros(8, device="cuda", dtype=torch.int32)
    _ballot_and_atomics_host(from_dlpack(x), from_dlpack(out))
    torch.cuda.synchronize()
    pos = (x > 0).cpu().numpy()
    words = [int(sum(1 << i for i in range(32) if pos[w * 32 + i])) for w in range(2)]
    got = out.cpu().numpy().astype(np.int64) & 0xFFFFFFFF
    assert got[0] == 64 and got[1] == pos.sum() and got[3] == 63
    assert got[2] == (words[0] ^ words[1])


def test_sync_warp_and_cute_dsl_location_keywords():
    def body(gA, gB, tidx):
        cute.arch.sync_warp()
        cute.arch.sync_warp(mask=0xFFFF)
        v = cute.arch.shuffle_sync_bfly(gA[tidx], offset=1, mask=-1, mask_and_clamp=31, loc=None, ip=None)
        w = cute.arch.warp_idx(loc=None, ip=None)
        gB[tidx] = cute.math.exp(v, fastmath=True, loc=None, ip=None) + cutlass.Float32(w)

    ptx = ptx_of(body, "sm_80")
    assert "shfl.sync.bfly.b32" in ptx and "ex2.approx" in ptx
    assert "bar.warp.sync \t-1;" in ptx and "bar.warp.sync \t65535;" in ptx


def test_warp_redux_sync():
    from functools import partial

    warp_fmax = partial(cute.arch.warp_redux_sync, kind="fmax", nan=True)

    def body(gA, gB, tidx):
        i = cute.arch.warp_redux_sync(cutlass.Int32(tidx), "add")
        u = cute.arch.warp_redux_sync(cutlass.Uint32(tidx), "max", mask=0xFF)
        f = warp_fmax(gA[tidx])
        g = cute.arch.warp_redux_sync(gA[tidx], "fmin", abs=True)
        gB[tidx] = cutlass.Float32(i) + cutlass.Float32(u) + f + g

    ptx = ptx_of(body, "sm_80")
    assert "redux.sync.add.s32" in ptx and "redux.sync.max.u32" in ptx
    assert count(r"shfl\.sync\.bfly\.b32", ptx) == 10 and "max.NaN.f32" in ptx and "abs.f32" in ptx
    with pytest.raises(TypeError, match="32-bit integer"):
        ptx_of(lambda gA, gB, t: cute.arch.warp_redux_sync(gA[t], "add"))
    with pytest.raises(ValueError, match="whole warp"):
        ptx_of(lambda gA, gB, t: cute.arch.warp_redux_sync(gA[t], "fmax", mask=0xFF))


def test_warp_redux_sync_in_cute_dsls_spelling():
    # the mask as CuTe DSL names it (mask_and_clamp, positional third), "max" of a float meaning "fmax": the
    # same code as the other spelling
    def theirs(gA, gB, tidx):
        gB[tidx] = cute.arch.warp_redux_sync(value=gA[tidx], kind="max", mask_and_clamp=0xFFFFFFFF, nan=True) + \
            cutlass.Float32(cute.arch.warp_redux_sync(cutlass.Uint32(tidx), "max", 0xFF))

    def ours(gA, gB, tidx):
        gB[tidx] = cute.arch.warp_redux_sync(gA[tidx], "fmax", nan=True) + \
            cutlass.Float32(cute.arch.warp_redux_sync(cutlass.Uint32(tidx), "max", mask=0xFF))

    strip = lambda ptx: re.sub(r"//.*|\.loc.*|\.file.*", "", ptx)  # noqa: E731
    assert strip(ptx_of(theirs, "sm_80")) == strip(ptx_of(ours, "sm_80"))
