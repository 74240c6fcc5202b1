"""A preferred cluster (launch(cluster=, fallback_cluster=)) and launch events (launch_completion_event=,
programmatic_event=) on the native fast path: calls after the first launch natively (the Python call is not
taken), with the driver attributes the Python call gives, each call's event handles read from its arguments
(an int, a cuda.bindings-like handle read by int(), a torch-like event's cuda_event, None for no event), also in
the trips of a host loop. Checked on the stand-in driver (data/mock_libcuda.c), which prints each launch's
attributes. On the GPU, the driver records the event of a native launch."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack

import aot_helpers as aot
from dsl_helpers import requires_gpu
from test_launch_runtime_flags import needs_cc

# CUlaunchAttributeID: a cluster, a preferred cluster, the programmatic event, the launch completion event
CLUSTER, PREFERRED, PROGRAMMATIC_EVENT, COMPLETION_EVENT = 4, 11, 7, 12

PROGRAM = '''
import sys
import numpy as np
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack


class CUevent:  # a cuda.bindings handle: int() of it
    def __init__(self, h):
        self.h = h

    def __int__(self):
        return self.h


class Event:  # a torch.cuda.Event: its handle in cuda_event
    def __init__(self, h):
        self.cuda_event = h


@cute.kernel
def touch(x: cute.Tensor, v: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    cute.arch.griddepcontrol_launch_dependents()
    x[tidx] = cutlass.Float32(v)


@cute.jit
def once(x: cute.Tensor, done: CUevent, ready: CUevent):
    touch(x, 0).launch(grid=(4, 1, 1), block=(32, 1, 1), cluster=(4, 1, 1), fallback_cluster=(2, 1, 1),
                       launch_completion_event=done, launch_completion_event_flags=0, programmatic_event=ready,
                       programmatic_event_flags=1, programmatic_event_trigger_at_block_start=1)


@cute.jit
def looped(x: cute.Tensor, n: cutlass.Int32, done: CUevent):
    for i in range(n):
        touch(x, i).launch(grid=(i + 1, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1), fallback_cluster=(1, 1, 1),
                           launch_completion_event=done, launch_completion_event_flags=3)


@cute.jit
def preferred_only(x: cute.Tensor):
    touch(x, 1).launch(grid=(2, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1), fallback_cluster=(1, 1, 1))


def calls(c, cases):
    # each case by the Python call (native path off), then by the native path: their launches are compared
    c(*cases[0])  # the first call goes the Python way and builds the native path
    native = c._native
    print("built", bool(c._fast), native is not None, flush=True)
    for k, args in enumerate(cases):
        for way in ("python", "native"):
            c._native = native if way == "native" else None
            print("call", k, way, flush=True)
            c(*args)
    c._native = native
    print("stats", *native.stats, flush=True)


x = from_dlpack(np.zeros(32, np.float32))
which = sys.argv[1]
if which == "once":
    c = cute.compile(once, x, CUevent(1), CUevent(2))
    calls(c, [(x, 0xABCD00000001, 0x99), (x, CUevent(0x1234), Event(0x5678)), (x, Event(7), None),
              (x, None, CUevent(0x1122334455667788))])
elif which == "looped":
    c = cute.compile(looped, x, 2, CUevent(1))
    calls(c, [(x, 3, CUevent(0x10)), (x, 0, 5), (x, 2, None)])
else:
    c = cute.compile(preferred_only, x)
    calls(c, [(x,), (x,)])
'''


def _run(tmp_path, which, sizes="8"):
    """{(call, way): [(kernel line, {attribute id: its 4 words})]}, the built line's words and the stats."""
    out = aot.run_on_stand_in(tmp_path, "attrs.py", PROGRAM, args=(which,), WARPWEAVE_DISABLE_CACHE="1",
                              WW_MOCK_PARAM_SIZES=sizes)
    calls, key, built, stats = {}, None, None, None
    for line in out.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "built":
            built = w[1:]
        elif w[0] == "stats":
            stats = [int(s) for s in w[1:]]
        elif w[0] == "call":
            key = (int(w[1]), w[2])
            calls[key] = []
        elif w[0] == "launch" and key is not None:
            calls[key].append((line, {}))
        elif w[0] == "attr" and key is not None:
            calls[key][-1][1][int(w[1])] = [int(s) for s in w[2:]]
        elif w[0] == "param" and key is not None:
            calls[key][-1] = (calls[key][-1][0] + " " + line, calls[key][-1][1])
    return calls, built, stats


def _same_ways(calls, n):
    for k in range(n):
        assert calls[(k, "native")] == calls[(k, "python")], k
    return [calls[(k, "native")] for k in range(n)]


def _event(h):
    return [h & 0xFFFFFFFF, h >> 32]


@pytest.mark.stand_in_driver
@needs_cc
def test_preferred_cluster_and_events_take_the_native_path(tmp_path):
    calls, built, stats = _run(tmp_path, "once")
    # no generated Python fast path (it gives no attributes); the native path took every native call
    assert built == ["False", "True"]
    assert stats[:2] == [4, 0], stats
    expected = [(0xABCD00000001, 0x99), (0x1234, 0x5678), (7, 0), (0, 0x1122334455667788)]
    for (launch,), (done, ready) in zip(_same_ways(calls, 4), expected):
        _, attrs = launch
        assert attrs[PREFERRED][:3] == [4, 1, 1] and attrs[CLUSTER][:3] == [2, 1, 1]
        if done:
            assert attrs[COMPLETION_EVENT] == _event(done) + [0, 0]
        else:
            assert COMPLETION_EVENT not in attrs  # no event: no attribute, as the Python call
        if ready:
            assert attrs[PROGRAMMATIC_EVENT] == _event(ready)[:1] + [_event(ready)[1], 1, 1]
        else:
            assert PROGRAMMATIC_EVENT not in attrs


@pytest.mark.stand_in_driver
@needs_cc
def test_each_trip_of_a_host_loop_gets_the_attributes(tmp_path):
    calls, built, stats = _run(tmp_path, "looped", "8,4")  # the tensor, the trip's i
    assert built == ["False", "True"] and stats[:2] == [3, 0], (built, stats)
    for launches, (n, done) in zip(_same_ways(calls, 3), [(3, 0x10), (0, 5), (2, 0)]):
        assert len(launches) == n
        for i, (line, attrs) in enumerate(launches):
            assert f"grid {i + 1} 1 1 " in line and line.endswith("param 1 " + i.to_bytes(4, "little").hex())
            assert attrs[PREFERRED][:3] == [2, 1, 1] and attrs[CLUSTER][:3] == [1, 1, 1]
            assert (attrs[COMPLETION_EVENT] == _event(done) + [3, 0]) if done else COMPLETION_EVENT not in attrs


@pytest.mark.stand_in_driver
@needs_cc
def test_a_preferred_cluster_alone_takes_the_native_path(tmp_path):
    calls, built, stats = _run(tmp_path, "preferred")
    assert built == ["False", "True"] and stats[:2] == [2, 0], (built, stats)
    for (line, attrs), in _same_ways(calls, 2):
        assert attrs[PREFERRED][:3] == [2, 1, 1] and attrs[CLUSTER][:3] == [1, 1, 1]
        assert set(attrs) == {CLUSTER, PREFERRED}


# --- on the GPU ---------------------------------------------------------------------------------------------------

@cute.kernel
def fill_one(x: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    x[bidx * 32 + tidx] = cutlass.Float32(1.0)


@cute.jit
def fill_with_event(x: cute.Tensor, done):  # a torch.cuda.Event
    fill_one(x).launch(grid=(4, 1, 1), block=(32, 1, 1), cluster=(2, 1, 1), fallback_cluster=(1, 1, 1),
                       launch_completion_event=done)


@requires_gpu
def test_the_driver_records_the_event_of_a_native_launch_on_the_gpu():
    import torch

    x = torch.zeros(128, device="cuda")
    done = torch.cuda.Event(enable_timing=False)
    done.record()  # torch makes the event at its first record
    torch.cuda.synchronize()
    c = cute.compile(fill_with_event, from_dlpack(x), done)
    for _ in range(3):
        x.zero_()
        c(from_dlpack(x), done)
    assert c._native is not None and c._native.stats[:2] == (2, 0)
    done.synchronize()  # recorded by the last call's launch once every block started
    torch.cuda.synchronize()
    assert bool((x == 1).all())
