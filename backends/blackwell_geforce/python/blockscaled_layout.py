"""warpweave.utils.blockscaled_layout, sm_120 names: the scale factors of a warp-level block-scaled GEMM in shared
memory. Its other names (tile_atom_to_shape_SF, the tcgen05 layouts) are datacenter Blackwell's module's, whose
basic chunk (128 rows x 4 factors, 512 bytes) the global scale-factor tensors of both generations are made of.

    sSFA = blockscaled_utils.sm120_make_smem_layout_sfa(tiled_mma, (128, 128, 128), sf_vec_size, stages)

A stage holds the tile's chunks, M/N-fastest then K: (((32, 4), M / 128), ((vec, mma_k / vec), 4 vec / mma_k,
K / (4 vec)), stages), indexed like the A/B tile by element coordinates (a factor's vec values have stride 0), with
the chunk's four factors of a row split by MMA instruction: an instruction's K (mma_k: 64 for the e2m1 kinds, 32
for mxf8f6f4) covers mma_k / vec of them, so the second K mode counts the instructions of a chunk.
"""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext
from warpweave.backends.blackwell import blockscaled_layout as _base

CHUNK_MN, CHUNK_SF, CHUNK_BYTES = _base.CHUNK_MN, _base.CHUNK_SF, _base.CHUNK_BYTES


def __getattr__(name):
    # The rest of CuTe DSL's module: datacenter Blackwell's (this backend extends it).
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(_base, name)


def _smem_sf(which, tiled_mma, tile_shape_mnk, sf_vec_size, num_stages):
    where = f"sm120_make_smem_layout_sf{which.lower()}"
    if sf_vec_size not in _base.SF_VEC_SIZES:
        raise ext.user_error(f"{where}: sf_vec_size is 16 or 32 (elements per scale factor), got {sf_vec_size!r}")
    tile = tuple(tile_shape_mnk) if isinstance(tile_shape_mnk, (tuple, list)) else None
    if tile is None or len(tile) != 3 or not all(isinstance(x, int) for x in tile):
        raise ext.user_error(f"{where}: tile_shape_mnk is a static (M, N, K), got {tile_shape_mnk!r}")
    mn, k = (tile[0] if which == "A" else tile[1]), tile[2]
    mma_k = tiled_mma.atom.shape_mnk[2]
    if mn % CHUNK_MN:
        raise ext.user_error(f"{where}: the tile's {'M' if which == 'A' else 'N'} ({mn}) is not a multiple of "
                             f"{CHUNK_MN}, the rows of a scale-factor chunk")
    if k % (CHUNK_SF * sf_vec_size):
        raise ext.user_error(f"{where}: the tile's K ({k}) is not a multiple of {CHUNK_SF * sf_vec_size} (four scale "
                             f"factors of {sf_vec_size} values, a chunk's row)")
    if mma_k % sf_vec_size or CHUNK_SF * sf_vec_size % mma_k:
        raise ext.user_error(f"{where}: the MMA's K ({mma_k}) does not split a chunk's {CHUNK_SF} factors of "
                             f"{sf_vec_size} values")
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ext.user_error(f"{where}: num_stages is a positive int, got {num_stages!r}")
    rest_mn, rest_k = mn // CHUNK_MN, k // (CHUNK_SF * sf_vec_size)
    per_mma = mma_k // sf_vec_size
    shape = (((32, 4), rest_mn), ((sf_vec_size, per_mma), CHUNK_SF // per_mma, rest_k), num_stages)
    stride = (((16, 4), CHUNK_BYTES), ((0, 1), per_mma, CHUNK_BYTES * rest_mn), CHUNK_BYTES * rest_mn * rest_k)
    return cute.make_layout(shape, stride=stride)


def sm120_make_smem_layout_sfa(tiled_mma, tile_shape_mnk, sf_vec_size: int, num_stages: int, *, loc=None, ip=None):
    """SFA's shared-memory layout for a warp-level block-scaled tiled MMA (see the module's docstring)."""
    return _smem_sf("A", tiled_mma, tile_shape_mnk, sf_vec_size, num_stages)


def sm120_make_smem_layout_sfb(tiled_mma, tile_shape_mnk, sf_vec_size: int, num_stages: int, *, loc=None, ip=None):
    """SFB's shared-memory layout (N in place of M)."""
    return _smem_sf("B", tiled_mma, tile_shape_mnk, sf_vec_size, num_stages)
