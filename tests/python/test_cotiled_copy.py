"""cute.make_cotiled_copy(atom, atom_layout_tv, data_layout): a tiled copy whose (thread, value) -> address is the
atom layout, over data whose coordinate -> address is the data layout; its tiler takes, mode by mode, the
coordinates those addresses hold. A swizzled tensor's layout counts its unswizzled addresses (CuTe DSL keeps the
swizzle in the pointer); addresses outside the data are refused at the user's line."""
import os

import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import line_in

THIS = os.path.abspath(__file__)


def _atom():
    return cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.BFloat16, num_bits_per_copy=32)


def test_16_contiguous_addresses_per_thread_over_a_row_major_tile_as_cute_dsl_gives():
    tc = cute.make_cotiled_copy(_atom(), cute.make_layout((64, 16), stride=(16, 1)),
                                cute.make_layout((64, 16), stride=(16, 1)))
    # CuTe DSL 4.8.1: Tiler MN (64:1,16:1), TV Layout tiled (64,16):(1,64)
    assert str(tc.tiler_mn[0]) == "64:1" and str(tc.tiler_mn[1]) == "16:1"
    assert str(tc.layout_tv_tiled) == "(64,16):(1,64)"


@pytest.mark.parametrize("data", [cute.make_layout((32, 32), stride=(32, 1)),
                                  cute.make_layout(((4, 8), (8, 4)), stride=((8, 128), (1, 32))),
                                  cute.make_layout((32, 32), stride=(1, 32))])
def test_each_thread_gets_the_coordinates_of_its_addresses(data):
    atom_tv = cute.make_layout((128, 8), stride=(8, 1))       # thread t: addresses 8t .. 8t + 7
    tc = cute.make_cotiled_copy(_atom(), atom_tv, data)
    coords = cute.make_identity_tensor(cute.product_each(data.shape))
    for t in (0, 5, 77, 127):
        part = tc.get_slice(t).partition_S(coords)
        got = sorted(data(part[i]) for i in range(cute.size(part)))
        assert got == list(range(8 * t, 8 * t + 8))


def test_a_swizzled_tensors_layout_counts_its_unswizzled_addresses():
    outer = cute.make_layout((64, 16), stride=(16, 1))
    swizzled = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, outer)
    a = cute.make_cotiled_copy(_atom(), cute.make_layout((64, 16), stride=(16, 1)), swizzled)
    b = cute.make_cotiled_copy(_atom(), cute.make_layout((64, 16), stride=(16, 1)), outer)
    assert str(a.layout_tv_tiled) == str(b.layout_tv_tiled)


def test_addresses_outside_the_data_are_refused_at_the_users_line():
    with pytest.raises(ValueError, match="does not hold") as e:
        wide, narrow = cute.make_layout((64, 32), stride=(32, 1)), cute.make_layout((64, 16), stride=(16, 1))
        cute.make_cotiled_copy(_atom(), wide, narrow)  # the line named
    assert e.value.location == (THIS, line_in(THIS, "# the line named"))


def test_a_tiled_copy_made_from_extents_gives_its_tiler_as_one_layout_per_mode():
    """CuTe DSL 4.8.1: make_tiled_copy_tv(atom, (32, 4):(4, 1), (1, 8)) has Tiler MN (32:1, 32:1), each mode a
    layout (QuACK reads `tiled_copy.tiler_mn[0].shape`); made from extents, the same."""
    tv = cute.make_tiled_copy_tv(_atom(), cute.make_layout((32, 4), stride=(4, 1)), cute.make_layout((1, 8)))
    ext = cute.make_tiled_copy(_atom(), tv.layout_tv_tiled, (32, 32))
    for tc in (tv, ext):
        assert [str(m) for m in tc.tiler_mn] == ["32:1", "32:1"], tc.tiler_mn
        assert tc.tiler_mn[0].shape == 32
    assert str(ext.layout_tv_tiled) == str(tv.layout_tv_tiled)
