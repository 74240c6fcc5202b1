"""A compile-only run stands in for JAX's GPU FFI targets (compile_only.py) without importing JAX itself: a program
that never imports JAX does not pay for it (~1.5 s to import, and an audit hook and a collector callback that then
slow every trace of the run), and one that imports it inside the session still gets the stand-in, also where it
takes jax.ffi.ffi_call by name before it imports jax-tvm-ffi."""
import ast
import os
import subprocess
import sys
import textwrap

import pytest

from warpweave import _core

pytest.importorskip("jax_tvm_ffi", reason="the stand-in is for jax-tvm-ffi's targets")

_PROGRAM = textwrap.dedent("""
    import sys
    from warpweave._dsl.registry import compile_only

    with compile_only.compile_only():
        before = sorted(m for m in ("jax", "jax_tvm_ffi") if m in sys.modules)
        from jax.ffi import ffi_call   # bound before jax_tvm_ffi is imported: already the stand-in
        import jax
        import jax_tvm_ffi
        inside = (ffi_call.__qualname__, jax_tvm_ffi.register_ffi_target.__qualname__)
    after = (jax.ffi.ffi_call.__qualname__, jax_tvm_ffi.register_ffi_target.__qualname__)
    print(repr((before, inside, after, any(type(f).__name__ == "_AfterImport" for f in sys.meta_path))))
""")


@pytest.mark.skipif(_core.driver_available(), reason="the stand-in is used where no CUDA driver can be loaded")
def test_jax_loads_only_when_the_program_imports_it_and_is_then_stood_in_for():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    before, inside, after, finder_left = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert before == []                                   # entering the session imported neither
    assert all("_jax_gpu_targets" in name for name in inside)   # imported inside it: stood in for
    assert not any("_jax_gpu_targets" in name for name in after)  # JAX's own functions again after it
    assert finder_left is False
