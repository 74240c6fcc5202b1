"""The generation-neutral part of CuTe DSL's utils.mixed_input_helpers (the module itself is a backend's, see
warpweave.backends.blackwell.mixed_input): what a mixed-input GEMM does to its narrow operand, the checks of its
arguments, and the walk of a grouped GEMM whose groups are contiguous runs of one mode.

A contiguous grouped GEMM keeps all groups in one tensor: group g covers [cumsum[g], cumsum[g+1]) of the searched
mode (N for the grouped examples), cut into cluster tiles of that mode's extent; a group's last tile may be partial.
The persistent scheduler hands out one linear tile index along the mode, growing from call to call, so a search
resumes from the state the last one left (ContiguousGroupSearchState) and only walks forward. Group indices of the
state are one past the group (cur_group_idx == g + 1 while in group g); past the last group the index is
group_count + 1, which is how a scheduler learns that no work is left.
"""
from __future__ import annotations

import enum

from .._dsl.atoms.element_copy import autovec_copy, copy
from .._dsl.base.errors import DSLTypeError, DSLValueError, user_location
from .._dsl.tracing.functional import while_generate, yield_out
from .._dsl.values.fragments import make_rmem_tensor
from .._dsl.values.numeric import Boolean, Int4, Int32, BFloat16
from .._dsl.values.tensor_ssa import where
from .._dsl.values.value_tree import extract_mlir_values, new_from_mlir_values
from .tile_scheduler_values import ceil_div, static_int


class TransformMode(enum.Enum):
    """What the transform warps do to the narrow operand before the MMA: convert it to the MMA's type, or convert
    it and multiply by its scale (one scale per scale_granularity_m x scale_granularity_k block)."""
    ConvertOnly = enum.auto()
    ConvertScale = enum.auto()


# --- the converted operand --------------------------------------------------------------------------------------

def cvt_tensor_a(src, dtype, shuffle: bool):
    """The values of `src` (a register tensor of the narrow type) as a TensorSSA of `dtype`. `shuffle` says the host
    stored each run of 8 int4 values of K interleaved for a shuffled conversion to bf16, which warpweave does not
    build: such an operand is refused rather than converted in the wrong order."""
    if shuffle:
        raise DSLValueError("cvt_tensor_a(shuffle=True): the interleaved int4 -> bf16 conversion is not available in "
                            "warpweave; give A in plain K order (shuffle=False)", user_location(2))
    return src.load().to(dtype)


def store_transformed_a(src_a, dst_a, copy_atom_a=None) -> None:
    """Write the converted operand: through `copy_atom_a` (a tensor-memory store) when given, else by vectorised
    element copies (shared memory)."""
    if copy_atom_a is not None:
        copy(copy_atom_a, src_a, dst_a)
    else:
        autovec_copy(src_a, dst_a)


# --- checks of a problem ----------------------------------------------------------------------------------------

def is_valid_scale_granularity(scale_granularity_m: int, scale_granularity_k: int, a_dtype, k: int,
                               mma_tiler_k: int) -> bool:
    """8-bit A has no scale (both granularities 0); 4-bit A has one scale per row (granularity_m 1) and per a
    granularity_k that divides K and is a multiple of the MMA tile's K (a tile never straddles two scales)."""
    if a_dtype.width == 8:
        return scale_granularity_m == 0 and scale_granularity_k == 0
    if a_dtype.width == 4:
        return (scale_granularity_m == 1 and scale_granularity_k != 0 and k % scale_granularity_k == 0
                and scale_granularity_k % mma_tiler_k == 0)
    return True


def is_shuffle_a(a_major: str, k: int, a_dtype, mma_dtype, scale_granularity_k: int) -> bool:
    """Whether the host should interleave A for the shuffled int4 -> bf16 conversion: K-major int4 A, K a multiple
    of the 8-value runs, bf16 MMA, and scale blocks no shorter than a run."""
    return (a_major == "k" and a_dtype == Int4 and k % 8 == 0 and mma_dtype == BFloat16
            and scale_granularity_k >= 8)


def _rows_of_16_bytes(dtype, extent: int) -> bool:
    return extent % (128 // dtype.width) == 0


def is_valid_tensor_alignment(m, n, k, a_dtype, b_dtype, c_dtype, scale_dtype, a_major: str, b_major: str,
                              c_major: str, mma_tiler_mnk, use_2cta_instrs: bool, cluster_shape_mn,
                              scale_granularity_m: int, scale_granularity_k: int) -> bool:
    """TMA's rules: every tensor's contiguous mode is a whole number of 16-byte units (the scale tensor is
    M-major, one column per scale block of K, and holds B's type), and a CTA's share of one scale column loaded by
    TMA is at least 128 bytes."""
    if not (_rows_of_16_bytes(a_dtype, m if a_major == "m" else k)
            and _rows_of_16_bytes(b_dtype, n if b_major == "n" else k)
            and _rows_of_16_bytes(c_dtype, m if c_major == "m" else n)
            and (scale_granularity_k == 0 or _rows_of_16_bytes(b_dtype, m))):
        return False
    if scale_granularity_m > 0:
        cta_m = mma_tiler_mnk[0] // (2 if use_2cta_instrs else 1)
        if cta_m // cluster_shape_mn[1] // scale_granularity_m * (scale_dtype.width // 8) < 128:
            return False
    return True


def is_valid_mma_tiler_and_cluster_shape(mma_tiler, cluster_shape_mn, use_2cta_instrs: bool) -> bool:
    """A 2-CTA MMA pairs CTAs along the cluster's M; each CTA's M tile is 64 or 128 rows (the transform warps and
    the tensor-memory layouts of the converted A are made for those)."""
    pair = 2 if use_2cta_instrs else 1
    return cluster_shape_mn[0] % pair == 0 and mma_tiler[0] // pair in (64, 128)


def get_divisibility(contiguous_dim_size: int, upper_bound: int = 128) -> int:
    """The largest power of two dividing contiguous_dim_size, at most upper_bound (1 for an odd size)."""
    if not isinstance(contiguous_dim_size, int) or contiguous_dim_size < 1:
        raise DSLValueError(f"get_divisibility: expected a positive integer, got {contiguous_dim_size!r}",
                            user_location(2))
    return min(contiguous_dim_size & -contiguous_dim_size, upper_bound) if contiguous_dim_size > 1 else 1


# --- contiguous grouped GEMM: the group search --------------------------------------------------------------------

_STATE_FIELDS = ("last_tile_count", "cur_boundary", "cur_tile_count", "cur_group_idx", "cur_offset", "cur_start")


class ContiguousGGSearchState:
    """Where the search stands (see the module's description): tiles of all groups before the current one, the
    current group's end along the mode, tiles through the current group, its index (one past the group), its start
    along the mode, and where the tile found starts."""

    def __init__(self, last_tile_count, cur_boundary, cur_tile_count, cur_group_idx, cur_offset, cur_start):
        for name, v in zip(_STATE_FIELDS, (last_tile_count, cur_boundary, cur_tile_count, cur_group_idx, cur_offset,
                                           cur_start)):
            setattr(self, name, v)

    def __extract_mlir_values__(self):
        return [v for name in _STATE_FIELDS for v in extract_mlir_values(getattr(self, name))]

    def __new_from_mlir_values__(self, values):
        if len(values) != len(_STATE_FIELDS):
            raise DSLValueError(f"ContiguousGGSearchState is made of {len(_STATE_FIELDS)} values, got {len(values)}",
                                user_location(2))
        return ContiguousGGSearchState(*(new_from_mlir_values(getattr(self, name), [v])
                                         for name, v in zip(_STATE_FIELDS, values)))


def create_initial_contiguous_group_search_state(*, loc=None, ip=None) -> ContiguousGGSearchState:
    """The state before the first search: no group reached, no tiles counted."""
    return ContiguousGGSearchState(*(Int32(0) for _ in _STATE_FIELDS))


def contiguous_group_search(cluster_tile_shape_mnk, group_count, linear_idx, search_state: ContiguousGGSearchState,
                            cumsum, search_mode: int, *, loc=None, ip=None) -> ContiguousGGSearchState:
    """The state at tile `linear_idx` of the searched mode (0 for M, 1 for N), walking forward from `search_state`
    over the groups' ends in `cumsum` (group_count + 1 offsets, cumsum[0] == 0)."""
    if not isinstance(search_state, ContiguousGGSearchState):
        raise DSLTypeError(f"contiguous_group_search: search_state comes from "
                           f"create_initial_contiguous_group_search_state(), got {search_state!r}", user_location(2))
    if search_mode not in (0, 1, 2):
        raise DSLValueError(f"contiguous_group_search: search_mode is 0 (M), 1 (N) or 2 (K), got {search_mode!r}",
                            user_location(2))
    tile = static_int(cluster_tile_shape_mnk[search_mode])
    if tile is None or tile < 1:
        raise DSLValueError(f"contiguous_group_search: the cluster tile's extent along mode {search_mode} is a static "
                            f"positive integer, got {cluster_tile_shape_mnk[search_mode]!r}", user_location(2))
    s = search_state
    fields = (s.cur_group_idx, s.last_tile_count, s.cur_boundary, s.cur_tile_count, s.cur_offset)
    if all(static_int(v) is not None for v in fields + (linear_idx,)) and not hasattr(cumsum, "layout"):
        # Python integers and a sequence of offsets (outside a kernel): the same walk, checked on integers
        found = linear_idx < s.cur_tile_count
        state = [_next_group(s.cur_group_idx, found)] + list(fields[1:]) + [found]
        while not state[-1] and state[0] <= group_count:
            state = _trip(state, cumsum, linear_idx, tile)
    else:
        found = Boolean(linear_idx < s.cur_tile_count)
        loop = while_generate([_next_group(Int32(s.cur_group_idx), found)] + [Int32(v) for v in fields[1:]]
                              + [found], lambda g, *rest: ~rest[-1] & Boolean(g <= group_count))
        with loop as state:
            yield_out(_trip(state, cumsum, linear_idx, tile))
        state = loop.results
    g, last, boundary, count, offset, _ = state
    return ContiguousGGSearchState(last, boundary, count, g, offset, offset + tile * (linear_idx - last))


def _next_group(g, found):
    """The group index, moved on past the current group when the tile was not found in it."""
    if isinstance(found, bool):
        return g if found else g + 1
    return g + where(found, Int32(0), Int32(1))


def _trip(state, cumsum, linear_idx, tile):
    """One group further: group g's end and tile count, and whether linear_idx falls in it."""
    g, _, boundary, count, _, _ = state
    next_boundary = cumsum[g] if isinstance(g, int) else Int32(cumsum[g])
    next_count = count + ceil_div(next_boundary - boundary, tile)
    hit = linear_idx < next_count
    hit = hit if isinstance(hit, bool) else Boolean(hit)
    return [_next_group(g, hit), count, next_boundary, next_count, boundary, hit]


class ContiguousGroupWorkTileInfo:
    """A work tile of a contiguous grouped GEMM as the scheduler warp publishes it: the CTA's tile index along M,
    its start along N, its group, and how far the group's end lies from that start (the tile's valid extent)."""

    def __init__(self, group_count, cta_coord_m, coord_n, group_idx, distance_to_boundary):
        self.group_count = group_count
        self.cta_coord_m = cta_coord_m
        self.coord_n = coord_n
        self.group_idx = group_idx
        self.distance_to_boundary = distance_to_boundary

    def _fields(self):
        return (self.cta_coord_m, self.coord_n, self.group_idx, self.distance_to_boundary)

    def __extract_mlir_values__(self):
        return [v for f in self._fields() for v in extract_mlir_values(f)]

    def __new_from_mlir_values__(self, values):
        if len(values) != 4:
            raise DSLValueError(f"ContiguousGroupWorkTileInfo is made of 4 values, got {len(values)}",
                                user_location(2))
        return ContiguousGroupWorkTileInfo(self.group_count,
                                           *(new_from_mlir_values(f, [v]) for f, v in zip(self._fields(), values)))

    @property
    def is_valid_tile(self):
        return self.group_idx < self.group_count


def make_contiguous_group_work_tile_info(group_count, sTile_info, *, loc=None, ip=None):
    """The work tile stored in `sTile_info` (4 Int32 in shared memory: M tile index, N start, group, distance to
    the group's end), read at once into registers."""
    if getattr(sTile_info, "shape", None) is None or static_int(_size(sTile_info)) != 4:
        raise DSLValueError(f"make_contiguous_group_work_tile_info: expected a tensor of 4 values, got "
                            f"{sTile_info!r}", user_location(2))
    held = make_rmem_tensor(sTile_info.shape, sTile_info.element_type)
    autovec_copy(sTile_info, held)
    return ContiguousGroupWorkTileInfo(group_count, held[0], held[1], held[2], held[3])


def _size(tensor):
    n = 1
    for e in _flat(tensor.shape):
        n *= e
    return n


def _flat(shape):
    if isinstance(shape, tuple):
        for s in shape:
            yield from _flat(s)
    else:
        yield shape


__all__ = ["TransformMode", "cvt_tensor_a", "store_transformed_a", "is_valid_scale_granularity", "is_shuffle_a",
           "is_valid_tensor_alignment", "is_valid_mma_tiler_and_cluster_shape", "get_divisibility",
           "ContiguousGGSearchState", "create_initial_contiguous_group_search_state", "contiguous_group_search",
           "ContiguousGroupWorkTileInfo", "make_contiguous_group_work_tile_info"]
