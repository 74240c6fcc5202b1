"""The C form of the TMA descriptor of a tensor stored in blocks (tma_export.blocked_c): an exported function (and a
TVM FFI call, which uses the same wrapper) encodes it at each call with the arguments the Python encoder gives the
plugin."""
from __future__ import annotations

import numpy as np

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import from_dlpack
from dsl_helpers import target

import aot_helpers as aot
from test_export import _tma_pattern, build_harness, needs_compilers, run_harness, stand_in_driver
from test_tma_blocked import K, M, VEC, _program, _smem_sf_layout


@stand_in_driver
@needs_compilers
def test_blocked_descriptor_is_encoded_in_c_as_in_python(tmp_path, monkeypatch):
    from warpweave.backends.hopper import tma_blocked, tma_export

    seen = []
    with target("sm_90a"):
        compiled = cute.compile(_program(seen, _smem_sf_layout), from_dlpack(np.zeros(M * K // VEC, np.uint8)))
    assert [h.producer.name for h in compiled.host_arguments.values()] == [tma_blocked.DESCRIPTOR]
    exe, meta = build_harness(tmp_path, compiled, "sfload", aot.build_mock_driver(str(tmp_path)))
    encoded = []

    def host_call(backend, hook, attrs, size):
        assert size == 128
        encoded.append(dict(attrs))
        return _tma_pattern(attrs)   # what the stand-in driver writes for them

    monkeypatch.setattr(tma_blocked.ext, "host_call", host_call)
    calls, expected = [], []
    for addr in (0x10000000, 0x20000400):
        sf = RuntimeTensor(None, addr, (M * K // VEC,), (1,), cutlass.Uint8, "cuda", 16)
        calls.append({"sf": sf})
        for h in compiled.host_arguments.values():
            h.memo.clear()
        expected.append(aot.python_launches(compiled, sf))
    out = run_harness(exe, meta, calls, compiled)
    for (rc, msg, launches), exp in zip(out["calls"], expected):
        assert rc == 0, msg
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
    got = out["tensormaps"]
    assert len(got) == len(encoded) == 2
    for g, e in zip(got, encoded):
        assert g["dtype"] == tma_export._DATA_TYPES.index(e["data_type"]) and e["data_type"] == "u16"
        assert g["rank"] == e["rank"] and g["addr"] == e["address"]
        assert g["dims"] == [e[f"dim{i}"] for i in range(e["rank"])]
        assert g["strides"] == [e[f"stride{i}"] for i in range(1, e["rank"])]
        assert g["box"] == [e[f"box{i}"] for i in range(e["rank"])]
        assert g["swizzle"] == 0 and e["swizzle"] == "none"
        assert g["elem"] == [1] * e["rank"] and g["interleave"] == g["l2"] == g["oob"] == 0
