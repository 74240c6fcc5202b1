"""Bulk copies of byte ranges (the Hopper backend's bulk_copy.py): cpasync.CopyBulkG2SOp, CopyBulkG2SMulticastOp and
CopyBulkS2GOp. One instruction moves mode 0 of the copy's tensors (their whole extent for a one-mode tensor), its
byte count taken from them, the loads completing on mbar_ptr's barrier; what the hardware would refuse and is known
while tracing is an error at the program's line. Compiled for sm_90a, and for sm_100a through Blackwell's extending
Hopper; the GPU test moves fresh random data global -> shared -> global."""
from __future__ import annotations

import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, requires_gpu, target  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_compilations")

N = 64          # floats in the global tensors
G2S = r"cp\.async\.bulk\.shared::cta\.global\.mbarrier::complete_tx::bytes \[(%r\d+)\], \[(%rd\d+)(?:\+(\d+))?\], " \
      r"(%r\d+|\d+), \[(%r\d+)(?:\+\d+)?\];"
S2G = r"cp\.async\.bulk\.global\.shared::cta\.bulk_group \[(%rd\d+)(?:\+(\d+))?\], \[(%r\d+)(?:\+\d+)?\], (%r\d+|\d+);"
MULTICAST = (r"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes\.multicast::cluster "
             r"\[%r\d+\], \[%rd\d+(?:\+\d+)?\], (%r\d+|\d+), \[%r\d+\], ww_mask;")


def line_of(text: str) -> int:
    return line_in(__file__, text)


def constant(ptx: str, operand: str) -> int:
    """The value of an instruction operand: an immediate, or the constant its register was set to."""
    if operand.isdigit():
        return int(operand)
    sets = re.findall(rf"mov\.[bus]32\s+{re.escape(operand)},\s*(\d+);", ptx)
    assert len(sets) == 1, (operand, sets)
    return int(sets[0])


def _compile(body, arch="sm_90a", cluster=1):
    """A kernel whose body is body(g, o, s, bar): g, o global Float32 tensors of N, s a 2N-float shared tensor
    (128-byte aligned), bar an mbarrier."""
    @cute.kernel
    def k(g: cute.Tensor, o: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(2 * N), byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        body(g, o, s, bar)

    @cute.jit
    def host(g: cute.Tensor, o: cute.Tensor):
        k(g, o).launch(grid=(cluster, 1, 1), block=(32, 1, 1), cluster=(cluster, 1, 1))

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros(N, np.float32)), from_dlpack(np.zeros(N, np.float32))).ptx


def _view(t, shape, offset=0, stride=None):
    return cute.make_tensor(t.iterator + offset, cute.make_layout(shape, stride=stride))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])  # Blackwell uses Hopper's portable entries
def test_load_and_store_move_the_whole_tensor_in_one_instruction(arch):
    def body(g, o, s, bar):
        cute.arch.mbarrier_arrive_and_expect_tx(bar, N * 4)
        cute.copy(cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32), g, _view(s, N), mbar_ptr=bar)
        cute.copy(cute.make_copy_atom(cpasync.CopyBulkS2GOp(), cutlass.Float32), _view(s, N, 16), o)

    ptx = _compile(body, arch)
    loads, stores = re.findall(G2S, ptx), re.findall(S2G, ptx)
    assert len(loads) == 1 and len(stores) == 1, ptx
    _, _, _, size, mbar = loads[0]
    assert constant(ptx, size) == N * 4
    # the barrier is the one the program expects the bytes on
    expect = re.search(r"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[(%r\d+)\], (%r\d+|\d+);", ptx)
    assert expect and expect.group(1) == mbar and constant(ptx, expect.group(2)) == N * 4, ptx
    assert constant(ptx, stores[0][3]) == N * 4
    assert "elect.sync" not in ptx      # no thread is elected: the program guards the copy


def test_each_element_of_the_other_modes_is_one_instruction_of_mode_0():
    def body(g, o, s, bar):
        atom = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32)
        cute.copy(atom, _view(g, (16, 4)), _view(s, (16, 4)), mbar_ptr=bar)          # 4 x 64 bytes
        cute.copy(atom, _view(g, ((4, 2), 8)), _view(s, ((4, 2), 8)), mbar_ptr=bar)  # 8 x 32 bytes

    ptx = _compile(body)
    loads = re.findall(G2S, ptx)
    assert [constant(ptx, ld[3]) for ld in loads] == [64] * 4 + [32] * 8, ptx
    assert [int(ld[2] or 0) for ld in loads[:4]] == [0, 64, 128, 192]     # the global offsets of the runs
    assert [int(ld[2] or 0) for ld in loads[4:]] == [32 * i for i in range(8)]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_multicast_load_takes_the_mask(arch):
    def body(g, o, s, bar):
        atom = cute.make_copy_atom(cpasync.CopyBulkG2SMulticastOp(), cutlass.Float32)
        cute.copy(atom, g, _view(s, N), mbar_ptr=bar, mcast_mask=0b11)

    ptx = _compile(body, arch, cluster=2)
    found = re.findall(MULTICAST, ptx)
    assert len(found) == 1 and constant(ptx, found[0]) == N * 4, ptx
    assert re.search(r"cvt\.u16\.u32 ww_mask, (%r\d+|3);", ptx)


def test_multicast_is_not_offered_where_the_hardware_lacks_it():
    """sm_90a and sm_100a have it; consumer Blackwell (which uses Hopper's portable entries) does not."""
    def body(g, o, s, bar):
        atom = cute.make_copy_atom(cpasync.CopyBulkG2SMulticastOp(), cutlass.Float32)
        cute.copy(atom, g, _view(s, N), mbar_ptr=bar, mcast_mask=1)

    with pytest.raises(Exception, match="not for the current target sm_120a"):
        _compile(body, "sm_120a")


def _size(g, o, s, bar, a):
    cute.copy(a, _view(g, 6), _view(s, 6), mbar_ptr=bar)  # bad: 24 bytes


def _strided(g, o, s, bar, a):
    cute.copy(a, _view(g, 8), _view(s, 8, stride=2), mbar_ptr=bar)  # bad: stride 2


def _rows(g, o, s, bar, a):
    cute.copy(a, _view(g, (8, 8), stride=(8, 1)), _view(s, (8, 8), stride=(8, 1)), mbar_ptr=bar)  # bad: row-major


def _misaligned(g, o, s, bar, a):
    cute.copy(a, _view(g, 8), _view(s, 8, offset=1), mbar_ptr=bar)  # bad: 4 bytes in


def _sizes(g, o, s, bar, a):
    cute.copy(a, g, s, mbar_ptr=bar)  # bad: 64 vs 128


def _no_barrier(g, o, s, bar, a):
    cute.copy(a, g, _view(s, N))  # bad: no barrier


def _direction(g, o, s, bar, a):
    cute.copy(a, _view(s, N), o, mbar_ptr=bar)  # bad: smem source


def _type(g, o, s, bar, a):
    cute.copy(cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Int8), g, _view(s, N), mbar_ptr=bar)  # bad: Int8


# case -> (the error's words, the program, the comment on its line)
ERRORS = {
    "size": ("a multiple of 16 bytes", _size, "# bad: 24 bytes"),
    "strided": ("must be contiguous", _strided, "# bad: stride 2"),
    "rows": ("must be contiguous", _rows, "# bad: row-major"),
    "misaligned": ("16-byte aligned", _misaligned, "# bad: 4 bytes in"),
    "sizes": ("same size on both sides", _sizes, "# bad: 64 vs 128"),
    "no_barrier": ("needs mbar_ptr=", _no_barrier, "# bad: no barrier"),
    "direction": ("the source is a global-memory tensor", _direction, "# bad: smem source"),
    "type": ("holds Float32", _type, "# bad: Int8"),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_what_the_hardware_refuses_is_an_error_at_the_programs_line(case):
    message, call, comment = ERRORS[case]

    def body(g, o, s, bar):
        call(g, o, s, bar, cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32))

    with pytest.raises(Exception, match=message) as e:
        _compile(body)
    assert f"test_bulk_copy.py:{line_of(comment)}:" in str(e.value)


def test_store_and_multicast_keywords_are_checked():
    def store_with_barrier(g, o, s, bar):
        cute.copy(cute.make_copy_atom(cpasync.CopyBulkS2GOp(), cutlass.Float32), _view(s, N), o, mbar_ptr=bar)

    def multicast_without_mask(g, o, s, bar):
        cute.copy(cute.make_copy_atom(cpasync.CopyBulkG2SMulticastOp(), cutlass.Float32), g, _view(s, N),
                  mbar_ptr=bar)

    with pytest.raises(Exception, match="takes no mbar_ptr="):
        _compile(store_with_barrier)
    with pytest.raises(Exception, match="needs mcast_mask="):
        _compile(multicast_without_mask, cluster=2)


def test_an_address_of_unknown_alignment_is_the_programs_promise():
    """A run-time offset whose alignment is not known compiles (the hardware faults if it is wrong, as in CuTe DSL)."""
    def body(g, o, s, bar):
        i = cute.arch.block_idx()[0]
        cute.copy(cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32),
                  cute.make_tensor(g.iterator + i, cute.make_layout(8)), _view(s, 8), mbar_ptr=bar)

    assert len(re.findall(G2S, _compile(body))) == 1


def test_a_row_tile_at_run_time_indices_into_a_stage_of_a_buffer():
    """The attention backward's use: a 128-float tile of a tensor of run-time length at a run-time tile index, into
    one stage of a two-stage shared buffer, on that stage's barrier (partial(cute.copy, atom) as it writes it)."""
    from functools import partial

    @cute.kernel
    def k(m_lse: cute.Tensor, m_block: cutlass.Int32):
        smem = utils.SmemAllocator()
        s_lse = smem.allocate_tensor(cutlass.Float32, cute.make_layout((128, 2)), byte_alignment=128)
        bars = smem.allocate_array(cutlass.Int64, 2, byte_alignment=8)
        g_lse = cute.local_tile(m_lse, (128,), (None,))
        copy_stats = partial(cute.copy, cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32))
        stage = m_block % 2
        copy_stats(g_lse[None, m_block], s_lse[None, stage], mbar_ptr=bars + stage)

    @cute.jit
    def host(m_lse: cute.Tensor, m_block: cutlass.Int32):
        k(m_lse, m_block).launch(grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        t = from_dlpack(np.zeros(1024, np.float32), assumed_align=16).mark_layout_dynamic()
        ptx = cute.compile(host, t, 3).ptx
    loads = re.findall(G2S, ptx)
    assert len(loads) == 1 and constant(ptx, loads[0][3]) == 512, ptx


# --- on the GPU -------------------------------------------------------------------------------------------------

def _round_trip_program(cluster):
    """Each CTA of a cluster of `cluster` loads src's first half (two runs of mode 0) into shared memory, CTA 0
    multicasting a 64-float block of src's second half to every CTA; each CTA stores what it holds to its 128-float
    row of out."""
    @cute.kernel
    def k(src: cute.Tensor, out: cute.Tensor):
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float32, cute.make_layout(2 * N), byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        tidx, _, _ = cute.arch.thread_idx()
        rank = cute.arch.block_idx_in_cluster()
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
        cute.arch.mbarrier_init_fence()
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, 2 * N * 4)
            load = cute.make_copy_atom(cpasync.CopyBulkG2SOp(), cutlass.Float32)
            cute.copy(load, _view(src, (N // 2, 2)), _view(s, (N // 2, 2)), mbar_ptr=bar)
            if rank == 0:
                mc = cute.make_copy_atom(cpasync.CopyBulkG2SMulticastOp(), cutlass.Float32)
                cute.copy(mc, _view(src, N, offset=N), _view(s, N, offset=N), mbar_ptr=bar,
                          mcast_mask=(1 << cluster) - 1)
        cute.arch.mbarrier_wait(bar, 0)
        if tidx == 0:
            store = cute.make_copy_atom(cpasync.CopyBulkS2GOp(), cutlass.Float32)
            cute.copy(store, s, _view(out, 2 * N, offset=rank * 2 * N))
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0)
        cute.arch.cluster_arrive()
        cute.arch.cluster_wait()

    @cute.jit
    def host(src: cute.Tensor, out: cute.Tensor):
        k(src, out).launch(grid=(cluster, 1, 1), block=(32, 1, 1), cluster=(cluster, 1, 1))

    return host


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_round_trip_program_compiles_to_its_copies(arch):
    """The GPU test's program, compiled to a cubin: two runs of 128 bytes loaded, one 256-byte multicast, and the
    512 bytes stored in one instruction."""
    with target(arch):
        c = cute.compile(_round_trip_program(2), from_dlpack(np.zeros(2 * N, np.float32)),
                         from_dlpack(np.zeros(4 * N, np.float32)))
    loads, multicast, stores = re.findall(G2S, c.ptx), re.findall(MULTICAST, c.ptx), re.findall(S2G, c.ptx)
    assert [constant(c.ptx, ld[3]) for ld in loads] == [128, 128], c.ptx
    assert [constant(c.ptx, m) for m in multicast] == [256] and [constant(c.ptx, st[3]) for st in stores] == [512]
    assert c.cubin


@requires_gpu
def test_round_trip_through_shared_memory_on_the_gpu():
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("bulk copies need sm_90 or later")
    cluster = 2
    src = torch.randn(2 * N, dtype=torch.float32, device="cuda")
    out = torch.full((cluster * 2 * N,), float("nan"), dtype=torch.float32, device="cuda")
    _round_trip_program(cluster)(from_dlpack(src), from_dlpack(out))
    torch.cuda.synchronize()
    for r in range(cluster):
        assert torch.equal(out[r * 2 * N:(r + 1) * 2 * N], src), f"CTA {r}"
