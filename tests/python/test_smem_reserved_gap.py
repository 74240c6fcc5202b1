"""Shared-memory layout: RESERVED allocations (partition=RESERVED, the barriers a pipeline makes for itself, the word
that receives a tensor-memory allocation) take the alignment padding below the user's buffers, as under CuTe DSL,
where they lie below the USER partition; USER allocations keep the layout in order of allocation."""
import random

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import Int32, Int64, Float16
from warpweave._dsl.base import trace
from warpweave._dsl.values.tensor import elem_bytes
from warpweave.cute.runtime import make_fake_compact_tensor
from warpweave_pipelines import alloc_reserved_mbarrier

from dsl_helpers import target

RESERVED = cutlass.utils.SmemPartition.RESERVED


def _offset(p):
    p = getattr(p, "iterator", p)
    return p.offset * elem_bytes(p.dtype)


def _trace(body, merge=False):
    """Runs body(smem, record) in a kernel; returns the recorded (offset, nbytes, align, reserved) rows and the
    kernel's shared-memory bytes."""
    rows, total = [], []

    def record(ptr, nbytes, align, reserved, level="both"):
        # level: "alloc" (one allocation, e.g. a struct), "field" (what holds data) or "both" (an array)
        rows.append((_offset(ptr), nbytes, align, reserved, level))

    @cute.kernel
    def k(x: cute.Tensor):
        body(cutlass.utils.SmemAllocator(), record, x)
        total.append(trace.current().kernel.smem_bytes)

    @cute.jit
    def h(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1], smem_merge_branch_allocs=merge)

    with target("sm_90a"):
        cute.compile(h, make_fake_compact_tensor(Int32, (4,)))
    return rows, total[0]


def _struct(fields):
    """A @cute.struct of (dtype, count, align) fields; returns it and each field's name."""
    ann = {f"f{i}": cute.struct.Align[cute.struct.MemRange[t, n], a] for i, (t, n, a) in enumerate(fields)}
    return cute.struct(type("S", (), {"__annotations__": ann})), list(ann)


def _random_program(seed):
    rng = random.Random(seed)
    steps = []
    for _ in range(rng.randint(1, 8)):
        reserved = rng.random() < 0.5
        if rng.random() < 0.5:
            fields = [(rng.choice([Int32, Int64, Float16]), rng.randint(0, 300), rng.choice([1, 16, 128, 1024]))
                      for _ in range(rng.randint(1, 4))]
            steps.append(("struct", fields, reserved))
        else:
            steps.append(("array", (rng.choice([Int32, Int64]), rng.randint(1, 64), rng.choice([0, 8, 16, 256])),
                          reserved))

    def body(smem, record, x):
        for kind, what, reserved in steps:
            part = RESERVED if reserved else None
            if kind == "struct":
                S, names = _struct(what)
                s = smem.allocate(S, partition=part)
                record(s.f0.data_ptr(), S.size_in_bytes(), S.alignment(), reserved, "alloc")  # a struct starts
                for name, (t, n, a) in zip(names, what):                                    # at its first field
                    record(getattr(s, name).data_ptr(), n * t.width // 8, max(a, t.width // 8), reserved, "field")
            else:
                t, n, a = what
                record(smem.allocate_array(t, n, byte_alignment=a, partition=part), n * t.width // 8,
                       max(a, t.width // 8), reserved)
    return body, steps


def _plain_layout(allocs):
    """Where the allocations fall when laid out one after another, in order (no holes reused), and their end."""
    top, out = 0, []
    for _, n, a, *_ in allocs:
        top = (top + a - 1) // a * a
        out.append(top)
        top += n
    return out, top


@pytest.mark.parametrize("seed", range(12))
def test_allocations_are_disjoint_aligned_and_within_the_total(seed):
    body, steps = _random_program(seed)
    rows, total = _trace(body)
    for off, n, a, *_ in rows:
        assert off % a == 0 and off + n <= total
    spans = sorted((off, off + n) for off, n, _, _, level in rows if n and level != "alloc")
    assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:])), spans
    allocs = [r for r in rows if r[4] != "field"]
    plain, plain_total = _plain_layout(allocs)
    assert total <= plain_total
    if not any(r for _, _, r in steps):   # without RESERVED allocations the layout is the one in order
        assert [off for off, *_ in allocs] == plain and total == plain_total


def test_user_buffers_behind_reserved_fields_leave_room_for_the_pipeline_barriers():
    # QuACK's Blackwell GEMM: a small RESERVED struct, then 1024-byte aligned buffers; its pipelines and the
    # tensor-memory word come after: they take the padding, the kernel ends where the buffers do.
    Res, _ = _struct([(Int32, 14, 16)])
    User, _ = _struct([(Float16, 4096, 1024), (Float16, 4096, 1024)])

    def body(smem, record, x):
        r = smem.allocate(Res, partition=RESERVED)
        u = smem.allocate(User)
        record(r.f0.data_ptr(), 56, 16, True)
        record(u.f0.data_ptr(), 8192, 1024, False)
        record(u.f1.data_ptr(), 8192, 1024, False)
        for stages in (4, 2, 3):
            record(alloc_reserved_mbarrier(stages), stages * 16, 8, True)
        record(smem.allocate(Int32, partition=RESERVED), 4, 4, True)
    rows, total = _trace(body)
    assert [off for off, *_ in rows[:3]] == [0, 1024, 9216]
    assert total == 9216 + 8192
    assert all(off + n <= 1024 for off, n, _, r, _ in rows if r)
    spans = sorted((off, off + n) for off, n, *_ in rows)
    assert all(e <= s for (_, e), (s, _) in zip(spans, spans[1:])), spans


def test_padding_inside_a_struct_is_room_for_reserved_allocations():
    S, _ = _struct([(Int32, 3, 4), (Float16, 512, 1024), (Int32, 1, 4)])

    def body(smem, record, x):
        s = smem.allocate(S)
        record(s.f0.data_ptr(), 12, 4, False)
        record(s.f1.data_ptr(), 1024, 1024, False)
        record(s.f2.data_ptr(), 4, 4, False)
        record(smem.allocate_array(Int64, 8, partition=RESERVED), 64, 8, True)      # between f0 and f1
        record(smem.allocate_array(Int64, 125, partition=RESERVED), 1000, 8, True)  # in the tail padding
        record(smem.allocate_array(Int64, 200, partition=RESERVED), 1600, 8, True)  # fits nowhere: appended
    rows, total = _trace(body)
    assert [off for off, *_ in rows] == [0, 1024, 2048, 16, 2056, 3072]
    assert total == 3072 + 1600 == S.size_in_bytes() + 1600


BranchS, _ = _struct([(Int32, 1, 4), (Float16, 512, 1024)])
branch_rows = []


@cute.kernel
def branch_kernel(x: cute.Tensor):
    smem = cutlass.utils.SmemAllocator()
    smem.allocate(BranchS)
    if x[0] > 0:
        branch_rows.append(_offset(smem.allocate_array(Int64, 4, partition=RESERVED)))
    else:
        branch_rows.append(_offset(smem.allocate_array(Int64, 2, partition=RESERVED)))
    branch_rows.append(_offset(smem.allocate_array(Int64, 4, partition=RESERVED)))


@cute.jit
def branch_host(x: cute.Tensor):
    branch_kernel(x).launch(grid=[1, 1, 1], block=[32, 1, 1], smem_merge_branch_allocs=True)


def test_branches_sharing_memory_leave_no_hole_either_used():
    branch_rows.clear()
    with target("sm_90a"):
        cute.compile(branch_host, make_fake_compact_tensor(Int32, (4,)))
    assert branch_rows[0] == branch_rows[1] == 8    # the two branches share the hole's start
    assert branch_rows[2] >= 8 + 32                 # after the if, past what either took
