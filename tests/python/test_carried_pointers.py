"""Pointers and tensors over them reassigned inside dynamic loops and branches: a tensor whose layout, element type,
memory and swizzle stay the same and whose pointer moves (a stage's buffer, a tensor-memory accumulator or scale-
factor tensor shifted by a runtime offset each tile, as QuACK's Blackwell GEMMs write it) is one variable of the
region, carried as its pointer's base and offset; a change of anything else is refused at the user's line."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import pipeline, utils
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

HERE = "test_carried_pointers.py"


def stepping_tensor():
    """Trip i writes i at element 4 (i + 1): the tensor's pointer moves by 4 elements each trip."""
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        t = cute.make_tensor(g.iterator, cute.make_layout(4))
        for i in cutlass.range(n, unroll=1):
            t = cute.make_tensor(t.iterator + 4, t.layout)
            t[0] = i.to(cutlass.Float32)
        t[1] = cutlass.Float32(-1.0)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    return h


def stepping_pointer():
    """A pointer variable advanced in a while loop by a runtime step (a multiple of 4 elements, as the program states:
    the pointer keeps its 16 bytes' alignment): trip i writes i at i * step."""
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32, step: cutlass.Int32):
        p = g.iterator
        i = cutlass.Int32(0)
        while i < n:
            cute.make_tensor(p, cute.make_layout(1))[0] = i.to(cutlass.Float32)
            p = p + cute.assume(step, divby=4)
            i += 1
        cute.make_tensor(p, cute.make_layout(1))[0] = cutlass.Float32(-1.0)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32, step: cutlass.Int32):
        k(g, n, step).launch(grid=[1, 1, 1], block=[1, 1, 1])

    return h


def region_results(ir: str, op: str) -> str:
    """The result types of the first `op` (scf.for, scf.if, scf.while) of the IR, as written after its regions."""
    after = ir[ir.index(f'"{op}"('):]
    return re.search(r"^\s*\}\)[^\n]*-> \(([^\n]*)\) loc", after, re.M).group(1)


def _g(n=64):
    return from_dlpack(np.zeros(n, np.float32))


def test_a_global_tensor_moved_each_trip_is_one_variable_of_the_loop():
    with target("sm_80"):
        c = cute.compile(stepping_tensor(), _g(), 5)
    # carried as one global address (byte-addressed memory; tensor memory carries a base and an offset)
    assert region_results(c.ir, "scf.for") == "!llvm.ptr<1>"


def test_a_pointer_moved_by_a_runtime_step_in_a_while_loop_is_carried():
    with target("sm_80"):
        c = cute.compile(stepping_pointer(), _g(), 5, 4)
    assert region_results(c.ir, "scf.while") == "i32, !llvm.ptr<1>"


def test_a_packed_pointer_moved_in_a_loop_keeps_its_moves():
    """A pointer to 4-bit values (two a byte) has no single address of an element; its moves are carried by offset
    (they were lost before: the pointer left the loop as it entered)."""
    seen = []

    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        p = cute.recast_ptr(g.iterator, dtype=cutlass.Float4E2M1FN)
        for _ in cutlass.range(n, unroll=1):
            p = p + 32
        seen.append(p.offset)
        cute.make_tensor(cute.recast_ptr(p, dtype=cutlass.Uint8), cute.make_layout(1))[0] = cutlass.Uint8(7)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        cute.compile(h, _g(), 5)
    assert len(seen) == 1 and not isinstance(seen[0], int)
    assert seen[0].divisibility == 32  # the 16 bytes' alignment it entered with (32 values)


def test_a_branch_that_moves_a_tensor_carries_it():
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        t = cute.make_tensor(g.iterator, cute.make_layout(4))
        if n > 2:
            t = cute.make_tensor(t.iterator + n * 4, t.layout)
        t[0] = cutlass.Float32(1.0)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, _g(), 3)
    assert region_results(c.ir, "scf.if") == "!llvm.ptr<1>"


def tmem_kernel(body):
    """A kernel over tensor memory: body(ptr, n, seen) runs between the allocation and its release."""
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        hold = utils.SmemAllocator().allocate_array(cutlass.Int32, 1, byte_alignment=4)
        tmem = utils.TmemAllocator(hold, barrier_for_retrieve=pipeline.NamedBarrier(1, 128))
        tmem.allocate(512)
        tmem.wait_for_alloc()
        ptr = tmem.retrieve_ptr(cutlass.Float32)
        body(ptr, n)
        tmem.relinquish_alloc_permit()
        pipeline.sync(barrier_id=1, num_threads=128)
        tmem.free(ptr)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[128, 1, 1])

    with target("sm_100a"):
        return cute.compile(h, _g(4), 3)


def test_a_tensor_memory_tensor_shifted_each_tile_is_carried_by_column_offset():
    """QuACK's overlapped accumulators: the scale-factor tensors in tensor memory move by +-256 columns after each
    tile (a runtime shift, stated a multiple with cute.assume). The region keeps the 8-bit values' place within a
    32-bit column known (the MMA's descriptor needs it), and the base is the allocation's, not an address moved
    bytewise (tensor memory counts columns)."""
    seen = []

    @cute.jit
    def body(ptr, n):
        sf = cute.make_tensor(cute.recast_ptr(ptr + 256, dtype=cutlass.Float8E8M0FNU),
                              cute.make_layout((128, 16), stride=(65536, 1)))
        phase = cutlass.Int32(0)
        while phase < n:
            sf = cute.make_tensor(
                cute.recast_ptr(cute.recast_ptr(sf.iterator, dtype=cutlass.Float32)
                                + cute.assume(256 * (phase % 2 * 2 - 1), divby=256), dtype=cutlass.Float8E8M0FNU),
                sf.layout)
            phase += 1
        seen.append(sf)

    c = tmem_kernel(body)
    # tensor memory's 32-bit addresses: its base and a 32-bit offset (with the loop's counter)
    assert region_results(c.ir, "scf.while") == "i32, !llvm.ptr<6>, i32"
    (sf,) = seen
    assert sf.iterator.memspace == "tmem" and sf.element_type is cutlass.Float8E8M0FNU
    assert sf.iterator.offset % 4 == 0  # a whole column: static, as the descriptor's byte field needs
    assert sf.iterator.alignment_at(0) >= 4


def test_a_tensor_memory_tensor_reassigned_in_a_loop_of_runtime_bounds():
    """An accumulator stage picked at run time each trip (ptr + 64 * stage): after the loop the tensor is the
    loop's, at an offset of whole stages."""
    seen = []

    @cute.jit
    def body(ptr, n):
        acc = cute.make_tensor(ptr, cute.make_layout((128, 64), stride=(65536, 1)))
        for i in cutlass.range(n, unroll=1):
            acc = cute.make_tensor(ptr + 64 * (i % 4), acc.layout)
        seen.append(acc)

    c = tmem_kernel(body)
    assert c.ir.count('"scf.for"') == 1
    (acc,) = seen
    # the alignment the loop entered with (the allocation's 16 bytes: 4 columns), no more
    assert not isinstance(acc.iterator.offset, int) and acc.iterator.offset.divisibility == 4
    assert acc.iterator.offset % 4 == 0


def _refused(kernel_body):
    with pytest.raises(TypeError) as e:
        _single_thread_loop(kernel_body)
    assert re.search(HERE + r":\d+", str(e.value)), str(e.value)
    return str(e.value)


def test_a_tensor_whose_layout_changes_in_a_loop_is_refused():
    @cute.jit
    def body(g, n):
        t = cute.make_tensor(g.iterator, cute.make_layout(4))
        for _ in cutlass.range(n, unroll=1):
            t = cute.make_tensor(t.iterator + 4, cute.make_layout(8))
        t[0] = cutlass.Float32(0.0)

    msg = _refused(body)
    assert "'t'" in msg and "layout" in msg and "4:1" in msg and "8:1" in msg, msg


def test_a_tensor_whose_element_type_changes_in_a_loop_is_refused():
    @cute.jit
    def body(g, n):
        t = cute.make_tensor(g.iterator, cute.make_layout(4))
        for _ in cutlass.range(n, unroll=1):
            t = cute.make_tensor(cute.recast_ptr(t.iterator + 4, dtype=cutlass.Int32), t.layout)
        t[0] = 0

    msg = _refused(body)
    assert "'t'" in msg and "Float32" in msg and "Int32" in msg, msg


def test_a_tensor_whose_pointer_loses_alignment_in_a_loop_is_refused():
    """A tensor's region assumes the alignment its pointer enters with (its accesses vectorise on it): one that
    comes out of a trip less aligned is an error, which cute.assume on the step answers."""
    @cute.jit
    def body(g, n):
        t = cute.make_tensor(g.iterator, cute.make_layout(4))
        for _ in cutlass.range(n, unroll=1):
            t = cute.make_tensor(t.iterator + n, cute.make_layout(4))
        t[0] = cutlass.Float32(0.0)

    msg = _refused(body)
    assert "'t'" in msg and "aligned" in msg and "cute.assume" in msg, msg


def test_a_bare_pointer_is_carried_with_its_elements_alignment():
    """A pipeline's barrier fetched at stage 0 before a loop (the buffer's 16 bytes) and at a runtime stage inside
    it (the barrier's 8) is one variable: a bare pointer enters a region assuming only its element's alignment."""
    seen = {}

    @cute.jit
    def body(g, n):
        p = g.iterator
        seen["entry"] = p.alignment
        for _ in cutlass.range(n, unroll=1):
            p = g.iterator + n
        seen["after"] = p.alignment
        cute.make_tensor(p, cute.make_layout(1))[0] = cutlass.Float32(0.0)

    assert _single_thread_loop(body).count('"scf.for"') == 1
    assert seen["entry"] > 4 and seen["after"] == 4, seen


def _single_thread_loop(kernel_body):
    """The IR of a one-thread kernel running kernel_body(g, n), compiled for sm_80."""
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        kernel_body(g, n)

    @cute.jit
    def h(g: cute.Tensor, n: cutlass.Int32):
        k(g, n).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        return cute.compile(h, _g(), 3).ir


def test_a_pointer_whose_step_is_assumed_aligned_is_carried():
    @cute.jit
    def body(g, n):
        p = g.iterator
        for _ in cutlass.range(n, unroll=1):
            p = p + cute.assume(n * 4, divby=4)
        cute.make_tensor(p, cute.make_layout(4))[0] = cutlass.Float32(0.0)

    assert _single_thread_loop(body).count('"scf.for"') == 1


def test_a_tensor_that_moves_to_another_memory_in_a_loop_is_refused():
    @cute.jit
    def body(g, n):
        t = cute.make_tensor(g.iterator, cute.make_layout(4))
        s = utils.SmemAllocator().allocate_tensor(cutlass.Float32, cute.make_layout(4), byte_alignment=16)
        for _ in cutlass.range(n, unroll=1):
            t = s
        t[0] = cutlass.Float32(0.0)

    msg = _refused(body)
    assert "'t'" in msg and "gmem" in msg and "smem" in msg, msg


@requires_gpu
def test_moved_tensors_and_pointers_on_the_gpu():
    import torch

    g = torch.zeros(64, device="cuda")
    cute.compile(stepping_tensor(), from_dlpack(g), 5)(from_dlpack(g), 5)
    torch.cuda.synchronize()
    want = np.zeros(64, np.float32)
    for i in range(5):
        want[4 * (i + 1)] = i
    want[4 * 5 + 1] = -1
    assert g.cpu().numpy().tolist() == want.tolist()

    g.zero_()
    cute.compile(stepping_pointer(), from_dlpack(g), 5, 4)(from_dlpack(g), 5, 8)
    torch.cuda.synchronize()
    want = np.zeros(64, np.float32)
    for i in range(5):
        want[8 * i] = i
    want[40] = -1
    assert g.cpu().numpy().tolist() == want.tolist()
