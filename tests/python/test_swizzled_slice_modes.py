"""Mode operations on a tiled copy's thread slice of a pointer-swizzled shared-memory tensor, as in CuTe DSL (whose
behaviour these properties were read from, compiling the same programs with CuTe DSL 4.8.1 for sm_90a):
- group_modes, select, get, flatten, coalesce, append, prepend, filter_zeros, filter, logical_divide, composition
  and domain_offset of such a slice act on the layout the program sees and keep the swizzle in the pointer: the
  result has the layout of the same operation on the same slice of the unswizzled tensor, and every element lies
  at the swizzle of the byte address that one gives it; make_fragment_like and make_rmem_tensor_like shape the
  register copy as they shape that one's;
- iterator.align(n) of a swizzled pointer is the pointer itself where n is no more than its alignment, else a
  plain pointer at its logical address with alignment n (CuTe DSL's result has no swizzle).
Random swizzles, tiles and thread layouts, traced for sm_80 (addresses are read off the traced tensors)."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext
from warpweave._dsl.atoms.swizzle_slice import refold

from dsl_helpers import target
from test_swizzled_partition import _random_cases, _swizzled, tile_and_slice

CASES = _random_cases(11, 12)


def trace_kernel(body, arch="sm_80", threads=32):
    """Traces a kernel of `threads` threads that runs body(a shared-memory allocator), for arch."""
    @cute.kernel
    def modes_kernel():
        body(cutlass.utils.SmemAllocator())

    @cute.jit
    def modes_launch():
        modes_kernel().launch(grid=[1, 1, 1], block=[threads, 1, 1])

    with target(arch), pytest.MonkeyPatch.context() as mp:
        mp.setenv("WARPWEAVE_DISABLE_CACHE", "1")   # what the test reads is made by the trace, not a cached compile
        return cute.compile(modes_launch)


def _ops(x):
    """name -> the operation on a rank-3 thread slice ((values), M, N)."""
    m = cute.size(x.shape[1])
    return {
        "group_modes": cute.group_modes(x, 1, 3), "select": cute.select(x, [2, 0]), "get": cute.get(x, mode=[0]),
        "flatten": cute.flatten(x), "coalesce": cute.coalesce(x), "filter_zeros": cute.filter_zeros(x),
        "filter": cute.filter(x), "append": cute.append(x, cute.make_layout(1, stride=0)),
        "prepend": cute.prepend(x, cute.make_layout(1, stride=0)),
        "logical_divide": cute.logical_divide(x, (None, m)),
        "composition": cute.composition(x, cute.make_layout(cute.size(x), stride=1)),
        "domain_offset": cute.domain_offset((0, m - 1, 0), x), "grouped sliced": cute.group_modes(x, 1, 3)[None, 0],
        "fragment": cute.make_fragment_like(x), "rmem like": cute.make_rmem_tensor_like(x),
    }


def _trace(smem, c, seen):
    dtype, (b, m, s) = c["dtype"], c["sw"]
    rows, cols = c["tile"]
    outer = cute.make_layout((rows, cols), stride=(cols, 1))
    t = smem.allocate_tensor(dtype, outer, 1024, cute.make_swizzle(b, m, s))
    plain = cute.make_tensor(cute.recast_ptr(t.iterator, dtype=dtype), outer)
    tr, tc = c["thr"]
    atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=c["v"] * c["eb"] * 8)
    tiled = cute.make_tiled_copy_tv(atom, cute.make_layout((tr, tc), stride=(tc, 1)), cute.make_layout((1, c["v"])))
    thr = tiled.get_slice(c["tid"])
    sw_slice, plain_slice = thr.partition_S(t), thr.partition_S(plain)
    # no mode operation walks a bit twice (composition refuses it): a layout that does, given to refold directly
    step = next(d for n, d in zip(cute.flatten(sw_slice.shape), cute.flatten(sw_slice.stride)) if n > 1)
    twice = cute.make_layout((2, 2), stride=(step, step))
    seen.append(dict(case=c, t=t, plain=plain, slice=sw_slice, plain_slice=plain_slice,
                     twice=(refold(sw_slice, twice), cute.make_tensor(plain_slice.iterator, twice)),
                     ops=(_ops(sw_slice), _ops(plain_slice)),
                     aligned={n: (sw_slice.iterator.align(n), t.iterator.align(n)) for n in (1, 4, 16, 64, 2048)}))


@pytest.fixture(scope="module")
def traced():
    seen = []
    trace_kernel(lambda smem: [_trace(smem, c, seen) for c in CASES])
    return seen


def _address(t, c):
    return t.iterator.offset + ext.full_layout(t)(c)


def test_an_operation_addresses_the_swizzle_of_the_same_operation_unswizzled(traced):
    checked, folded = 0, 0
    for seen in traced:
        c = seen["case"]
        for name, got in list(seen["ops"][0].items()) + [("twice", seen["twice"][0])]:
            want = seen["ops"][1][name] if name != "twice" else seen["twice"][1]
            assert str(got.layout) == str(want.layout), (name, c, got, want)
            if got.memspace == "rmem":
                continue
            sw = got.iterator.type.swizzle_type
            assert (sw.num_bits, sw.num_base, sw.num_shift) == c["sw"], (name, c, got)
            folded += isinstance(ext.full_layout(got), cute.Layout)   # still addressed through a plain layout
            for i in range(cute.size(want.layout)):
                assert _address(got, i) == _swizzled(c["sw"], _address(want, i), c["eb"]), (name, c, i)
                checked += 1
    assert checked > 1000 and folded > 50


def test_align_keeps_a_kept_promise_and_drops_the_swizzle_for_a_stronger_one(traced):
    for seen in traced:
        origins = (seen["plain_slice"].iterator, seen["plain"].iterator)
        for n, pair in seen["aligned"].items():
            for it, got, origin in zip((seen["slice"].iterator, seen["t"].iterator), pair, origins):
                if n <= it.alignment:
                    assert got is it
                else:
                    assert "S<" not in repr(got) and got.alignment == n, (n, got)
                    assert got.offset == origin.offset and got.base is origin.base


def test_a_stronger_alignment_must_be_a_power_of_two():
    with pytest.raises(ValueError, match="power of two"):
        trace_kernel(lambda smem: smem.allocate_tensor(cutlass.Float16, cute.make_layout(64), 1024,
                                                       cute.make_swizzle(3, 4, 3)).iterator.align(48))


def test_printed_as_cutedsl_prints_them():
    """CuTe DSL 4.8.1, for a 64x64 Float16 row-major tile allocated with make_swizzle(3, 4, 3) and a tiled copy of
    8x16 column-major threads by (2,4) values, prints the slice `ptr<f16, smem, align<8>, S<3,4,3>> o
    (((2,2),2),4,1):(((64,1),2),1024,0)` and, of it, what the asserts below name (the pointer is the same)."""
    seen = {}

    def body(smem):
        t, s = tile_and_slice(smem, cute.make_layout((8, 16), stride=(1, 8)), cute.make_layout((2, 4)), 64)
        seen.update(group=cute.group_modes(s, 1, 3), flatten=cute.flatten(s), coalesce=cute.coalesce(s),
                    filter_zeros=cute.filter_zeros(s), domain_offset=cute.domain_offset((0, 1, 0), s),
                    logical_divide=cute.logical_divide(s, (None, 2)), fragment=cute.make_rmem_tensor_like(s),
                    kept=s.iterator.align(8), stronger=s.iterator.align(32), t_stronger=t.iterator.align(2048))

    trace_kernel(body, "sm_90a", 128)
    want = {"group": "(((2,2),2),(4,1)):(((64,1),2),(1024,0))", "flatten": "(2,2,2,4,1):(64,1,2,1024,0)",
            "coalesce": "(2,4,4):(64,1,1024)", "filter_zeros": "(((2,2),2),4,1):(((64,1),2),1024,0)",
            "domain_offset": "(((2,2),2),4,1):(((64,1),2),1024,0)",
            "logical_divide": "(((2,2),2),(2,2),1):(((64,1),2),(1024,2048),0)"}
    for name, layout in want.items():
        assert repr(seen[name]) == f"tensor<Float16, smem, align 8, S<3,4,3>, {layout}>", name
    assert str(seen["fragment"].layout) == "(((2,2),2),4,1):(((4,1),2),8,0)"
    assert repr(seen["kept"]) == "ptr<Float16, smem, align 8, S<3,4,3>>"
    assert repr(seen["stronger"]) == "ptr<Float16, smem, align 32>"
    assert repr(seen["t_stronger"]) == "ptr<Float16, smem, align 2048>"
