"""cutlass.utils.block_copy of a TMA atom (QuACK's GEMM mainloops load A and B with it): the copy of a whole tile,
and with tma_multicast the multicast CuTe DSL's compiler derives from a plain TMA atom at the copy site. An "M"
operand (A) is shared by the CTAs of a cluster row, an "N" operand (B) by those of a cluster column; the group's
CTAs share the tile's boxes out and each box reaches every CTA of the group, so each CTA receives the whole tile
once. Wrong arguments are refused at the user's line."""
import itertools
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, target

THIS = os.path.abspath(__file__)


def _group_function():
    with target("sm_90a"):
        utils.block_copy  # noqa: B018 - mounts the Hopper backend's package
    import warpweave.backends.hopper.tma_block_copy as m
    return m.multicast_group


@pytest.mark.parametrize("cm, cn", list(itertools.product([1, 2, 3, 4], repeat=2)))
@pytest.mark.parametrize("dim", ["M", "N"])
def test_each_cta_of_a_multicast_group_has_its_place_and_reaches_the_whole_group(cm, cn, dim):
    group = _group_function()
    for rank in range(cm * cn):
        m, n = rank % cm, rank // cm
        position, mask, size = group(rank, cm, cn, dim)
        # an "M" operand's tile depends on m only: the CTAs of the same m share it; an "N" operand's, on n
        peers = [r for r in range(cm * cn) if (r % cm == m if dim == "M" else r // cm == n)]
        assert mask == sum(1 << r for r in peers) and size == len(peers)
        assert sorted(group(r, cm, cn, dim)[0] for r in peers) == list(range(size)) and 0 <= position < size


@pytest.mark.parametrize("cm, cn", list(itertools.product([2, 4, 6], [1, 2, 3])))
@pytest.mark.parametrize("dim", ["M", "N"])
def test_with_a_cta_pair_the_n_operands_group_is_the_column_at_the_same_place_in_the_pair(cm, cn, dim):
    """use_2cta_mma_inst: CTAs 2p and 2p+1 along M share an MMA, each with its own half of the operands. The M
    operand's group stays its cluster row; the N operand's is the CTAs of its column at the same place in their
    pair, so the two halves of B never meet in one CTA."""
    group = _group_function()
    for rank in range(cm * cn):
        m, n = rank % cm, rank // cm
        position, mask, size = group(rank, cm, cn, dim, True)
        peers = [r for r in range(cm * cn) if (r % cm == m if dim == "M" else (r // cm == n and r % 2 == m % 2))]
        assert mask == sum(1 << r for r in peers) and size == len(peers)
        assert sorted(group(r, cm, cn, dim, True)[0] for r in peers) == list(range(size)) and 0 <= position < size
        if dim == "M":
            assert group(rank, cm, cn, dim, False) == (position, mask, size)


def _host(a_dim, b_dim, cluster, bad=None):
    @cute.kernel
    def k(atom_a: cute.CopyAtom, ta: cute.Tensor, atom_b: cute.CopyAtom, tb: cute.Tensor, layout: cute.Layout):
        smem = utils.SmemAllocator()
        sa = smem.allocate_tensor(cutlass.Float16, layout, byte_alignment=1024)
        sb = smem.allocate_tensor(cutlass.Float16, layout, byte_alignment=1024)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        ga = cute.local_tile(ta, (64, 64), (0, 0))
        gb = cute.local_tile(tb, (64, 64), (0, 0))
        if cutlass.const_expr(bad == "dict"):
            utils.block_copy(atom_a, ga, sa, tma_multicast={"cluster_shape": cluster}, tma_bar_ptr=bar)  # BADD
        if cutlass.const_expr(bad == "atom"):
            utils.block_copy(layout, ga, sa, tma_bar_ptr=bar)  # BADA
        utils.block_copy(atom_a, cute.group_modes(ga, 0, 2), cute.group_modes(sa, 0, 2), tma_bar_ptr=bar,
                         tma_multicast={"cluster_shape": cluster, "multicast_dim": a_dim})
        utils.block_copy(atom_b, cute.group_modes(gb, 0, 2), cute.group_modes(sb, 0, 2), tma_bar_ptr=bar,
                         tma_multicast={"cluster_shape": cluster, "multicast_dim": b_dim})

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor):
        layout = cute.make_layout((64, 64), stride=(64, 1))
        atom_a, ta = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), a, layout, (64, 64))
        atom_b, tb = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), b, layout, (64, 64))
        k(atom_a, ta, atom_b, tb, layout).launch(grid=(cluster[0], cluster[1], 1), block=(32, 1, 1),
                                                 cluster=(cluster[0], cluster[1], 1))

    return host


def _ptx(a_dim, b_dim, cluster):
    a = np.zeros((128, 128), np.float16)
    with target("sm_90a"):
        return cute.compile(_host(a_dim, b_dim, cluster), from_dlpack(a), from_dlpack(a)).ptx


def test_a_2x1_cluster_multicasts_the_n_operand_and_loads_the_m_operand_alone():
    ptx = _ptx("M", "N", (2, 1))
    loads = [ln for ln in ptx.splitlines() if "cp.async.bulk.tensor.2d" in ln]
    assert len(loads) == 2 and sum(".multicast::cluster" in ln for ln in loads) == 1, loads


def test_a_2x2_cluster_multicasts_both_operands():
    ptx = _ptx("M", "N", (2, 2))
    loads = [ln for ln in ptx.splitlines() if "cp.async.bulk.tensor.2d" in ln]
    assert len(loads) == 2 and all(".multicast::cluster" in ln for ln in loads), loads
    assert re.search(r"%cluster_ctarank", ptx)  # which CTA of the group issues the box is decided at run time


@pytest.mark.parametrize("bad, error, marker", [("dict", ValueError, "# BADD"), ("atom", TypeError, "# BADA")])
def test_wrong_arguments_are_refused_at_the_users_line(bad, error, marker):
    a = np.zeros((128, 128), np.float16)
    with target("sm_90a"), pytest.raises(error) as e:
        cute.compile(_host("M", "N", (2, 1), bad), from_dlpack(a), from_dlpack(a))
    assert e.value.location == (THIS, line_in(THIS, marker))
