"""The coordinate tensor of a TMA atom of a tensor stored in blocks (tma_blocked.py): its modes nest as the tensor's
(a block-scaled GEMM's ((32, 4), rest) x ((16, 4), rest) scale factors), as CuTe's TMA tensors of such tensors do, so
that a program can rebuild it over other extents of the same hierarchy (make_layout(shape, stride=its stride), as
the MoE scaled grouped GEMM does per expert); its values are each mode's element index, those of an identity
tensor of the modes' sizes."""
from __future__ import annotations

import itertools
import re

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack
from host_stand_in import stand_in  # noqa: F401 (a fixture)
from dsl_helpers import requires_gpu, target

VEC = 16


def _sf_layout(m_blocks, k_blocks, batch):
    # blockscaled_layout.tile_atom_to_shape_SF's hierarchy: blocks K-fastest, then M, then the batch as (1, L)
    return cute.make_layout((((32, 4), m_blocks), ((VEC, 4), k_blocks), (1, batch)),
                            stride=(((16, 4), 512 * k_blocks), ((0, 1), 512), (0, 512 * k_blocks * m_blocks)))


def _smem_layout():
    # one stage of a 128 x 128 tile: two blocks along K
    return cute.make_layout((((32, 4), 1), ((VEC, 4), 2)), stride=(((16, 4), 512), ((0, 1), 512)))


def _profile(x):
    return tuple(_profile(e) for e in x) if isinstance(x, tuple) else "_"


def _tma_tensor_of(gmem_layout):
    seen = []

    @cute.jit
    def host(sf: cute.Tensor):
        t = cute.make_tensor(sf.iterator, gmem_layout)
        _, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, _smem_layout(), (128, 128),
                                                internal_type=cutlass.Int16)
        seen.append(tensor)

    with target("sm_90a"):
        cute.compile(host, from_dlpack(np.zeros(cute.cosize(gmem_layout), np.uint8)))
    return seen[0]


def test_the_coordinate_tensor_keeps_the_tensors_hierarchy_and_counts_elements_of_each_mode():
    for m_blocks, k_blocks, batch in [(2, 2, 1), (1, 3, 2), (3, 1, 1)]:
        gmem = _sf_layout(m_blocks, k_blocks, batch)
        layout = _tma_tensor_of(gmem).layout
        assert layout.shape == gmem.shape
        # the stride nests as the shape (CuTe's TMA tensor of this tensor: (((a, b), c), ((d, e), f), (g, h)))
        assert _profile(layout.stride) == _profile(layout.shape) == _profile(gmem.shape)
        flat = cute.make_identity_tensor(tuple(cute.size(m) for m in gmem.shape)).layout
        assert all(layout(i) == flat(i) for i in range(cute.size(layout)))
        # a hierarchical coordinate is its mode's colexicographic element index
        for a, b, r in itertools.product(range(32), range(4), range(m_blocks)):
            assert layout((((a, b), r), 0, 0))[0] == a + 32 * b + 128 * r


def _rebuilt_program(rest_m, offset_m, tile_coord):
    """One CTA that rebuilds the atom's coordinate tensor over rest_m blocks of M (the tensor's hierarchy, the
    atom's strides), moves it offset_m rows along M (an expert's scale factors inside all experts' ones), loads
    tile tile_coord of it and writes the bytes its shared memory received to out."""
    nbytes = 128 * 128 // VEC

    @cute.kernel
    def k(atom: cute.CopyAtom, tensor: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        smem = utils.SmemAllocator()
        s = smem.allocate_tensor(cutlass.Float8E4M3FN, _smem_layout(), byte_alignment=128)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        if tidx == 0:
            cute.arch.mbarrier_init(bar, 1)
            cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        expert = cute.domain_offset((offset_m, 0, 0), tensor)
        expert = cute.make_tensor(expert.iterator, cute.make_layout(_sf_layout(rest_m, 8, 1).shape,
                                                                    stride=tensor.stride))
        g = cute.local_tile(expert, (128, 128), (None, None, None))
        ts, tg = cpasync.tma_partition(atom, 0, cute.make_layout(1), cute.group_modes(s, 0, 2),
                                       cute.group_modes(g, 0, 2))
        if tidx < 32:
            if tidx == 0:
                cute.arch.mbarrier_arrive_and_expect_tx(bar, nbytes)
            cute.copy(atom, cute.filter_zeros(tg)[(None, *tile_coord, 0)], cute.filter_zeros(ts), tma_bar_ptr=bar)
        cute.arch.mbarrier_wait(bar, 0)
        raw = cute.make_tensor(cute.recast_ptr(s.iterator, dtype=cutlass.Uint8), cute.make_layout(nbytes))
        for i in cutlass.range_constexpr(nbytes // 128):
            out[i * 128 + tidx] = raw[i * 128 + tidx]

    @cute.jit
    def host(sf: cute.Tensor, out: cute.Tensor):
        t = cute.make_tensor(sf.iterator, _sf_layout(2, 8, 1))
        atom, tensor = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), t, _smem_layout(),
                                                   (128, 128), internal_type=cutlass.Int16)
        k(atom, tensor, out).launch(grid=(1, 1, 1), block=(128, 1, 1))

    return host


def _load_coordinates(ptx):
    loads = [line for line in ptx.splitlines() if "cp.async.bulk.tensor" in line]
    assert len(loads) == 1, loads
    regs = dict(re.findall(r"mov\.b32\s+(%r\d+), (\d+);", ptx))
    return [int(regs.get(x, x)) for x in re.search(r"\{([^}]*)\}\]", loads[0]).group(1).split(", ")]


def test_a_coordinate_tensor_rebuilt_over_other_extents_loads_the_same_blocks():
    # tile (m, k) of the rebuilt tensor moved 128 * j rows: M block m + j, K blocks from 2 k (two blocks a tile)
    for rest_m, offset_m, (m, kk) in [(3, 0, (1, 3)), (4, 128, (1, 2)), (1, 256, (0, 1))]:
        with target("sm_90a"):
            c = cute.compile(_rebuilt_program(rest_m, offset_m, (m, kk)),
                             from_dlpack(np.zeros(2 * 8 * 512, np.uint8)), from_dlpack(np.zeros(1024, np.uint8)))
        assert _load_coordinates(c.ptx) == [0, m + offset_m // 128, 2 * kk, 0]


@requires_gpu
def test_a_rebuilt_coordinate_tensor_loads_the_experts_blocks_on_the_gpu():
    import torch

    sf = torch.randint(0, 256, (2 * 8 * 512,), dtype=torch.uint8, device="cuda")
    out = torch.zeros(1024, dtype=torch.uint8, device="cuda")
    _rebuilt_program(1, 128, (0, 3))(from_dlpack(sf), from_dlpack(out))
    torch.cuda.synchronize()
    # M block 1 (the offset), K blocks 6 and 7, each 512 bytes, one after the other in shared memory
    assert torch.equal(out, sf[(8 + 6) * 512:(8 + 8) * 512])


def test_the_host_descriptor_of_a_nested_remaining_mode_is_one_dimension(monkeypatch, stand_in):
    """The tensor map the call encodes for the rebuilt coordinate tensor (its last mode nested, (1,1):(0,8192)):
    every dimension a plain extent and byte stride, the nested mode one dimension of extent 1."""
    from warpweave import _core

    seen = []

    def encode(backend, hook, attrs, size):
        seen.append(dict(attrs))
        return bytes(size)

    with target("sm_90a"):
        c = cute.compile(_rebuilt_program(1, 128, (0, 3)), from_dlpack(np.zeros(2 * 8 * 512, np.uint8)),
                         from_dlpack(np.zeros(1024, np.uint8)))
    monkeypatch.setattr(_core, "plugin_host_call", encode)
    stand_in(c)(from_dlpack(np.zeros(2 * 8 * 512, np.uint8)), from_dlpack(np.zeros(1024, np.uint8)))
    assert len(seen) == 1 and all(type(v) is int for k, v in seen[0].items() if k[:3] in ("dim", "box", "str"))
    assert seen[0]["dim3"] == 1 and seen[0]["dim2"] == 8 and seen[0]["dim1"] == 2
