"""TMA loads made from an explicit CTA value map (cute_nvgpu.atom_make_non_exec_tiled_tma_load, as CuTe DSL's MLA
decode makes them for a paged KV cache) and cute.CopyAtom(op, CopyBulkTensorTileG2SNonExecTrait(atom)), without a
GPU.

- A value map built as CuTe DSL's programs build one (an identity layout composed with the MMA tile, divided down to
  one page's rows and selected) gives the atom make_tiled_tma_atom gives for that tile: the same boxes, tensor-map
  dimensions, swizzle and bytes, whatever the grouping of the shared-memory layout's modes (a rank-1 ((rows, cols))
  layout included), on sm_90a and on sm_100a.
- On sm_100a the atom keeps the op's CTA group (TWO: the pair's loads complete on the leader's barrier).
- A kernel copies page after page at indices read at run time from a page table: one tensor load per box per page,
  its row coordinate the loaded index (SASS UTMALDG).
- Maps TMA cannot copy (permuted or strided modes, a shared-memory layout of another size), a trait given another op,
  another op than a TMA load and a cute_nvgpu op no backend has are errors at the user's line.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core, utils
from warpweave._mlir.dialects import cute_nvgpu
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, sass_opcodes, target  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_compilations")

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
THIS = os.path.abspath(__file__)
FIELDS = ("box", "boxes", "dims", "swizzle", "smem_bytes", "num_multicast")


def paged_cache(page: int, pages: int):
    """A (page rows, 512 columns, pages) fp16 cache, columns contiguous, each page one block of memory."""
    return from_dlpack(np.zeros((pages, page, 512), np.float16).transpose(1, 2, 0))


def page_map(shape, mma_rows: int, cols: int, page: int):
    """The value map of one page's rows of an (mma_rows, cols) tile of a tensor of `shape`, built as MLA decode
    builds it (a one-mode layout of ((rows, cols)))."""
    tile = cute.composition(cute.make_identity_layout(shape), (mma_rows, cols))
    rows = min(page, mma_rows)
    return cute.select(cute.zipped_divide(tile, (rows, cols)), mode=[0])


def smem_tile(rows: int, cols: int, swizzled: bool, grouped: bool):
    """A K-major (rows, cols) fp16 tile: 128-byte swizzled rows of 64, or plain rows; as one ((rows, cols)) mode
    when grouped (the value map's own grouping)."""
    shape = ((rows, cols),) if grouped else (rows, cols)
    stride = ((cols, 1),) if grouped else (cols, 1)
    plain = cute.make_layout(shape, stride=stride)
    return cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, plain) if swizzled else plain


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
@pytest.mark.parametrize("page,cols,swizzled", [(16, 64, True), (64, 64, True), (32, 32, False), (128, 64, True)])
def test_value_map_atom_is_make_tiled_tma_atom_of_its_tile(arch, page, cols, swizzled):
    got = {}

    @cute.jit
    def host(kv: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SOp()
        vmap = page_map(kv.shape, 128, cols, page)
        rows = min(page, 128)
        got["map"] = cute_nvgpu.atom_make_non_exec_tiled_tma_load(
            kv.value, smem_tile(rows, cols, swizzled, True).value, vmap, op._to_ir(), num_multicast=1)
        got["plain"] = cpasync.make_tiled_tma_atom(op, kv, smem_tile(rows, cols, swizzled, False), (rows, cols))
        got["atom"] = cute.CopyAtom(op, cpasync.CopyBulkTensorTileG2SNonExecTrait(got["map"][0]))

    with target(arch):
        cute.compile(host, paged_cache(page, 8))
    (atom, tensor), plain = got["map"], got["plain"]
    assert got["atom"] is atom
    assert {f: getattr(atom, f) for f in FIELDS} == {f: getattr(plain.atom, f) for f in FIELDS}
    assert atom.tma_desc.attrs == plain.atom.tma_desc.attrs
    assert atom.smem_bytes == min(page, 128) * cols * 2
    assert tensor.shape == plain.tma_tensor.shape == (page, 512, 8) and tensor.is_coordinate_tensor


def test_the_atom_keeps_the_ops_cta_group_on_sm100a():
    from warpweave.cute.nvgpu import tcgen05

    got = {}

    @cute.jit
    def host(kv: cute.Tensor):
        for group in (tcgen05.CtaGroup.ONE, tcgen05.CtaGroup.TWO):
            op = cpasync.CopyBulkTensorTileG2SOp(group)
            got[group] = cute_nvgpu.atom_make_non_exec_tiled_tma_load(
                kv.value, smem_tile(64, 64, True, True).value, page_map(kv.shape, 128, 64, 64), op._to_ir())[0]

    with target("sm_100a"):
        cute.compile(host, paged_cache(64, 8))
    assert got[tcgen05.CtaGroup.ONE].cta_group == 1 and got[tcgen05.CtaGroup.TWO].cta_group == 2


# --- a paged copy -------------------------------------------------------------------------------------------------

PAGE, COLS, PAGES_PER_TILE = 32, 64, 4


def _paged_kernel():
    smem_one = smem_tile(PAGE, COLS, True, False)

    @cute.kernel
    def k(atom: cute.CopyAtom, coords: cute.Tensor, table: cute.Tensor):
        smem = utils.SmemAllocator()
        stage = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout(
            ((PAGE, COLS), PAGES_PER_TILE), stride=((COLS, 1), PAGE * COLS)))
        s = smem.allocate_tensor(cutlass.Float16, stage, byte_alignment=1024)
        bar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        g = cute.tiled_divide(coords, (PAGE, COLS))        # ((PAGE, COLS), 1, col tiles, pages)
        for p in cutlass.range_constexpr(PAGES_PER_TILE):
            cute.copy(atom, g[None, 0, 0, table[p]], s[None, p], tma_bar_ptr=bar)

    @cute.jit
    def host(kv: cute.Tensor, table: cute.Tensor):
        op = cpasync.CopyBulkTensorTileG2SOp()
        res = cute_nvgpu.atom_make_non_exec_tiled_tma_load(kv.value, smem_one.value,
                                                           page_map(kv.shape, PAGE, COLS, PAGE), op._to_ir())
        k(cute.CopyAtom(op, cpasync.CopyBulkTensorTileG2SNonExecTrait(res[0])), res[1], table).launch(
            grid=(1, 1, 1), block=(32, 1, 1))

    with target("sm_100a"):
        return cute.compile(host, paged_cache(PAGE, 16),
                            from_dlpack(np.zeros(PAGES_PER_TILE, np.int32)))


def test_paged_copy_loads_each_page_at_its_runtime_index():
    ptx = _paged_kernel().ptx
    loads = [line for line in ptx.splitlines() if "cp.async.bulk.tensor.3d" in line]
    assert len(loads) == PAGES_PER_TILE, loads       # one 64-column box per page
    pages = {line.split("{")[1].split("}")[0].split(",")[2].strip() for line in loads}
    # the page coordinate of each load is a register (the index read from the table), distinct per page
    assert len(pages) == PAGES_PER_TILE and all(p.startswith("%r") for p in pages), loads


@SASS
def test_paged_copy_sass():
    ops = sass_opcodes(_paged_kernel().cubin)
    assert ops.count("UTMALDG.3D") == PAGES_PER_TILE, sorted(set(ops))


# --- errors at the user's line ------------------------------------------------------------------------------------

def _compile_host(body):
    @cute.jit
    def host(kv: cute.Tensor):
        body(kv)

    with target("sm_100a"):
        cute.compile(host, paged_cache(64, 8))


def _make(kv, vmap, smem=None, op=None):
    op = op or cpasync.CopyBulkTensorTileG2SOp()
    return cute_nvgpu.atom_make_non_exec_tiled_tma_load(kv, smem or smem_tile(64, 64, True, True), vmap, op)  # op


@pytest.mark.parametrize("case,match", [
    ("permuted", "take the tensor's modes in order"),
    ("strided", "take the tensor's modes in order"),
    ("size", "holds 2048 values, the value map's tile"),
    ("not_a_map", "cta_v_map must be a layout"),
    ("store_op", "is a TMA load"),
])
def test_maps_tma_cannot_copy_are_refused_at_the_users_line(case, match):
    def body(kv):
        ident = cute.make_identity_layout(kv.shape)
        if case == "permuted":
            _make(kv, cute.select(cute.composition(ident, (64, 64)), mode=[1, 0]))
        elif case == "strided":
            _make(kv, cute.composition(ident, cute.make_layout((32, 64), stride=(2, 64))))  # every other row
        elif case == "size":
            _make(kv, page_map(kv.shape, 128, 64, 64), smem_tile(32, 64, True, True))
        elif case == "not_a_map":
            _make(kv, (64, 64))
        else:
            _make(kv, page_map(kv.shape, 128, 64, 64), op=cpasync.CopyBulkTensorTileS2GOp())

    with pytest.raises(Exception, match=match) as e:
        _compile_host(body)
    # the line of the program that calls the op
    assert f"test_tma_value_map.py:{line_in(THIS, '  # op')}:" in str(e.value), str(e.value)


def test_a_trait_given_another_op_and_an_unknown_op_are_errors_at_the_users_line():
    def wrong_op(kv):
        atom, _ = _make(kv, page_map(kv.shape, 128, 64, 64))
        trait = cpasync.CopyBulkTensorTileG2SNonExecTrait(atom)
        cute.CopyAtom(cpasync.CopyBulkTensorTileG2SMulticastOp(), trait)  # wrong op

    with pytest.raises(Exception, match="the trait's atom was made for") as e:
        _compile_host(wrong_op)
    assert f"test_tma_value_map.py:{line_in(THIS, '# wrong op')}" in str(e.value)

    def unknown(kv):
        cute_nvgpu.atom_make_no_such_thing(kv)  # unknown

    with pytest.raises(AttributeError, match="has no op 'atom_make_no_such_thing'") as e:
        _compile_host(unknown)
    assert f"test_tma_value_map.py:{line_in(THIS, '# unknown')}" in str(e.value)
