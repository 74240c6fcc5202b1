"""A cute.experimental GEMM whose kernel makes its tensors over their arguments' addresses (as a pointer-array
GEMM makes each batch's), exported with export_to_c: the wrapper takes the device workspace the maps are written in
as its last parameter, <prefix>_Workspace_Size answers what QueryDeviceWorkspaceFunc answers, and the C++ program
run against the stand-in driver (tests/python/data/mock_libcuda.c) makes the launch the Python call makes."""
from __future__ import annotations

import warpweave as cutlass
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute import experimental as cute_ext
from warpweave.cute.experimental.host_runtime import QueryDeviceWorkspaceFunc

from dsl_helpers import target

import aot_helpers as aot
from test_cute_ext_blackwell import gemm_kernel
from test_export import _tma_pattern, build_harness, needs_compilers, run_harness, stand_in_driver


@stand_in_driver
@needs_compilers
def test_a_gemm_with_a_workspace_exports_and_launches_as_python_does(tmp_path, monkeypatch):
    from warpweave.backends.hopper import tma

    real = [RuntimeTensor(None, (k + 1) << 24, (256, 256), (256, 1), cutlass.Float16, "cuda") for k in range(3)]
    with target("sm_100a"):
        compiled = cute_ext.compile(gemm_kernel(made_in_kernel=True), *real)
    monkeypatch.setattr(tma.ext, "host_call", lambda backend, hook, attrs, size: _tma_pattern(attrs))
    exe, meta = build_harness(tmp_path, compiled, "wsgemm", aot.build_mock_driver(str(tmp_path)))
    assert [a["kind"] for a in meta["arguments"]][-1] == "workspace"
    need = compiled.get_aux_func(QueryDeviceWorkspaceFunc)(*real).size_in_bytes
    ws = RuntimeTensor(None, 0x7000_0000, (need,), (1,), cutlass.Uint8, "cuda")
    expected = aot.python_launches(compiled, *real, ws)
    call = dict(zip(("mA", "mB", "mD"), real), workspace=0x7000_0000)
    out = run_harness(exe, meta, [call], compiled)
    assert out["workspace"] == [(0, need)]
    (rc, msg, launches), = out["calls"]
    assert rc == 0, msg
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == expected
