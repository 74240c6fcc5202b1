"""Host prints (cute.printf in @cute.jit code) in exported C: the wrapper prints each line at each call, with the
call's extents and strides, before its launches, as the Python call prints it (host_actions.py). Run against the
stand-in driver (data/mock_libcuda.c), no GPU needed. A print without a C form (a floating-point argument) is still
refused at the user's line. cutlass_call of warpweave.jax exports this way (CuTe DSL's cutlass_call_sharding.py
prints static layouts before its launch)."""
import os
import subprocess

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import make_fake_compact_tensor, make_fake_stream, make_fake_tensor

import aot_helpers as aot
from dsl_helpers import target

needs_compilers = pytest.mark.skipif(not (aot.cc() and aot.cxx()), reason="needs a C and a C++ compiler")


@cute.kernel
def _scale(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    x[0, tidx] = x[0, tidx] * 2.0


@cute.jit
def _prints_then_launches(x: cute.Tensor, k: cutlass.Int32, stream):
    cute.printf("x: {}, k = {}", x.layout, k)
    cute.printf("extents {} and {}, fixed {}", (x.shape[0], x.shape[1]), x.shape[1] * 3 + 1, (2, (3, 4)))
    cute.printf("%d%% done", 100)  # Python's %-formatting, all values fixed: the text is fixed
    cute.printf("tile: {}", cute.make_layout((4, 8), stride=(8, 1)))
    _scale(x).launch(grid=[x.shape[1], 1, 1], block=[32, 1, 1], stream=stream)


@cute.jit
def _prints_a_float(x: cute.Tensor, alpha: cutlass.Float32):
    cute.printf("alpha = {}", alpha)
    _scale(x).launch(grid=[1, 1, 1], block=[32, 1, 1])


def _run(tmp_path, compiled, name, calls):
    h, o = compiled.export_to_c(file_path=str(tmp_path), file_name=name, function_prefix=name)
    from warpweave._dsl.export import export_c
    meta = export_c.metadata(compiled, export_c.c_arguments(compiled), name)
    src = tmp_path / f"{name}_main.cpp"
    src.write_text(aot.harness_source(meta, os.path.basename(h)))
    exe, link = str(tmp_path / f"{name}_main"), aot.build_mock_driver(str(tmp_path))
    subprocess.run([aot.cxx(), "-std=c++17", "-Wall", "-Werror", "-I", str(tmp_path), str(src), o, "-L", link,
                    "-lcuda", f"-Wl,-rpath,{link}", "-Wl,--disable-new-dtags", "-o", exe], check=True)
    sizes = ",".join(str(__import__("struct").calcsize("=" + p.fmt)) for p in compiled.launches[0].params)
    argv = [x for c in calls for x in aot.call_numbers(meta, c)]
    p = subprocess.run([exe] + argv, capture_output=True, text=True, env=dict(os.environ, WW_MOCK_PARAM_SIZES=sizes))
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.splitlines()


@pytest.mark.stand_in_driver
@needs_compilers
def test_exported_host_prints_show_each_calls_layout_before_its_launch(tmp_path, rng):
    with target("sm_90a"):
        x = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(), cute.sym_int()), stride_order=(0, 1),
                                     assumed_align=16)
        compiled = cute.compile(_prints_then_launches, x, 1, make_fake_stream())
    assert len(compiled.host_actions) == 4
    shapes = [(rng.randint(1, 500), rng.randint(1, 500)) for _ in range(5)]
    calls = [{"x": RuntimeTensor(None, 0x10000000, (m, n), (1, m), cutlass.Float32, "cuda", 16).mark_layout_dynamic(),
              "k": m - n, "stream": 0} for m, n in shapes]
    out = _run(tmp_path, compiled, "hprint", calls)
    kept = [ln.split()[0] if ln.startswith(("launch", "rc call")) else ln for ln in out
            if ln.startswith(("x:", "extents", "100% done", "tile:", "launch", "rc call"))]
    expected = []
    for m, n in shapes:
        expected += [f"x: ({m},{n}):(1,{m}), k = {m - n}", f"extents ({m},{n}) and {n * 3 + 1}, fixed (2,(3,4))",
                     "100% done", "tile: (4,8):(8,1)", "launch", "rc"]
    assert kept == expected
    launches = [ln for ln in out if ln.startswith("launch")]
    assert [int(ln.split()[3]) for ln in launches] == [n for _, n in shapes]  # grid x from each call's extent


@pytest.mark.parametrize("static", [True, False])
def test_static_layout_prints_are_fixed_text_in_c(static):
    from warpweave._dsl.export import export_c

    with target("sm_90a"):
        if static:
            x = make_fake_tensor(cutlass.Float32, (32, 16), (16, 1), assumed_align=16)
        else:
            x = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(), 16), stride_order=(1, 0),
                                         assumed_align=16)
        compiled = cute.compile(_prints_then_launches, x, 1, make_fake_stream())
    src = export_c.source(compiled, export_c.c_arguments(compiled), "p", "p.h")
    prints = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("printf(")]
    assert len(prints) == 4
    assert prints[0].startswith('printf("x: (32,16):(16,1), k = %lld\\012"') == static
    assert all("%lld" not in p for p in prints[1:]) == static


def test_host_print_of_a_float_argument_is_refused_at_the_users_line(tmp_path):
    with target("sm_80"):
        compiled = cute.compile(_prints_a_float, make_fake_tensor(cutlass.Float32, (1, 32), (32, 1)), 1.0)
    with pytest.raises(NotImplementedError, match="host-side work at each call that needs Python") as e:
        compiled.export_to_c(file_path=str(tmp_path), file_name="fprint")
    assert os.path.basename(__file__) in str(e.value)
