"""The cubin a compile makes by default is the one ptxas makes of the same PTX as a whole program: same registers
and stack frame. nvJitLink assembles PTX as relocatable code (ptxas -c), which takes more registers (the Ampere
tensor-op GEMM below: 236 against 230), so the default path must not be nvJitLink where a whole-program assembler
is there (core/compiler/compile.cpp)."""
import os
import shutil
import subprocess
import sys

import pytest

import warpweave as cutlass
from dsl_helpers import fresh_compilations, target  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "frontend_python", "examples"))

from bench_cubin_tools import cubin_resources  # noqa: E402


def ptxas_program():
    for d in os.environ.get("PATH", "").split(os.pathsep) + [os.path.join(os.environ.get("CUDA_HOME", ""), "bin"),
                                                               "/usr/local/cuda/bin"]:
        p = os.path.join(d, "ptxas")
        if d and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def test_default_cubin_has_the_registers_of_whole_program_ptxas(fresh_compilations, monkeypatch, tmp_path):
    ptxas = ptxas_program()
    if ptxas is None:
        pytest.skip("no ptxas program to compare with (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    monkeypatch.delenv("WARPWEAVE_CUBIN_TOOL", raising=False)
    import tensorop_gemm

    with target("sm_80"):
        gemm = tensorop_gemm.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
        (_, compiled), = tensorop_gemm.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16)
    (tmp_path / "k.ptx").write_text(compiled.info["ptx"])
    for name, extra in (("whole", []), ("relocatable", ["-c"])):
        subprocess.run([ptxas, "-arch=sm_80", "-O3", *extra, str(tmp_path / "k.ptx"), "-o", str(tmp_path / name)],
                       check=True, capture_output=True)
    ours = cubin_resources(bytes(compiled.cubin))
    whole = cubin_resources((tmp_path / "whole").read_bytes())
    relocatable = cubin_resources((tmp_path / "relocatable").read_bytes())
    tool = compiled.info["cubin_tool"]
    assert set(ours) == set(whole), (tool, ours, whole)
    for fn in whole:
        assert ours[fn].get("registers") == whole[fn].get("registers"), (tool, fn, ours[fn], whole[fn])
        assert ours[fn].get("stack", 0) == whole[fn].get("stack", 0), (tool, fn, ours[fn], whole[fn])
    # A kernel on which relocatable code costs registers, or the comparison above proves nothing.
    costs = [fn for fn in whole if relocatable[fn].get("registers", 0) > whole[fn].get("registers", 0)]
    assert costs, (relocatable, whole)
