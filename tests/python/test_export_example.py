"""The C++ program of frontend_python/examples/aot: its kernels exported for sm_80 and sm_90a without a GPU, the
program configured and built with CMake against the exported objects and a libcuda (the toolkit's link stub, or
the stand-in driver of data/mock_libcuda.c), and run against the stand-in driver: both kernels load and launch
with the grids the compiled functions compute in Python for the same sizes. On a GPU it runs and checks its
results against its CPU references."""
import os
import shutil
import subprocess
import sys

import pytest

import aot_helpers as aot
from dsl_helpers import requires_gpu

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "frontend_python", "examples", "aot")
sys.path.insert(0, EXAMPLE)

needs_tools = pytest.mark.skipif(not (aot.cc() and aot.cxx() and shutil.which("cmake")),
                                 reason="needs a C and a C++ compiler and CMake")


def export(out, arch):
    import export_kernels

    prev = os.environ.get("WARPWEAVE_ARCH")
    try:
        return export_kernels.export_all(str(out), arch)
    finally:
        if prev is None:
            os.environ.pop("WARPWEAVE_ARCH", None)
        else:
            os.environ["WARPWEAVE_ARCH"] = prev


def build_example(tmp_path, exported, libcuda=None) -> str:
    build = os.path.join(str(tmp_path), "build")
    cmd = ["cmake", "-S", EXAMPLE, "-B", build, f"-DWW_EXPORTED_DIR={exported}"]
    if libcuda:
        cmd.append(f"-DWW_LIBCUDA={libcuda}")
    subprocess.run(cmd, check=True, capture_output=True)
    p = subprocess.run(["cmake", "--build", build], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return os.path.join(build, "aot_example")


@pytest.mark.stand_in_driver  # run against the stand-in driver: nothing for compute-sanitizer (see test_export.py)
@needs_tools
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_example_builds_links_and_launches(tmp_path, arch):
    exported = tmp_path / "exported"
    done = export(exported, arch)
    assert sorted(os.listdir(exported)) == ["aot_add.h", "aot_add.o", "aot_gemm.h", "aot_gemm.o"]
    stub = aot.cuda_stub_dir()
    if stub:  # linked against the real driver's names
        assert os.path.isfile(build_example(tmp_path / "stub", str(exported), os.path.join(stub, "libcuda.so")))
    mock = aot.build_mock_driver(str(tmp_path))
    exe = build_example(tmp_path / "mock", str(exported), os.path.join(mock, "libcuda.so"))
    defined, undefined = aot.defined_symbols(exe)
    assert {"cute_dsl_aot_add_wrapper", "cute_dsl_aot_gemm_wrapper"} <= defined
    assert not any("Py" in s or "LLVM" in s or "mlir" in s.lower() for s in undefined | defined)
    needed = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True).stdout if shutil.which("readelf") \
        else ""
    assert "warpweave" not in needed and "python" not in needed.lower()
    p = subprocess.run([exe, "--dry-run", "333", "520"], capture_output=True, text=True,
                       env=dict(os.environ, LD_LIBRARY_PATH=mock))
    assert p.returncode == 0, p.stdout + p.stderr
    out = aot.parse_mock_output(p.stdout)
    # The launches the compiled functions make in Python for the same sizes (tensors at made-up addresses).
    from warpweave._dsl.values.runtime import RuntimeTensor
    import warpweave as cutlass

    def t(shape, stride):  # mode 1 contiguous, its extent a multiple of 8, as the kernels were compiled for
        rt = RuntimeTensor(None, 1 << 32, shape, stride, cutlass.Float16, "cuda", 16).mark_layout_dynamic(1)
        order = (0, 1) if len(shape) == 2 else (2, 0, 1)
        return rt.mark_compact_shape_dynamic(mode=1, stride_order=order, divisibility=8)

    add = aot.python_launches(done["aot_add"][0], *[t((333, 520), (520, 1))] * 3, 0)
    M, N, K, L = 256, 384, 128, 2
    gemm = aot.python_launches(done["aot_gemm"][0], t((M, K, L), (K, 1, M * K)), t((N, K, L), (K, 1, N * K)),
                               t((M, N, L), (N, 1, M * N)))
    launches = [l for l in p.stdout.splitlines() if l.startswith("launch")]
    assert len(launches) == 2, p.stdout
    for line, exp in zip(launches, add + gemm):
        w = line.split()
        assert w[1] == exp["kernel"]
        assert [int(x) for x in w[3:6]] == exp["grid"] and [int(x) for x in w[7:10]] == exp["block"]
        assert int(w[11]) == exp["smem"]
    assert out["functions"] == [add[0]["kernel"], gemm[0]["kernel"]]


@requires_gpu
@needs_tools
def test_example_runs_on_the_gpu(tmp_path):
    import export_kernels

    exported = tmp_path / "exported"
    export(exported, export_kernels.default_arch())
    exe = build_example(tmp_path, str(exported))
    p = subprocess.run([exe, "777", "1032"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(": ok") == 2, p.stdout
