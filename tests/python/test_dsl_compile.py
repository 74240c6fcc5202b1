"""Tracing and compiling without a GPU: IR of each construct, PTX per target, cubin and SASS, the JIT cache, dumps,
and errors that name the user's source line."""
import os
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave._dsl.base.entry_name import entry_name
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import line_in, requires_gpu, target

THIS = os.path.abspath(__file__)
EXAMPLES = os.path.join(os.path.dirname(THIS), "..", "..", "frontend_python", "examples")


def line_of(text: str) -> int:
    return line_in(THIS, text)


def load_example(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ew():
    return load_example("elementwise_add")


def dyn(shape, dtype=np.float32):
    return from_dlpack(np.zeros(shape, dtype=dtype)).mark_layout_dynamic()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a", "sm_100a"])
def test_elementwise_add_ptx_for_each_target(ew, arch):
    with target(arch):
        c = cute.compile(ew.elementwise_add, dyn((1024, 1024)), dyn((1024, 1024)), dyn((1024, 1024)))
    ptx = c.info["ptx"]
    assert re.search(rf"^\.target {arch}\b", ptx, re.M)
    assert c.cubin[:4] == b"\x7fELF"
    # 128-bit global accesses for f32 rows whose extent is a multiple of 4 elements (LLVM spells them v4.b32 or,
    # for sm_100, v2.b64).
    assert len(re.findall(r"ld\.global\.(v4\.b32|v2\.b64)", ptx)) == 8
    assert len(re.findall(r"st\.global\.(v4\.b32|v2\.b64)", ptx)) >= 4
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_elementwise_add_odd_extent_is_not_vectorized(ew):
    with target("sm_90a"):
        c = cute.compile(ew.elementwise_add, dyn((1000, 1003)), dyn((1000, 1003)), dyn((1000, 1003)))
    ptx = c.info["ptx"]
    # With an odd row stride only the rows whose offset is provably a multiple of 4 elements (row 0 of each
    # thread's 4 rows: 4 * stride * k) get 128-bit loads, rows 2 get 64-bit ones, the others scalar loads.
    assert len(re.findall(r"ld\.global\.v4\.b32", ptx)) == 2
    assert len(re.findall(r"ld\.global\.v2\.b32", ptx)) == 4
    assert "ld.global.b32" in ptx


def test_elementwise_add_f16_uses_128_bit_accesses(ew):
    with target("sm_80"):
        c = cute.compile(ew.elementwise_add, dyn((256, 512), np.float16), dyn((256, 512), np.float16),
                         dyn((256, 512), np.float16))
    assert re.search(r"ld\.global\.(v4\.b32|v2\.b64)", c.info["ptx"])


def test_sass_holds_the_128_bit_loads(ew):
    if not _core.sass_tool_available():
        pytest.skip("no nvdisasm/cuobjdump (pip install nvidia-cuda-nvdisasm)")
    with target("sm_90a"):
        c = cute.compile(ew.elementwise_add, dyn((512, 512)), dyn((512, 512)), dyn((512, 512)))
    sass = _core.disassemble_sass(c.cubin)
    assert "LDG.E.128" in sass and "STG.E.128" in sass


# --- control flow ---------------------------------------------------------------------------------------------

@cute.kernel
def control_flow_kernel(gA: cute.Tensor, gB: cute.Tensor, n: cutlass.Int32, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    acc = cutlass.Float32(0.0)
    count = 0
    for i in range(n):
        acc = acc + gA[i] * alpha
        count += 1
    j = tidx
    while j < 10:
        j = j + 4
    if tidx == 0 and n > 3:
        gB[0] = acc
    else:
        gB[tidx] = cutlass.Float32(count) + j
    for k in cutlass.range_constexpr(2):
        gB[k + 40] = cutlass.Float32(k)
    if cutlass.const_expr(n is not None):
        gB[50] = acc if tidx > 2 else alpha


@cute.jit
def control_flow(mA, mB, n: cutlass.Int32, alpha: float):
    control_flow_kernel(mA, mB, n, alpha).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_control_flow_becomes_structured_ir():
    with target("sm_80"):
        c = cute.compile(control_flow, dyn(64), dyn(64), 5, 2.0)
    ir = c.ir
    assert ir.count('"scf.for"') == 1 and ir.count('"scf.while"') == 1 and ir.count('"scf.if"') == 1
    # The loop carries acc (f32) and count (i32).
    assert "}) : (i32, i32, i32, f32, i32) -> (f32, i32)" in ir
    # range_constexpr unrolled: two stores at static offsets 40 and 41.
    assert "rawConstantIndices = array<i32: 40>" in ir and "rawConstantIndices = array<i32: 41>" in ir
    assert f'loc("{THIS}":{line_of("for i in range(n):")}' in ir
    assert c.cubin[:4] == b"\x7fELF"


# --- errors at the user's line --------------------------------------------------------------------------------

def compile_error(fn, *args):
    with target("sm_80"), pytest.raises(cutlass.DSLError) as info:
        cute.compile(fn, *args)
    return info.value


@cute.kernel
def type_change_kernel(gA: cute.Tensor):
    x = cutlass.Int32(0)
    for i in range(4):
        gA[i] = x.to(cutlass.Float32)
        x = cutlass.Float32(1.5)  # type change in a dynamic loop


@cute.kernel
def type_change_read_after_kernel(gA: cute.Tensor):
    x = cutlass.Int32(0)
    for i in range(4):
        x = cutlass.Float32(1.5)  # type change, x not read in the loop
    gA[0] = x  # read after the loop


@cute.jit
def type_change(mA):
    type_change_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


@cute.jit
def type_change_read_after(mA):
    type_change_read_after_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_type_change_in_dynamic_loop_names_the_line():
    e = compile_error(type_change, dyn(8))
    assert isinstance(e, TypeError)
    assert "changes type from Int32 to Float32" in str(e)
    assert e.location == (THIS, line_of("x = cutlass.Float32(1.5)  # type change in"))
    # a variable the loop does not read before its new value: refused where it is read after the loop, naming both
    e = compile_error(type_change_read_after, dyn(8))
    assert isinstance(e, TypeError) and "changes type from Int32 to Float32" in str(e)
    assert e.location == (THIS, line_of("gA[0] = x  # read after the loop"))
    assert f"(line {line_of('x = cutlass.Float32(1.5)  # type change, x')})" in str(e)


@cute.kernel
def undefined_after_if_kernel(gA: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        y = cutlass.Float32(1.0)
    gA[0] = y  # y is not carried out of the dynamic if


@cute.jit
def undefined_after_if(mA):
    undefined_after_if_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_variable_defined_only_inside_dynamic_if():
    e = compile_error(undefined_after_if, dyn(8))
    assert "'y' is not defined here" in str(e)
    assert e.location == (THIS, line_of("gA[0] = y  # y is not carried"))


@cute.kernel
def break_kernel(gA: cute.Tensor):
    for i in range(4):
        if i == 2:
            break  # not supported in a dynamic loop


@cute.jit
def break_host(mA):
    break_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_break_in_dynamic_loop():
    e = compile_error(break_host, dyn(8))
    assert isinstance(e, NotImplementedError)
    assert e.location == (THIS, line_of("break  # not supported"))


@cute.kernel
def typo_kernel(gA: cute.Tensor):
    gA[0] = gA.no_such_attribute  # a plain Python mistake inside a kernel


@cute.jit
def typo(mA):
    typo_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_python_errors_inside_kernels_name_the_line():
    e = compile_error(typo, dyn(8))
    assert "AttributeError" in str(e) and "no_such_attribute" in str(e)
    assert e.location == (THIS, line_of("gA.no_such_attribute  # a plain"))


@cute.kernel
def copy_mismatch_kernel(gA: cute.Tensor):
    frg = cute.make_rmem_tensor((4,), cutlass.Float32)
    cute.copy(cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32), gA, frg)  # 8 vs 4 elements


@cute.jit
def copy_mismatch(mA):
    copy_mismatch_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_shape_mismatch_in_copy():
    e = compile_error(copy_mismatch, from_dlpack(np.zeros(8, np.float32)))
    assert isinstance(e, ValueError) and "8 elements" in str(e)
    assert e.location == (THIS, line_of("# 8 vs 4 elements"))


@cute.jit
def host_uses_device_api(mA):
    tidx, _, _ = cute.arch.thread_idx()  # not available on the host side


def test_device_api_in_host_code():
    e = compile_error(host_uses_device_api, dyn(8))
    assert "only available inside a @cute.kernel" in str(e)
    assert e.location == (THIS, line_of("# not available on the host side"))


@cute.kernel
def f64_pow_kernel(gA: cute.Tensor):
    gA[0] = cutlass.Float64(gA[1]) ** cutlass.Float64(gA[2])  # no f64 pow lowering


@cute.jit
def f64_pow(mA):
    f64_pow_kernel(mA).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_compiler_errors_point_at_the_user_line():
    e = compile_error(f64_pow, from_dlpack(np.zeros(4, np.float64)))
    assert isinstance(e, cutlass.CompilationError)
    assert e.location == (THIS, line_of("# no f64 pow lowering"))


@cute.kernel
def const_expr_kernel(gA: cute.Tensor, n: cutlass.Int32):
    if cutlass.const_expr(n > 3):  # n is a runtime value
        gA[0] = 1.0


@cute.jit
def const_expr_of_runtime(mA, n: cutlass.Int32):
    const_expr_kernel(mA, n).launch(grid=[1, 1, 1], block=[1, 1, 1])


@cute.jit
def host_compares_runtime(mA):
    if cutlass.const_expr(cute.size(mA) > 3):  # needs the extent while tracing
        pass


@cute.jit
def host_branches_on_runtime(mA):
    if cute.size(mA) > 3:  # a branch of the compiled host code, taken at each call
        pass


def test_host_code_needs_values_only_where_python_asks_for_them():
    # A fake tensor's symbolic extent has no value while compiling: an `if` on it is compiled (host_branch.py), a
    # truth value asked for while tracing is an error at its line (real arguments decide it: a guard).
    from warpweave.cute.runtime import make_fake_tensor

    fake = make_fake_tensor(cutlass.Float32, (cute.sym_int(),))
    e = compile_error(host_compares_runtime, fake)
    assert "const_expr got a runtime value" in str(e)
    assert e.location == (THIS, line_of("if cutlass.const_expr(cute.size(mA) > 3):  # needs"))
    with target("sm_80"):
        assert cute.compile(host_branches_on_runtime, fake).host_program


def test_const_expr_of_runtime_value():
    e = compile_error(const_expr_of_runtime, dyn(8), 4)
    assert "const_expr got a runtime value" in str(e)
    assert e.location == (THIS, line_of("if cutlass.const_expr(n > 3):"))


# --- specialisation, cache and dumps ----------------------------------------------------------------------------

@cute.kernel
def scale_kernel(gA: cute.Tensor, factor: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    gA[tidx] = gA[tidx] * factor


@cute.jit
def scale(mA, factor: cutlass.Constexpr = 2.0):
    scale_kernel(mA, factor).launch(grid=[1, 1, 1], block=[cute.size(mA), 1, 1])


def test_constexpr_values_are_compiled_in():
    a = from_dlpack(np.zeros(16, np.float32))
    with target("sm_80"):
        c2 = cute.compile(scale, a, 2.0)
        c3 = cute.compile(scale, a, 3.0)
    assert "2.0" in c2.ir and "3.0" in c3.ir and c2.ir != c3.ir
    assert c2.launches[0].block == (16, 1, 1)  # static layout: the block size is compiled in


def test_disk_cache_hit_miss_and_corruption(tmp_path, monkeypatch):
    a = from_dlpack(np.zeros(16, np.float32))
    with target("sm_80"):
        first = cute.compile(scale, a, 4.0)
        second = cute.compile(scale, a, 4.0)
        assert first.info["cache"] == "miss" and second.info["cache"] == "hit"
        assert first.cubin == second.cubin
        path = _core.JitCache(os.environ["WARPWEAVE_CACHE_DIR"]).path_of(first.info["key"])
        with open(path, "r+b") as f:  # damage the payload
            f.seek(-10, os.SEEK_END)
            f.write(b"0123456789")
        third = cute.compile(scale, a, 4.0)
        assert third.info["cache"] == "miss" and third.cubin == first.cubin
        monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
        assert cute.compile(scale, a, 4.0).info["cache"] == "miss"
    with target("sm_90a"):
        monkeypatch.delenv("WARPWEAVE_DISABLE_CACHE")
        assert cute.compile(scale, a, 4.0).info["cache"] == "miss"  # the target is part of the key


def test_concurrent_cache_writers_leave_valid_entries(tmp_path):
    import threading

    cache = _core.JitCache(str(tmp_path / "c"))
    key = _core.cache_key(["k"])
    payloads = [bytes([i]) * 100000 for i in range(8)]
    threads = [threading.Thread(target=cache.store, args=(key, p, "m")) for p in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = cache.load(key)
    assert got is not None and got[0] in payloads
    assert not [p for p in os.listdir(os.path.dirname(cache.path_of(key))) if ".tmp." in p]


def test_keep_writes_each_stage(tmp_path, monkeypatch, ew):
    monkeypatch.setenv("WARPWEAVE_KEEP", "ir,ptx,cubin,sass")
    monkeypatch.setenv("WARPWEAVE_DUMP_DIR", str(tmp_path / "dump"))
    with target("sm_90a"):
        cute.compile(ew.elementwise_add, dyn((64, 64)), dyn((64, 64)), dyn((64, 64)))
    files = sorted(os.listdir(tmp_path / "dump"))
    base = entry_name("elementwise_add_kernel")
    for ext in ("mlir", "ptx", "cubin", "sass"):
        assert f"{base}.{ext}" in files
    assert "spill" in (tmp_path / "dump" / f"{base}.ptxas.log").read_text()


@requires_gpu  # nvJitLink keeps its cubins in the driver's compute cache: it can hit only where a driver is loaded
def test_every_compile_that_asks_for_a_report_gets_one(monkeypatch, ew):
    """The same kernel compiled three times with -v (which bypasses warpweave's cache): ptxas's resource report each
    time, so nvJitLink assembled each time rather than hand back a cubin it had kept from the first."""
    monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", "nvjitlink")
    for _ in range(3):
        with target("sm_90a"):
            c = cute.compile(ew.elementwise_add, dyn((64, 64)), dyn((64, 64)), dyn((64, 64)), options="-v")
        assert c.info["cubin_tool"] == "nvJitLink" and re.search(r"Used \d+ registers", c.info["jit_log"]), c.info


def test_call_with_another_specialisation_is_refused_before_launch():
    a = from_dlpack(np.zeros(16, np.float32))
    b = from_dlpack(np.zeros(32, np.float32))
    with target("sm_80"):
        c = cute.compile(scale, a, 2.0)
    with pytest.raises(ValueError, match="does not match the compiled specialisation"):
        c(b, 2.0)
    with pytest.raises(ValueError, match="compile-time constant"):
        c(a, 5.0)


def test_assumptions_are_checked_against_the_arguments():
    @cute.kernel
    def k(gA: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        t = cute.composition(gA, cute.make_layout(16))  # walks 16 elements of a (M, N) column-major tensor
        t[tidx] = 1.0

    @cute.jit
    def h(mA):
        k(mA).launch(grid=[1, 1, 1], block=[16, 1, 1])

    a = from_dlpack(np.zeros((8, 8), np.float32).T).mark_layout_dynamic()
    with target("sm_80"):
        c = cute.compile(h, a)
    syms = {sid for p in c.plans for sid, _, _ in p.symbols}
    env_ok = {sid: 16 for sid in syms}
    assert c.assumptions.failed(env_ok) == [] or len(c.assumptions) == 0


def test_printf_emits_vprintf():
    @cute.kernel
    def k(gA: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        cute.printf("tid {} value {} coord {}", tidx, gA[tidx], (tidx, 2))

    @cute.jit
    def h(mA):
        k(mA).launch(grid=[1, 1, 1], block=[4, 1, 1])

    with target("sm_80"):
        c = cute.compile(h, from_dlpack(np.zeros(4, np.float32)))
    assert "llvm.call @vprintf" in c.ir
    assert "tid %d value %f coord (%d,%d)" in c.ir
    assert "call.uni" in c.info["ptx"] and "vprintf" in c.info["ptx"]


def test_from_dlpack_marks_and_specs():
    a = np.zeros((6, 8), np.float32)
    t = from_dlpack(a)
    assert t.shape == (6, 8) and t.stride == (8, 1) and t.element_type is cutlass.Float32
    assert t.spec()[2] == (6, 8)
    t.mark_layout_dynamic()
    assert t.spec()[2] == (("?", 1), ("?", 1)) and t.spec()[3] == (("?", 8), 1)
    u = from_dlpack(np.zeros((6, 8), np.float16)).mark_compact_shape_dynamic(mode=0, divisibility=2)
    assert u.spec()[2][0] == ("?", 2) and u.spec()[2][1] == 8
    with pytest.raises(ValueError, match="not a multiple"):
        from_dlpack(np.zeros((5, 8), np.float32)).mark_compact_shape_dynamic(mode=0, divisibility=2)
    with pytest.raises(TypeError, match="no array interface"):
        from_dlpack([1, 2, 3])


def test_example_compile_only_mode(monkeypatch, capsys, ew):
    if ew._has_gpu():
        pytest.skip("a GPU is present: the example runs instead of compiling only")
    monkeypatch.delenv("WARPWEAVE_ARCH", raising=False)
    assert ew.main(["--M", "3", "--N", "12"]) == 0
    out = capsys.readouterr().out
    assert "no GPU: compiling only" in out
    for arch in ("sm_80", "sm_90a", "sm_100a"):
        assert f"compiled elementwise_add for {arch}" in out


def test_local_tile_and_slicing_layouts():
    from warpweave._dsl.values.tensor import Pointer, Tensor

    t = Tensor(Pointer(None, cutlass.Float32, "gmem", 16), cute.make_layout((64, 32, 8), stride=(1, 64, 2048)))
    tile = cute.local_tile(t, (16, 8, 4), (1, 2, 0))
    assert str(tile.layout) == "(16,8,4):(1,64,2048)"
    assert tile.iterator.offset == 16 * 1 + 8 * 2 * 64
    a = Tensor(Pointer(None, cutlass.Float32, "gmem", 16), cute.make_layout((64, 8), stride=(8, 1)))  # (M, K)
    mk = cute.local_tile(a, (16, 32, 4), (3, 5, None), proj=(1, None, 1))  # the (BLK_M, BLK_K) tiles of A
    assert str(mk.layout) == "(16,4,2):(8,1,4)"
    assert mk.iterator.offset == 3 * 16 * 8
    assert str(t[(None, 3, None)].layout) == "(64,8):(1,2048)"
    assert t[(None, 3, None)].iterator.offset == 3 * 64


def test_current_target_names_the_backend_and_its_usable_peers():
    import warpweave

    with target("sm_90a"):
        t = warpweave.current_target()
    assert (t.name, t.backend, t.compute_capability) == ("sm_90a", "hopper", 90)
    names = [b.name for b in t.usable_backends()]
    assert names[0] == "hopper" and "ampere" in names and "blackwell" not in names


@cute.kernel
def register_split_kernel(gA: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < 128:
        cute.arch.setmaxregister_decrease(40)
    else:
        cute.arch.setmaxregister_increase(232)
    gA[tidx] = cutlass.Float32(1.0)


@cute.jit
def register_split(mA):
    register_split_kernel(mA).launch(grid=[1, 1, 1], block=[256, 1, 1])


def test_a_cubin_tool_warning_reaches_the_user(monkeypatch):
    # setmaxnreg asks for ptxas (nvJitLink drops it); forced to use nvJitLink, the compile says so in a warning.
    monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", "nvjitlink")
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    with target("sm_90a"):
        try:
            with pytest.warns(RuntimeWarning, match="nvJitLink assembled code that asks for ptxas"):
                cute.compile(register_split, dyn(256))
        except cutlass.CompilationError as e:
            if "cannot load" in str(e):
                pytest.skip(f"no nvJitLink here: {e}")
            raise


def test_cache_key_names_the_compiler_build_and_the_cubin_tool(monkeypatch):
    from types import SimpleNamespace

    from warpweave._dsl.call import compile_module as cm

    t = SimpleNamespace(name="sm_90a", llvm_cpu="sm_90a", ptx_features="+ptx86", jit_arch="sm_90a")
    monkeypatch.delenv("WARPWEAVE_CUBIN_TOOL", raising=False)
    base = cm.cache_key("module {}", t, None)
    assert cm.cache_key("module {}", t, None) == base
    monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", "ptxas")
    assert cm.cache_key("module {}", t, None) != base
    monkeypatch.delenv("WARPWEAVE_CUBIN_TOOL")
    monkeypatch.setattr(cm, "_core_identity", "a rebuilt core")
    assert cm.cache_key("module {}", t, None) != base
