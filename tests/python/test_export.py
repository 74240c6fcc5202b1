"""Ahead-of-time export (compiled.export_to_c, cute.runtime.load_module).

Without a GPU: kernels compiled for sm_80 and sm_90a are exported; the object defines the documented C interface
and needs nothing but the CUDA driver's entry points (checked with nm, and by linking a C++ program against the
toolkit's libcuda stub); the C++ program, run against a stand-in driver (data/mock_libcuda.c), makes the very
launches the compiled function makes from Python for the same arguments (grid, block, shared memory, stream,
cluster, parameter bytes), on random shapes, and refuses what Python refuses (divisibility, alignment); the embedded
cubin is the compiled one byte for byte. load_module reads the exported module back and calls it (through the
stand-in driver in a subprocess). Mistakes (a function that is not compiled, a path that cannot be written, a bad
prefix, a per-call TMA descriptor) raise DSL errors at the user's line.
With a GPU: the exported elementwise add runs through load_module, checked against torch (test_export_example.py
runs the C++ program).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import load_module, make_fake_compact_tensor, make_fake_stream, make_fake_tensor

import aot_helpers as aot
from dsl_helpers import requires_gpu, target

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "frontend_python", "examples")
sys.path.insert(0, EXAMPLES)
import elementwise_add  # noqa: E402

needs_compilers = pytest.mark.skipif(not (aot.cc() and aot.cxx()), reason="needs a C and a C++ compiler")


@cute.kernel
def axpy_kernel(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < n:
        y[i] = alpha * x[i] + y[i]


@cute.jit
def axpy(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32, alpha: cutlass.Float32, stream):
    axpy_kernel(x, y, n, alpha).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1], stream=stream)


@cute.jit
def axpy_cluster(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32, alpha: cutlass.Float32, stream):
    axpy_kernel(x, y, n, alpha).launch(grid=[((n + 255) // 256) * 2, 1, 1], block=[128, 1, 1], cluster=[2, 1, 1],
                                       stream=stream)


def fake_2d(div=1, dtype=cutlass.Float16):
    m, n = cute.sym_int(), cute.sym_int(divisibility=div)
    return make_fake_compact_tensor(dtype, (m, n), stride_order=(0, 1), assumed_align=16)  # mode 0 contiguous


def tensor(addr, shape, stride, dtype=cutlass.Float16):
    """A tensor at a made-up address (nothing reads it: the stand-in driver only records the launch)."""
    return RuntimeTensor(None, addr, shape, stride, dtype, "cuda", assumed_align=16).mark_layout_dynamic()


def export(compiled, tmp_path, name):
    h, o = compiled.export_to_c(file_path=str(tmp_path), file_name=name, function_prefix=name)
    assert os.path.isfile(h) and os.path.isfile(o)
    return h, o


def metadata_of(compiled, name):
    from warpweave._dsl.export import export_c

    return export_c.metadata(compiled, export_c.c_arguments(compiled), name)


def build_harness(tmp_path, compiled, name, link_dir):
    h, o = export(compiled, tmp_path, name)
    meta = metadata_of(compiled, name)
    src = tmp_path / f"{name}_main.cpp"
    src.write_text(aot.harness_source(meta, os.path.basename(h)))
    exe = str(tmp_path / f"{name}_main")
    subprocess.run([aot.cxx(), "-std=c++17", "-Wall", "-Werror", "-I", str(tmp_path), str(src), o, "-L", link_dir,
                    "-lcuda", f"-Wl,-rpath,{link_dir}", "-Wl,--disable-new-dtags", "-o", exe], check=True)
    return exe, meta


def run_harness(exe, meta, calls, compiled, dump=None):
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in compiled.launches[0].params)
    env = dict(os.environ, WW_MOCK_PARAM_SIZES=sizes)
    if dump:
        env["WW_MOCK_DUMP"] = dump
    argv = [x for c in calls for x in aot.call_numbers(meta, c)]
    p = subprocess.run([exe] + argv, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return aot.parse_mock_output(p.stdout)


# A program run against the stand-in driver has no GPU work for compute-sanitizer to check, and the tool, which
# follows child processes, crashed the C++ ones (SIGSEGV under each of its tools, 2026-12-02): gpu_job.sh's
# sanitize_tests leaves these tests out.
stand_in_driver = pytest.mark.stand_in_driver


# ---- the interface of the object ----------------------------------------------------------------------------

@needs_compilers
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_object_defines_the_c_interface_and_needs_only_the_driver(tmp_path, arch):
    with target(arch):
        t = fake_2d(8)
        compiled = cute.compile(elementwise_add.elementwise_add, t, t, t)
    h, o = export(compiled, tmp_path, "eadd")
    defined, undefined = aot.defined_symbols(o)
    assert defined == {"eadd_Kernel_Module_Load", "eadd_Kernel_Module_Unload", "cute_dsl_eadd_wrapper",
                       "eadd_Last_Error", "eadd_Metadata"}
    libc = {"memset", "memcpy", "snprintf", "__stack_chk_fail", "__tls_get_addr", "_GLOBAL_OFFSET_TABLE_"}
    assert {s for s in undefined if not s.startswith("cu")} <= libc, undefined
    driver = {s for s in undefined if s.startswith("cu")}
    assert {"cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload", "cuLaunchKernel"} <= driver <= {
        "cuInit", "cuDeviceGet", "cuCtxGetCurrent", "cuCtxSetCurrent", "cuDevicePrimaryCtxRetain",
        "cuDevicePrimaryCtxRelease_v2", "cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload",
        "cuFuncSetAttribute", "cuGetErrorString", "cuLaunchKernel"}  # shared memory under 48 KiB: no attribute
    text = open(h).read()
    assert "eadd_Tensor_mA_t" in text and "int32_t dynamic_shapes[2];" in text and "int32_t dynamic_strides[1];" in text
    assert f"for {arch}" in text and "copy_bits" not in text.split("cute_dsl_eadd_wrapper")[1].split(";")[0]
    # The header is plain C as well as C++: a C translation unit that includes it and takes the wrapper's address.
    c_src = tmp_path / "use.c"
    c_src.write_text('#include "eadd.h"\nvoid *p = (void *)&cute_dsl_eadd_wrapper;\n')
    subprocess.run([aot.cc(), "-std=c99", "-Wall", "-Werror", "-c", "-I", str(tmp_path), str(c_src), "-o",
                    str(tmp_path / "use.o")], check=True)


@needs_compilers
@pytest.mark.skipif(aot.cuda_stub_dir() is None, reason="no libcuda link stub in a CUDA toolkit on this machine")
def test_program_links_against_the_real_driver_names(tmp_path):
    """Linking against the toolkit's libcuda stub proves every driver entry point the wrapper calls exists there
    under that name (the stand-in driver would accept any name)."""
    with target("sm_90a"):
        t = fake_2d()
        compiled = cute.compile(axpy_cluster, t, t, 1, 1.0, make_fake_stream())
    exe, _ = build_harness(tmp_path, compiled, "axpyc", aot.cuda_stub_dir())
    assert os.path.isfile(exe)


# ---- the C wrapper launches what the Python call launches -------------------------------------------------------

@stand_in_driver
@needs_compilers
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_exported_elementwise_add_launches_as_python_does(tmp_path, arch, rng):
    with target(arch):
        t = fake_2d(1)
        compiled = cute.compile(elementwise_add.elementwise_add, t, t, t)
    exe, meta = build_harness(tmp_path, compiled, "eadd", aot.build_mock_driver(str(tmp_path)))
    calls, expected = [], []
    for _ in range(12):
        m, n = rng.randint(1, 3000), rng.randint(1, 3000)
        ld = max(m, 2) + rng.choice([0, 8, 64])  # padded, never 1 (one unit stride)
        ts = [tensor(0x10000000 * (k + 1) + 256 * rng.randint(0, 99), (m, n), (1, m + 8 * k)) if k == 1 else
              tensor(0x10000000 * (k + 1), (m, n), (1, ld)) for k in range(3)]
        calls.append(dict(zip(("mA", "mB", "mC"), ts)))
        expected.append(aot.python_launches(compiled, *ts))
    dump = str(tmp_path / "cubin.dump")
    out = run_harness(exe, meta, calls, compiled, dump=dump)
    assert out["load"] == 0 and out["unload"] == 0
    assert out["functions"] == [l.kernel for l in compiled.launches]
    with open(dump, "rb") as f:
        assert f.read() == compiled.cubin  # embedded intact
    assert len(out["calls"]) == len(calls)
    for (rc, msg, launches), exp in zip(out["calls"], expected):
        assert rc == 0, msg
        got = [{k: v for k, v in l.items() if k != "attrs"} for l in launches]
        assert got == exp


@stand_in_driver
@needs_compilers
def test_wrapper_refuses_what_the_kernel_was_not_compiled_for(tmp_path):
    with target("sm_80"):
        t = fake_2d(8)
        compiled = cute.compile(elementwise_add.elementwise_add, t, t, t)
    exe, meta = build_harness(tmp_path, compiled, "eadd8", aot.build_mock_driver(str(tmp_path)))
    good = tensor(0x20000000, (64, 128), (1, 64))
    bad_n = RuntimeTensor(None, 0x20000000, (64, 100), (1, 64), cutlass.Float16, "cuda", 16).mark_layout_dynamic()
    bad_align = RuntimeTensor(None, 0x20000008, (64, 128), (1, 64), cutlass.Float16, "cuda", 8).mark_layout_dynamic()
    out = run_harness(exe, meta, [{"mA": good, "mB": good, "mC": good}, {"mA": good, "mB": bad_n, "mC": good},
                                  {"mA": good, "mB": good, "mC": bad_align}], compiled)
    (rc0, _, l0), (rc1, m1, l1), (rc2, m2, l2) = out["calls"]
    assert rc0 == 0 and len(l0) == 1
    assert rc1 == 1 and "mB.shape[1] is not a multiple of 8" in m1 and not l1
    assert rc2 == 1 and "mC: data is not aligned to 16 bytes" in m2 and not l2
    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        aot.python_launches(compiled, good, bad_n, good)  # Python refuses the same call


@stand_in_driver
@needs_compilers
def test_scalars_stream_and_cluster_launch_as_python_does(tmp_path, rng):
    with target("sm_90a"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        compiled = cute.compile(axpy_cluster, t, t, 1, 1.0, make_fake_stream())
    exe, meta = build_harness(tmp_path, compiled, "axpyc", aot.build_mock_driver(str(tmp_path)))
    assert [a["kind"] for a in meta["arguments"]] == ["tensor", "tensor", "int", "scalar", "stream"]
    calls, expected = [], []
    for _ in range(8):
        n = rng.randint(1, 1 << 20)
        alpha = rng.uniform(-4, 4)
        stream = rng.randint(1, 1 << 40) * 16
        x = RuntimeTensor(None, 0x30000000, (n,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
        y = RuntimeTensor(None, 0x70000000, (n,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
        calls.append({"x": x, "y": y, "n": n, "alpha": alpha, "stream": stream})
        expected.append(aot.python_launches(compiled, x, y, n, alpha, stream))
    out = run_harness(exe, meta, calls, compiled)
    for (rc, msg, launches), exp in zip(out["calls"], expected):
        assert rc == 0, msg
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
        assert launches[0]["cluster"] == [2, 1, 1]


@stand_in_driver
@needs_compilers
def test_empty_problem_launches_nothing(tmp_path):
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        compiled = cute.compile(axpy, t, t, 1, 1.0, make_fake_stream())
    exe, meta = build_harness(tmp_path, compiled, "axpy", aot.build_mock_driver(str(tmp_path)))
    x = RuntimeTensor(None, 0x30000000, (16,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    out = run_harness(exe, meta, [{"x": x, "y": x, "n": 0, "alpha": 1.0, "stream": 0}], compiled)
    assert out["calls"] == [(0, "", [])]


@stand_in_driver
@needs_compilers
def test_tensorop_gemm_exports_for_sm80(tmp_path):
    import tensorop_gemm

    with target("sm_80"):
        gemm = tensorop_gemm.TensorOpGemm(cutlass.Float16, cutlass.Float16, cutlass.Float32, (2, 2, 1))
        (arch, compiled), = tensorop_gemm.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16)
    exe, meta = build_harness(tmp_path, compiled, "gemm", aot.build_mock_driver(str(tmp_path)))
    M, N, K = 256, 384, 128

    def t(mode0, mode1):  # K-major A and B, N-major C, as compiled: (mode0, mode1, 2) with mode 1 contiguous
        return tensorop_gemm._as_runtime(np.zeros((2, mode0, mode1), np.float16).transpose(1, 2, 0), False,
                                         cutlass.Float16)

    a, b, c = t(M, K), t(N, K), t(M, N)
    exp = aot.python_launches(compiled, a, b, c)
    out = run_harness(exe, meta, [{"mA": a, "mB": b, "mC": c}], compiled)
    (rc, msg, launches), = out["calls"]
    assert rc == 0, msg
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
    if exp[0]["smem"] > 48 * 1024:
        assert out["attributes"] == [(exp[0]["kernel"], 8, exp[0]["smem"])]


# ---- mistakes ---------------------------------------------------------------------------------------------------

def test_export_errors_name_the_users_line(tmp_path):
    from warpweave._dsl.export.export import export_to_c

    with target("sm_80"):
        t = fake_2d()
        compiled = cute.compile(elementwise_add.elementwise_add, t, t, t)
    here = os.path.basename(__file__)
    with pytest.raises(TypeError, match="exports a compiled function") as e:
        export_to_c(elementwise_add.elementwise_add, str(tmp_path), "x")
    assert here in str(e.value)
    with pytest.raises(TypeError, match="not a compiled one: export what cute.compile") as e:
        elementwise_add.elementwise_add.export_to_c(file_path=str(tmp_path), file_name="x")
    assert here in str(e.value)
    with pytest.raises(ValueError, match="not an existing directory") as e:
        compiled.export_to_c(file_path=str(tmp_path / "missing"), file_name="x")
    assert here in str(e.value)
    f = tmp_path / "a_file"
    f.write_text("")
    with pytest.raises(ValueError, match="not an existing directory"):
        compiled.export_to_c(file_path=str(f), file_name="x")
    for bad in ("1abc", "a-b", "ww_x", "a" * 65, ""):
        with pytest.raises(ValueError, match="function_prefix") as e:
            compiled.export_to_c(file_path=str(tmp_path), file_name="ok", function_prefix=bad)
        assert here in str(e.value)
    with pytest.raises(ValueError, match="file_name"):
        compiled.export_to_c(file_path=str(tmp_path), file_name="../escape")
    with pytest.raises(ValueError, match="default function_prefix"):
        compiled.export_to_c(file_path=str(tmp_path), file_name="with-dash")  # a file name, not a C name
    assert not [f for f in os.listdir(tmp_path) if f.endswith((".h", ".o"))]  # nothing written by a refused export


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_export_refuses_an_unwritable_directory(tmp_path):
    with target("sm_80"):
        t = fake_2d()
        compiled = cute.compile(elementwise_add.elementwise_add, t, t, t)
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        with pytest.raises(ValueError, match="not writable"):
            compiled.export_to_c(file_path=str(d), file_name="x")
    finally:
        d.chmod(0o700)


@cute.kernel
def _with_host_argument_kernel(desc, out: cute.Tensor):
    out[0] = 1.0


@cute.jit
def _with_host_argument(x: cute.Tensor):
    from warpweave import ext

    _with_host_argument_kernel(ext.host_argument("test.export.no_c_form", x), x).launch(grid=(1, 1, 1),
                                                                                         block=(1, 1, 1))


def test_host_argument_without_c_form_cannot_be_exported(tmp_path):
    from warpweave import ext

    ext.register_host_argument("test.export.no_c_form", lambda t: b"\0" * 16, size=16)
    with target("sm_80"):
        compiled = cute.compile(_with_host_argument, make_fake_tensor(cutlass.Float32, (8,), (1,)))
    assert compiled.host_arguments
    with pytest.raises(NotImplementedError, match="'test.export.no_c_form'.*argument 'x'.*cannot be computed by "
                                                  "exported C code") as e:
        compiled.export_to_c(file_path=str(tmp_path), file_name="noc")
    assert os.path.basename(__file__) in str(e.value)
    assert not os.path.exists(tmp_path / "noc.o")
    with pytest.raises(TypeError, match="export_c is a callable"):
        ext.register_host_argument("test.export.bad", lambda t: b"", size=8, export_c="not callable")


@cute.kernel
def copy_tile_corner(x: cute.Tensor, y: cute.Tensor):
    bidx, bidy, _ = cute.arch.block_idx()
    y[(0, 0), (bidx, bidy)] = x[(0, 0), (bidx, bidy)]


@cute.jit
def corners_in_swapped_tile_order(x: cute.Tensor, y: cute.Tensor):
    # One tile order, built from x's tile counts, applied to y too (as CuTe DSL's elementwise-apply example remaps
    # all its inputs): y's composition assumes things of min(...) of both tensors' extents.
    gx, gy = cute.zipped_divide(x, (64, 256)), cute.zipped_divide(y, (64, 256))
    swap = cute.make_ordered_layout(cute.select(gx.shape[1], mode=[1, 0]), order=(1, 0))
    gx, gy = cute.composition(gx, (None, swap)), cute.composition(gy, (None, swap))
    copy_tile_corner(gx, gy).launch(grid=cute.product_each(gx.shape[1]), block=[1, 1, 1])


def test_assumptions_over_min_of_extents_are_checked_in_c():
    from warpweave._dsl.export import export_c

    with target("sm_80"):
        x, y = (make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(), cute.sym_int()), stride_order=(1, 0),
                                         assumed_align=16) for _ in range(2))
        compiled = cute.compile(corners_in_swapped_tile_order, x, y)
    with_min = [s for s in export_c.assumption_sources(compiled.assumptions) if "min(" in "".join(s[1:5])]
    assert with_min, "the program no longer makes an assumption over min(...): the test checks nothing"
    for _, *exprs, _ in with_min:
        for e in exprs:  # the symbols read are the s<id> names, never the functions called
            assert export_c.symbols_in(e) == {int(n[1:]) for n in __import__("re").findall(r"\bs\d+\b", e)}
    source = export_c.source(compiled, export_c.c_arguments(compiled), "corners", "corners.h")
    assert source.count("ww_min(") >= len(with_min)


def _dense_gemm_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("hopper_dense_gemm", os.path.join(EXAMPLES, "hopper", "dense_gemm.py"))
    dg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dg)
    return dg


def _tma_pattern(attrs) -> bytes:
    """What the stand-in driver's cuTensorMapEncodeTiled writes for these encoder arguments."""
    swizzle = ["none", "32B", "64B", "128B"].index(attrs["swizzle"])
    return bytes((i * 7 + attrs["dim0"] + attrs["box0"] + swizzle) & 0xFF for i in range(128))


@stand_in_driver
@needs_compilers
@pytest.mark.parametrize("cluster", [(1, 1), (2, 1)])
def test_hopper_gemm_exports_with_its_tma_descriptors_encoded_in_c(tmp_path, monkeypatch, rng, cluster):
    """The TMA descriptors (per-call host arguments) are encoded in the exported C by cuTensorMapEncodeTiled with
    the arguments the backend's Python encoder gives the plugin for the same tensors, and land in the kernel's
    parameters."""
    from warpweave.backends.hopper import tma

    dg = _dense_gemm_module()
    gemm = dg.HopperDenseGemm(cutlass.Float32, (128, 128), cluster)
    with target("sm_90a"):
        compiled = dg.compile_only(gemm, "k", "k", "n", cutlass.Float16, cutlass.Float16)
    assert compiled.host_arguments
    exe, meta = build_harness(tmp_path, compiled, "hgemm", aot.build_mock_driver(str(tmp_path)))
    encoded = []

    def host_call(backend, hook, attrs, size):  # the plugin's encoder, standing in: record what it is given
        assert (backend, hook, size) == ("hopper", "encode_tma_descriptor", 128)
        encoded.append(dict(attrs))
        return _tma_pattern(attrs)

    monkeypatch.setattr(tma.ext, "host_call", host_call)
    calls, expected = [], []
    for k in range(3):
        M, N, K, L = (rng.randint(1, 6) * 128 + rng.choice([0, 8, 64]), rng.randint(1, 6) * 128, rng.randint(1, 8) * 64,
                      rng.randint(1, 3))

        def t(mode0, mode1, addr):  # K-major A, B and N-major C: (mode0, mode1, L), mode 1 contiguous
            rt = RuntimeTensor(None, addr, (mode0, mode1, L), (mode1, 1, mode0 * mode1), cutlass.Float16, "cuda", 16)
            return dg._mark(rt, False, cutlass.Float16)

        a, b, c = t(M, K, 0x10000000 * (k + 1)), t(N, K, 0x50000000 + 4096 * k), t(M, N, 0x90000000)
        calls.append({"mA": a, "mB": b, "mC": c})
        for h in compiled.host_arguments.values():
            h.memo.clear()
        expected.append(aot.python_launches(compiled, a, b, c))
    out = run_harness(exe, meta, calls, compiled)
    for (rc, msg, launches), exp in zip(out["calls"], expected):
        assert rc == 0, msg
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
    got = out["tensormaps"]
    assert len(got) == len(encoded) == 3 * len(compiled.host_arguments)
    for g, e in zip(got, encoded):
        assert g["dtype"] == tma_export_types().index(e["data_type"])
        assert g["rank"] == e["rank"] and g["addr"] == e["address"]
        assert g["dims"] == [e[f"dim{i}"] for i in range(e["rank"])]
        assert g["strides"] == [e[f"stride{i}"] for i in range(1, e["rank"])]
        assert g["box"] == [e[f"box{i}"] for i in range(e["rank"])]
        assert g["swizzle"] == ["none", "32B", "64B", "128B"].index(e["swizzle"])
        assert g["elem"] == [1] * e["rank"] and g["interleave"] == g["oob"] == 0
        # the tile's rows fetched from DRAM as whole 128-byte lines, by both encoders
        assert e["l2_promotion"] == "128B" and g["l2"] == ["none", "64B", "128B", "256B"].index(e["l2_promotion"])


def tma_export_types():
    from warpweave.backends.hopper import tma_export

    return tma_export._DATA_TYPES


# ---- load_module -------------------------------------------------------------------------------------------------

_LOAD_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
import warpweave as cutlass
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import load_module
mod = load_module(sys.argv[1])
f = mod.axpy
x = RuntimeTensor(None, 0x30000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
f(x, x, 1000, 2.5, 4096)
f(x, x, n=7, alpha=-1.0, stream=0)
for bad in [lambda: f(x, x, 1000, 2.5), lambda: f(x, 3, 1000, 2.5, 0), lambda: f(x, x, 1 << 40, 2.5, 0),
            lambda: mod.nothing]:
    try:
        bad()
    except (TypeError, ValueError, AttributeError) as e:
        print("error", type(e).__name__, str(e).split(": ", 1)[-1][:200])
"""


def run_loading_script(compiled, tmp_path, module_path, text):
    """Runs `text`, a program that loads the exported module at module_path (its argv[1]) with load_module, on the
    stand-in driver: (the finished process, its launches as aot.parse_mock_output reads them)."""
    mock = aot.build_mock_driver(str(tmp_path))
    script = tmp_path / "load.py"
    script.write_text(text)
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in compiled.launches[0].params)
    env = dict(os.environ, WARPWEAVE_LIBCUDA=os.path.join(mock, "libcuda.so.1"), WW_MOCK_PARAM_SIZES=sizes)
    p = subprocess.run([sys.executable, str(script), module_path, os.path.dirname(__file__)], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p, aot.parse_mock_output(p.stdout + "\nrc call 0\n")


@stand_in_driver
@needs_compilers
def test_load_module_calls_the_exported_wrapper(tmp_path):
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        compiled = cute.compile(axpy, t, t, 1, 1.0, make_fake_stream())
    h, o = export(compiled, tmp_path, "axpy")
    p, out = run_loading_script(compiled, tmp_path, o, _LOAD_SCRIPT)
    x = RuntimeTensor(None, 0x30000000, (1000,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    launches = out["calls"][0][2]
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == \
        aot.python_launches(compiled, x, x, 1000, 2.5, 4096) + aot.python_launches(compiled, x, x, 7, -1.0, 0)
    errors = [l for l in p.stdout.splitlines() if l.startswith("error")]
    assert len(errors) == 4, p.stdout
    assert "misses the arguments stream" in errors[0]
    assert "must be a tensor" in errors[1]
    assert "does not fit the 32-bit integer" in errors[2]
    assert errors[3].startswith("error AttributeError") and "nothing" in errors[3]


@needs_compilers
def test_load_module_reads_a_library_of_several_exports(tmp_path):
    """As CuTe DSL's example links two exports into one shared library: each is found by its prefix; without a
    driver, a call raises instead of aborting."""
    with target("sm_80"):
        t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),), (1,), assumed_align=16)
        f1 = cute.compile(axpy, t, t, 1, 1.0, make_fake_stream())
        f2 = cute.compile(elementwise_add.elementwise_add, fake_2d(8), fake_2d(8), fake_2d(8))
    _, o1 = export(f1, tmp_path, "first")
    _, o2 = export(f2, tmp_path, "second")
    lib = str(tmp_path / "libboth.so")
    subprocess.run([aot.cc(), "-shared", "-o", lib, o1, o2], check=True)
    mod = load_module(lib)
    assert mod.first.parameters == ["x", "y", "n", "alpha", "stream"] and mod.second.parameters == ["mA", "mB", "mC"]
    assert mod.first.meta["target"] == "sm_80" and mod.second.meta["kernels"] == [f2.launches[0].kernel]
    with pytest.raises(AttributeError, match="no function with prefix 'third'"):
        mod.third
    x = RuntimeTensor(None, 0x30000000, (100,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    assert len(mod.first.convert(x, x, 100, 1.0, 0)) == 6  # the module and five arguments
    if not aot_driver_present():
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            mod.first(x, x, 100, 1.0, 0)


def aot_driver_present() -> bool:
    import ctypes

    try:
        ctypes.CDLL(os.environ.get("WARPWEAVE_LIBCUDA") or "libcuda.so.1")
        return True
    except OSError:
        return False


def test_load_module_refuses_what_is_not_an_export(tmp_path):
    with pytest.raises(ValueError, match="no file"):
        load_module(str(tmp_path / "none.o"))
    p = tmp_path / "text.o"
    p.write_text("not an object")
    with pytest.raises(ValueError, match="not an object file"):
        load_module(str(p))


# ---- on the GPU -------------------------------------------------------------------------------------------------

@requires_gpu
@needs_compilers
def test_exported_elementwise_add_runs_through_load_module(tmp_path):
    import torch

    from warpweave.cute.runtime import from_dlpack

    m, n = 1000, 1032
    a, b = (torch.randn(m, n, device="cuda", dtype=torch.float16) for _ in range(2))
    c = torch.empty_like(a)
    ta, tb, tc = (from_dlpack(x, assumed_align=16).mark_layout_dynamic() for x in (a, b, c))
    compiled = cute.compile(elementwise_add.elementwise_add, ta, tb, tc)
    h, o = export(compiled, tmp_path, "eadd")
    mod = load_module(o)
    mod.eadd(ta, tb, tc)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), a.float() + b.float(), atol=1e-2, rtol=1e-3)
    # A stream, an integer and a float scalar through the exported wrapper: y = alpha * x + y on a torch stream.
    n = 70_001
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    ref = 2.5 * x + y
    tx, ty = (from_dlpack(t).mark_layout_dynamic() for t in (x, y))
    s = torch.cuda.Stream()
    f = cute.compile(axpy, tx, ty, n, 2.5, s)
    _, o2 = export(f, tmp_path, "axpy")
    load_module(o2).axpy(tx, ty, n, 2.5, s)
    s.synchronize()
    torch.testing.assert_close(y, ref)
