"""cute.extern / cutlass.base_dsl.ffi.extern: external device functions declared by annotations, called in kernels,
defined by LLVM bitcode files the compiler links before optimising (inlined, unused functions gone); mistakes at
the user's line."""
import os
import shutil
import subprocess
import typing

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.base_dsl.ffi import BitCode, extern, mangle
from warpweave.cute.runtime import from_dlpack
from warpweave._dsl.base.errors import DSLError

from dsl_helpers import compile_body, fresh_compilations, line_in, requires_gpu  # noqa: F401

HERE = os.path.abspath(__file__)

LIBRARY = """
target triple = "nvptx64-nvidia-cuda"
define float @fma_ext(float %a, float %b, float %c) {
  %m = fmul float %a, %b
  %r = fadd float %m, %c
  ret float %r
}
define i32 @unused_fn(i32 %a) {
  %r = mul i32 %a, 12345
  ret i32 %r
}
define i32 @add_seven(i32 %a) {
  %r = add i32 %a, 7
  ret i32 %r
}
"""


def _assembler():
    for name in ("llvm-as-22", "llvm-as"):
        path = shutil.which(name)
        if path and "version 22" in subprocess.run([path, "--version"], capture_output=True, text=True).stdout:
            return path
    return None


def bitcode(tmp_path, text=LIBRARY, name="lib.bc"):
    """The bitcode of LLVM assembly `text`, made with LLVM 22's llvm-as (skips without it)."""
    tool = _assembler()
    if tool is None:
        pytest.skip("no llvm-as of LLVM 22 on this machine to make bitcode with")
    src = tmp_path / (name + ".ll")
    src.write_text(text)
    out = tmp_path / name
    subprocess.run([tool, str(src), "-o", str(out)], check=True)
    return str(out)


def compile_kernel(body, n=32):
    """The compiled function of a one-warp kernel body(x) over a Float32 tensor of n elements, for sm_80."""
    return compile_body(body, "sm_80", np.float32, n)


def test_extern_from_bitcode_is_linked_and_inlined(tmp_path, fresh_compilations):
    lib = bitcode(tmp_path)

    @cute.extern(source=BitCode(lib))
    def fma_ext(a: cutlass.Float32, b: cutlass.Float32, c: cutlass.Float32) -> cutlass.Float32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        r = fma_ext(x[t], 2.0, x[t])   # a Python float for a Float32 parameter
        assert type(r) is cutlass.Float32
        x[t] = r

    c = compile_kernel(body)
    assert "llvm.func @fma_ext(f32, f32, f32) -> f32" in c.ir
    ptx = c.info["ptx"]
    assert "call" not in ptx and "fma_ext" not in ptx        # inlined
    assert "unused_fn" not in ptx and "12345" not in ptx       # only what the kernel uses is linked
    assert "fma.rn.f32" in ptx or ("mul.f32" in ptx and "add.f32" in ptx)


def test_name_inline_false_and_ffi_extern(tmp_path, fresh_compilations):
    lib = bitcode(tmp_path)

    @extern(name="add_seven", inline=False, source=BitCode(lib))
    def plus7(a: cutlass.Int32) -> cutlass.Int32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = cutlass.Float32(plus7(t) + plus7(3))   # a Python int for an Int32 parameter

    c = compile_kernel(body)
    assert "llvm.func @add_seven(i32) -> i32 attributes {no_inline}" in c.ir
    assert c.ir.count("llvm.func @add_seven") == 1             # declared once per module
    ptx = c.info["ptx"]
    assert "call" in ptx and ".func" in ptx and "add_seven" in ptx   # kept a call, as asked


def test_assembly_text_is_read_too(tmp_path, fresh_compilations):
    src = tmp_path / "lib.ll"
    src.write_text(LIBRARY)

    @cute.extern(source=BitCode(str(src)))
    def add_seven(a: cutlass.Int32) -> cutlass.Int32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = cutlass.Float32(add_seven(t))

    ptx = compile_kernel(body).info["ptx"]
    assert "call" not in ptx and "add_seven" not in ptx


def test_bitcode_from_cuda_cpp_with_clang(tmp_path, fresh_compilations):
    clang = shutil.which("clang-22")
    if clang is None:
        pytest.skip("no clang-22 on this machine to compile CUDA C++ to bitcode")
    src = tmp_path / "lib.cu"
    src.write_text('#define __device__ __attribute__((device))\n'
                   'extern "C" __device__ float axpy3(float a, float x, float y) { return a * x + y + 3.0f; }\n'
                   'extern "C" __device__ int never_called(int a) { return a * 77; }\n')
    out = tmp_path / "lib.bc"
    subprocess.run([clang, "--cuda-device-only", "-emit-llvm", "-c", "-nocudainc", "-nocudalib",
                    "--cuda-gpu-arch=sm_80", "-O2", "-Wno-unknown-cuda-version", str(src), "-o", str(out)],
                   check=True, capture_output=True)

    @cute.extern(source=BitCode(str(out)))
    def axpy3(a: cutlass.Float32, x: cutlass.Float32, y: cutlass.Float32) -> cutlass.Float32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = axpy3(x[t], x[t], 1.5)

    ptx = compile_kernel(body).info["ptx"]
    # inlined although clang named a CPU and features on it: the library is compiled for the kernel's target
    assert "call" not in ptx and "axpy3" not in ptx and "never_called" not in ptx
    assert "0f3FC00000" in ptx and "0f40400000" in ptx  # the caller's 1.5 and the library's 3.0, in one body


def test_undefined_extern_is_an_error_at_the_call(fresh_compilations):
    @cute.extern
    def not_defined_anywhere(x: cutlass.Int32) -> cutlass.Float32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = not_defined_anywhere(t)  # the call line

    with pytest.raises(DSLError) as e:
        compile_kernel(body)
    assert "not_defined_anywhere" in str(e.value) and "not defined" in str(e.value)
    assert e.value.location == (HERE, line_in(HERE, "not_defined_anywhere(t)  # the call line"))


def test_missing_and_invalid_bitcode_files(tmp_path, fresh_compilations):
    missing = str(tmp_path / "nowhere.bc")

    @cute.extern(source=BitCode(missing))
    def from_missing(x: cutlass.Int32) -> cutlass.Int32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = cutlass.Float32(from_missing(t))  # missing file

    with pytest.raises(DSLError) as e:
        compile_kernel(body)
    assert missing in str(e.value)
    assert e.value.location == (HERE, line_in(HERE, "from_missing(t))  # missing file"))

    junk = tmp_path / "junk.bc"
    junk.write_bytes(b"BC\xc0\xde not really bitcode")

    @cute.extern(source=BitCode(str(junk)))
    def from_junk(x: cutlass.Int32) -> cutlass.Int32: ...

    def body2(x):
        t = cute.arch.thread_idx()[0]
        x[t] = cutlass.Float32(from_junk(t))  # junk file

    with pytest.raises(DSLError) as e:
        compile_kernel(body2)
    assert str(junk) in str(e.value) and "from_junk" in str(e.value)
    assert e.value.location == (HERE, line_in(HERE, "from_junk(t))  # junk file"))


def test_definition_of_another_type_is_refused(tmp_path, fresh_compilations):
    lib = bitcode(tmp_path)

    @cute.extern(source=BitCode(lib))
    def add_seven(a: cutlass.Float32) -> cutlass.Float32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = add_seven(x[t])  # wrong type

    with pytest.raises(DSLError) as e:
        compile_kernel(body)
    assert "float (float)" in str(e.value) and "i32 (i32)" in str(e.value)


@pytest.mark.parametrize("decl, call, words", [
    ("def f(a: cutlass.Int32) -> cutlass.Float32: ...", "f(x[t])", ["'a' is Int32, got Float32"]),
    ("def f(a: cutlass.Int32) -> cutlass.Float32: ...", "f(cutlass.Int64(t))", ["got Int64"]),
    ("def f(a: cutlass.Float32) -> cutlass.Float32: ...", "f(3)", ["'a' is Float32, got int"]),
    ("def f(a: cutlass.Int32) -> cutlass.Float32: ...", "f(t, t)", ["takes 1 argument(s), got 2"]),
    ("def f(a: cutlass.Int32) -> cutlass.Float32: ...", "f(a=t)", ["by position"]),
    ("def f(a: cutlass.Int32) -> cutlass.Float32: ...", 'f("a")', ["got str"]),
    ("def f(a: cute.Tensor) -> cutlass.Float32: ...", "f(x)", ["annotated Tensor"]),
    ("def f(a) -> cutlass.Float32: ...", "f(t)", ["has no annotation"]),
    ("def f(a: int) -> cutlass.Float32: ...", "f(t)", ["annotated int"]),
    ("def f(a: cutlass.Int32) -> cute.Pointer: ...", "f(t)", ["the return type"]),
    ("def f(*a: cutlass.Int32) -> cutlass.Float32: ...", "f(t)", ["plain positional"]),
    ("def f(a: cutlass.Int32 | cutlass.Float32) -> cutlass.Float32: ...", "f(t)", ["Union"]),
    ("T = typing.TypeVar('T')\n@cute.extern\ndef f(a: T) -> T: ...", "f(3)", ["generic", "Int32(3)"]),
    ("@cute.extern\ndef f(a: cute.Pointer) -> None: ...\nT = typing.TypeVar('T')\n@cute.extern\n"
     "def g(a: T) -> None: ...\nf = g", "f(x.iterator)", ["pointer"]),
])
def test_mistakes_are_refused_at_the_call(tmp_path, decl, call, words):
    src = tmp_path / "user_extern.py"
    if not decl.startswith("T =") and not decl.startswith("@"):
        decl = "@cute.extern\n" + decl
    src.write_text("import typing\nimport warpweave as cutlass\nimport warpweave.cute as cute\n" + decl + "\n"
                   "def body(x):\n    t = cute.arch.thread_idx()[0]\n"
                   f"    x[t] = cutlass.Float32({call})  # HERE\n")
    ns = {"__name__": "user_extern"}
    exec(compile(src.read_text(), str(src), "exec"), ns)
    with pytest.raises(DSLError) as e:
        compile_kernel(ns["body"])
    for w in words:
        assert w in str(e.value), str(e.value)
    assert e.value.location == (str(src), line_in(str(src), "# HERE")), str(e.value)


def test_overloads_and_generics_are_named_as_cutedsl_names_them(fresh_compilations):
    @typing.overload
    def comp(x: cutlass.Int32) -> cutlass.Int32: ...

    @typing.overload
    def comp(x: cutlass.Float32) -> cutlass.Float32: ...

    @cute.extern
    def comp(x): ...

    T, U = typing.TypeVar("T"), typing.TypeVar("U")

    @cute.extern
    def two(x: T, y: U, z: cutlass.Int32) -> T: ...

    seen = {}

    def body(x):
        t = cute.arch.thread_idx()[0]
        seen["a"], seen["b"] = comp(t), comp(x[t])
        seen["c"] = two(x[t], cutlass.Uint32(t), t)
        seen["d"] = two(x[t], cutlass.Float16(x[t]), 1)

    with pytest.raises(DSLError):   # nothing defines them: the declarations are what is checked
        compile_kernel(body)
    assert [type(seen[k]) for k in "abcd"] == [cutlass.Int32, cutlass.Float32, cutlass.Float32, cutlass.Float32]
    assert mangle("!cute.ptr<f32, gmem>") == "_21cute_2Eptr_3Cf32_2C_20gmem_3E"

    captured = {}
    import warpweave._dsl.call.compile_module as cm
    real = cm._core.compile

    def spy(text, *a, **k):
        captured["ir"] = text
        return real(text, *a, **k)

    cm._core.compile = spy
    try:
        with pytest.raises(DSLError) as e:
            compile_kernel(body)
    finally:
        cm._core.compile = real
    ir = captured["ir"]
    for decl in ("@comp_i32(i32) -> i32", "@comp_f32(f32) -> f32", "@two_f32_i32_i32(f32, i32, i32) -> f32",
                 "@two_f32_f16_i32(f32, f16, i32) -> f32"):
        assert "llvm.func " + decl in ir
    assert "comp_i32" in str(e.value)   # the first undefined one, named


def test_pointer_parameter_is_an_address_of_its_space(fresh_compilations):
    @cute.extern
    def takes_ptr(p: cute.Pointer, n: cutlass.Int32) -> None: ...

    captured = {}
    import warpweave._dsl.call.compile_module as cm
    real = cm._core.compile

    def spy(text, *a, **k):
        captured["ir"] = text
        return real(text, *a, **k)

    def body(x):
        r = takes_ptr(x.iterator, 4)
        assert r is None

    cm._core.compile = spy
    try:
        with pytest.raises(DSLError):
            compile_kernel(body)
    finally:
        cm._core.compile = real
    assert "llvm.func @takes_ptr(!llvm.ptr<1>, i32)" in captured["ir"]


def test_editing_the_bitcode_compiles_again(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("WARPWEAVE_DISABLE_CACHE", raising=False)
    lib = bitcode(tmp_path, LIBRARY.replace("add i32 %a, 7", "add i32 %a, 1234567"))

    @cute.extern(source=BitCode(lib))
    def add_seven(a: cutlass.Int32) -> cutlass.Int32: ...

    def body(x):
        t = cute.arch.thread_idx()[0]
        x[t] = cutlass.Float32(add_seven(t))

    first = compile_kernel(body)
    assert "1234567" in first.info["ptx"]
    bitcode(tmp_path, LIBRARY.replace("add i32 %a, 7", "add i32 %a, 7654321"))
    st = os.stat(lib)
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    second = compile_kernel(body)
    assert second.info["cache"] == "miss" and "7654321" in second.info["ptx"]


@requires_gpu
def test_extern_runs_on_the_gpu(tmp_path):
    import torch
    lib = bitcode(tmp_path)

    @cute.extern(source=BitCode(lib))
    def fma_ext(a: cutlass.Float32, b: cutlass.Float32, c: cutlass.Float32) -> cutlass.Float32: ...

    @cute.kernel
    def k(x: cute.Tensor):
        t = cute.arch.thread_idx()[0]
        x[t] = fma_ext(x[t], 3.0, 0.5)

    @cute.jit
    def h(x: cute.Tensor):
        k(x).launch(grid=[1, 1, 1], block=[32, 1, 1])

    x = torch.arange(32, dtype=torch.float32, device="cuda")
    want = x * 3.0 + 0.5
    cute.compile(h, from_dlpack(x))(from_dlpack(x))
    torch.cuda.synchronize()
    assert torch.equal(x, want)
