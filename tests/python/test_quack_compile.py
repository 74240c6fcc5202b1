"""QuACK 0.6.5 (`quack-kernels` on PyPI), a CuTe DSL library of ~60k lines, through the `cutlass` alias: its RMSNorm,
softmax and cross-entropy kernels, unchanged, compile for sm_90a without a GPU, and the PTX of each passes the
assembler (a compile-only run assembles what it compiles).

QuACK's sources are not in this repository: the sdist is fetched at set-up (pip download, cached under
build/quack-cache) and the tests skip, saying so, when PyPI cannot be reached. QuACK imports torch at module level,
so the programs run in an interpreter that has it (WARPWEAVE_TORCH_PYTHON, or build/cutedsl-venv).

QuACK's modules patch, at import, the TVM-FFI argument converter (cute._tvm_ffi_args_spec_converter), whose
replacement then decides the TVM FFI entries of the kernels compiled here. Its sm_90 GEMM (persistent, 2x1 cluster)
compiles too, with the pieces of CuTe DSL's PTX.
"""
import json
import os
import tempfile
import subprocess
import sys
import tarfile
import textwrap

import pytest

from torch_interpreter import torch_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERSION = "0.6.5"
CACHE = os.path.join(ROOT, "build", "quack-cache")


@pytest.fixture(scope="module")
def quack_src():
    """The unpacked sdist's folder (holding the `quack` package and QuACK's tests)."""
    src = os.path.join(CACHE, f"quack_kernels-{VERSION}")
    if not os.path.isdir(os.path.join(src, "quack")):
        os.makedirs(CACHE, exist_ok=True)
        sdist = os.path.join(CACHE, f"quack_kernels-{VERSION}.tar.gz")
        if not os.path.exists(sdist):
            try:
                p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                    "--disable-pip-version-check", "--timeout", "20", f"quack-kernels=={VERSION}",
                                    "-d", CACHE], capture_output=True, text=True, timeout=180)
            except subprocess.TimeoutExpired:
                pytest.skip("PyPI did not answer in 180 s: QuACK's sdist cannot be fetched (offline?)")
            if p.returncode != 0 or not os.path.exists(sdist):
                pytest.skip(f"QuACK's sdist cannot be fetched from PyPI (offline?): {p.stderr.strip()[-300:]}")
        with tarfile.open(sdist) as t:
            t.extractall(CACHE, filter="data")
    return src


def _run(py, src, script, timeout=170, extra_env=None):
    script = f"QUACK_SRC = {src!r}\n" + script
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "frontend_python"),
                                                       os.path.join(ROOT, "pipelines"), src]),
               WARPWEAVE_ARCH="sm_90a", WARPWEAVE_DISABLE_CACHE="1", **(extra_env or {}))
    # what WARPWEAVE_KEEP keeps goes to a folder of the test's, not to the working directory
    env.setdefault("WARPWEAVE_DUMP_DIR", tempfile.mkdtemp(prefix="ww_quack_dump_"))
    return subprocess.run([py, "-c", script], capture_output=True, text=True, timeout=timeout, env=env)


IMPORT_SURFACE = textwrap.dedent("""
    import os, sys, types
    from warpweave.alias_hook import install
    install()
    # the modules and names QuACK's kernels import first, in its own spelling
    from cutlass.cutlass_dsl import dsl_user_op, T, Numeric, NumericMeta, if_generate, and_
    from cutlass.base_dsl.typing import Vector, get_mlir_types
    from cutlass.base_dsl.enums import Arch
    from cutlass._mlir import ir
    from cutlass._mlir.dialects import llvm, vector, arith
    from cutlass.experimental import primitives as prims
    from cutlass.pipeline import Agent, CooperativeGroup, PipelineOp, agent_sync, alloc_reserved_mbarrier
    import cutlass.cute.tensor as ct
    import cutlass.base_dsl.ast_preprocessor as ap
    import cutlass.base_dsl
    assert cutlass.base_dsl.BaseDSL._get_dsl().get_arch_enum() >= Arch.sm_90
    assert prims.CpReduceOp("add") is prims.CpReduceOp.ADD
    # QuACK's own patches of the DSL apply: its tensor indexing, tensor methods and its constexpr-if rewrite (quack.dsl
    # alone, under a bare `quack` package: test_quack_imports_unchanged imports the whole package)
    pkg = types.ModuleType("quack")
    pkg.__path__ = [os.path.join(QUACK_SRC, "quack")]
    sys.modules["quack"] = pkg
    import quack.dsl
    assert ct._Tensor._quack_extended_indexing and ap.DSLPreprocessor._quack_mixed_constexpr_if_patch
    assert ct._Tensor.to.__module__ == "quack.dsl.cute_tensor"
    print("surface ok")
""")


def test_quack_imports_its_first_layer_of_the_extension_surface(quack_src):
    p = _run(torch_python(), quack_src, IMPORT_SURFACE)
    assert p.returncode == 0 and "surface ok" in p.stdout, p.stderr[-3000:]


ALIAS = textwrap.dedent("""
    from warpweave.alias_hook import install
    install()
""")

COMPILE = ALIAS + textwrap.dedent("""
    from warpweave._dsl.registry import compile_only
    import torch
    import cutlass
    bf16, i64 = cutlass.BFloat16, cutlass.Int64
    out = {}
    with compile_only.compile_only():
        # QuACK's own compile entries, unwrapped from its disk cache (jit_cache): each builds fake tensors and
        # calls cute.compile; a compile-only run assembles the PTX (a refusal raises)
        from quack.rmsnorm import _compile_rmsnorm_fwd
        from quack.softmax import Softmax
        from quack.cross_entropy import CrossEntropy
        # dtype, out, residual, weight, bias, residual out, N, has_rstd, has_mean, is_layernorm, per_head
        out["rmsnorm"] = _compile_rmsnorm_fwd.__wrapped__(bf16, bf16, None, bf16, None, None, 8192, True, False,
                                                          False, False)
        out["softmax"] = Softmax.compile.__wrapped__(bf16, bf16, 8192)
        # dtype, target, target logit, N, has_lse, has_dx, weight, target logit ndim
        out["cross_entropy"] = CrossEntropy.compile.__wrapped__(bf16, i64, None, 8192, True, False, None, 1)
    for name, c in sorted(out.items()):
        print("compiled", name, len(c.cubin), ".target sm_90a" in c.ptx, c.ptx.count("ld.global") + c.ptx.count("cp.async.ca.shared.global") + c.ptx.count("cp.async.cg.shared.global"),
              c.ptx.count("shfl.sync"))
""")

GEMM = ALIAS + textwrap.dedent("""
    import json, os
    from warpweave._dsl.registry import compile_only
    import torch
    import cutlass
    bf16 = cutlass.BFloat16
    config = dict(
        a_dtype=bf16, b_dtype=bf16, d_dtype=bf16, c_dtype=None, a_major="k", b_major="k", d_major="n",
        c_major=None, tile_shape_mn=(128, 256), cluster_shape_mnk=(2, 1, 1), pingpong=False, persistent=True,
        is_dynamic_persistent=False, rowvec_dtype=None, colvec_dtype=None, colvec_ndim=0, alpha_mode=0,
        beta_mode=0, add_to_output=False, concat_layout=(), varlen_m=False, varlen_k=False, gather_A=False,
        use_tma_gather=False, has_batch_idx_permute=False, device_capacity=(9, 0), sr_seed_mode=0, num_warps=None)
    for k, v in json.loads(os.environ.get("QUACK_GEMM_CONFIG", "{}")).items():
        config[k] = bf16 if v == "bf16" else tuple(v) if isinstance(v, list) else v
    with compile_only.compile_only():
        from quack.gemm import _compile_gemm
        from quack.rounding import RoundingMode
        c = _compile_gemm.__wrapped__(rounding_mode=RoundingMode.RN, **config)
    ptx = c.ptx
    print("compiled gemm", f"cubin={len(c.cubin)}", f"wgmma={ptx.count('wgmma.mma_async')}",
          f"wgmma_fence={ptx.count('wgmma.fence')}",
          f"tma_load={ptx.count('cp.async.bulk.tensor.3d.shared::cta.global')}",
          f"tma_multicast={ptx.count('.multicast::cluster')}",
          f"tma_store={ptx.count('cp.async.bulk.tensor.3d.global.shared::cta')}",
          f"remote_expect_tx={ptx.count('mbarrier.arrive.expect_tx.shared::cluster')}",
          f"st_async={ptx.count('st.async.shared::cluster')}")
""")


def test_quack_rmsnorm_softmax_cross_entropy_compile_for_sm90a_and_assemble(quack_src):
    p = _run(torch_python(), quack_src, COMPILE, extra_env={"WARPWEAVE_KEEP": "ptx"})
    assert p.returncode == 0, p.stderr[-3000:]
    rows = {line.split()[1]: line.split()[2:] for line in p.stdout.splitlines() if line.startswith("compiled ")}
    assert sorted(rows) == ["cross_entropy", "rmsnorm", "softmax"], p.stdout
    for name, (cubin, target, loads, shuffles) in rows.items():
        assert int(cubin) > 0 and target == "True", (name, rows[name])
        assert int(loads) > 0 and int(shuffles) > 0, (name, rows[name])  # rows read from global memory (or cp.async), reduced across the warp


def test_quack_imports_unchanged(quack_src):
    script = "from warpweave.alias_hook import install\ninstall()\nimport quack\nprint('imported')"
    p = _run(torch_python(), quack_src, script)
    assert p.returncode == 0 and "imported" in p.stdout, p.stderr[-3000:]


def test_quack_sm90_gemm_compiles_for_sm90a(quack_src):
    """Its host code, pipelines (cluster-wide, consumer_mask), @cute.jit helpers that advance a pipeline state in
    a loop inside the persistent tile loop, its tile scheduler (Int32 extents: test_extent_widths.py), iket
    markers and cutlass.utils.block_copy with multicast (2x1 cluster: B is multicast to the cluster's column,
    A is not) trace; the kernel has CuTe DSL's pieces: wgmma, the TMA loads (one multicast) and stores, the
    scheduler's broadcast to the peer CTA."""
    p = _run(torch_python(), quack_src, GEMM, extra_env={"WARPWEAVE_KEEP": "ptx"})
    assert p.returncode == 0 and "compiled gemm" in p.stdout, p.stderr[-3000:]
    counts = dict(kv.split("=") for kv in p.stdout.split("compiled gemm", 1)[1].split())
    assert int(counts["cubin"]) > 0 and int(counts["wgmma"]) > 0, counts
    assert int(counts["tma_load"]) == 1 and int(counts["tma_multicast"]) == 1 and int(counts["tma_store"]) > 0, \
        counts
    assert int(counts["remote_expect_tx"]) == 1 and int(counts["st_async"]) == 1, counts
    # the mainloop's k-block MMAs are written twice, as in CuTe DSL's PTX: once before the loop (QuACK's one
    # k-block in flight) and once in the loop it asks to keep rolled (cutlass.range(..., unroll=1))
    assert int(counts["wgmma_fence"]) == 2, counts


def test_quack_sm90_default_gemm_with_c_and_bias_compiles_for_sm90a(quack_src):
    """gemm_add(A, B, C, bias=...) with QuACK's default sm_90 configuration (tuned=False: 128x192 ping-pong tiles,
    2x1 cluster), B given (K, N), the form test_gemm_functional.py runs: its epilogue loads the bias row with a
    thread's slice of a tiled copy (cute.copy(thr_copy, ...)) and partitions through a @dsl_user_op that passes
    loc/ip on. Each warp group's mainloop issues its 2x4 MMAs of a k-block before the loop and in the rolled loop,
    16 in all, as CuTe DSL's PTX has."""
    config = {"c_dtype": "bf16", "c_major": "n", "b_major": "n", "tile_shape_mn": [128, 192], "pingpong": True,
              "rowvec_dtype": "bf16", "batched": False, "b_kn": True}
    p = _run(torch_python(), quack_src, GEMM, extra_env={"WARPWEAVE_KEEP": "ptx",
                                                          "QUACK_GEMM_CONFIG": json.dumps(config)})
    assert p.returncode == 0 and "compiled gemm" in p.stdout, p.stderr[-3000:]
    counts = dict(kv.split("=") for kv in p.stdout.split("compiled gemm", 1)[1].split())
    assert int(counts["wgmma"]) == 16 and int(counts["wgmma_fence"]) == 2, counts
    # CuTe DSL's counts for this kernel (2-D operands: B (K, N) and no batch mode): 3 multicast TMA loads, 2
    # expect-tx arrivals on the peer CTA's barrier
    assert int(counts["tma_multicast"]) == 3 and int(counts["remote_expect_tx"]) == 2, counts


def test_quack_tests_compile_only_runs_quacks_own_tests_without_a_gpu(quack_src, tmp_path):
    """benchmarks/python/quack_tests.py --compile-only: QuACK's own test (its gemm_add on CUDA tensors, through its
    torch op registered for CUDA) runs on the CPU and passes once its kernels compiled up to the first launch."""
    alias = tmp_path / "alias"
    alias.mkdir()
    (alias / "sitecustomize.py").write_text("from warpweave.alias_hook import install\ninstall()\n")
    py = tmp_path / "python"
    path = os.pathsep.join([str(alias), os.path.join(ROOT, "frontend_python"), os.path.join(ROOT, "pipelines")])
    py.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{path}" exec {torch_python()} "$@"\n')
    py.chmod(0o755)
    out = tmp_path / "rows.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WARPWEAVE_ARCH")}
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "python", "quack_tests.py"),
                        "--warpweave-python", str(py), "--quack-src", quack_src, "--files", "test_gemm_functional.py",
                        "--every", "4", "--workers", "1", "--compile-only", "--json", str(out),
                        "--logs", str(tmp_path / "logs")], capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (row,) = json.loads(out.read_text())
    assert row["impl"] == "warpweave" and row["sample"] == 1, row
    assert (row["passed"], row["failed"], row["errors"]) == (1, 0, 0), \
        (row, (tmp_path / "logs" / "warpweave-test_gemm_functional.py.log").read_text()[-3000:])


def test_quack_compile_only_plugin_stands_cpu_tensors_and_generators_in_for_cuda_ones():
    """The compile-only plugin's stand-ins: a generator asked for on CUDA is a torch.Generator on the CPU that
    reproduces its seed's stream, a test's tensors (made on the CPU for CUDA) say they are CUDA tensors, as QuACK's
    host-side checks assert before a launch, torch.compile runs the function eagerly, and the
    device's free and total memory are the host's."""
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, PLUGIN_DIR)
        import torch
        import quack_compile_only_plugin
        g = torch.Generator(device="cuda").manual_seed(7)
        assert isinstance(g, torch.Generator) and g.device.type == "cpu"
        a = torch.randint(0, 1 << 30, (16,), generator=g, dtype=torch.int32, device="cuda")
        b = torch.randint(0, 1 << 30, (16,), generator=torch.Generator(device="cuda").manual_seed(7),
                          dtype=torch.int32, device="cuda")
        assert torch.equal(a, b) and a.device.type == "cpu"
        assert a.is_cuda and torch.empty(2, device="cuda").is_cuda
        # torch.compile (a test's reference) runs eagerly on the stand-ins, decorator with options or not
        f = torch.compile(lambda x: torch.softmax(x.float(), -1))
        g = torch.compile(dynamic=True)(lambda x: x * 2)
        x = torch.randn(4, 8, device="cuda")
        assert torch.equal(f(x), torch.softmax(x, -1)) and torch.equal(g(x), x * 2)
        # the stand-in device's memory is the host's, where its tensors are made
        free, total = torch.cuda.mem_get_info()
        assert 0 < free <= total
        with open("/proc/meminfo") as m:
            assert total == int(next(l for l in m if l.startswith("MemTotal:")).split()[1]) * 1024
        print("stand-ins ok")
    """)
    plugin_dir = os.path.join(ROOT, "benchmarks", "python")
    p = subprocess.run([torch_python(), "-c", f"PLUGIN_DIR = {plugin_dir!r}\n" + script], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "stand-ins ok" in p.stdout, p.stderr[-3000:]


def test_quack_compile_only_plugin_reference_column_stand_ins():
    """The reference column (CuTe DSL itself, no driver) reaches its kernels' compile: the cluster count QuACK sizes
    its grids by and the device attributes asked for while a kernel's IR is built come from the stand-in device
    (an attribute it does not have is refused, not made up), and a launch failure that QuACK's autotuner reports
    in an error of its own (raised from the launch's) still counts as the first launch, where a config rejected
    for another reason does not."""
    script = textwrap.dedent("""
        import sys, types
        sys.path.insert(0, PLUGIN_DIR)
        import quack_compile_only_plugin as plugin
        info = plugin._StandInHardwareInfo(0)
        assert info.get_device_multiprocessor_count() == 132 and info.get_max_active_clusters(cluster_size=2) == 66
        attr = lambda name: types.SimpleNamespace(name=name)
        assert plugin._stand_in_device_attribute(attr("CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR")) \
            == 228 * 1024
        try:
            plugin._stand_in_device_attribute(attr("CU_DEVICE_ATTRIBUTE_CLOCK_RATE"))
            raise AssertionError("an attribute the stand-in lacks was answered")
        except RuntimeError as e:
            assert "CLOCK_RATE" in str(e)
        # a launch inside the reference (its frames in a cutlass package), reported by the autotuner
        launch = compile("def launch():\\n"
                         "    raise ValueError('Mismatched Tensor on mA, expected device_type=cuda')\\n",
                         "/site/cutlass/base_dsl/jit_executor.py", "exec")
        ns = {}
        exec(launch, ns)
        def autotune(reason):
            try:
                reason()
            except Exception as e:
                raise RuntimeError(f"config rejected: {e}") from e
        def rejected(reason):
            try:
                autotune(reason)
            except RuntimeError as e:
                return plugin._reference_launch((type(e), e, e.__traceback__))
        def shape():
            raise ValueError("tile_n does not divide n")
        assert rejected(ns["launch"]) and not rejected(shape)
        print("reference stand-ins ok")
    """)
    plugin_dir = os.path.join(ROOT, "benchmarks", "python")
    p = subprocess.run([torch_python(), "-c", f"PLUGIN_DIR = {plugin_dir!r}\n" + script], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "reference stand-ins ok" in p.stdout, p.stderr[-3000:]


NORM_BACKWARD = ALIAS + textwrap.dedent("""
    from warpweave import _core
    from warpweave._dsl.registry import compile_only
    import torch
    import cutlass
    bf16, f32 = cutlass.BFloat16, cutlass.Float32
    with compile_only.compile_only():
        from quack.rmsnorm import _compile_rmsnorm_bwd, _bucket_T_hint
        # bench_quack.py's rows (32768 x 8192, bf16 x and dout, f32 weight, the partial dW in f32): N, x, dout, dx,
        # weight, has db, dresidual, dresidual out, has dW, per head
        args = (8192, bf16, bf16, bf16, f32, False, None, None, True, False)
        compiled = {kind: _compile_rmsnorm_bwd.__wrapped__(*args, T_hint=_bucket_T_hint(32768),
                                                           is_layernorm=kind == "layernorm")
                    for kind in ("rmsnorm", "layernorm")}
    for kind, c in compiled.items():
        sass = _core.disassemble_sass(c.cubin) if _core.sass_tool_available() else ""
        ops = [w for l in sass.splitlines() for w in l.split() if w.startswith("LDGSTS")]
        print("norm_bwd", kind, int(bool(sass)), len(ops), sum(".LTC128B" in o for o in ops))
""")


def test_quack_norm_backwards_prefetch_their_rows_into_l2(quack_src):
    """QuACK's RMSNorm and LayerNorm backward kernels (bench_quack.py's 32768x8192 rows) copy each row into shared
    memory with 8-byte asynchronous copies, in a loop over rows. The assembler gives each copy a 128-byte L2
    prefetch for CuTe DSL's kernels (SASS: 32 of 32 copies), by their entries' names (base/entry_name.py): ours
    must get it too: without it (the one difference in their copies) they ran at 0.955x and 0.988x of CuTe DSL's
    speed on an H100."""
    p = _run(torch_python(), quack_src, NORM_BACKWARD)
    assert p.returncode == 0, p.stderr[-3000:]
    rows = {w[1]: [int(x) for x in w[2:]] for w in (l.split() for l in p.stdout.splitlines()) if w[:1] == ["norm_bwd"]}
    assert sorted(rows) == ["layernorm", "rmsnorm"], p.stdout
    if not all(has_sass for has_sass, _, _ in rows.values()):
        pytest.skip("no SASS disassembler (nvdisasm) in the interpreter with torch: the copies cannot be read")
    for kind, (_, copies, prefetching) in rows.items():
        assert copies == 32 and prefetching == copies, (kind, copies, prefetching)


BENCH_GEMM = ALIAS + textwrap.dedent("""
    import sys
    sys.path.insert(0, BENCH_DIR)
    import quack_compile_only_plugin  # noqa: F401 - CUDA tensors on the CPU, a stand-in sm_90 device
    from warpweave._dsl.registry import compile_only
    import bench_quack
    try:
        with compile_only.compile_only():
            bench_quack.main(["--inner", "--quack-src", QUACK_SRC, "--kernels", "gemm", "--gemm-shapes", "4096",
                              "--json", OUT])
    except compile_only.LaunchSkipped as e:
        print("launch reached", str(e).split(" at ")[1].split(":")[0].rsplit("/", 1)[-1])
""")


def test_bench_quacks_gemm_row_compiles_quacks_gemm_for_sm90a(quack_src, tmp_path):
    """bench_quack.py's GEMM row as its --inner run makes it (QuACK's public gemm, B k-major, an output handed in,
    tuned=False) on the compile-only stand-ins: QuACK picks its default sm_90 configuration (128x192 tiles,
    ping-pong warp groups, 2x1 cluster), the kernel compiles and assembles, and the call reaches QuACK's launch.
    Its PTX has CuTe DSL's 16 MMAs of 64x192 (a k-block's 4 per consumer warp group, before the loop and in it) and
    the one multicast TMA load of the operand the cluster shares."""
    dump = tmp_path / "dump"
    script = (f"BENCH_DIR = {os.path.join(ROOT, 'benchmarks', 'python')!r}\nOUT = {str(tmp_path / 'rows.json')!r}\n"
              + BENCH_GEMM)
    p = _run(torch_python(), quack_src, script, timeout=300,
             extra_env={"QUACK_CACHE_ENABLED": "0", "QUACK_ARCH": "sm_90a", "WARPWEAVE_KEEP": "ptx",
                        "WARPWEAVE_DUMP_DIR": str(dump)})
    assert p.returncode == 0 and "launch reached gemm_tvm_ffi_utils.py" in p.stdout, p.stdout + p.stderr[-3000:]
    (ptx,) = [f.read_text() for f in dump.rglob("*.ptx")]
    assert ptx.count("wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16") == 16
    assert ptx.count(".multicast::cluster") == 1
