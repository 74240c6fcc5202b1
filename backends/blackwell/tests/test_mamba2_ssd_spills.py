"""CuTe DSL's mamba2_ssd at sm_100a (a warp-specialised kernel: roles at register ceilings of 48, 88, 168 and 208,
each walking a persistent tile scheduler set up before the roles) spills nothing under ptxas (CUDA 13.0), as CuTe
DSL 4.8.1's PTX spills nothing.

The grid's extents and the tile count (a product of two arguments), computed again in each role, were merged back
above the roles by the code generator, and a role branching into roles of its own shared one copy among them: 16 bytes
stored and 136 reloaded across the roles (compiler/role_values_kept.cpp, compiler/warp_role_values.cpp). Then the
epilogue role (at 88 registers) kept two of the thread's shared-memory addresses, computed once before its loops,
across them, where each chunk only offsets them by its stage's buffer before its inner loop: 8 bytes stored and 8
reloaded (compiler/loop_invariant_values.cpp computes them again in the chunk loop).

CuTe DSL's sources are not in the repository: WARPWEAVE_CUTLASS_DIR names a checkout of NVIDIA/cutlass, and
WARPWEAVE_EXAMPLES_PYTHON an interpreter with torch for the program (this one by default)."""
from __future__ import annotations

import tempfile

from cutedsl_programs import compile_cutedsl_program

PROGRAM = "cute/blackwell/kernel/attention/mamba2_ssd/mamba2_ssd.py"


def test_nothing_spilled():
    with tempfile.TemporaryDirectory() as dump:
        res = compile_cutedsl_program(PROGRAM, "sm_100a", dump)
    (_, k), = res["kernels"]
    # recorded: nothing stored or reloaded (before: 16 and 136, then 8 and 8)
    assert k["spill_stores"] == 0 and k["spill_loads"] == 0 and k["stack"] == 0, k
