"""The preprocessor's results kept beside the .pyc (rewrite_cache.py): a new process compiling an unchanged kernel
does not rewrite it again and gets the same module; a changed source, a changed rewriter, a damaged file or
WARPWEAVE_DISABLE_CACHE rewrite afresh; nothing is written where Python writes no bytecode."""
import json
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNELS = textwrap.dedent('''
    import warpweave as cutlass
    import warpweave.cute as cute


    @cute.kernel
    def scale_kernel(gA: cute.Tensor, gB: cute.Tensor, n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        i = bidx * 128 + tidx
        if i < n:
            gB[i] = gA[i] * cutlass.Float32({factor})


    @cute.jit
    def scale(mA: cute.Tensor, mB: cute.Tensor, n: cutlass.Int32):
        scale_kernel(mA, mB, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1])
''')

_CHILD = r"""
import json, sys
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor
from warpweave._dsl.tracing import ast_rewrite
rewritten = []
real = ast_rewrite._rewritten_code
ast_rewrite._rewritten_code = lambda fn: rewritten.append(fn.__qualname__) or real(fn)
import ww_rewrite_cache_kernels as mod
ts = [make_fake_tensor(cutlass.Float32, (4096,)).mark_layout_dynamic() for _ in range(2)]
c = cute.compile(mod.scale, *ts, 4096)
print(json.dumps({"rewritten": sorted(rewritten), "module": c.ir}))
"""


def _write(d, factor, mtime=None):
    path = os.path.join(d, "ww_rewrite_cache_kernels.py")
    with open(path, "w") as f:
        f.write(KERNELS.format(factor=factor))
    if mtime is not None:
        os.utime(path, ns=(mtime, mtime))
    return path


def _run(d, **env_extra):
    env = dict(os.environ, WARPWEAVE_ARCH="sm_80", WARPWEAVE_DISABLE_CACHE="",
               WARPWEAVE_CACHE_DIR=os.path.join(d, "jit-cache"), PYTHONPATH=os.pathsep.join(
                   [d, os.path.join(ROOT, "frontend_python"), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(env_extra)
    # A fresh JIT cache for every run: the function cache would otherwise return before any rewrite.
    import shutil
    shutil.rmtree(os.path.join(d, "jit-cache"), ignore_errors=True)
    r = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _cache_files(d):
    pyc = os.path.join(d, "__pycache__")
    return sorted(f for f in os.listdir(pyc) if f.endswith(".ww-rewrite")) if os.path.isdir(pyc) else []


def test_a_new_process_reuses_the_rewrite_of_an_unchanged_source(tmp_path):
    d = str(tmp_path)
    _write(d, "2.0")
    first = _run(d)
    assert first["rewritten"] == ["scale", "scale_kernel"]
    assert _cache_files(d) == [f"ww_rewrite_cache_kernels.{sys.implementation.cache_tag}.ww-rewrite"]
    second = _run(d)
    assert second["rewritten"] == [] and second["module"] == first["module"]


def test_a_changed_source_is_rewritten_again(tmp_path):
    d = str(tmp_path)
    path = _write(d, "2.0")
    first = _run(d)
    st = os.stat(path)
    _write(d, "3.0", mtime=st.st_mtime_ns + 10**9)
    changed = _run(d)
    assert changed["rewritten"] == ["scale", "scale_kernel"] and changed["module"] != first["module"]
    assert _run(d)["rewritten"] == []


def test_a_damaged_file_is_a_miss_and_is_replaced(tmp_path):
    d = str(tmp_path)
    _write(d, "2.0")
    first = _run(d)
    (name,) = _cache_files(d)
    path = os.path.join(d, "__pycache__", name)
    for junk in (b"", b"\x00garbage", open(path, "rb").read()[:40]):
        with open(path, "wb") as f:
            f.write(junk)
        again = _run(d)
        assert again["rewritten"] == ["scale", "scale_kernel"] and again["module"] == first["module"]
    assert _run(d)["rewritten"] == []


def test_disabled_cache_and_no_bytecode_writing(tmp_path):
    d = str(tmp_path)
    _write(d, "2.0")
    assert _run(d, PYTHONDONTWRITEBYTECODE="1")["rewritten"] == ["scale", "scale_kernel"]
    assert _cache_files(d) == []
    _run(d)
    assert _cache_files(d)
    assert _run(d, WARPWEAVE_DISABLE_CACHE="1")["rewritten"] == ["scale", "scale_kernel"]


def test_the_key_holds_the_rewriter_and_the_interpreter():
    from warpweave._dsl.tracing import ast_rewrite, rewrite_cache

    path, file_key, fn_key = rewrite_cache._locate(ast_rewrite.rewrite, ast_rewrite.preprocessor_extensions())
    assert path.endswith(".ww-rewrite") and ("__pycache__" in path or sys.pycache_prefix)
    fmt, tag, source, rewriter, extensions = file_key
    assert extensions == ()  # no library extended the preprocessor (test_ir_dialects covers one that does)
    assert tag == sys.implementation.cache_tag
    st = os.stat(ast_rewrite.__file__)
    assert (st.st_size, st.st_mtime_ns) in rewriter
    assert fn_key[0] == "rewrite"
