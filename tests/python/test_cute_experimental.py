"""cute.experimental (CuTe DSL's extension API), its architecture-neutral part: @cute.experimental.kernel's bounded
arguments, allocate, partition, copy (predicated by the argument's shape), partition_and_copy and dot's checks.
Properties are read from the trace (coordinates, addresses) and the PTX, without a GPU; the round trip through
memory runs on the GPU machine."""
import itertools
import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute import experimental as cute_ext
from warpweave.cute.runtime import make_fake_compact_tensor

from dsl_helpers import line_in, requires_gpu, target

THIS = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")  # each compilation traces here (trace-time records below)


def compile_ext(body, *tensors, arch="sm_80", block=128):
    """Compiles a @cute.experimental.kernel running body(*tensors) in one CTA."""
    @cute_ext.kernel
    def k(a: cute.Tensor, b: cute.Tensor):
        body(a, b)

    @cute_ext.jit
    def h(a: cute.Tensor, b: cute.Tensor):
        k(a, b).launch(grid=[1, 1, 1], block=[block, 1, 1])

    with target(arch):
        return cute_ext.compile(h, *tensors)


def fake(shape, order=None, dtype=cutlass.Float16):
    return make_fake_compact_tensor(dtype, shape, stride_order=order, assumed_align=16)


def raises_at(exc, text, marker, body, *tensors, arch="sm_80"):
    with pytest.raises(exc, match=text) as e:
        compile_ext(body, *tensors, arch=arch)
    assert e.value.location == (THIS, line_in(THIS, "# " + marker)), (e.value.location, str(e.value))


def static_ints(c):
    if isinstance(c, tuple):
        return tuple(static_ints(x) for x in c)
    return int(c)


# --- bounded arguments ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,order,tile", [((10, 5, 2), (2, 0, 1), (4, 3)), ((7, 9), (0, 1), (8, 4)),
                                              ((16, 6, 3), (1, 0, 2), (5, 2))])
def test_a_view_of_an_argument_addresses_the_argument_at_each_elements_coordinate(shape, order, tile):
    checked = []

    def body(a, b):
        g = cute.zipped_divide(a, tile)
        rest = g.shape[1]
        for idx in itertools.product(*(range(r) for r in rest)):
            t = g[(None, None), idx]
            data = t.tensor
            for i in range(cute.size(t)):
                c = static_ints(t.coordinates[i])
                assert data.iterator.offset + data.layout(i) == a.source.layout(c)
                checked.append(c)

    compile_ext(body, fake(shape, order), fake(shape, order))
    inside = {c for c in checked if all(x < s for x, s in zip(c, shape))}
    assert len(inside) == shape[0] * shape[1] * (shape[2] if len(shape) > 2 else 1)  # every element, by some tile


def test_the_threads_partitions_of_a_tile_cover_it_once_each():
    tv = cute.make_layout(((16, 8), (8, 1)), stride=((8, 128), (1, 1024)))
    owners = {}

    def body(a, b):
        tile = cute.zipped_divide(a, (128, 64))[(None, None), (0, 0, 0)]
        for t in range(128):
            p = cute_ext.partition(tile, t, layout_tv=tv, tiler=(128, 8))
            assert p.shape == ((8, 1), (1, 8))
            for i in range(cute.size(p)):
                c = static_ints(p.coordinates[i])
                assert c not in owners, (c, owners.get(c), t)
                owners[c] = t

    compile_ext(body, fake((128, 64, 1)), fake((128, 64, 1)))
    assert set(owners) == {(m, n, 0) for m in range(128) for n in range(64)}


def test_a_shared_memory_tensor_keeps_its_plain_partition():
    def body(a, b):
        s = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem, cute.make_layout((32, 8)), alignment=128)
        assert s.iterator.offset * 2 % 128 == 0
        p = cute_ext.partition(s, 5, layout_tv=cute.make_layout((32, 8), stride=(1, 32)), tiler=(32, 8))
        assert not isinstance(p, cute_ext.BoundedTensor)
        assert cute.size(p) == 8 and p.iterator.offset == s.iterator.offset + 5

    compile_ext(body, fake((64,)), fake((64,)))


# --- copies predicated by the argument's shape ----------------------------------------------------------------------

def memcpy_body(a, d):
    tid, _, _ = cute.arch.thread_idx()
    bx, by, bz = cute.arch.block_idx()
    tv = cute.make_layout(((16, 8), (8, 1)), stride=((8, 128), (1, 1024)))
    ga = cute.zipped_divide(a, (128, 64))[(None, None), (bx, by, bz)]
    gd = cute.zipped_divide(d, (128, 64))[(None, None), (bx, by, bz)]
    buf = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.rmem,
                            cute.make_layout(((8, 1), (1, 8)), stride=((1, 8), (1, 8))))
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16, num_bits_per_copy=128)
    cute_ext.copy(cute_ext.partition(ga, tid, layout_tv=tv, tiler=(128, 8)), buf, copy_atom=atom)
    buf.store(buf.load() + cutlass.Float16(1.0))
    cute_ext.copy(buf, cute_ext.partition(gd, tid, layout_tv=tv, tiler=(128, 8)), copy_atom=atom)


@pytest.mark.parametrize("m,loads", [(136, r"ld\.global\.v4"), (128, r"ld\.global\.v4"),
                                     (130, r"ld\.global\.(?:v2\.b16|b32)\s")])
def test_a_copy_moves_vectors_as_wide_as_the_rows_extent_and_alignment_allow(m, loads):
    # 136 rows of halves: every 8-row vector lies wholly inside or outside the argument, and columns start at
    # 16-byte boundaries; 130 rows: columns start only 4 bytes aligned, and pairs of rows share their predicate
    # (one 4-byte access a pair: two halves, or the 32 bits of their pair as the registers hold it).
    c = compile_ext(memcpy_body, fake((m, 70, 2)), fake((m, 70, 2)))
    ptx = c.ptx
    assert len(re.findall(loads, ptx)) == 64 // (8 if "v4" in loads else 2)  # a thread's 64 halves
    assert not re.findall(r"ld\.global(?:\.nc)?\.(?:b16|u16)\s", ptx)  # no element-by-element fallback
    assert "setp" in ptx


def test_a_vector_that_straddles_the_arguments_end_falls_back_to_single_elements():
    def body(a, d):
        bx, _, _ = cute.arch.block_idx()
        tile = cute.zipped_divide(a, (8,))[(None,), (bx,)]  # block 1: elements 8..15 of 13
        r = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.rmem, cute.make_layout(8))
        cute_ext.copy(tile, r, copy_atom=cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16,
                                                              num_bits_per_copy=128))
        cute_ext.copy(r, cute.zipped_divide(d, (8,))[(None,), (bx,)])

    ptx = compile_ext(body, fake((13,)), fake((13,))).ptx
    for op in ("ld", "st"):
        assert len(re.findall(op + r"\.global(?:\.nc)?\.v4", ptx)) == 1  # all eight inside (block 0): one vector
        assert len(re.findall(op + r"\.global(?:\.nc)?\.(?:b16|u16)\s", ptx)) >= 5  # else one by one (8..12)


def test_a_copy_between_two_bounded_tensors_predicates_on_both():
    seen = []

    def body(a, d):
        ta = cute.zipped_divide(a, (8,))[(None,), (1,)]
        td = cute.zipped_divide(d, (8,))[(None,), (0,)]
        seen.append((cute.size(ta.in_bounds()), cute.size(td.in_bounds())))
        cute_ext.copy(ta, td)

    c = compile_ext(body, fake((12,)), fake((5,)))
    assert seen == [(8, 8)]
    ptx = c.ptx
    # a's tile has 4 elements, d's 5: the copy stores at most min of both, element by element
    assert re.findall(r"st\.global\.(?:b16|u16)", ptx)


# --- errors at the user's line --------------------------------------------------------------------------------------

def test_a_thread_value_layout_of_the_wrong_rank_is_refused_at_the_call():
    def body(a, b):
        cute_ext.partition(a, 0, layout_tv=cute.make_layout((4, 2, 2)), tiler=(16,))  # bad-rank

    raises_at(Exception, "rank 2", "bad-rank", body, fake((64,)), fake((64,)))


def test_a_thread_value_layout_larger_than_its_tile_is_refused():
    def body(a, b):
        cute_ext.partition(a, 0, layout_tv=cute.make_layout((8, 4)), tiler=(16,))  # too-large

    raises_at(Exception, "past the tiler", "too-large", body, fake((64,)), fake((64,)))


def test_tensor_memory_needs_a_backend_that_has_it():
    def body(a, b):
        cute_ext.allocate(cutlass.Float32, cute.AddressSpace.tmem, cute.make_layout((128, 32)))  # no-tmem

    raises_at(Exception, "tmem", "no-tmem", body, fake((64,)), fake((64,)))


def test_an_alignment_that_is_no_power_of_two_is_refused():
    def body(a, b):
        cute_ext.allocate(cutlass.Float32, cute.AddressSpace.smem, cute.make_layout(8), alignment=24)  # bad-align

    raises_at(Exception, "power of two", "bad-align", body, fake((64,)), fake((64,)))


def test_dot_takes_rank_three_operands():
    def body(a, b):
        atom = cute.make_mma_atom(cute.nvgpu.warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
        x = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.rmem, cute.make_layout((8, 1)))
        acc = cute_ext.allocate(cutlass.Float32, cute.AddressSpace.rmem, cute.make_layout((4, 1, 1)))
        cute_ext.dot(atom, x, cute.append_ones(x, up_to_rank=3), acc)  # dot-rank

    raises_at(Exception, "a must have rank 3", "dot-rank", body, fake((64,)), fake((64,)))


def test_partition_and_copy_refuses_parts_of_different_sizes():
    def body(a, b):
        tc = cute.make_tiled_copy_tv(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float16),
                                     cute.make_layout(32), cute.make_layout(2))
        s = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.smem, cute.make_layout(64))
        r = cute_ext.allocate(cutlass.Float16, cute.AddressSpace.rmem, cute.make_layout(4))
        cute_ext.partition_and_copy(tc.get_slice(0), s, r)  # sizes

    raises_at(Exception, "2 elements", "sizes", body, fake((64,)), fake((64,)))


# --- on the GPU -----------------------------------------------------------------------------------------------------

@requires_gpu
@pytest.mark.parametrize("mnl", [(136, 7, 9), (128, 64, 1), (264, 130, 2)])
def test_the_predicated_memcpy_adds_one_exactly_inside_the_arguments(mnl):
    import torch
    from warpweave.cute.runtime import from_dlpack

    @cute_ext.kernel
    def k(a: cute.Tensor, d: cute.Tensor):
        memcpy_body(a, d)

    @cute_ext.jit
    def h(a: cute.Tensor, d: cute.Tensor):
        div = cute.tiled_divide(a, (128, 64))
        k(a, d).launch(grid=(div.shape[1], div.shape[2], div.shape[3]), block=(128, 1, 1))

    M, N, L = mnl
    src = torch.randn(L, N, M).permute(2, 1, 0).to(torch.float16).cuda()
    big = torch.zeros(L, N, M + 8).permute(2, 1, 0).to(torch.float16).cuda()
    dst = big[:M]

    def arg(t):
        return from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=0)

    h(arg(src), arg(dst))
    torch.cuda.synchronize()
    torch.testing.assert_close(dst.cpu(), src.cpu() + 1)
    assert (big[M:] == 0).all()  # nothing past the argument's rows


# --- per-call parameters a kernel's operations ask of its launch ----------------------------------------------------

def _slot_producer(tensor, **attrs):
    return bytes([attrs.get("k", 0)]) * 128


def test_an_argument_gives_each_distinct_request_its_own_parameter_and_the_same_request_the_same():
    from warpweave import ext
    ext.register_host_argument("test.cute_ext_slot", _slot_producer, size=128, align=64)
    got = []

    def body(a, b):
        p1 = cute_ext.claim_parameter(a, "test.cute_ext_slot", {"k": 1})
        p2 = cute_ext.claim_parameter(cute.zipped_divide(a, (8,))[(None,), (0,)], "test.cute_ext_slot", {"k": 1})
        p3 = cute_ext.claim_parameter(a, "test.cute_ext_slot", {"k": 2})
        q = cute_ext.claim_parameter(b, "test.cute_ext_slot", {"k": 1})
        got.extend([p1, p2, p3, q])

    compile_ext(body, fake((64,)), fake((64,)))
    p1, p2, p3, q = got
    assert p1 is p2 and p1 is not p3 and q not in (p1, p3)
    assert p1.host.tensor_index == 0 and q.host.tensor_index == 1
    assert p3.host.value(type("T", (), {"data_ptr": 16, "shape": (64,), "stride": (1,)})()) == bytes([2]) * 128


def test_more_requests_than_an_argument_has_parameters_are_refused_at_the_call():
    from warpweave import ext
    ext.register_host_argument("test.cute_ext_slot", _slot_producer, size=128, align=64)

    def body(a, b):
        for k in range(3):
            cute_ext.claim_parameter(a, "test.cute_ext_slot", {"k": k})  # third

    raises_at(Exception, "are taken", "third", body, fake((64,)), fake((64,)))


def test_a_kernel_with_unfilled_parameter_slots_exports_to_c(tmp_path):
    c = compile_ext(memcpy_body, fake((136, 70, 2)), fake((136, 70, 2)))
    assert len(c.host_arguments) == 4 and all(h.producer.name == "cute_ext.parameter_slot"
                                              for h in c.host_arguments.values())
    header, obj = c.export_to_c(file_path=str(tmp_path), file_name="ext_memcpy", function_prefix="ext_memcpy")
    assert os.path.getsize(header) > 0 and os.path.getsize(obj) > 0


def test_unit_modes_appended_to_a_swizzled_layout_keep_each_elements_offset():
    sw = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 8, cute.make_layout((64, 8), stride=(8, 1)))
    for grown in (cute.append_ones(sw, up_to_rank=3), cute.prepend_ones(sw, up_to_rank=4)):
        assert isinstance(grown, cute.ComposedLayout) and cute.rank(grown.outer) in (3, 4)
        assert str(grown.inner) == str(sw.inner) and grown.offset == sw.offset
        lead = cute.rank(grown.outer) - 2 if grown.outer.shape[0] == 1 else 0
        for i in range(0, 64, 7):
            for j in range(8):
                c = (i, j, 0) if lead == 0 else (0,) * lead + (i, j)
                assert grown(c) == sw((i, j))
