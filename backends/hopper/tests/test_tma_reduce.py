"""TMA reduction stores (cpasync.CopyReduceBulkTensorTileS2GOp): made by make_tiled_tma_atom and issued by cute.copy
like the plain TMA store, one reduce instruction per box with the op the program picked; an op the tensor's element
type does not combine is refused where the atom is made."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core, utils
from warpweave.cute.nvgpu import cpasync
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import fresh_compilations, line_in, sass_opcodes, target  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_compilations")
THIS = os.path.abspath(__file__)


_TYPES = {np.float32: cutlass.Float32, np.int32: cutlass.Int32, np.uint32: cutlass.Uint32, np.int64: cutlass.Int64,
          np.int8: cutlass.Int8, np.float64: cutlass.Float64}


def _reduce_program(op, arch="sm_90a", dtype=np.float32, tile=(64, 32)):
    element = _TYPES[dtype]

    @cute.kernel
    def k(atom: cute.CopyAtom, coords: cute.Tensor, smem_layout: cute.Layout):
        s = utils.SmemAllocator().allocate_tensor(element, smem_layout, byte_alignment=128)
        cute.arch.fence_proxy("async.shared", space="cta")
        g = cute.local_tile(coords, tile, (cute.arch.block_idx()[0], 0))
        cute.copy(atom, s, g)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)

    @cute.jit
    def host(t: cute.Tensor):
        smem = cute.make_layout(tile, stride=(tile[1], 1))
        atom, coords = cpasync.make_tiled_tma_atom(op, t, smem, tile)  # MAKE
        k(atom, coords, smem).launch(grid=(2, 1, 1), block=(32, 1, 1))

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros((128, 32), dtype)))


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_add_is_one_reduce_instruction_per_box(arch):
    ptx = _reduce_program(cpasync.CopyReduceBulkTensorTileS2GOp(), arch).ptx
    red = re.findall(r"cp\.reduce\.async\.bulk\.tensor\.(\d)d\.global\.shared::cta\.(\w+)\.bulk_group", ptx)
    assert red and set(red) == {("2", "add")}, ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta" not in ptx  # not a plain store


@pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")
def test_the_machine_code_is_the_tma_reduction():
    ops = sass_opcodes(_reduce_program(cpasync.CopyReduceBulkTensorTileS2GOp()).cubin)
    assert any(o.startswith("UTMAREDG.2D") for o in ops) and not any(o.startswith("UTMASTG") for o in ops), ops


@pytest.mark.parametrize("kind,dtype,qual", [(cpasync.ReductionOp.MAX, np.int32, "max"),
                                             (cpasync.ReductionOp.MIN, np.uint32, "min"),
                                             (cpasync.ReductionOp.XOR, np.int64, "xor"),
                                             (cpasync.ReductionOp.INC, np.uint32, "inc")])
def test_the_op_asked_for_is_the_instructions(kind, dtype, qual):
    ptx = _reduce_program(cpasync.CopyReduceBulkTensorTileS2GOp(kind), dtype=dtype, tile=(64, 16)).ptx
    quals = set(re.findall(r"cp\.reduce\.async\.bulk\.tensor\.2d\.global\.shared::cta\.(\w+)\.bulk_group", ptx))
    assert quals == {qual}, ptx


@pytest.mark.parametrize("kind,dtype", [(cpasync.ReductionOp.MAX, np.float32), (cpasync.ReductionOp.AND, np.float32),
                                        (cpasync.ReductionOp.INC, np.int32), (cpasync.ReductionOp.ADD, np.int8),
                                        (cpasync.ReductionOp.ADD, np.float64)])
def test_ops_the_type_does_not_combine_are_refused_at_the_users_line(kind, dtype):
    with pytest.raises(TypeError, match=f"reduction {kind.name} does not combine") as e:
        _reduce_program(cpasync.CopyReduceBulkTensorTileS2GOp(kind), dtype=dtype, tile=(64, 16))
    assert e.value.location == (THIS, line_in(THIS, "# MAKE"))
