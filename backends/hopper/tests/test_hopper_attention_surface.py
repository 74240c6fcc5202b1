"""What CuTe DSL's Hopper attention (cute/hopper/kernel/attention/fmha.py) asks of the Hopper backend, without a
GPU unless marked:

- hopper_helpers.make_smem_layout_epi(..., smem_trg_shape, smem_order): the epilogue atom tiled to a target shape
  of more modes (one O buffer per consumer warpgroup) in a given mode order; the outer layouts are CuTe DSL's
  (its swizzles count bytes, ours elements);
- make_tiled_tma_atom over a tensor with a hierarchical untiled mode and a broadcast (stride 0) leaf, as the
  kernel views Q, K and V as (s, d, ((h_r, h_k), b)): the tensor map has the nonzero-stride leaves, its extents
  and strides are the view's (not the argument's own modes), and a copy's coordinates are the flattened ones;
- a thread MMA's make_fragment_C of a shape (partition_shape_C's)."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.utils as utils
from warpweave.cute.runtime import from_dlpack
from warpweave.utils import LayoutEnum

from dsl_helpers import requires_gpu, target


@pytest.fixture(autouse=True)
def _fresh_compilations(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")


# --- make_smem_layout_epi with a target shape and order -------------------------------------------------------------

# (layout, dtype, epi tile, target shape, order) -> CuTe DSL 4.8.1's outer layout (printed by it for sm_90a)
EPI_CASES = [
    (LayoutEnum.ROW_MAJOR, cutlass.Float16, (64, 32), None, None,
     "((8,8),(32,1),(1,2)):((32,256),(1,0),(0,2048))"),
    (LayoutEnum.ROW_MAJOR, cutlass.Float32, (64, 64), (64, 64, 2, 2), (0, 1, 2, 3),
     "((8,8),(32,2),(1,2),(1,2)):((32,256),(1,2048),(0,4096),(0,8192))"),
    (LayoutEnum.ROW_MAJOR, cutlass.Float32, (64, 64), (64, 64, 2, 2), (1, 0, 2, 3),
     "((8,8),(32,2),(1,2),(1,2)):((32,512),(1,256),(0,4096),(0,8192))"),
    (LayoutEnum.COL_MAJOR, cutlass.Float16, (64, 32), (64, 32, 2, 2), (1, 0, 2, 3),
     "((64,1),(8,4),(1,2),(1,2)):((1,0),(64,512),(0,2048),(0,4096))"),
    (LayoutEnum.COL_MAJOR, cutlass.Float32, (64, 64), (64, 64, 2, 2), (0, 1, 2, 3),
     "((32,2),(8,8),(1,2),(1,2)):((1,256),(32,512),(0,4096),(0,8192))"),
    (LayoutEnum.COL_MAJOR, cutlass.Float32, (64, 64), (64, 64, 2, 2), (1, 0, 2, 3),
     "((32,2),(8,8),(1,2),(1,2)):((1,2048),(32,256),(0,4096),(0,8192))"),
]


@pytest.mark.parametrize("layout,dtype,tile,shape,order,want", EPI_CASES)
def test_epilogue_layout_tiles_the_target_shape_in_the_given_order(layout, dtype, tile, shape, order, want):
    import warpweave.utils.hopper_helpers as sm90

    got = sm90.make_smem_layout_epi(dtype, layout, tile, 2, shape, smem_order=order)
    assert str(got.outer) == want
    # a bijection onto its cosize: every buffer of every warpgroup and stage is distinct memory
    n = cute.size(got)
    assert cute.cosize(got) == n and len({got(i) for i in range(n)}) == n


def test_epilogue_layout_order_must_permute_the_modes():
    import warpweave.utils.hopper_helpers as sm90

    with pytest.raises(ValueError, match="permutation"):
        sm90.make_smem_layout_epi(cutlass.Float16, LayoutEnum.ROW_MAJOR, (64, 32), 2, (64, 32, 2, 2),
                                  smem_order=(0, 1, 2))


# --- TMA over a hierarchical view with a broadcast mode -------------------------------------------------------------

S, D, H, B, R = 256, 64, 3, 2, 2           # sequence, head dim, kv heads, batch, query heads per kv head
TILE = (64, D)
SEEN = {}


def smem_tile():
    return cute.make_layout(TILE, stride=(D, 1))


def view(a):
    """(s, d, ((h_r, h_k), b)) of a (b, s, h_k, d) tensor, h_r broadcast (stride 0), as the FMHA views K."""
    return cute.make_tensor(a.iterator, cute.make_layout((S, D, ((R, H), B)),
                                                         stride=(D * H, 1, ((0, D), S * D * H))))


@cute.kernel
def load_tile(atom: cute.CopyAtom, coords: cute.Tensor, out: cute.Tensor, m_blk: cutlass.Constexpr,
              r: cutlass.Constexpr, h: cutlass.Constexpr, b: cutlass.Constexpr):
    from warpweave.cute.nvgpu import cpasync

    tidx, _, _ = cute.arch.thread_idx()
    smem = utils.SmemAllocator()
    s = smem.allocate_tensor(cutlass.Float16, smem_tile(), byte_alignment=128)
    bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    if tidx == 0:
        cute.arch.mbarrier_init(bar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.sync_threads()
    g = cute.local_tile(coords, TILE, (m_blk, 0))
    ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2), cute.group_modes(g, 0, 2))
    if tidx < 32:
        if tidx == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, TILE[0] * TILE[1] * 2)
        cute.copy(atom, tg[(None, ((r, h), b))], ts, tma_bar_ptr=bar)
    cute.arch.mbarrier_wait(bar, 0)
    for i in cutlass.range_constexpr(TILE[0] * TILE[1] // 128):
        e = i * 128 + tidx
        out[e // D, e % D] = s[e // D, e % D]


def make_host(m_blk, r, h, b):
    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        from warpweave.cute.nvgpu import cpasync

        atom, coords = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), view(a), smem_tile(), TILE)
        SEEN["atom"] = atom
        load_tile(atom, coords, out, m_blk, r, h, b).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def args(a=None, out=None):
    a = np.zeros((B, S, H, D), np.float16) if a is None else a
    out = np.zeros(TILE, np.float16) if out is None else out
    return from_dlpack(a), from_dlpack(out)


def test_tma_over_a_hierarchical_view_maps_its_nonzero_stride_leaves():
    with target("sm_90a"):
        ptx = cute.compile(make_host(1, 1, 2, 1), *args()).info["ptx"]
    atom = SEEN["atom"]
    # leaves: 0 s, 1 d, 2 h_r (stride 0: no dimension), 3 h_k, 4 b; d innermost
    assert atom.dims == [1, 0, 3, 4] and atom.box == (D, 64, 1, 1)
    attrs = atom.tma_desc.attrs
    assert [attrs[f"extent{i}"] for i in range(4)] == [D, S, H, B]
    assert [attrs[f"gstride{i}"] for i in range(4)] == [1, D * H, D, S * D * H]
    consts = dict(re.findall(r"mov\.b32 \t?(%r\d+), (\d+);", ptx))
    (coords,) = re.findall(r"cp\.async\.bulk\.tensor\.4d[^\n]*?\{([^}]*)\}", ptx)
    # the tile's flattened coordinates, innermost first: d 0, s 64 (tile 1), h_k 2, b 1 (h_r dropped)
    assert tuple(int(consts.get(x.strip(), -1)) for x in coords.split(",")) == (0, 64, 2, 1)


def test_the_tensor_map_describes_the_view_not_the_arguments_modes(monkeypatch):
    from warpweave.backends.hopper import tma

    with target("sm_90a"):
        cute.compile(make_host(0, 0, 0, 0), *args())
    calls = []
    monkeypatch.setattr(tma.ext, "host_call", lambda *a: calls.append(a) or bytes(128))

    class T:                                  # the call's argument: (b, s, h_k, d), contiguous
        data_ptr = 0x7f0000010000
        shape = (B, S, H, D)
        stride = (S * H * D, H * D, D, 1)

    SEEN["atom"].tma_desc.value(T())
    (_, _, attrs, _), = calls
    assert attrs["rank"] == 4 and attrs["address"] == T.data_ptr
    assert [attrs[f"dim{i}"] for i in range(4)] == [D, S, H, B]
    assert [attrs[f"stride{i}"] for i in range(1, 4)] == [D * H * 2, D * 2, S * D * H * 2]


def test_a_tiled_broadcast_mode_is_refused():
    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        from warpweave.cute.nvgpu import cpasync

        v = cute.make_tensor(a.iterator, cute.make_layout((S, D), stride=(0, 1)))
        cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), v, smem_tile(), TILE)

    with target("sm_90a"), pytest.raises(ValueError, match="stride 0"):
        cute.compile(host, *args())


@requires_gpu
@pytest.mark.parametrize("m_blk,r,h,b", [(0, 0, 0, 0), (3, 1, 2, 1), (1, 1, 0, 1)])
def test_tma_over_a_hierarchical_view_loads_the_tile(m_blk, r, h, b):
    import torch

    a = torch.randn(B, S, H, D, device="cuda").to(torch.float16)
    out = torch.zeros(TILE, dtype=torch.float16, device="cuda")
    make_host(m_blk, r, h, b)(from_dlpack(a), from_dlpack(out))
    torch.cuda.synchronize()
    assert torch.equal(out, a[b, m_blk * 64:(m_blk + 1) * 64, h, :])      # h_r broadcasts: any r reads head h


# --- make_fragment_C of a shape -------------------------------------------------------------------------------------

def test_make_fragment_c_takes_the_partition_shape():
    from warpweave.cute.nvgpu import warpgroup
    import warpweave.utils.hopper_helpers as sm90

    seen = {}

    @cute.kernel
    def k(out: cute.Tensor):
        tiled = sm90.make_trivial_tiled_mma(cutlass.Float16, cutlass.Float16, warpgroup.OperandMajorMode.K,
                                            warpgroup.OperandMajorMode.K, cutlass.Float32, (1, 1, 1), (64, 64))
        thr = tiled.get_slice(0)
        shape = thr.partition_shape_C((64, 64))
        acc = thr.make_fragment_C(shape)
        seen["shape"], seen["acc"] = shape, acc
        acc.fill(0.0)
        out[0] = acc[0].to(cutlass.Float16)

    @cute.jit
    def host(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    with target("sm_90a"):
        cute.compile(host, from_dlpack(np.zeros(4, np.float16)))
    acc = seen["acc"]
    assert acc.shape == seen["shape"] and acc.element_type is cutlass.Float32 and cute.size(acc) == 64 * 64 // 128
