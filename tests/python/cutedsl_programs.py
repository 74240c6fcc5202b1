"""CuTe DSL's example programs compiled by warpweave in a test, when a checkout of NVIDIA/cutlass is named: their
sources are not in the repository. WARPWEAVE_CUTLASS_DIR names the checkout, WARPWEAVE_EXAMPLES_PYTHON an interpreter
with torch for the program (this one by default)."""
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def compile_cutedsl_program(prog: str, arch: str, dump: str) -> dict:
    """bench_resources' report of program `prog` (a path under examples/python/CuTeDSL) compiled by warpweave for
    `arch`, its kept files in `dump`: {"kernels": [(name, registers, spills ...)]}. Skips where no checkout is named
    or the checkout lacks the program, and where no ptxas is found (the report is ptxas's on the kept PTX, and the
    program's cubin is assembled by it); a program that fails to compile fails the test."""
    if not (shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas")):
        pytest.skip("no ptxas to assemble the program and report the registers and spills of its kept PTX")
    cutlass_dir = os.environ.get("WARPWEAVE_CUTLASS_DIR")
    if not cutlass_dir:
        pytest.skip("WARPWEAVE_CUTLASS_DIR names no checkout of NVIDIA/cutlass (CuTe DSL's sources are not in the "
                    "repository)")
    sys.path.insert(0, os.path.join(ROOT, "benchmarks", "python"))
    import bench_resources
    path = os.path.join(cutlass_dir, bench_resources.EXAMPLES, prog)
    if not os.path.exists(path):
        pytest.skip(f"{cutlass_dir} has no {prog}")
    py = os.environ.get("WARPWEAVE_EXAMPLES_PYTHON", sys.executable)
    res = bench_resources.run_warpweave(path, arch, [], py, dump, timeout=900, root=ROOT)
    assert "error" not in res, res.get("error")
    return res
