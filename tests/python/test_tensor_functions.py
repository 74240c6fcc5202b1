"""Tensor-level functions of CuTe DSL: TensorSSA.reduce with ReductionOp and reduction profiles (against numpy),
cute.where, recast_tensor's layouts, make_rmem_tensor_like, local_partition (against CuTe's definition,
evaluated by brute force), assume, and their errors."""
import itertools
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.values.tensor import TensorSSA
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target

THIS = os.path.abspath(__file__)


def ssa_of(array):
    """A static TensorSSA holding a numpy array (values in CuTe's column-major coordinate order)."""
    shape = tuple(array.shape)
    vals = [cutlass.Float64(float(v)) for v in array.reshape(-1, order="F")]
    return TensorSSA(vals, shape, cutlass.Float64)


def values_of(ssa, shape):
    return np.array([v.value for v in ssa.values]).reshape(shape, order="F")


@pytest.mark.parametrize("shape", [(2, 3), (4, 1, 5), (3, 2, 2, 2)])
def test_reduce_over_every_profile_matches_numpy(shape):
    rng = np.random.default_rng(7)
    a = rng.integers(-9, 9, shape).astype(np.float64)
    ssa = ssa_of(a)
    ops = {cute.ReductionOp.ADD: (np.sum, 0.0), cute.ReductionOp.MUL: (np.prod, 1.0),
           cute.ReductionOp.MAX: (np.max, -np.inf), cute.ReductionOp.MIN: (np.min, np.inf)}
    for op, (fn, ident) in ops.items():
        assert ssa.reduce(op, ident, 0).value == fn(a)
        for mask in itertools.product([None, 1], repeat=len(shape)):
            axes = tuple(i for i, m in enumerate(mask) if m == 1)
            r = ssa.reduce(op, ident, mask)
            want = fn(a, axis=axes) if axes else a
            kept = tuple(s for s, m in zip(shape, mask) if m is None)
            if not kept:
                assert isinstance(r, TensorSSA) and values_of(r, (1,))[0] == want
                continue
            np.testing.assert_array_equal(values_of(r, kept), want, err_msg=str(mask))


def test_reduce_init_joins_each_result_once():
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ssa = ssa_of(a)
    assert ssa.reduce(cute.ReductionOp.ADD, 0.0, reduction_profile=0).value == 21.0
    assert [v.value for v in ssa.reduce(cute.ReductionOp.ADD, 0.0, (None, 1)).values] == [6.0, 15.0]
    assert [v.value for v in ssa.reduce(cute.ReductionOp.ADD, 1.0, (1, None)).values] == [6.0, 8.0, 10.0]
    assert ssa.reduce("max").value == 6.0 and ssa.reduce(lambda x, y: x - y, 100.0).value == 100.0 - 21.0


def test_reduce_profile_errors():
    ssa = ssa_of(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="does not match the shape"):
        ssa.reduce(cute.ReductionOp.ADD, 0.0, (None, 1, 1))
    with pytest.raises(ValueError, match="holds None"):
        ssa.reduce(cute.ReductionOp.ADD, 0.0, (None, 2))
    with pytest.raises(ValueError, match="unknown operation"):
        ssa.reduce("median", 0.0)


def test_reshape_keeps_the_values_in_order_and_refuses_another_size():
    a = np.arange(24.0).reshape((4, 6))
    r = ssa_of(a).reshape(((2, 2), (3, 2)))
    assert r.shape == ((2, 2), (3, 2))
    # the flat (column-major) order is what a nested shape of the same size sees
    assert [v.value for v in r.values] == list(a.reshape(-1, order="F"))
    assert r[(1, 0), (2, 1)].value == a.reshape(-1, order="F")[1 + 4 * (2 + 3 * 1)]
    with pytest.raises(ValueError, match=r"test_tensor_functions\.py:\d+: reshape: .* \(24 values\) .* \(20 values\)"):
        ssa_of(a).reshape((4, 5))


def test_where_selects_elementwise_and_broadcasts():
    a = ssa_of(np.array([[1.0, -2.0], [3.0, -4.0]]))
    cond = a > 0.0
    r = cute.where(cond, a, 0.0)
    np.testing.assert_array_equal(values_of(r, (2, 2)), [[1.0, 0.0], [3.0, 0.0]])
    r = cute.where(cond, 1.0, a)
    np.testing.assert_array_equal(values_of(r, (2, 2)), [[1.0, -2.0], [1.0, -4.0]])
    assert cute.where(cutlass.Boolean(False), cutlass.Int32(1), cutlass.Int32(2)).value == 2
    with pytest.raises(ValueError, match="different sizes"):
        cute.where(cond, a, ssa_of(np.zeros(3)))


@pytest.mark.parametrize("layout,old,new,want", [
    (((8, 4), (1, 8)), cutlass.Float8E4M3FN, cutlass.Int32, "(2,4):(1,2)"),
    (((8, 4), (1, 8)), cutlass.Float16, cutlass.Int32, "(4,4):(1,4)"),
    (((4, 6), (6, 1)), cutlass.Float32, cutlass.Float16, "(4,12):(12,1)"),
    (((16,), (1,)), cutlass.Uint8, cutlass.Float4E2M1FN, "(32):(1)"),
    (((4, 2), (0, 4)), cutlass.Int32, cutlass.Int16, "(4,2):(0,8)"),
])
def test_recast_tensor_layouts(layout, old, new, want):
    seen = {}

    @cute.kernel
    def k(gA: cute.Tensor):
        r = cute.make_rmem_tensor(cute.make_layout(layout[0], stride=layout[1]), old)
        v = cute.recast_tensor(r, new)
        seen["layout"] = str(v.layout)
        seen["type"] = v.element_type

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert seen["layout"] == want
    assert seen["type"] is new


def test_recast_tensor_refuses_a_stride_that_does_not_divide():
    @cute.kernel
    def k(gA: cute.Tensor):
        r = cute.make_rmem_tensor(cute.make_layout((3, 4), stride=(1, 3)), cutlass.Float16)
        cute.recast_tensor(r, cutlass.Int32)  # 3 halves are not whole words

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"), pytest.raises(ValueError, match="not a multiple of 2") as e:
        cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert f"{THIS}:" in str(e.value)


def _flat_coord_reference(tile_shape, tile_stride, index):
    """The coordinate c with tile(c) == index, by search (CuTe's get_flat_coord of a bijective thread layout)."""
    lay = _core.make_layout(tile_shape, tile_stride)
    for c in itertools.product(*[range(_core.product(s)) for s in tile_shape]):
        if lay(tuple(c)) == index:
            return c
    raise AssertionError(index)


@pytest.mark.parametrize("tshape,tstride", [((4, 8), (8, 1)), ((4, 8), (1, 4)), ((2, 16), (16, 1))])
def test_local_partition_matches_cutes_definition(tshape, tstride):
    M, N = 16, 32
    seen = {}

    @cute.kernel
    def k(gA: cute.Tensor):
        tile = cute.make_layout(tshape, stride=tstride)
        for t in cutlass.range_constexpr(_core.product(tshape)):
            part = cute.local_partition(gA, tile, t)
            seen[t] = (str(part.layout), [part.iterator.offset + part.layout(i)
                                          for i in range(_core.product(part.shape))])

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[1, 1, 1])

    a = np.zeros((M, N), np.float32)   # row-major: (m, n) at m * N + n
    with target("sm_80"):
        cute.compile(h, from_dlpack(a))
    tm, tn = tshape
    covered = []
    for t, (_, offsets) in seen.items():
        cm, cn = _flat_coord_reference(tshape, tstride, t)
        # Thread t owns rows cm + tm*i and columns cn + tn*j of every tile.
        want = sorted((cm + tm * i) * N + cn + tn * j for i in range(M // tm) for j in range(N // tn))
        assert sorted(offsets) == want, t
        covered += offsets
    assert sorted(covered) == list(range(M * N))


def test_make_rmem_tensor_like():
    seen = {}

    @cute.kernel
    def k(gA: cute.Tensor):
        r = cute.make_rmem_tensor_like(gA)
        s = cute.make_rmem_tensor_like(gA, cutlass.Float16)
        v = cute.make_rmem_tensor_like(r.load(), cutlass.Int8)
        seen.update(r=(r.shape, r.element_type, r.memspace), s=s.element_type, v=(v.shape, v.element_type))

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target("sm_80"):
        cute.compile(h, from_dlpack(np.zeros((4, 8), np.float32)))
    shape, dt, space = seen["r"]
    assert [_core.product(m) for m in shape] == [4, 8] and (dt, space) == (cutlass.Float32, "rmem")
    assert seen["s"] is cutlass.Float16 and seen["v"] == (shape, cutlass.Int8)


def test_assume_divisibility():
    assert cute.assume(32, divby=8) == 32
    with pytest.raises(ValueError, match="not a multiple"):
        cute.assume(30, divby=8)
    with pytest.raises(ValueError, match="positive"):
        cute.assume(8, divby=0)
    x = _core.SymInt.symbol(77, divisibility=2, nonneg=True, bits=32, name="m")
    assert cute.assume(x, divby=16).divisibility % 16 == 0
    v = cute.assume(cutlass.Int32._wrap(x), divby=8)
    assert isinstance(v, cutlass.Int32) and v.__ww_int__().divisibility % 8 == 0
    with pytest.raises(TypeError, match="integers"):
        cute.assume(cutlass.Float32(1.0), divby=2)


def test_assume_raises_the_known_alignment():
    seen = {}

    @cute.kernel
    def k(gA: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        seen["plain"] = (gA.iterator + n * tidx).alignment
        seen["assumed"] = (gA.iterator + cute.assume(n * tidx, divby=4)).alignment
        gA[0] = 0.0

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"):
        cute.compile(h, from_dlpack(np.zeros(1024, np.float32)), 4)
    assert seen == {"plain": 4, "assumed": 16}


@requires_gpu
def test_reduce_where_on_the_gpu():
    import torch

    a = torch.randn(64, 8, device="cuda")
    out = torch.full((64, 3), float("nan"), device="cuda")

    @cute.kernel
    def k(gA: cute.Tensor, gO: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        r = cute.make_rmem_tensor((8,), cutlass.Float32)
        for i in cutlass.range_constexpr(8):
            r[i] = gA[tidx, i]
        v = r.load()
        gO[tidx, 0] = v.reduce(cute.ReductionOp.ADD, 0.0, 0)
        gO[tidx, 1] = v.reduce(cute.ReductionOp.MAX, -cutlass.Float32.inf, 0)
        gO[tidx, 2] = cute.where(v > 0.0, v, 0.0).reduce(cute.ReductionOp.ADD, 0.0, 0)

    @cute.jit
    def h(x, y):
        k(x, y).launch(grid=[1, 1, 1], block=[64, 1, 1])

    h(from_dlpack(a), from_dlpack(out))
    torch.cuda.synchronize()
    x = a.cpu().numpy().astype(np.float64)
    got = out.cpu().numpy()
    np.testing.assert_allclose(got[:, 0], x.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[:, 1], x.max(1).astype(np.float32))
    np.testing.assert_allclose(got[:, 2], np.where(x > 0, x, 0).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype, n, paired", [(cutlass.Float16, 8, 4), (cutlass.BFloat16, 5, 2),
                                              (cutlass.Float32, 8, 0)])
def test_half_precision_arithmetic_goes_two_lanes_at_a_time(dtype, n, paired):
    """a + b, a - b, a * b of 16-bit float fragments: one paired instruction per two lanes (an odd last lane
    alone); 32-bit floats stay one per lane."""
    @cute.kernel
    def k(x: cute.Tensor, y: cute.Tensor):
        a = cute.make_rmem_tensor(cute.make_layout(n), dtype)
        b = cute.make_rmem_tensor(cute.make_layout(n), dtype)
        a.store(x.load())
        b.store(y.load())
        a.store((a.load() + b.load()) * b.load() - a.load())
        y.store(a.load())

    @cute.jit
    def host(x: cute.Tensor, y: cute.Tensor):
        k(x, y).launch(grid=[1, 1, 1], block=[1, 1, 1])

    np_t = {cutlass.Float16: np.float16, cutlass.Float32: np.float32}.get(dtype, np.float16)
    with target("sm_90a"):
        if dtype is cutlass.BFloat16:
            xs = cute.runtime.make_fake_compact_tensor(dtype, (n,))
            c = cute.compile(host, xs, xs)
        else:
            c = cute.compile(host, from_dlpack(np.ones(n, np_t)), from_dlpack(np.ones(n, np_t)))
    suffix = {cutlass.Float16: "f16", cutlass.BFloat16: "bf16", cutlass.Float32: "f32"}[dtype]
    count = {op: len([l for l in c.ptx.splitlines() if l.strip().startswith(f"{op}.") and f"{suffix}x2" in l])
             for op in ("add", "sub", "mul", "fma")}
    # the product and the difference after it may be contracted into one fused multiply-add per two lanes
    assert count["add"] == paired and count["mul"] + count["fma"] == paired and \
        count["sub"] + count["fma"] == paired, (count, c.ptx)


def test_domain_offset_moves_each_given_mode_and_keeps_those_given_as_none():
    """Element c of cute.domain_offset(coord, t) is element coord + c of t, a None mode counting as 0 (QuACK
    offsets the rows of a (seq, dim) table this way)."""
    got = {}

    @cute.jit
    def host(x: cute.Tensor):
        got["rows"] = cute.domain_offset((3, None), x)
        got["both"] = cute.domain_offset((2, 1), x)
        got["none"] = cute.domain_offset((None, None), x)

    src = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    with target("sm_80"):
        cute.compile(host, from_dlpack(src))
    for key, (dm, dn) in {"rows": (3, 0), "both": (2, 1), "none": (0, 0)}.items():
        t = got[key]
        for m, n in ((0, 0), (1, 2), (4, 5)):
            assert t.layout((m, n)) + (t.iterator.offset if isinstance(t.iterator.offset, int) else 0) == \
                src.strides[0] // 4 * (m + dm) + (n + dn), (key, m, n)


def test_identity_tensor_of_a_shape_beyond_64_bits():
    """Its element at coordinate c is c however large the extents (QuACK's ragged TMA views: a mode of 2^30 and
    two of 2^31 - 1, whose product passes 64 bits), and its layout is the core's where the size fits."""
    big = cute.make_identity_tensor((1 << 30, 2**31 - 1, 2**31 - 1))
    for c in [(0, 0, 0), (5, 7, 11), ((1 << 30) - 1, 2**31 - 2, 2**31 - 2)]:
        assert big[c] == c
    tile = cute.local_tile(big, (128, 64, 1), (3, 2, 5))
    assert tile[(1, 2, 0)] == (3 * 128 + 1, 2 * 64 + 2, 5)
    for shape in [5, (4, 3), (4, (2, 3)), ((2, 2), 3, 1)]:
        assert str(cute.make_identity_tensor(shape).layout) == str(_core.make_identity_layout(shape))
