"""Exported functions (export_to_c) whose calls take launch events or a device workspace.

An event argument is a CUevent parameter of the C wrapper, given to its launches as the driver's event attributes
(NULL: no attribute, as None in Python). A function whose kernels ask for a device workspace takes its address as
the wrapper's last parameter, and prefix_Workspace_Size answers the bytes a call needs, as QueryDeviceWorkspaceFunc
does in Python. Without a GPU, a C++ program calls the exported wrapper against the stand-in driver
(data/mock_libcuda.c) and makes the launches the compiled function makes in Python for the same arguments; with a
GPU, load_module runs them.
"""
import os
import struct
import subprocess

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLNotImplementedError
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.experimental.host_runtime import QueryDeviceWorkspaceFunc
from warpweave.cute.runtime import make_fake_stream, make_fake_tensor

import aot_helpers as aot
from dsl_helpers import requires_gpu, target
from test_device_workspace import both as with_workspace, looped, stamp
from test_export import build_harness, needs_compilers, stand_in_driver

COMPLETION_EVENT, PROGRAMMATIC_EVENT = 12, 7   # CUlaunchAttributeID


class CUevent:  # a cuda.bindings event handle: int() of it
    def __init__(self, h):
        self.h = h

    def __int__(self):
        return self.h


@cute.kernel
def fill(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    x[bidx * 32 + tidx] = 1.0


@cute.jit
def with_events(x: cute.Tensor, n: cutlass.Int32, done: CUevent, ready: CUevent, stream):
    fill(x).launch(grid=[n, 1, 1], block=[32, 1, 1], stream=stream, launch_completion_event=done,
                   launch_completion_event_flags=1, programmatic_event=ready, programmatic_event_flags=0,
                   programmatic_event_trigger_at_block_start=1)


@cute.jit
def with_completion_event(x: cute.Tensor, n: cutlass.Int32, done: CUevent, stream):
    # flags 0: the driver refuses a launch completion event recorded as external (flag 1, what with_events asks
    # for to see the flags reach the attribute) with CUDA_ERROR_ILLEGAL_STATE
    fill(x).launch(grid=[n, 1, 1], block=[32, 1, 1], stream=stream, launch_completion_event=done,
                   launch_completion_event_flags=0)


@cute.jit
def stamped(x: cute.Tensor, n: cutlass.Int32):
    stamp(x).launch(grid=(n, 2, 1), block=(32, 1, 1))


PER_CTA = 128 + 256


def vector(n=4096, ptr=0x10000000, dtype=cutlass.Float32):
    return RuntimeTensor(None, ptr, (n,), (1,), dtype, "cuda", 16).mark_layout_dynamic()


def fake_vector(dtype=cutlass.Float32):
    return make_fake_tensor(dtype, (cute.sym_int(),), (1,), assumed_align=16)


def buffer(nbytes, ptr):
    return RuntimeTensor(None, ptr, (nbytes,), (1,), cutlass.Uint8, "cuda")


def _param_sizes(compiled) -> str:
    """$WW_MOCK_KERNEL_PARAM_SIZES of the compiled function's kernels (the stand-in driver prints their bytes)."""
    return ";".join(f"{l.kernel}:" + ",".join(str(struct.calcsize("=" + p.fmt)) for p in l.params)
                    for l in compiled.launches)


def _harness_run(exe, meta, calls, compiled):
    argv = [x for c in calls for x in aot.call_numbers(meta, c)]
    env = dict(os.environ, WW_MOCK_KERNEL_PARAM_SIZES=_param_sizes(compiled))
    p = subprocess.run([exe] + argv, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return aot.parse_mock_output(p.stdout)


def _event_words(h):
    return [h & 0xFFFFFFFF, h >> 32]


@stand_in_driver
@needs_compilers
def test_exported_events_are_the_launch_attributes_python_gives(tmp_path, rng):
    with target("sm_90a"):
        compiled = cute.compile(with_events, fake_vector(), 4, CUevent(1), CUevent(2), make_fake_stream())
    exe, meta = build_harness(tmp_path, compiled, "evts", aot.build_mock_driver(str(tmp_path)))
    assert [a["kind"] for a in meta["arguments"]] == ["tensor", "int", "event", "event", "stream"]
    assert "CUevent done, CUevent ready" in open(tmp_path / "evts.h").read()
    calls, expected = [], []
    for k in range(6):
        n = rng.randint(1, 100)
        done = 0 if k == 1 else rng.randint(1, 1 << 44) * 16   # 0: NULL, no event
        ready = 0 if k == 2 else rng.randint(1, 1 << 44) * 16
        x = vector(n * 32)
        calls.append({"x": x, "n": n, "done": done, "ready": ready, "stream": 4096 * (k + 1)})
        expected.append((aot.python_launches(compiled, x, n, done or None, ready or None, 4096 * (k + 1)), done,
                         ready))
    out = _harness_run(exe, meta, calls, compiled)
    for (rc, msg, launches), (exp, done, ready) in zip(out["calls"], expected):
        assert rc == 0, msg
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
        attrs = {a[0]: a[1:] for a in launches[0]["attrs"]}
        if done:
            assert attrs[COMPLETION_EVENT] == _event_words(done) + [1, 0]
        else:
            assert COMPLETION_EVENT not in attrs
        if ready:
            assert attrs[PROGRAMMATIC_EVENT] == _event_words(ready) + [0, 1]
        else:
            assert PROGRAMMATIC_EVENT not in attrs


@stand_in_driver
@needs_compilers
@pytest.mark.parametrize("fn", [with_workspace, looped], ids=["two_kernels", "host_loop"])
def test_exported_workspace_is_the_last_parameter_and_its_size_is_pythons(tmp_path, rng, fn):
    with target("sm_90a"):
        compiled = cute.compile(fn, fake_vector(), 3)
    exe, meta = build_harness(tmp_path, compiled, "wsp", aot.build_mock_driver(str(tmp_path)))
    assert [a["kind"] for a in meta["arguments"]] == ["tensor", "int", "workspace"]
    header = open(tmp_path / "wsp.h").read()
    assert "int32_t n, void *workspace);" in header
    assert "int32_t wsp_Workspace_Size(wsp_Tensor_x_t *x, int32_t n, uint64_t *size_in_bytes);" in header
    query = compiled.get_aux_func(QueryDeviceWorkspaceFunc)
    calls, expected = [], []
    for _ in range(6):
        n = rng.randint(1, 40)
        x = vector(2 * n * 32)
        need = query(x, n).size_in_bytes
        assert need == PER_CTA * n * (2 if fn is with_workspace else 1)
        ws = 0x40000000 + 64 * rng.randint(0, 1000)
        calls.append({"x": x, "n": n, "workspace": ws})
        expected.append((need, aot.python_launches(compiled, x, n, buffer(need, ws))))
    misaligned = dict(calls[0], workspace=calls[0]["workspace"] + 16)
    out = _harness_run(exe, meta, calls + [misaligned, dict(calls[0], workspace=0)], compiled)
    assert [w for w in out["workspace"]] == [(0, need) for need, _ in expected] + [out["workspace"][0]] * 2
    for (rc, msg, launches), (_, exp) in zip(out["calls"], expected):
        assert rc == 0, msg
        assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == exp
    for rc, msg, launches in out["calls"][-2:]:
        assert rc == 1 and "64-byte aligned device buffer" in msg and not launches


LOAD = '''
import sys
sys.path.insert(0, sys.argv[2])
import warpweave as cutlass
from warpweave._dsl.values.runtime import RuntimeTensor
from warpweave.cute.runtime import load_module

mod = load_module(sys.argv[1])
f = mod.wsp
x = RuntimeTensor(None, 0x30000000, (256,), (1,), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
print("parameters", f.parameters)
need = f.workspace_size(x, 5).size_in_bytes
print("need", need)
ws = lambda nbytes, ptr=0x50000000: RuntimeTensor(None, ptr, (nbytes,), (1,), cutlass.Uint8, "cuda")
f(x, 5, ws(need))
print("rc call 0")
for bad in (ws(need - 1), ws(need, 0x50000010), 7):
    try:
        f(x, 5, bad)
        print("error none")
    except Exception as e:
        print("error", type(e).__name__, str(e).split(": ", 1)[-1][:200])
'''


@stand_in_driver
@needs_compilers
def test_load_module_passes_and_checks_the_workspace(tmp_path):
    with target("sm_90a"):
        compiled = cute.compile(with_workspace, fake_vector(), 3)
    h, o = compiled.export_to_c(file_path=str(tmp_path), file_name="wsp", function_prefix="wsp")
    out = aot.run_on_stand_in(tmp_path, "load.py", LOAD, [o, os.path.dirname(__file__)],
                              WW_MOCK_KERNEL_PARAM_SIZES=_param_sizes(compiled))
    x = vector(256, 0x30000000)
    need = compiled.get_aux_func(QueryDeviceWorkspaceFunc)(x, 5).size_in_bytes
    assert f"need {need}" in out and "parameters ['x', 'n', 'workspace']" in out
    launches = aot.parse_mock_output(out)["calls"][0][2]
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == \
        aot.python_launches(compiled, x, 5, buffer(need, 0x50000000))
    errors = [l for l in out.splitlines() if l.startswith("error")]
    assert f"has {need - 1} bytes, the call needs {need}" in errors[0]
    assert "64-byte aligned" in errors[1]
    assert "global-memory buffer" in errors[2]


def test_tvm_ffi_refuses_events_and_workspaces_naming_export_to_c():
    from warpweave._dsl.export import export_c

    with target("sm_90a"):
        ev = cute.compile(with_events, fake_vector(), 4, CUevent(1), CUevent(2), make_fake_stream())
        wsp = cute.compile(with_workspace, fake_vector(), 3)
    for compiled in (ev, wsp):
        args = export_c.c_arguments(compiled)
        bad = next(a for a in args if a.kind in ("event", "workspace"))
        with pytest.raises(DSLNotImplementedError, match="export the function with export_to_c"):
            bad.plan.tvm_lines(bad, "0", [], [], "p")


# ---- on the GPU -------------------------------------------------------------------------------------------------

@requires_gpu
@needs_compilers
def test_exported_events_and_workspace_run_on_the_gpu(tmp_path):
    import torch

    from warpweave.cute.runtime import from_dlpack, load_module

    n = 7
    x = torch.zeros(2 * n * 32, device="cuda")
    tx = from_dlpack(x).mark_layout_dynamic()
    compiled = cute.compile(stamped, tx, n)
    _, o = compiled.export_to_c(file_path=str(tmp_path), file_name="wsp", function_prefix="wsp")
    f = load_module(o).wsp
    need = f.workspace_size(tx, n).size_in_bytes
    assert need == compiled.get_aux_func(QueryDeviceWorkspaceFunc)(tx, n).size_in_bytes == PER_CTA * 2 * n
    ws = torch.empty(need, dtype=torch.uint8, device="cuda")
    f(tx, n, from_dlpack(ws))
    torch.cuda.synchronize()
    assert x[:n].tolist() == [2.0 * bx + 1 for bx in range(n)]   # what each CTA wrote to and read from its parts
    # events: the launch completion event is recorded by the exported launch
    y = torch.zeros(4 * 32, device="cuda")
    ty = from_dlpack(y).mark_layout_dynamic()
    done = torch.cuda.Event()
    done.record()  # torch makes the event at its first record
    s = torch.cuda.Stream()
    fe = cute.compile(with_completion_event, ty, 4, done, s)
    _, o = fe.export_to_c(file_path=str(tmp_path), file_name="evts", function_prefix="evts")
    load_module(o).evts(ty, 4, done, s)
    done.synchronize()
    torch.cuda.synchronize()
    assert bool((y == 1.0).all())


# ---- a host read whose value no launch takes ---------------------------------------------------------------------

@cute.jit
def reads_a_table(x: cute.Tensor, table: cute.Tensor, n: cutlass.Int32):
    first = table[0]   # an address of a table of device pointers: its tensor serves for its layout only
    p = cute.make_ptr(cutlass.Float32, first, cute.AddressSpace.gmem, assumed_align=16)
    cute.make_tensor(p, cute.make_layout(n))
    fill(x).launch(grid=[n, 1, 1], block=[32, 1, 1])


@cute.jit
def prints_a_table_entry(x: cute.Tensor, table: cute.Tensor, n: cutlass.Int32):
    cute.printf("first {}", table[0])
    fill(x).launch(grid=[n, 1, 1], block=[32, 1, 1])


@stand_in_driver
@needs_compilers
def test_a_host_read_that_no_exported_action_uses_is_left_out(tmp_path):
    with target("sm_90a"):
        compiled = cute.compile(reads_a_table, fake_vector(), fake_vector(cutlass.Int64), 2)
        printing = cute.compile(prints_a_table_entry, fake_vector(), fake_vector(cutlass.Int64), 2)
    assert compiled.host_actions   # the read is made at each Python call
    exe, meta = build_harness(tmp_path, compiled, "tbl", aot.build_mock_driver(str(tmp_path)))
    x, table = vector(256), vector(4, 0x20000000, cutlass.Int64)
    out = _harness_run(exe, meta, [{"x": x, "table": table, "n": 5}], compiled)
    (rc, msg, launches), = out["calls"]
    assert rc == 0, msg
    assert [{k: v for k, v in l.items() if k != "attrs"} for l in launches] == \
        aot.python_launches(compiled, x, table, 5)
    with pytest.raises(DSLNotImplementedError, match="host-side work at each call that needs Python"):
        printing.export_to_c(file_path=str(tmp_path), file_name="prt", function_prefix="prt")
