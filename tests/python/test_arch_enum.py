"""`Arch` (cutlass.base_dsl.arch.Arch, cute.arch.Arch) and `BaseDSL._get_dsl().get_arch_enum()`, as CuTe DSL's
Blackwell attention and distributed programs use them: the target being compiled for, compared against ranges of
target names (`Arch.sm_100 <= arch <= Arch.sm_100f`: every sm_100 variant) to pick a code path."""
from __future__ import annotations

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.base_dsl.arch import Arch
from warpweave.cute.runtime import from_dlpack
from warpweave.cutlass_dsl import BaseDSL

from dsl_helpers import target


def test_order_is_by_capability_then_plain_arch_specific_family():
    assert Arch.sm_100 < Arch.sm_100a < Arch.sm_100f < Arch.sm_103 < Arch.sm_103a < Arch.sm_120
    assert Arch.sm_90a > Arch.sm_89 and Arch.sm_80 <= Arch.sm_80
    assert Arch.sm_100 <= Arch.sm_100a <= Arch.sm_100f and not Arch.sm_103a <= Arch.sm_100f
    assert (Arch.sm_120a.major, Arch.sm_120a.minor) == (12, 0) and str(Arch.sm_90a) == "sm_90a"
    assert cute.arch.Arch is Arch
    assert not hasattr(Arch, "sm_80a") and not hasattr(Arch, "sm_90f")   # "a" from 9.0 on, "f" from 10.0 on
    with pytest.raises(ValueError, match="no target is named 'sm_99x'"):
        Arch.from_name("sm_99x")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a", "sm_103a", "sm_120a"])
def test_get_arch_enum_is_the_target_compiled_for(arch):
    with target(arch):
        assert BaseDSL._get_dsl().get_arch_enum() is Arch[arch]


def test_a_kernel_picks_its_path_by_the_traced_target():
    @cute.kernel
    def k(out: cute.Tensor):
        arch = BaseDSL._get_dsl().get_arch_enum()
        if cutlass.const_expr(Arch.sm_100 <= arch <= Arch.sm_100f):
            out[0] = cutlass.Int32(100)
        elif cutlass.const_expr(arch >= Arch.sm_90 and arch <= Arch.sm_90a):
            out[0] = cutlass.Int32(90)
        else:
            out[0] = cutlass.Int32(7)

    @cute.jit
    def host(out: cute.Tensor):
        k(out).launch(grid=(1, 1, 1), block=(32, 1, 1))

    got = {}
    for arch in ("sm_80", "sm_90a", "sm_100a", "sm_103a"):
        with target(arch):
            ptx = cute.compile(host, from_dlpack(np.zeros(4, np.int32))).ptx
        got[arch] = [v for v in (100, 90, 7) if f", {v};" in ptx]
    assert got == {"sm_80": [7], "sm_90a": [90], "sm_100a": [100], "sm_103a": [7]}


def test_an_ops_admissible_archs_are_the_targets_of_its_entries():
    """op.admissible_archs (QuACK tests the compile target against warp.MmaMXF8Op's before choosing it): the Arch
    members of exactly the targets whose manifests list the op, whatever the current target."""
    from warpweave.cute.nvgpu import warp, warpgroup

    for cls, gens in ((warp.MmaMXF8Op, {120, 121}), (warp.MmaMXF4NVF4Op, {120, 121}),
                      (warpgroup.MmaF16BF16Op, {90})):
        archs = cls.admissible_archs
        assert archs and len(set(archs)) == len(archs) and all(isinstance(a, Arch) for a in archs), (cls, archs)
        assert {a.major * 10 + a.minor for a in archs} == gens, (cls, archs)
    assert Arch.sm_120a in warp.MmaMXF8Op.admissible_archs and Arch.sm_90a not in warp.MmaMXF8Op.admissible_archs
    assert Arch.sm_90a in warpgroup.MmaF16BF16Op.admissible_archs


def test_the_dsls_envar_arch_reads_and_pins_the_target(monkeypatch):
    """QuACK's compile workers re-latch the target on the running DSL (`CuTeDSL._get_dsl().envar.arch = ...`)
    before compiling without a GPU: reading it gives the target compiled for, setting it pins it (an unknown name is
    refused at once)."""
    from warpweave.cutlass_dsl import CuTeDSL

    dsl = CuTeDSL._get_dsl()
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    assert dsl.envar.arch == "sm_80" and dsl.get_arch_enum() is Arch.sm_80
    dsl.envar.arch = "sm_90a"
    assert dsl.envar.arch == "sm_90a" and dsl.get_arch_enum() is Arch.sm_90a
    with pytest.raises(cutlass.DSLError, match="no loaded backend offers the target 'sm_99x'"):
        dsl.envar.arch = "sm_99x"
    assert dsl.envar.arch == "sm_90a"
