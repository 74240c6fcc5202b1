"""CuTe DSL's Blackwell fmha at sm_100a (a warp-specialised kernel: load, MMA and epilogue roles at 32 registers, two
softmax roles at 192, a correction role at 96) spills nothing under ptxas (CUDA 13.0), as CuTe DSL 4.8.1's own cubin
has no local memory (its PTX under the same ptxas spills 520 bytes).

The MMA role and the first softmax role advance one shared pipeline state (the MMA role's empty step for the
correction epilogue). The branch around the MMA role merged the MMA role's last state with the initial one, and the
softmax role started from the merge, although its warps never run the MMA role: the merge lived across the MMA role
at its 32-register ceiling and spilled, 8 bytes of stack, 16 bytes stored and 16 reloaded (one store before the roles,
stores and a reload in the MMA role's loop, reloads in the softmax role's loop). compiler/values_past_other_roles.cpp
gives a role that no warp of an earlier role reaches the value from before that role (here a constant). Then the
second softmax role, at its 192-register ceiling, kept the tensor-memory address it stores P to in local memory across
its loop (4 bytes stored and reloaded): a base equal to the one it loads S from, made from another broadcast of the
warp's index (compiler/merged_warp_broadcasts.cpp merges equal broadcasts in a block).

CuTe DSL's sources are not in the repository: WARPWEAVE_CUTLASS_DIR names a checkout of NVIDIA/cutlass, and
WARPWEAVE_EXAMPLES_PYTHON an interpreter with torch for the program (this one by default)."""
from __future__ import annotations

import tempfile

from cutedsl_programs import compile_cutedsl_program

PROGRAM = "cute/blackwell/kernel/attention/fmha/fmha.py"


def test_nothing_spilled():
    with tempfile.TemporaryDirectory() as dump:
        res = compile_cutedsl_program(PROGRAM, "sm_100a", dump)
    kernels = [k for name, k in res["kernels"] if name == "kernel_cutlass_kernel"]
    assert len(kernels) == 1, [name for name, _ in res["kernels"]]
    k, = kernels
    # recorded: nothing stored or reloaded (before: 8 bytes of stack, 16 stored and 16 reloaded, then 4 and 4)
    assert k["spill_stores"] == 0 and k["spill_loads"] == 0 and k["stack"] == 0, k
