"""Host loops over runtime bounds (host/host_loop.py, host/host_loop_bulk.py): a @cute.jit function compiled once
runs, at each call, a `for` whose trip count only the call knows (a dynamic extent, an Int32 argument).

Checked without a GPU (element writes of host memory, launches on the stand-in driver, one per trip where the body
launches), for several shapes against a Python model of the same host code; user mistakes are errors at the
user's line.
"""
import os

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLError
from warpweave.cute.runtime import from_dlpack, make_ptr

from dsl_helpers import line_in, requires_gpu, target
from host_stand_in import stand_in  # noqa: F401 (a fixture)

HERE = __file__


def dyn(a):
    return from_dlpack(a).mark_layout_dynamic()


@cute.jit
def squares_and_sum(t: cute.Tensor, out: cute.Tensor):
    total = 0
    for i in cutlass.range(cute.size(t, mode=[0])):
        t[i] = cutlass.Float32(i * i - 3)
        total = total + i * 2
    out[0] = total


def test_a_loop_over_a_dynamic_extent_runs_each_calls_trips_with_one_compilation():
    out = np.zeros(1, np.int32)
    with target("sm_80"):
        c = cute.compile(squares_and_sum, dyn(np.zeros(4, np.float32)), from_dlpack(out))
        for m in (1, 3, 17, 64):
            t = np.full(m, 99.0, np.float32)
            c(dyn(t), from_dlpack(out))
            assert t.tolist() == [float(i * i - 3) for i in range(m)], m
            assert out[0] == sum(2 * i for i in range(m)), m
        t = np.full(5, 7.0, np.float32)
        c(dyn(t[:0]), from_dlpack(out))  # no trip: nothing written, the carried value its initial one
        assert out[0] == 0 and (t == 7.0).all()


@cute.kernel
def mark(c: cute.Tensor, v: cutlass.Int32):
    c[0] = cutlass.Float32(v)


@cute.jit
def split_count(c: cute.Tensor, chunk: cutlass.Int32):
    # The number of chunks of `chunk` rows a problem of m rows needs, counted by a loop; the grid is that count.
    m = cute.size(c, mode=[0])
    parts = 0
    done = 0
    for _ in range(m):
        if done < m:
            parts = parts + 1
            done = done + chunk
    mark(c, parts).launch(grid=(parts, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("m,chunk", [(1, 4), (8, 4), (9, 4), (100, 7), (64, 64)])
def test_a_value_a_loop_computes_reaches_the_grid_and_the_kernel_at_each_call(stand_in, m, chunk):
    with target("sm_80"):
        c = stand_in(cute.compile(split_count, dyn(np.zeros(16, np.float32)), cutlass.Int32(3)))
    assert c.host_program.has_loops
    for call in range(2):  # the first call (the Python one) and a later one (the native path's)
        stand_in.launched.clear()
        c(dyn(np.zeros(m, np.float32)), cutlass.Int32(chunk))
        want = -(-m // chunk)
        ((name, grid, params, path),) = stand_in.launched
        assert grid == (want, 1, 1) and int.from_bytes(params[-4:], "little", signed=True) == want
        assert path == ("python" if call == 0 else "native")


@cute.jit
def table(t: cute.Tensor, rows: cutlass.Int32):
    for i in range(rows):
        for j in cutlass.range(cute.size(t, mode=[1])):
            t[i, j] = cutlass.Int32(i * 100 + j)


def test_nested_loops_over_an_argument_and_an_extent():
    with target("sm_80"):
        c = cute.compile(table, dyn(np.zeros((3, 5), np.int32)), cutlass.Int32(2))
        for r, cols, rows in ((3, 5, 3), (6, 2, 4), (2, 9, 0)):
            t = np.full((r, cols), -1, np.int32)
            c(dyn(t), cutlass.Int32(rows))
            want = np.full((r, cols), -1, np.int32)
            for i in range(rows):
                want[i] = [i * 100 + j for j in range(cols)]
            assert (t == want).all(), (r, cols, rows)


@cute.jit
def interleave(src: cute.Pointer, dst: cute.Pointer, m: int, k: int):
    # A scale-factor-like conversion: (m, k) row-major into blocks of 4 rows, k innermost within a block.
    s = cute.make_tensor(src, cute.make_layout((m, k), stride=(k, 1)))
    d = cute.make_tensor(dst, cute.make_layout(((4, m // 4), k), stride=((1, 4 * k), 4)))
    for i in cutlass.range(cute.size(s)):
        c = s.layout.get_hier_coord(i)
        d[c] = s[c]


def _interleave_model(a):
    m, k = a.shape
    out = np.zeros(m * k, a.dtype)
    for r in range(m):
        for col in range(k):
            out[r % 4 + (r // 4) * 4 * k + col * 4] = a[r, col]
    return out


@pytest.mark.parametrize("elements", [np.int8, np.float32, np.float64])
def test_an_element_copy_loop_moves_many_trips_at_once_as_one_trip_at_a_time_would(elements, monkeypatch):
    from warpweave._dsl.host import host_loop
    rng = np.random.default_rng(0)
    dtype = {np.int8: cutlass.Int8, np.float32: cutlass.Float32, np.float64: cutlass.Float64}[elements]

    def ptr(a):
        return make_ptr(dtype, a.ctypes.data, cute.AddressSpace.gmem)

    with target("sm_80"):
        bulk = cute.compile(interleave, ptr(np.zeros(4, elements)), ptr(np.zeros(4, elements)), 4, 1)
        monkeypatch.setattr(host_loop.host_loop_bulk, "plan", lambda loop: None)
        by_trip = cute.compile(interleave, ptr(np.zeros(4, elements)), ptr(np.zeros(4, elements)), 4, 1)
    assert bulk.host_actions[0].loop.bulk is not None and by_trip.host_actions[0].loop.bulk is None
    for m, k in ((4, 1), (8, 3), (64, 37)):
        a = rng.integers(-100, 100, (m, k)).astype(elements)
        outs = [np.zeros(m * k, elements) for _ in range(2)]
        bulk(ptr(a), ptr(outs[0]), m, k)
        by_trip(ptr(a), ptr(outs[1]), m, k)
        assert (outs[0] == _interleave_model(a)).all() and (outs[1] == outs[0]).all(), (m, k)


@cute.kernel
def clear(c: cute.Tensor):
    c[0] = cutlass.Float32(0.0)


@cute.jit
def per_chunk(c: cute.Tensor, chunk: cutlass.Int32):
    # One launch per chunk of `chunk` rows, the last one shorter; small problems also clear first, in the loop.
    m = cute.size(c, mode=[0])
    for start in range(0, m, chunk):
        if start == 0 and m < 10:
            clear(c).launch(grid=(1, 1, 1), block=(32, 1, 1))
        mark(c, start).launch(grid=(min(chunk, m - start), 1, 1), block=(32, 1, 1))


def _per_chunk_model(m, chunk):
    out = []
    for start in range(0, m, chunk):
        if start == 0 and m < 10:
            out.append(("clear", (1, 1, 1), None))
        out.append(("mark", (min(chunk, m - start), 1, 1), start))
    return out


def test_a_kernel_launched_in_a_loop_is_launched_at_each_trip_with_its_values(stand_in, tmp_path):
    with target("sm_80"):
        c = stand_in(cute.compile(per_chunk, dyn(np.zeros(16, np.float32)), cutlass.Int32(3)))
    first = True
    for m, chunk in ((1, 4), (8, 4), (9, 4), (30, 7), (0, 3)):
        for call in range(2):
            stand_in.launched.clear()
            c(dyn(np.zeros(m, np.float32)), cutlass.Int32(chunk))
            got = [(k.split("_")[0], g, int.from_bytes(p[-4:], "little", signed=True) if k == "mark" else None)
                   for k, g, p, _ in stand_in.launched]
            assert got == _per_chunk_model(m, chunk), (m, chunk)
            # the first call is the Python one, every later one the native path's
            assert all(path == ("python" if first else "native") for *_, path in stand_in.launched)
            first = False
    # exported C runs the loop too (test_host_loop_native.py runs it against the stand-in driver)
    h, o = c.export_to_c(file_path=str(tmp_path), file_name="per_chunk")
    assert os.path.getsize(o) > 0


@cute.jit
def halvings(out: cute.Tensor, n: cutlass.Int32):
    k = 0
    v = n
    while v > 1:
        v = v // 2
        k = k + 1
        out[k + 1] = v
    out[0] = k
    out[1] = v


def test_a_while_on_a_runtime_condition_runs_until_it_is_false_at_each_call():
    out = np.zeros(40, np.int32)
    with target("sm_80"):
        c = cute.compile(halvings, from_dlpack(out), cutlass.Int32(5))
        for n in (0, 1, 2, 5, 1000, 2**30):
            out[:] = -1
            c(from_dlpack(out), cutlass.Int32(n))
            k, v, seen = 0, n, []
            while v > 1:
                v //= 2
                k += 1
                seen.append(v)
            assert out[0] == k and out[1] == v and out[2:2 + k].tolist() == seen, n
            assert (out[2 + k:] == -1).all()


@cute.jit
def while_on_elements(t: cute.Tensor, n: cutlass.Int32):
    k = 0
    while t[k] != n:
        k = k + 1


@cute.jit
def carries_a_float(t: cute.Tensor, n: cutlass.Int32):
    acc = 0.0
    for i in range(n):
        acc = acc + 1.5
    t[0] = acc


@cute.jit
def carries_an_element(t: cute.Tensor, n: cutlass.Int32):
    best = 0
    for i in range(n):
        best = t[i]
    t[0] = best


@cute.jit
def zero_step(t: cute.Tensor, step: cutlass.Int32):
    for i in range(0, 4, step):
        t[i] = 1


def test_what_a_trip_cannot_do_is_an_error_at_the_users_line():
    x = dyn(np.zeros(8, np.int32))
    with target("sm_80"):
        with pytest.raises(DSLError, match=r"'acc' \(a float or a Boolean\) is reassigned inside the host loop") as e:
            cute.compile(carries_a_float, x, cutlass.Int32(2))
        assert f":{line_in(HERE, 'acc = 0.0') + 1}:" in str(e.value)
        with pytest.raises(DSLError, match=r"a number read from a tensor's elements cannot be carried") as e:
            cute.compile(carries_an_element, x, cutlass.Int32(2))
        assert f":{line_in(HERE, 'best = 0') + 1}:" in str(e.value)
        with pytest.raises(DSLError, match=r"the condition of the host while loop at line \d+ reads tensor elements") \
                as e:
            cute.compile(while_on_elements, x, cutlass.Int32(2))
        assert f":{line_in(HERE, 'while t[k] != n')}:" in str(e.value)
        c = cute.compile(zero_step, x, cutlass.Int32(1))
        with pytest.raises(DSLError, match=r"the host loop's step is 0 for these arguments") as e:
            c(x, cutlass.Int32(0))
        assert f":{line_in(HERE, 'range(0, 4, step)')}:" in str(e.value)


@cute.kernel
def chunk_rows(c: cute.Tensor, start: cutlass.Int32):
    bidx, _, _ = cute.arch.block_idx()
    tidx, _, _ = cute.arch.thread_idx()
    if tidx == 0:
        c[start + bidx] = cutlass.Float32(start)


@cute.jit
def chunks_on_gpu(c: cute.Tensor, chunk: cutlass.Int32):
    m = cute.size(c, mode=[0])
    for start in range(0, m, chunk):
        chunk_rows(c, start).launch(grid=(min(chunk, m - start), 1, 1), block=(32, 1, 1))


@requires_gpu
def test_the_gpu_runs_the_launches_of_each_trip():
    import torch
    c = cute.compile(chunks_on_gpu, dyn(torch.zeros(16, device="cuda")), cutlass.Int32(3))
    for m, chunk in ((1, 4), (9, 4), (100, 7)):
        x = torch.full((m,), -1.0, device="cuda")
        c(dyn(x), cutlass.Int32(chunk))
        torch.cuda.synchronize()
        assert x.cpu().tolist() == [float(r - r % chunk) for r in range(m)], (m, chunk)


@cute.jit
def interleave_static(s: cute.Tensor, d: cute.Tensor):
    # the conversion over tensors of static shapes: its bound is known while tracing
    dd = cute.make_tensor(d.iterator, cute.make_layout(((4, s.shape[0] // 4), s.shape[1]),
                                                       stride=((1, 4 * s.shape[1]), 4)))
    for i in cutlass.range(cute.size(s)):
        c = s.layout.get_hier_coord(i)
        dd[c] = s[c]


@pytest.mark.parametrize("m,k,as_host_loop", [(8, 3, False), (512, 128, True)])
def test_a_host_loop_of_many_static_trips_is_run_at_the_call_in_bulk(m, k, as_host_loop):
    # Static bounds with few trips run in Python while tracing; with many (a tensor's elements) the loop is
    # traced once and run at the call like one of runtime bounds, its copies in bulk. Either way the same result.
    from warpweave._dsl.tracing import loops
    assert (m * k >= loops.HOST_LOOP_STATIC_TRIPS) == as_host_loop
    a = np.random.default_rng(m).integers(-100, 100, (m, k)).astype(np.float32)
    out = np.zeros(m * k, np.float32)
    with target("sm_80"):
        c = cute.compile(interleave_static, from_dlpack(a), from_dlpack(out))
        loops = [x.loop for x in c.host_actions if hasattr(x, "loop")]
        assert bool(loops) == as_host_loop and all(x.bulk is not None for x in loops)
        c(from_dlpack(a), from_dlpack(out))
    assert (out == _interleave_model(a)).all()
