"""warpweave.utils.blockscaled_layout against the scale-factor layouts it must produce.

The formulas stated here are the storage of block scale factors as the tcgen05 block-scaled MMAs and their
shared -> tensor memory copies (tcgen05.cp .32x128b.warpx4) take them, the same "128 x 4" blocks that cuBLAS documents
for its 1D block-scaling factors:
- global memory: SF (mn, s) of an (MN, K) operand (s = k / sf_vec_size) is at
    (mn % 32) 16 + ((mn / 32) % 4) 4 + s % 4 + 512 (s / 4 + Kc (mn / 128 + Mc l)),
  Kc = ceil(K / (4 sf_vec_size)), Mc = ceil(MN / 128);
- shared memory, one stage of an MMA tile: the tile's scale factors in 512-byte blocks of that same form, the
  blocks along M/N first, then along K;
- tensor memory: row mn of an instruction's block b (128 rows) in lane mn % 32, column 4 b + (mn / 32) % 4, byte
  s % 4 of the 32-bit column, the blocks of one instruction side by side, then those of the next instruction along
  K, then along M/N.
Each is checked for every coordinate, against the formula written here (not the code's), for several shapes.
"""
from __future__ import annotations

import itertools
import types

import pytest

import warpweave as cutlass
import warpweave.cute as cute

LANE = 1 << 16


def bsl():
    import warpweave.utils.blockscaled_layout as m

    return m


def gmem_offset(mn, k, l, MN, K, vec):
    s = k // vec
    kc = -(-K // (4 * vec))
    mc = -(-MN // 128)
    return (mn % 32) * 16 + ((mn // 32) % 4) * 4 + s % 4 + 512 * (s // 4 + kc * (mn // 128 + mc * l))


def fake_mma(m, n, k, cta):
    # the layouts read only the instruction's shape and CTA group of the tiled MMA
    return types.SimpleNamespace(op=types.SimpleNamespace(shape_mnk=(m, n, k), cta_group=cta))


@pytest.mark.parametrize("MN,K,L,vec", [(128, 64, 1, 16), (256, 512, 2, 16), (384, 256, 3, 32), (200, 100, 1, 16)])
def test_tile_atom_to_shape_sf_is_the_block_layout(MN, K, L, vec):
    lay = bsl().tile_atom_to_shape_SF((MN, K, L), vec)
    mn_s, k_s, l_s = cute.size(lay, mode=[0]), cute.size(lay, mode=[1]), cute.size(lay, mode=[2])
    # padded to whole blocks: 128 rows, 4 scale factors
    assert (mn_s, l_s) == (-(-MN // 128) * 128, L) and k_s == -(-K // (4 * vec)) * 4 * vec
    seen = {}
    for l, mn, k in itertools.product(range(L), range(mn_s), range(k_s)):
        off = lay((mn, k, l))
        assert off == gmem_offset(mn, k, l, MN, K, vec), (mn, k, l)
        seen.setdefault(off, set()).add((mn, k // vec, l))
    # one byte per scale factor: the run of vec elements shares it, and the bytes are dense
    assert all(len(v) == 1 for v in seen.values())
    assert sorted(seen) == list(range(len(seen)))


def test_tile_atom_to_shape_sf_counts_a_batch_of_several_modes_as_one_run():
    # attention's operands have a batch of modes (((heads, kv heads), batch)); the batch mode is (1, L) : (0, Mc Kc 512)
    lay = bsl().tile_atom_to_shape_SF((256, 128, ((2, 3), 4)), 16)
    assert str(lay) == "(((32,4),2),((16,4),2),(1,24)):(((16,4),1024),((0,1),512),(0,2048))"
    flat = bsl().tile_atom_to_shape_SF((256, 128, 24), 16)
    assert all(lay((mn, k, l)) == flat((mn, k, l)) == gmem_offset(mn, k, l, 256, 128, 16)
               for mn, k, l in itertools.product(range(0, 256, 7), range(0, 128, 5), range(24)))


def test_basic_chunk():
    chunk = bsl().BlockScaledBasicChunk(16).layout
    assert cute.size(chunk) == 128 * 64 and cute.cosize(chunk) == 512
    for mn, k in itertools.product(range(128), range(64)):
        assert chunk((mn, k)) == gmem_offset(mn, k, 0, 128, 64, 16)


def _instr_coords(p_shape):
    """(mma_mn, kinst) pairs of an (MMA, MMA_MN, MMA_K) layout's rest modes, kinst counting instructions along K."""
    rest_mn = p_shape[1]
    per_col, rest_k = p_shape[2]
    return rest_mn, per_col, rest_k


CASES = [  # instruction (M, N, K, CTAs), MMA tile (M, N, K), sf_vec_size
    ((128, 256, 64, 1), (128, 256, 256), 16),   # nvf4, the GEMM tutorial's first step
    ((256, 256, 64, 2), (256, 256, 256), 16),   # nvf4 on a CTA pair: 128 rows of SFA per CTA, all 256 of SFB
    ((128, 128, 64, 1), (256, 128, 512), 32),   # mxf4: 2 scale factors per instruction, two instructions a block
]


@pytest.mark.parametrize("which", ["A", "B"])
@pytest.mark.parametrize("inst,tile,vec", CASES)
def test_smem_layout_is_the_tiles_block_layout(which, inst, tile, vec):
    m, n, k, cta = inst
    tm = fake_mma(*inst)
    make = bsl().make_smem_layout_sfa if which == "A" else bsl().make_smem_layout_sfb
    stages = 3
    lay = make(tm, tile, vec, stages)
    rows_inst = m // cta if which == "A" else n
    rows_tile = tile[0] // cta if which == "A" else tile[1]
    nsf = k // vec
    assert cute.size(lay, mode=[0]) == rows_inst * k
    rest_mn, per_col, rest_k = _instr_coords(lay.shape)
    assert rest_mn == rows_tile // rows_inst and per_col == 4 // nsf and per_col * rest_k == tile[2] // k
    inst_rows = rows_inst
    stage_bytes = (inst_rows * rest_mn) * (tile[2] // vec)
    for st in range(stages):
        for i_mn, j in itertools.product(range(rest_mn), range(per_col * rest_k)):
            for r, kk in itertools.product(range(inst_rows), range(0, k, vec)):
                off = lay(((r, kk), i_mn, (j % per_col, j // per_col), st))
                # element (mn, kt) of the stage's tile: its 512-byte block, blocks along K first, then MN (as in
                # global memory)
                mn, kt = i_mn * inst_rows + r, j * k + kk
                s = kt // vec
                k_blocks = tile[2] // vec // 4
                want = (mn % 32) * 16 + ((mn // 32) % 4) * 4 + s % 4 + 512 * (s // 4 + k_blocks * (mn // 128))
                assert off == want + st * stage_bytes
                assert lay(((r, kk + vec - 1), i_mn, (j % per_col, j // per_col), st)) == off
    assert cute.cosize(lay) == stages * stage_bytes


@pytest.mark.parametrize("which", ["A", "B"])
@pytest.mark.parametrize("inst,tile,vec", CASES)
def test_tmem_layout_puts_blocks_in_lanes_and_columns(which, inst, tile, vec):
    m, n, k, cta = inst
    tm = fake_mma(*inst)
    b = bsl()
    smem = (b.make_smem_layout_sfa if which == "A" else b.make_smem_layout_sfb)(tm, tile, vec, 2)
    one = cute.slice_(smem, (None, None, None, 0))
    lay = (b.make_tmem_layout_sfa if which == "A" else b.make_tmem_layout_sfb)(tm, tile, vec, one)
    rows_inst = m // cta if which == "A" else n
    blocks = rows_inst // 128
    rest_mn, per_col, rest_k = _instr_coords(lay.shape)
    nsf = k // vec
    cells = set()
    for i_mn, j in itertools.product(range(rest_mn), range(per_col * rest_k)):
        col0 = 4 * blocks * (j // per_col + rest_k * i_mn)
        for r, kk in itertools.product(range(rows_inst), range(0, k, vec)):
            off = lay(((r, kk), i_mn, (j % per_col, j // per_col)))
            lane, rem = divmod(off, 4 * LANE)
            col, byte = divmod(rem, 4)
            s = (j % per_col) * nsf + kk // vec
            assert (lane, col, byte) == (r % 32, col0 + 4 * (r // 128) + (r // 32) % 4, s), (i_mn, j, r, kk)
            # the warpx4 copy moves row `lane` of a block's 16-byte rows into that lane: byte 4 c + b of the row
            s_off = smem(((r, kk), i_mn, (j % per_col, j // per_col), 0))
            assert s_off % 512 == 16 * lane + 4 * (col % 4) + byte
            cells.add((lane, col, byte))
    columns = 4 * blocks * rest_mn * rest_k
    assert len(cells) == 32 * columns * 4  # every byte of lanes 0-31 of the columns used, once
    t = cute.make_tensor(_tmem_ptr(cutlass.Float8E4M3FN), lay)
    from warpweave.cute.nvgpu import tcgen05

    assert tcgen05.find_tmem_tensor_col_offset(t) == columns


def _tmem_ptr(dtype):
    from warpweave import ext

    return ext.make_pointer(None, dtype, "tmem", 16)


def test_bad_arguments_are_refused_at_the_users_line():
    b = bsl()
    with pytest.raises(Exception, match=r"test_blockscaled_layout.py:\d+: .*sf_vec_size is 16 or 32"):
        b.tile_atom_to_shape_SF((128, 64, 1), 8)
    with pytest.raises(Exception, match=r"test_blockscaled_layout.py:\d+: .*Shape is \(MN, K\)"):
        b.tile_atom_to_shape_SF(128, 16)
    with pytest.raises(Exception, match=r"test_blockscaled_layout.py:\d+: .*not whole instructions"):
        b.make_smem_layout_sfa(fake_mma(128, 256, 64, 1), (128, 256, 96), 16, 2)
    with pytest.raises(Exception, match=r"test_blockscaled_layout.py:\d+: .*neither divides nor fills whole 128-row"):
        b.make_smem_layout_sfb(fake_mma(128, 96, 64, 1), (128, 192, 256), 16, 2)
    with pytest.raises(Exception, match=r"test_blockscaled_layout.py:\d+: .*expected a tiled MMA"):
        b.make_smem_layout_sfb(object(), (128, 256, 256), 16, 2)
    with pytest.raises(Exception, match=r"test_blockscaled_layout.py:\d+: .*not one stage"):
        b.make_tmem_layout_sfa(fake_mma(128, 256, 64, 1), (128, 256, 256), 16, cute.make_layout(64))


# CuTe DSL 4.8.1's make_smem_layout_sfb for instructions whose N is no multiple of 128 (sm_100a, its
# make_blockscaled_trivial_tiled_mma): N = 64 pads the instruction's rows to a whole chunk, the next instruction's
# rows going on inside it (row 64 of a chunk is byte 8); N = 192 takes two chunks, the second half used.
SFB_CUTE_DSL = [  # instruction (M, N, K, CTAs), MMA tile, sf_vec_size, stages, CuTe DSL's shape and stride
    ((128, 64, 32, 1), (128, 64, 128), 32, 2,
     ((((32, 4), 1), (32, 1)), 1, 4, 2), ((((16, 4), 0), (0, 0)), 0, 1, 512)),
    ((128, 64, 64, 1), (128, 64, 256), 16, 2,
     ((((32, 4), 1), (16, 4)), 1, 4, 2), ((((16, 4), 0), (0, 1)), 0, 512, 2048)),
    ((128, 64, 32, 1), (128, 128, 128), 32, 1,
     ((((32, 4), 1), (32, 1)), 2, 4, 1), ((((16, 4), 0), (0, 0)), 8, 1, 520)),
    ((128, 192, 32, 1), (128, 192, 128), 32, 2,
     ((((32, 4), 2), (32, 1)), 1, 4, 2), ((((16, 4), 512), (0, 0)), 0, 1, 1024)),
    ((256, 192, 64, 2), (256, 192, 256), 16, 2,
     ((((32, 4), 2), (16, 4)), 1, 4, 2), ((((16, 4), 2048), (0, 1)), 0, 512, 4096)),
]


@pytest.mark.parametrize("inst,tile,vec,stages,shape,stride", SFB_CUTE_DSL)
def test_sfb_of_narrow_and_padded_instructions_is_cute_dsls(inst, tile, vec, stages, shape, stride):
    lay = bsl().make_smem_layout_sfb(fake_mma(*inst), tile, vec, stages)
    ref = cute.make_layout(shape, stride=stride)
    assert cute.size(lay) == cute.size(ref)
    for mode in range(4):
        assert cute.size(lay, mode=[mode]) == cute.size(ref, mode=[mode])
    # the same byte for every element coordinate (one stage: CuTe DSL's stage stride is its layout's cosize)
    for i in range(cute.size(ref) // stages):
        assert lay(i) == ref(i), i
    if stages > 1 and stride[3] % 512 == 0:
        assert lay(cute.size(ref) - 1) == ref(cute.size(ref) - 1)


@pytest.mark.parametrize("vec,k,tk,col_stride", [(32, 32, 128, 16), (16, 64, 256, 64)])
def test_tmem_sfb_of_n64_gives_each_instruction_its_columns(vec, k, tk, col_stride):
    # CuTe DSL 4.8.1: ((((32,4),4),(vec,nsf)),2,4):((((262144,4),8388608),...),col_stride,...) for an MMA tile of
    # two N = 64 instructions (its extra mode is the four lane quarters tcgen05.cp's warpx4 fills)
    b = bsl()
    tm = fake_mma(128, 64, k, 1)
    smem = b.make_smem_layout_sfb(tm, (128, 128, tk), vec, 1)
    tmem = b.make_tmem_layout_sfb(tm, (128, 128, tk), vec, cute.slice_(smem, (None, None, None, 0)))
    for r in range(64):
        assert tmem(((r, 0), 1, (0, 0))) - tmem(((r, 0), 0, (0, 0))) == col_stride
        assert tmem(((r, 0), 0, (0, 0))) == (r % 32) * 4 * LANE + (r // 32) * 4
