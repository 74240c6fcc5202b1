"""Method receivers of a dynamic region (objects it may change in place) that are not defined before it: one made
under a false const_expr and used under the same condition inside a run-time loop is simply not carried; one that
is really used there without a definition still names the variable and the user's line. An object a helper method
changes in place inside a run-time loop is carried by that loop."""
import dataclasses
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
import warpweave.pipeline as pipeline
from warpweave.cute.runtime import from_dlpack

from dsl_helpers import requires_gpu, target


def make(flag):
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        if cutlass.const_expr(flag):
            helper = cute.make_layout(4)
        acc = cutlass.Int32(0)
        for i in cutlass.range(n):
            if cutlass.const_expr(flag):
                acc = acc + cute.size(helper)
            acc = acc + i
        g[0] = acc

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


@pytest.mark.parametrize("flag", [False, True])
def test_receiver_under_a_static_condition(flag):
    with target("sm_80"):
        ptx = cute.compile(make(flag), from_dlpack(np.zeros(4, np.int32)), 3).info["ptx"]
    assert "st.global" in ptx


def test_receiver_used_without_a_definition_is_named():
    @cute.kernel
    def k(g: cute.Tensor, n: cutlass.Int32):
        for i in cutlass.range(n):
            if i > 0:
                state.advance()  # noqa: F821 - defined only inside the loop, on a later line
            state = cute.make_layout(4)
        g[0] = n

    @cute.jit
    def h(a, n: cutlass.Int32):
        k(a, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target("sm_80"), pytest.raises(Exception, match=r"test_control_flow_receivers\.py:\d+"):
        cute.compile(h, from_dlpack(np.zeros(4, np.int32)), 3)


# --- an object a helper changes in place, inside a run-time loop --------------------------------------------------
# QuACK's persistent GEMM producer: `while work_tile.is_valid_tile: state = self.load_tma(pipe, state, ...)`, whose
# load_tma advances the pipeline state in its own run-time loop over k-tiles and returns it. The while loop carries
# the state's values whether the helper's result is assigned back or the state is only passed to the method.

class _Loader:
    @cute.jit
    def load(self, state, k_tiles: cutlass.Int32):
        for _ in cutlass.range(k_tiles, unroll=1):
            state.advance()
        return state


def make_loop(assigned):
    @cute.kernel
    def k(g: cute.Tensor, tiles: cutlass.Int32, k_tiles: cutlass.Int32):
        loader = _Loader()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 4)
        tile = cutlass.Int32(0)
        while tile < tiles:
            if cutlass.const_expr(assigned):
                state = loader.load(state, k_tiles)
            else:
                loader.load(state, k_tiles)
            tile = tile + 1
        g[0] = state.index
        g[1] = state.phase
        g[2] = state.count

    @cute.jit
    def h(a, tiles: cutlass.Int32, k_tiles: cutlass.Int32):
        k(a, tiles, k_tiles).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return h


@pytest.mark.parametrize("assigned", [True, False])
def test_a_helper_method_advancing_a_state_inside_a_while_loop_is_carried(assigned):
    with target("sm_90a"):
        ptx = cute.compile(make_loop(assigned), from_dlpack(np.zeros(4, np.int32)), 3, 5).info["ptx"]
    # the three values stored after the loop are the while loop's results, registers, not the state it entered with
    stored = [v.strip() for group in re.findall(r"st\.global(?:\.v\d)?\.b32 \t\[%rd\d+(?:\+\d+)?\], \{?([^}; ]+(?:, [^};]+)*)\}?;",
                                                ptx) for v in group.split(",")]
    assert len(stored) == 3 and all(v.startswith("%r") for v in stored), stored


@requires_gpu
@pytest.mark.parametrize("assigned", [True, False])
def test_a_helper_method_advancing_a_state_inside_a_while_loop_counts_every_advance(assigned):
    import torch
    for tiles, k_tiles in ((3, 5), (0, 7), (2, 2)):
        g = torch.zeros(4, dtype=torch.int32, device="cuda")
        cute.compile(make_loop(assigned), from_dlpack(g), tiles, k_tiles)(from_dlpack(g), tiles, k_tiles)
        torch.cuda.synchronize()
        n = tiles * k_tiles  # a producer starts in phase 1, at stage 0 of 4
        assert g.tolist()[:3] == [n % 4, 1 ^ ((n // 4) % 2), n], (tiles, k_tiles, g.tolist())


# --- objects a @cute.jit method of the program's class changes, or that a helper returns ------------------------
# (CuTe DSL's attention kernels: `if masked: consumer, n = self.compute(..., consumer, ...)` where compute advances
# the consumer in a run-time loop and sets the tiled MMA's ACCUMULATE field.)

class _Steps:
    @cute.jit
    def consume(self, x: cute.Tensor, state, n: cutlass.Int32):
        for i in cutlass.range(n, unroll=1):
            x[state.index] = cutlass.Float32(state.phase)
            state.advance()

    @cute.jit
    def consume_and_return(self, x: cute.Tensor, state, n: cutlass.Int32):
        self.consume(x, state, n)
        return state, n + 1

    @cute.kernel
    def kernel(self, x: cute.Tensor, n: cutlass.Int32, returned: cutlass.Constexpr):
        tidx, _, _ = cute.arch.thread_idx()
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 4)
        m = n
        if tidx < 16:
            if cutlass.const_expr(returned):
                state, m = self.consume_and_return(x, state, n)
            else:
                self.consume(x, state, n)
        x[31] = cutlass.Float32(state.count + m)   # after the if: the state whichever branch ran

    @cute.jit
    def __call__(self, x: cute.Tensor, n: cutlass.Int32, returned: cutlass.Constexpr):
        self.kernel(x, n, returned).launch(grid=(1, 1, 1), block=(32, 1, 1))


@pytest.mark.parametrize("returned", [False, True])
def test_an_object_a_method_of_self_changes_in_a_branch_is_carried_out_of_it(returned):
    with target("sm_90a"):
        c = cute.compile(_Steps(), from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(3), returned)
    assert re.search(r"st\.global\.b32 \t\[%rd\d+\+124\], %r\d+;", c.ptx), c.ptx


# --- a variable rebound to a new object of its type each trip ----------------------------------------------------
# (a library's tile scheduler, as CuTe DSL's attention helpers write it: get_current_work() returns
# WorkTileInfo((m, 0, (b, h)), valid), a new one each call; the loop carries the variable's values.)

class _Walk:
    def __init__(self, start, end):
        self.idx, self.end = start, end

    def work(self):
        return cutlass.utils.WorkTileInfo((self.idx * 2, 0, (self.idx, self.idx + 1)), self.idx < self.end)

    def advance(self):
        self.idx = self.idx + 1

    def _ww_carry_get(self):
        return [self.idx]

    def _ww_carry_set(self, values):
        self.idx = values[0]


def test_a_variable_rebound_to_a_new_object_of_its_type_carries_its_values():
    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        walk = _Walk(cutlass.Int32(0), n)
        work = walk.work()
        while work.is_valid_tile:
            m, zero, (b, h) = work.tile_idx
            x[b] = cutlass.Float32(m + zero + h)
            walk.advance()
            work = walk.work()
        x[31] = cutlass.Float32(work.tile_idx[2][1])   # after the loop: the last (invalid) tile's

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_90a"):
        c = cute.compile(host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(3))
    assert re.search(r"st\.global\.(?:b32|f32) \t\[%rd\d+\+124\], %(?:r|f)\d+;", c.ptx), c.ptx


# --- an object of the program's own class (CuTe DSL's IR-values protocol) that a method changes in place ---------
# (CuTe DSL's cooperative-launch tutorial: a grid barrier whose arrive_and_wait() flips its phase field, called in a
# run-time loop; without carrying the object every trip would wait for the phase of the first.)

class _Flipper:
    def __init__(self, ptr, phase=None):
        self.ptr = ptr
        self.phase = cutlass.Int32(0) if phase is None else phase

    @cute.jit
    def flip(self):
        self.phase = self.phase ^ 1

    def __extract_mlir_values__(self):
        from warpweave.cutlass_dsl import extract_mlir_values
        assert len(extract_mlir_values(self.ptr)) == 1  # a pointer is one IR value, as in CuTe DSL
        return extract_mlir_values(self.ptr) + extract_mlir_values(self.phase)

    def __new_from_mlir_values__(self, values):
        from warpweave.cutlass_dsl import new_from_mlir_values
        return _Flipper(new_from_mlir_values(self.ptr, [values[0]]), new_from_mlir_values(self.phase, [values[1]]))


@cute.kernel
def _flips(x: cute.Tensor, n: cutlass.Int32):
    f = _Flipper(x.iterator)
    for i in cutlass.range(n, unroll=1):
        f.ptr[i] = cutlass.Float32(f.phase)  # the phase this trip starts with
        f.flip()
    x[31] = cutlass.Float32(f.phase)


@cute.jit
def _flips_host(x: cute.Tensor, n: cutlass.Int32):
    _flips(x, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_an_object_of_the_program_changed_in_place_in_a_loop_is_carried_by_it():
    with target("sm_80"):
        c = cute.compile(_flips_host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(3))
    # the phase is loop-carried: flipped each trip (an xor in the loop), and stored after it from a register
    assert re.search(r"xor\.b32\s+%r\d+, %r\d+, 1;", c.ptx), c.ptx
    assert re.search(r"st\.global\.(?:b32|f32) \t\[%rd\d+\+124\], %(?:r|f)\d+;", c.ptx), c.ptx


@requires_gpu
def test_an_object_of_the_program_changed_in_place_in_a_loop_flips_every_trip():
    import torch
    for n in (0, 1, 4, 7):
        x = torch.full((32,), -1.0, device="cuda")
        cute.compile(_flips_host, from_dlpack(x), cutlass.Int32(n))(from_dlpack(x), cutlass.Int32(n))
        torch.cuda.synchronize()
        assert x[:n].tolist() == [float(i % 2) for i in range(n)] and x[31].item() == n % 2, (n, x.tolist())


# The same class written in a notebook's cell: its module (the notebook's) has no file.
_CELL = '''
class CellFlipper:
    def __init__(self, phase):
        self.phase = phase

    def flip(self):
        self.phase = self.phase ^ 1

    def __extract_mlir_values__(self):
        return extract_mlir_values(self.phase)

    def __new_from_mlir_values__(self, values):
        return CellFlipper(new_from_mlir_values(self.phase, values))
'''


def _cell_class():
    import linecache
    from warpweave.cutlass_dsl import extract_mlir_values, new_from_mlir_values
    linecache.cache["<cell 7>"] = (len(_CELL), None, _CELL.splitlines(True), "<cell 7>")
    scope = {"__name__": "__notebook_cells__", "extract_mlir_values": extract_mlir_values,
             "new_from_mlir_values": new_from_mlir_values}
    exec(compile(_CELL, "<cell 7>", "exec"), scope)
    return scope["CellFlipper"]


def test_an_object_of_a_notebook_cells_class_changed_in_place_in_a_loop_is_carried_by_it():
    cell_flipper = _cell_class()

    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        f = cell_flipper(cutlass.Int32(0))
        for i in cutlass.range(n, unroll=1):
            f.flip()
        x[31] = cutlass.Float32(f.phase)

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_80"):
        c = cute.compile(host, from_dlpack(np.zeros(32, np.float32)), cutlass.Int32(3))
    assert re.search(r"st\.global\.(?:b32|f32) \t\[%rd\d+\+124\], %(?:r|f)\d+;", c.ptx), c.ptx


# --- a non-persistent scheduler's tile: validity a Python bool ----------------------------------------------------
# (CuTe DSL's attention helpers without persistence: the CTA's one tile is valid, the next is not; a dynamic branch
# around the `while work.is_valid_tile` loop carries the tile out of the branch.)

class _OneTile:
    def __init__(self, first):
        self.first = first

    def work(self):
        return cutlass.utils.WorkTileInfo((cutlass.Int32(7), 0, (1, 2)), self.first)

    def advance(self):
        self.first = False


def test_a_tile_valid_by_a_python_bool_is_carried_through_a_dynamic_branch():
    @cute.kernel
    def k(x: cute.Tensor, n: cutlass.Int32):
        sched = _OneTile(True)
        work = sched.work()
        if n > 0:
            while work.is_valid_tile:        # static: one trip
                x[0] = cutlass.Float32(work.tile_idx[0])
                sched.advance()
                work = sched.work()
        x[1] = cutlass.Float32(work.is_valid_tile)   # after the branch: a run-time Boolean (n > 0 -> False)

    @cute.jit
    def host(x: cute.Tensor, n: cutlass.Int32):
        k(x, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_90a"):
        c = cute.compile(host, from_dlpack(np.zeros(4, np.float32)), cutlass.Int32(3))
    assert '"scf.if"' in c.ir and "scf.while" not in c.ir


# --- a dataclass of the program's own, its fields set in place in a run-time branch --------------------------------
# (CuTe DSL's task-scheduling tutorials: resources are dataclasses whose state fields are declared init=False and set
# in methods; `self.scale_d = True` in a branch, the field a Boolean before it.)

@dataclasses.dataclass
class _Resource:
    rows: int
    flag: object = dataclasses.field(init=False, default=None)
    count: object = dataclasses.field(init=False, default=None)

    def __post_init__(self):
        self.flag = cutlass.Boolean(False)
        self.count = cutlass.Int32(0)

    @cute.jit
    def step(self, n: cutlass.Int32):
        if n > self.rows:
            self.flag = True          # a Python bool where the field held a Boolean
            self.count = self.count + n


def test_a_dataclass_with_fields_not_taken_by_init_is_carried_through_a_branch_that_sets_them():
    @cute.kernel
    def k(out: cute.Tensor, n: cutlass.Int32):
        r = _Resource(3)
        r.step(n)
        out[0] = cutlass.Float32(r.count)
        out[1] = cutlass.Float32(r.flag)

    @cute.jit
    def host(out: cute.Tensor, n: cutlass.Int32):
        k(out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_80"):
        c = cute.compile(host, from_dlpack(np.zeros(2, np.float32)), cutlass.Int32(5))
    # the branch yields the flag (i1) and the count (i32), which the stores after it read
    assert re.search(r'"scf\.if".*\n', c.ir) and re.search(r"selp|@%p", c.ptx), c.ptx


# --- a protocol object whose number field is set to a run-time extent in a loop ------------------------------------
# (a library's single-tile scheduler ends its walk with `self._tile_idx = params.total_blocks`, a count made of the
# tensors' run-time shapes: a symbolic extent here, where it held an Int32 before the loop.)

class _TileWalk:
    def __init__(self, total, idx):
        self.total = total
        self._idx = idx

    def __extract_mlir_values__(self):
        return cutlass.extract_mlir_values(self._idx)

    def __new_from_mlir_values__(self, values):
        return _TileWalk(self.total, cutlass.new_from_mlir_values(self._idx, values))

    def valid(self):
        return self._idx < self.total

    def finish(self):
        self._idx = self.total


def test_a_protocol_object_field_set_to_a_run_time_extent_in_a_loop_keeps_its_number_type():
    @cute.kernel
    def k(x: cute.Tensor):
        bidx, _, _ = cute.arch.block_idx()
        w = _TileWalk(x.shape[0], bidx)  # a symbolic extent (the tensor's run-time length)
        while w.valid():
            x[w._idx] = cutlass.Float32(1.0)
            w.finish()

    @cute.jit
    def host(x: cute.Tensor):
        k(x).launch(grid=(1, 1, 1), block=(1, 1, 1))

    with target("sm_80"):
        c = cute.compile(host, from_dlpack(np.zeros(8, np.float32)).mark_layout_dynamic())
    assert "scf.while" in c.ir and "st.global" in c.ptx
