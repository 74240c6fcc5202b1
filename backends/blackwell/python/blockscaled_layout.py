"""warpweave.utils.blockscaled_layout: where the scale factors of a block-scaled tcgen05 GEMM live, with CuTe DSL's
names.

    import warpweave.utils.blockscaled_layout as blockscaled_utils
    sfa_layout = blockscaled_utils.tile_atom_to_shape_SF(a_tensor.shape, sf_vec_size)      # global memory
    sSFA_layout = blockscaled_utils.make_smem_layout_sfa(tiled_mma, mma_tiler, sf_vec_size, stages)
    tCtSFA_layout = blockscaled_utils.make_tmem_layout_sfa(tiled_mma, mma_tiler, sf_vec_size, sSFA_one_stage)

A block-scaled MMA multiplies A (M, K) and B (N, K) whose every run of sf_vec_size elements along K shares one
scale factor: SFA is (M, K / sf_vec_size), SFB (N, K / sf_vec_size), one byte each (Float8E4M3FN or
Float8E8M0FNU). They are stored in blocks of 128 rows x 4 scale factors (512 bytes), the "basic chunk" that a
tcgen05.cp .32x128b.warpx4 copy moves into tensor memory:

  offset(mn, kb) within a chunk = (mn % 32) * 16 + (mn / 32) * 4 + kb        (mn < 128, kb < 4)

so row r of 16 bytes of a chunk holds rows r, r + 32, r + 64, r + 96 of the tile, 4 scale factors each. In a
scale-factor tensor of a whole matrix (tile_atom_to_shape_SF) the chunks follow each other along K first, then
along M/N, then the batch:

  offset(mn, k, l) = chunk(mn % 128, (k / sf_vec_size) % 4) + 512 ((k / (4 sf_vec_size)) + Kc ((mn / 128) + Mc l))

with Kc = ceil(K / (4 sf_vec_size)) chunks along K and Mc = ceil(MN / 128) along M/N. The layouts are indexed by
element coordinates (mn, k) of A or B (the sf_vec_size elements of a run have stride 0), so that they partition
and tile exactly as A and B do.

In tensor memory (make_tmem_layout_sfa/sfb) a chunk takes 4 columns of lanes 0-31 (copied to all four lane
quarters, as warpx4 does): row mn of the chunk is in lane mn % 32, column mn / 32, byte kb of the 32-bit column.
Offsets into tensor memory count bytes here, with lane steps of 4 << 16 (tcgen05_mma.tmem_address's unit for 8-bit
values); the chunks of one instruction are side by side in columns, then those of the instruction's further K
blocks, then its further M/N tiles.
"""
from __future__ import annotations

import warpweave.cute as cute
from warpweave import ext

from .tcgen05_mma import OperandMajorMode
from .tmem_layouts import LANE

CHUNK_MN = 128                # rows of a basic chunk
CHUNK_SF = 4                  # scale factors of a row of a basic chunk (one 32-bit tensor-memory column)
CHUNK_BYTES = CHUNK_MN * CHUNK_SF
SF_VEC_SIZES = (16, 32)       # what the block-scaled kinds take (nvf4: 16, mx formats: 32)


def _check_vec(sf_vec_size, where):
    if not isinstance(sf_vec_size, int) or sf_vec_size not in SF_VEC_SIZES:
        raise ext.user_error(f"{where}: sf_vec_size is 16 or 32 (elements per scale factor), got {sf_vec_size!r}",
                             ext.DSLValueError)


class BlockScaledBasicChunk:
    """The 128-row x 4-scale-factor block of scale factors: `layout` maps element coordinates ((32, 4),
    (sf_vec_size, 4)) of the A/B tile it scales to byte offsets, ((16, 4), (0, 1)) (K-major: the only major
    tcgen05.cp's chunk copies read)."""

    def __init__(self, sf_vec_size: int, major_mode: OperandMajorMode = OperandMajorMode.K, *, loc=None, ip=None):
        _check_vec(sf_vec_size, "BlockScaledBasicChunk")
        if major_mode != OperandMajorMode.K:
            raise ext.user_error("BlockScaledBasicChunk: scale factors are stored K-major here (OperandMajorMode.K)",
                                 ext.DSLValueError)
        self.sf_vec_size = sf_vec_size
        self.major_mode = major_mode
        self._layout = cute.make_layout(((32, 4), (sf_vec_size, CHUNK_SF)), stride=((16, 4), (0, 1)))

    @property
    def layout(self):
        return self._layout


def tile_atom_to_shape_SF(Shape, sf_vec_size: int, *, loc=None, ip=None):
    """The layout of the scale factors of an (MN, K, L) operand: ((32, 4), rest MN), ((sf_vec_size, 4), rest K),
    L, indexed by the operand's element coordinates, chunks K-fastest (see the module's docstring). MN and K may be
    dynamic; a partial last chunk is padded (the tensor holds ceil(MN / 128) * ceil(K / (4 sf_vec_size)) chunks)."""
    _check_vec(sf_vec_size, "tile_atom_to_shape_SF")
    shape = tuple(Shape) if isinstance(Shape, (tuple, list)) else None
    if shape is None or len(shape) not in (2, 3):
        raise ext.user_error(f"tile_atom_to_shape_SF: Shape is (MN, K) or (MN, K, L), got {Shape!r}",
                             ext.DSLValueError)
    mn, k = shape[0], shape[1]
    mn_chunks = cute.ceil_div(mn, CHUNK_MN)
    k_chunks = cute.ceil_div(k, sf_vec_size * CHUNK_SF)
    k_stride = CHUNK_BYTES
    mn_stride = CHUNK_BYTES * k_chunks
    s = (((32, 4), mn_chunks), ((sf_vec_size, CHUNK_SF), k_chunks))
    d = (((16, 4), mn_stride), ((0, 1), k_stride))
    if len(shape) == 3:
        # the batch mode as CuTe DSL makes it, (1, size(L)) : (0, one matrix's chunks): a batch of several modes
        # (((heads, kv heads), batch) of attention) is counted as one run of matrices
        s += ((1, cute.size(shape[2])),)
        d += ((0, mn_stride * mn_chunks),)
    return cute.make_layout(s, stride=d)


def _instruction(tiled_mma, where):
    """(M per CTA, N, K, CTAs) of a tiled MMA's tcgen05 instruction."""
    op = getattr(tiled_mma, "op", None)
    shape = getattr(op, "shape_mnk", None)
    cta = getattr(op, "cta_group", None)
    if shape is None or cta is None:
        raise ext.user_error(f"{where}: expected a tiled MMA of a tcgen05 MMA op, got {tiled_mma!r}",
                             ext.DSLTypeError)
    m, n, k = (int(x) for x in shape)
    return m // int(cta), n, k, int(cta)


def _tiler(mma_tiler_mnk, where):
    t = tuple(mma_tiler_mnk) if isinstance(mma_tiler_mnk, (tuple, list)) else ()
    if len(t) != 3 or not all(isinstance(x, int) for x in t):
        raise ext.user_error(f"{where}: mma_tiler_mnk is a static (M, N, K), got {mma_tiler_mnk!r}",
                             ext.DSLValueError)
    return t


class _Plan:
    """How one operand's scale factors of an MMA tile divide into instructions and chunks.

    inst_chunks: 128-row chunks of one instruction's operand in this CTA; nsf: scale factors of one instruction along K; per_col: instructions whose K
    blocks share one chunk (4 / nsf, 1 for nvf4 at K = 64); rest_mn, rest_k: instructions of the tile along MN and K
    (rest_k counts chunks, each holding per_col instructions)."""

    def __init__(self, which, tiled_mma, mma_tiler_mnk, sf_vec_size, where):
        _check_vec(sf_vec_size, where)
        m_cta, n, k_inst, cta = _instruction(tiled_mma, where)
        tm, tn, tk = _tiler(mma_tiler_mnk, where)
        if which == "A":
            inst, tile = m_cta, tm // cta
        else:
            # B's scale factors are not split between the CTAs of a pair: each CTA holds all N rows of them
            inst, tile = n, tn
        if k_inst % sf_vec_size or CHUNK_SF % (k_inst // sf_vec_size):
            raise ext.user_error(f"{where}: an instruction's K of {k_inst} is not 1, 2 or 4 runs of sf_vec_size "
                                 f"{sf_vec_size}", ext.DSLValueError)
        # An instruction's rows take whole chunks, the last one padded (N = 192: two chunks); narrower ones (N =
        # 64) share a chunk, the next instruction's rows going on in the same chunk.
        if inst % CHUNK_MN and CHUNK_MN % inst and inst < CHUNK_MN:
            raise ext.user_error(f"{where}: the instruction's {'M per CTA' if which == 'A' else 'N'} of {inst} "
                                 f"neither divides nor fills whole 128-row blocks of scale factors", ext.DSLValueError)
        self.nsf = k_inst // sf_vec_size
        self.per_col = CHUNK_SF // self.nsf
        self.inst_chunks = -(-inst // CHUNK_MN)
        self.inst_rows = inst
        if tile % inst or tk % (k_inst * self.per_col):
            raise ext.user_error(f"{where}: the MMA tile {mma_tiler_mnk} is not whole instructions of "
                                 f"{'M' if which == 'A' else 'N'} {inst} and whole chunks of K "
                                 f"{k_inst * self.per_col}", ext.DSLValueError)
        self.rest_mn = tile // inst
        self.rest_k = tk // (k_inst * self.per_col)
        self.sf_vec_size = sf_vec_size
        self.per_chunk = CHUNK_MN // inst if inst < CHUNK_MN else 1
        if self.rest_mn % self.per_chunk and self.rest_mn > self.per_chunk:
            raise ext.user_error(f"{where}: the MMA tile {mma_tiler_mnk} is not whole 128-row blocks of "
                                 f"{'M' if which == 'A' else 'N'} {inst} instructions", ext.DSLValueError)
        # chunks of the tile along MN (the last padded where an instruction does not fill it)
        self.mn_chunks = self.inst_chunks * self.rest_mn if inst >= CHUNK_MN else -(-self.rest_mn // self.per_chunk)

    def mn_mode(self, lane_stride, col_stride, chunk_stride):
        """The tile's instructions along MN: each instruction's chunks after the previous one's, or, where several
        share a chunk, at the place of their first row in it ((row % 32) lanes, (row / 32) columns), then chunk by
        chunk."""
        if self.per_chunk == 1:
            return self.rest_mn, chunk_stride * self.inst_chunks
        row = self.inst_rows
        within = (row % 32) * lane_stride + (row // 32) * col_stride
        if self.rest_mn <= self.per_chunk:
            return self.rest_mn, within
        return (self.per_chunk, self.rest_mn // self.per_chunk), (within, chunk_stride)

    def mma_mode(self, lane_stride, col_stride, chunk_stride):
        """One instruction's ((rows), (sf run, nsf)) mode with the given strides of a chunk's rows."""
        rows = (32, 4) if self.inst_chunks == 1 else ((32, 4), self.inst_chunks)
        rows_d = (lane_stride, col_stride) if self.inst_chunks == 1 else ((lane_stride, col_stride), chunk_stride)
        return (rows, (self.sf_vec_size, self.nsf)), (rows_d, (0, 1))


def _smem(which, tiled_mma, mma_tiler_mnk, sf_vec_size, num_stages, where):
    p = _Plan(which, tiled_mma, mma_tiler_mnk, sf_vec_size, where)
    if not isinstance(num_stages, int) or num_stages < 1:
        raise ext.user_error(f"{where}: num_stages is a positive integer, got {num_stages!r}", ext.DSLValueError)
    # chunks of a stage in global memory's order, K chunks first, then MN (CuTe DSL's order, which kernels that
    # load a stage's chunks as one run of bytes, as QuACK's SFB loads, rely on)
    k_run = CHUNK_BYTES * p.rest_k
    (ms, md) = p.mma_mode(16, 4, k_run)
    mn_s, mn_d = p.mn_mode(16, 4, k_run)
    shape = (ms, mn_s, (p.per_col, p.rest_k), num_stages)
    stride = (md, mn_d, (p.nsf, CHUNK_BYTES), k_run * p.mn_chunks)
    return cute.make_layout(shape, stride=stride)


def make_smem_layout_sfa(tiled_mma, mma_tiler_mnk, sf_vec_size: int, num_stages: int, *, loc=None, ip=None):
    """SFA's (MMA, MMA_M, MMA_K, STAGE) shared-memory layout for an MMA tile of mma_tiler_mnk: MMA is one
    instruction's (rows of this CTA, K) in element coordinates, its scale factors in basic chunks."""
    return _smem("A", tiled_mma, mma_tiler_mnk, sf_vec_size, num_stages, "make_smem_layout_sfa")


def make_smem_layout_sfb(tiled_mma, mma_tiler_mnk, sf_vec_size: int, num_stages: int, *, loc=None, ip=None):
    """SFB's (MMA, MMA_N, MMA_K, STAGE) shared-memory layout (all N rows of the tile in each CTA of a pair)."""
    return _smem("B", tiled_mma, mma_tiler_mnk, sf_vec_size, num_stages, "make_smem_layout_sfb")


def _tmem(which, tiled_mma, mma_tiler_mnk, sf_vec_size, smem_layout, where):
    _check_vec(sf_vec_size, where)
    k_inst = _instruction(tiled_mma, where)[2]
    if k_inst % sf_vec_size == 0 and CHUNK_SF % (k_inst // sf_vec_size):
        return _tmem_of_shape(sf_vec_size, smem_layout, where)
    p = _Plan(which, tiled_mma, mma_tiler_mnk, sf_vec_size, where)
    if smem_layout is not None:
        outer = getattr(smem_layout, "outer", smem_layout)
        want = _smem(which, tiled_mma, mma_tiler_mnk, sf_vec_size, 1, where)
        if cute.size(outer) != cute.size(want):
            raise ext.user_error(f"{where}: smem_layout {smem_layout} is not one stage of this tile's scale factors "
                                 f"({cute.slice_(want, (None, None, None, 0))})", ext.DSLValueError)
    cols = CHUNK_SF                                          # bytes of one 32-bit column
    lane = CHUNK_SF * LANE                                   # one lane, in bytes
    chunk = CHUNK_SF * cols                                  # a chunk's 4 columns
    (ms, md) = p.mma_mode(lane, cols, chunk)
    # each instruction's chunks in columns of their own, narrow ones (N = 64) too, as CuTe DSL's
    inst = chunk * p.inst_chunks
    shape = (ms, p.rest_mn, (p.per_col, p.rest_k))
    stride = (md, inst * p.rest_k, (p.nsf, inst))
    return cute.make_layout(shape, stride=stride)


def _tmem_of_shape(sf_vec_size, smem_layout, where):
    """The tensor-memory layout of scale factors shaped as smem_layout ((rows, (sf_vec_size, nsf)), MMA_MN, MMA_K),
    for instructions whose K is no whole number of 32-bit columns of scale factors (sm_103a's K = 96: 6 or 3 a
    row): the kernel's own layout says how many it reads at a time, and scale factor g along K of a row sits in
    byte g % 4 of the g // 4-th column group of its chunk, as the instructions read them from a byte of a column
    on (their scale-factor ids)."""
    if smem_layout is None:
        raise ext.user_error(f"{where}: an instruction whose K is not 1, 2 or 4 runs of {CHUNK_SF} scale factors takes "
                             "the layout of its scale factors (smem_layout)", ext.DSLValueError)
    outer = getattr(smem_layout, "outer", smem_layout)
    if cute.rank(outer) != 3 or cute.rank(cute.get(outer, mode=[0])) != 2:
        raise ext.user_error(f"{where}: smem_layout is ((rows, K), MMA_MN, MMA_K), got {smem_layout}",
                             ext.DSLValueError)
    mma = cute.get(outer, mode=[0])
    rows_shape = cute.get(mma, mode=[0]).shape
    rows, k = cute.size(mma, mode=[0]), cute.size(mma, mode=[1])
    nsf, rest_mn, k_count = k // sf_vec_size, cute.size(outer, mode=[1]), cute.size(outer, mode=[2])
    if rows % CHUNK_MN or k % sf_vec_size or nsf not in (1, 2, 4) or (k_count * nsf) % CHUNK_SF:
        raise ext.user_error(f"{where}: smem_layout {smem_layout} is not whole chunks of {CHUNK_MN} rows x "
                             f"{CHUNK_SF} scale factors (rows, 1, 2 or 4 scale factors of {sf_vec_size} elements)",
                             ext.DSLValueError)
    lane, inst_chunks = CHUNK_SF * LANE, rows // CHUNK_MN
    chunk = CHUNK_SF * CHUNK_SF
    inst = chunk * inst_chunks
    per_col = CHUNK_SF // nsf
    rest_k = k_count // per_col
    if inst_chunks == 1:
        # one chunk's rows, factored as the kernel's layout factors them (sm_103a kernels' (8, 4, 4))
        rows_layout = cute.composition(cute.make_layout((32, 4), stride=(lane, CHUNK_SF)), cute.make_layout(rows_shape))
    else:
        rows_layout = cute.make_layout(((32, 4), inst_chunks), stride=((lane, CHUNK_SF), chunk))
    shape = ((rows_layout.shape, (sf_vec_size, nsf)), rest_mn, (per_col, rest_k))
    stride = ((rows_layout.stride, (0, 1)), inst * rest_k, (nsf, inst))
    return cute.make_layout(shape, stride=stride)


def make_tmem_layout_sfa(tiled_mma, mma_tiler_mnk, sf_vec_size: int, smem_layout, *, loc=None, ip=None):
    """SFA's (MMA, MMA_M, MMA_K) tensor-memory layout (byte offsets, lane steps 4 << 16) for the tile whose one
    stage in shared memory is smem_layout: each K block's chunks in columns of their own, lanes 0-31 of every
    lane quarter."""
    return _tmem("A", tiled_mma, mma_tiler_mnk, sf_vec_size, smem_layout, "make_tmem_layout_sfa")


def make_tmem_layout_sfb(tiled_mma, mma_tiler_mnk, sf_vec_size: int, smem_layout, *, loc=None, ip=None):
    """SFB's (MMA, MMA_N, MMA_K) tensor-memory layout."""
    return _tmem("B", tiled_mma, mma_tiler_mnk, sf_vec_size, smem_layout, "make_tmem_layout_sfb")


__all__ = ["BlockScaledBasicChunk", "tile_atom_to_shape_SF", "make_smem_layout_sfa", "make_smem_layout_sfb",
           "make_tmem_layout_sfa", "make_tmem_layout_sfb"]
