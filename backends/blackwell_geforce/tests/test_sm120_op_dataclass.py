"""cute.nvgpu.warp.MmaMXF8F6F4Op is a frozen dataclass of CuTe DSL's fields (a_dtype, b_dtype, acc_dtype, sf_type),
so that a library can subclass it as a dataclass of the same fields with its own __post_init__ (QuACK's
MmaMXF8F6F4OpFull admits every pair of the instruction), and the subclass still selects the instruction."""
from __future__ import annotations

import dataclasses

import pytest
from dsl_helpers import target

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base import trace
from warpweave._dsl.base.errors import DSLValueError

W = cute.nvgpu.warp
F32, UE8M0 = cutlass.Float32, cutlass.Float8E8M0FNU
MXF8F6F4 = (cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float6E3M2FN, cutlass.Float6E2M3FN,
            cutlass.Float4E2M1FN)
PTX_NAME = {cutlass.Float8E4M3FN: "e4m3", cutlass.Float8E5M2: "e5m2", cutlass.Float6E3M2FN: "e3m2_b8",
            cutlass.Float6E2M3FN: "e2m3_b8", cutlass.Float4E2M1FN: "e2m1_b8"}


def _sm120():
    return trace.tracing(trace.TraceState(target={"name": "sm_120a"}))


@dataclasses.dataclass(frozen=True)
class AllPairs(W.MmaMXF8F6F4Op):
    """As a library writes it: the same fields, another check."""

    def __post_init__(self) -> None:
        arch = cutlass.base_dsl.BaseDSL._get_dsl().get_arch_enum()
        assert arch in self.admissible_archs, arch
        if self.a_dtype not in MXF8F6F4 or self.b_dtype not in MXF8F6F4:
            raise ValueError(f"not a kind::mxf8f6f4 type: {self.a_dtype} x {self.b_dtype}")


def test_fields_are_cute_dsls():
    assert dataclasses.is_dataclass(W.MmaMXF8F6F4Op)
    assert [f.name for f in dataclasses.fields(W.MmaMXF8F6F4Op)] == ["a_dtype", "b_dtype", "acc_dtype", "sf_type"]
    op = W.MmaMXF8F6F4Op(cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, F32, UE8M0)
    assert (op.a_dtype, op.b_dtype, op.acc_dtype, op.sf_type) == (cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, F32,
                                                                  UE8M0)
    assert op == W.MmaMXF8F6F4Op(a_dtype=cutlass.Float4E2M1FN, b_dtype=cutlass.Float8E4M3FN, acc_dtype=F32,
                                 sf_type=UE8M0)
    assert hash(op) == hash(W.MmaMXF8F6F4Op(cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, F32, UE8M0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.a_dtype = cutlass.Float8E5M2


def test_the_class_keeps_its_pair_check_at_the_users_line():
    with pytest.raises(DSLValueError, match="not a supported pair") as e:
        W.MmaMXF8F6F4Op(cutlass.Float8E4M3FN, cutlass.Float6E2M3FN, F32, UE8M0)  # the user's line
    assert e.value.location[0] == __file__


@pytest.mark.parametrize("a", MXF8F6F4, ids=lambda t: t.__name__)
@pytest.mark.parametrize("b", MXF8F6F4, ids=lambda t: t.__name__)
def test_a_dataclass_subclass_selects_every_pair(a, b):
    with target("sm_120a"), _sm120():
        op = AllPairs(a, b, F32, UE8M0)
        assert isinstance(op, W.MmaMXF8F6F4Op) and type(op).__name__ == "AllPairs"
        assert op.entry()[1]["id"] == f"blackwell_geforce.mma.m16n8k32.mxf8f6f4.f32.{PTX_NAME[a]}.{PTX_NAME[b]}.ue8m0"
        atom = cute.make_mma_atom(op)
        assert (atom.a_dtype, atom.b_dtype, atom.acc_dtype) == (a, b, F32)
        assert atom.shape_mnk == (16, 8, 32)


def test_a_subclass_check_runs_instead():
    with target("sm_120a"), _sm120(), pytest.raises(ValueError, match="not a kind::mxf8f6f4 type"):
        AllPairs(cutlass.Float16, cutlass.Float8E4M3FN, F32, UE8M0)
