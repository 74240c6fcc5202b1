"""cutlass.Array and the values around it, as CuTe DSL's experimental programs use them: shared-memory, register and
global arrays (a tensor argument annotated cutlass.Array), element, slice and vector accesses, masks; cutlass.Vector
of any rank and cutlass.vector; the IR-values protocol structured (cutlass.base_dsl.dsl); cutlass.Swizzle,
GridConstant, numeric types' .bytes. Compiled without a GPU (properties read from the trace and the PTX); the
round trips through memory run on the GPU machine."""
import dataclasses
import itertools
import os
import re
import typing

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.constexpr import annotated_type, is_grid_constant
from warpweave._dsl.device.array import address_of
from warpweave.base_dsl.dsl import debug_print_mlir_values, extract_mlir_values, new_from_mlir_values
from warpweave.cute.runtime import from_dlpack, make_fake_compact_tensor

from dsl_helpers import line_in, requires_gpu, target

THIS = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fresh_compiles(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")  # each compilation traces here (trace-time records below)


def compile_kernel(body, *tensors, arch="sm_90a", block=32):
    """Compiles a kernel running body(*arrays) over the given fake tensors, each seen as a cutlass.Array."""
    @cute.kernel
    def k(a: cutlass.Array, b: cutlass.Array):
        body(a, b)

    @cute.jit
    def h(a: cutlass.Array, b: cutlass.Array):
        k(a, b).launch(grid=[1, 1, 1], block=[block, 1, 1])

    if not tensors:
        tensors = (make_fake_compact_tensor(cutlass.Float32, (64,), assumed_align=16),) * 2
    with target(arch):
        return cute.compile(h, *tensors)


def raises_at(exc, text, marker, body, *tensors):
    with pytest.raises(exc, match=text) as e:
        compile_kernel(body, *tensors)
    assert e.value.location == (THIS, line_in(THIS, "# " + marker)), (e.value.location, str(e.value))


# --- shared memory ------------------------------------------------------------------------------------------------

SMEM_CASES = [(cutlass.Float32, (2, 4), None), (cutlass.Int64, 3, 8), (cutlass.Float16, 5, 128),
              (cutlass.Int8, (3, 3), None), (cutlass.Int32, 1, 4), (cutlass.Float64, (2,), 256), (cutlass.Uint8, 7, 16)]


@pytest.mark.parametrize("order", [0, 1, 2])
def test_shared_arrays_of_different_calls_do_not_overlap_and_keep_their_alignment(order):
    cases = list(itertools.permutations(SMEM_CASES))[order * 97]
    seen = []

    def body(a, b):
        for dtype, shape, align in cases:
            arr = cutlass.Array(dtype, shape, space=cutlass.AddressSpace.smem, alignment=align)
            start = arr.iterator.offset * dtype.bytes  # bytes from the kernel's shared-memory base
            n = int(np.prod(shape)) * dtype.bytes
            seen.append((start, start + n, align or dtype.bytes))
            arr[(0,) * len(arr.shape)] = dtype(1)

    compile_kernel(body)
    assert len(seen) == len(cases)
    for (s0, e0, al), (s1, e1, _) in itertools.combinations(seen, 2):
        assert e0 <= s1 or e1 <= s0, seen
    assert all(s % al == 0 for s, _, al in seen), seen


def test_a_shaped_array_is_row_major_and_a_subview_starts_further_on():
    checked = []

    def body(a, b):
        s = cutlass.Array(cutlass.Float32, (3, 5), space=cutlass.AddressSpace.smem)
        for i, j in itertools.product(range(3), range(5)):
            assert s.tensor.layout((i, j)) == i * 5 + j
        assert s.shape == (3, 5) and s.strides == (5, 1) and s.space is cutlass.AddressSpace.smem
        sub = s.subview(7)
        assert sub.iterator.offset - s.iterator.offset == 7 and sub.shape == s.shape
        assert s.subview((2, 1)).iterator.offset - s.iterator.offset == 11
        checked.append(True)

    compile_kernel(body)
    assert checked


def test_a_row_of_an_array_is_a_view_of_the_same_memory():
    checked = []

    def body(a, b):
        s = cutlass.Array(cutlass.Float32, (4, 8), space=cutlass.AddressSpace.smem)
        row = s[2, :]
        col = s[:, 3]
        assert row.shape == (8,) and row.iterator.offset - s.iterator.offset == 16 and row.strides == (1,)
        assert col.shape == (4,) and col.iterator.offset - s.iterator.offset == 3 and col.strides == (8,)
        assert s.data_ptr((2, 5)).offset == row.data_ptr(5).offset  # row[j] is s[2, j]
        with pytest.raises(ValueError, match="sub-array takes `:` for whole modes"):
            s[1, 2:4]
        checked.append(True)

    compile_kernel(body)
    assert checked


def test_a_view_without_a_shape_is_read_at_flat_positions_and_make_ptr_takes_a_pointer():
    checked = []

    def body(a, b):
        s = cutlass.Array(cutlass.Float32, 8, space=cutlass.AddressSpace.smem)
        v = cutlass.Array(s.data_ptr() + 2, dtype=cutlass.Int32)
        assert v.shape is None and v.dtype is cutlass.Int32 and v.iterator.offset - s.iterator.offset == 2
        v[3] = cutlass.Int32(1)  # s's element 5, as an Int32
        with pytest.raises(TypeError, match="flat positions only"):
            v[0, 1]
        w = cutlass.Array(s.ir_value(), dtype=cutlass.Float32, shape=(2, 4))  # over an IR pointer value
        assert w.shape == (2, 4) and w.space is cutlass.AddressSpace.smem
        p = cute.make_ptr(cutlass.Int64, s.data_ptr(), mem_space=cutlass.AddressSpace.smem)
        assert p.dtype is cutlass.Int64 and p.memspace == "smem"
        checked.append(True)

    compile_kernel(body)
    assert checked


def test_smem_array_stores_land_at_their_row_major_byte_offsets():
    def body(a, b):
        s = cutlass.Array(cutlass.Float32, (2, 4), space=cutlass.AddressSpace.smem)
        t = cutlass.Array(cutlass.Int64, 3, space=cutlass.AddressSpace.smem, alignment=8)
        s[1, 0] = cutlass.Float32(7.0)
        t[2] = cutlass.Int64(9)
        b[0] = s[1, 0]
        b[1] = cutlass.Float32(t[2])

    ptx = compile_kernel(body).ptx
    assert re.search(r"st\.shared\.(b32|f32)\s+\[[^\]+]+\+16\]", ptx), ptx  # s[1, 0]: 4 floats in
    assert re.search(r"st\.shared\.(b64|u64)\s+\[[^\]+]+\+48\]", ptx), ptx  # after s's 32 bytes, t[2]


# --- global arrays: slices, vectors, masks ------------------------------------------------------------------------

def vector_copy(src, dst):
    tx, _, _ = cute.arch.thread_idx()
    idx = tx * 4
    dst[idx:4] = src[idx:4] + cutlass.Float32(1.0)


def test_a_slice_is_one_vector_access_of_count_elements():
    ptx = compile_kernel(vector_copy).ptx
    assert re.search(r"ld\.global\.v4\.(b32|f32)", ptx) or re.search(r"ld\.global\.v2\.b64", ptx), ptx
    assert re.search(r"st\.global\.v4\.(b32|f32)", ptx) or re.search(r"st\.global\.v2\.b64", ptx), ptx


def test_load_store_qualifiers_reach_the_ptx():
    def body(src, dst):
        dst.store(src.load(1, is_volatile=True), 1, is_volatile=True)
        dst.store(src.load(2, is_invariant=True), 2)
        dst.store(src.load(4, vector_size=4, alignment=16), 4, alignment=16)

    ptx = compile_kernel(body).ptx
    assert re.search(r"ld\.volatile\.global", ptx) and re.search(r"st\.volatile\.global", ptx), ptx
    assert re.search(r"ld\.global\.nc", ptx), ptx


def test_masked_accesses_touch_only_the_lanes_of_the_mask():
    def body(src, dst):
        tx, _, _ = cute.arch.thread_idx()
        mask = cutlass.Array(cutlass.Boolean, 4)
        for i in range(4):
            mask[i] = tx * 4 + i < 13
        v = src.masked_load(tx * 4, 4, mask, default=cutlass.Float32(0.0))
        dst.masked_store(tx * 4, v, mask)

    ptx = compile_kernel(body).ptx
    # each lane's access is behind its own predicate: no unconditional vector access of the four
    assert len(re.findall(r"ld\.global\.(b32|f32)", ptx)) == 4, ptx
    assert len(re.findall(r"st\.global\.(b32|f32)", ptx)) == 4, ptx


@requires_gpu
def test_array_slices_and_masked_copies_round_trip_on_the_gpu():
    import torch

    @cute.kernel
    def k(src: cutlass.Array, dst: cutlass.Array, valid: cutlass.Int32):
        tx, _, _ = cute.arch.thread_idx()
        idx = tx * 4
        mask = cutlass.Array(cutlass.Boolean, 4)
        for i in range(4):
            mask[i] = idx + i < valid
        dst.masked_store(idx, src[idx:4] * cutlass.Float32(2.0), mask)

    @cute.jit
    def h(src: cutlass.Array, dst: cutlass.Array, valid: cutlass.Int32):
        k(src, dst, valid).launch(grid=[1, 1, 1], block=[4, 1, 1])

    src = torch.arange(16, dtype=torch.float32, device="cuda")
    dst = torch.full((16,), -1.0, device="cuda")
    h(from_dlpack(src), from_dlpack(dst), 13)
    torch.cuda.synchronize()
    expect = torch.where(torch.arange(16, device="cuda") < 13, src * 2, torch.full_like(src, -1.0))
    assert torch.equal(dst, expect)


# --- mistakes at the user's line ----------------------------------------------------------------------------------

def test_bad_shapes_types_and_counts_are_refused_at_the_users_line():
    smem = cutlass.AddressSpace.smem

    def zero_extent(a, b):
        cutlass.Array(cutlass.Float32, (4, 0), space=smem)  # SHAPE0

    def not_a_type(a, b):
        cutlass.Array("float32", 4)  # DTYPE

    def dynamic_shape(a, b):
        cutlass.Array(cutlass.Float32, cute.arch.thread_idx()[0], space=smem)  # DYNSHAPE

    def dynamic_count(a, b):
        b[0] = a[0:cute.arch.thread_idx()[0]][0]  # SLICE

    def odd_alignment(a, b):
        cutlass.Array(cutlass.Float32, 4, space=smem, alignment=12)  # ALIGN

    def global_allocation(a, b):
        cutlass.Array(cutlass.Float32, 4, space=cutlass.AddressSpace.gmem)  # GMEM

    def float_index(a, b):
        b[0] = a[cutlass.Float32(1.0)]  # FINDEX

    raises_at(TypeError, "a flat position is given by an integer", "FINDEX", float_index)
    raises_at(ValueError, "extent below 1", "SHAPE0", zero_extent)
    raises_at(TypeError, "an element type", "DTYPE", not_a_type)
    raises_at(TypeError, "known while tracing", "DYNSHAPE", dynamic_shape)
    raises_at(ValueError, "count is a positive int", "SLICE", dynamic_count)
    raises_at(ValueError, "power of two", "ALIGN", odd_alignment)
    raises_at(ValueError, "gmem memory comes as a kernel argument", "GMEM", global_allocation)


def test_a_mask_of_another_length_and_vectors_of_other_shapes_are_refused():
    def mask_len(a, b):
        m = cutlass.Vector.from_elements((True, False), cutlass.Boolean)
        b.masked_store(0, a.load(0, 4), m)  # MASK

    def vector_shapes(a, b):
        b.store(a[0:4] + a[0:2], 0)  # VSHAPE

    raises_at(ValueError, "mask of 2 lanes for 4 elements", "MASK", mask_len)
    raises_at(ValueError, r"shapes \(4,\) and \(2,\) differ", "VSHAPE", vector_shapes)


# --- Vector and cutlass.vector ------------------------------------------------------------------------------------

def test_vectors_of_rank_two_slice_broadcast_and_outer_product_as_numpy_does():
    def body(a, b):
        row = cutlass.Vector.from_elements((1.0, 2.0, 3.0, 4.0), cutlass.Float32)
        m = cutlass.vector.broadcast_to(row, (2, 4))
        sub = m[:, 1:3]
        assert m.shape == (2, 4) and sub.shape == (2, 2)
        op = cutlass.vector.outerproduct(cutlass.Vector.from_elements((1.0, 2.0), cutlass.Float32),
                                         cutlass.Vector.from_elements((3.0, 4.0, 5.0), cutlass.Float32))
        assert op.shape == (2, 3)
        b.store(cutlass.vector.broadcast_to(sub, (2, 2)).reshape((4,)), 0, alignment=16)
        b.store(op.reshape((6,)), 8, alignment=16)

    ptx = compile_kernel(body).ptx
    # the values are constants: stored as f32 immediates (0f...) or two to a 64-bit immediate
    floats = [np.frombuffer(bytes.fromhex(h)[::-1], np.float32)[0] for h in re.findall(r"0f([0-9A-F]{8})", ptx)]
    for w in re.findall(r"st\.global\.b64\s+\[[^\]]*\],\s*(\d+);", ptx):
        floats.extend(np.frombuffer(int(w).to_bytes(8, "little"), np.float32))
    expect_sub = np.broadcast_to(np.array([1, 2, 3, 4], np.float32), (2, 4))[:, 1:3].ravel()
    expect_op = np.outer([1, 2], [3, 4, 5]).ravel()
    text = " ".join(str(x) for x in floats)
    for x in list(expect_sub) + list(expect_op):
        assert str(np.float32(x)) in text, (x, floats)


def test_vector_arithmetic_is_one_vector_op_per_operator():
    def body(a, b):
        v = a[0:4]
        b[0:4] = v * cutlass.Float32(2.0) + v

    ptx = compile_kernel(body, arch="sm_100a").ptx
    # v * 2 + v on two pairs of lanes: paired f32 ops (LLVM may write v * 2 as v + v)
    assert len(re.findall(r"(add|mul|fma)\.rn\.f32x2", ptx)) >= 2, ptx


# --- pointers, address_of -----------------------------------------------------------------------------------------

def test_primitives_read_one_address_from_arrays_tensors_and_pointers():
    checked = []

    def body(a, b):
        s = cutlass.Array(cutlass.Int64, 2, space=cutlass.AddressSpace.smem, alignment=8)
        assert address_of(s) is s.iterator and address_of(s.data_ptr()) is s.iterator
        assert address_of(s.tensor) is s.iterator and address_of(a) is a.iterator
        with pytest.raises(TypeError, match="pointer, a cutlass.Array or a tensor"):
            address_of(3)
        checked.append(True)

    compile_kernel(body)
    assert checked


# --- the IR-values protocol, structured ---------------------------------------------------------------------------

@dataclasses.dataclass
class Coord:
    x: cutlass.Float32
    y: cutlass.Float32


class Body:
    def __init__(self, pos: Coord, forces: list):
        self.pos, self.forces = pos, forces

    def __extract_mlir_values__(self):
        return {"pos": extract_mlir_values(self.pos, structured=True),
                "forces": [extract_mlir_values(f, structured=True) for f in self.forces]}

    def __new_from_mlir_values__(self, values):
        return Body(new_from_mlir_values(self.pos, values["pos"], structured=True),
                    [new_from_mlir_values(f, v, structured=True) for f, v in zip(self.forces, values["forces"])])


def test_structured_values_round_trip_and_a_loop_names_the_field_whose_type_changes():
    checked = []

    def body(a, b):
        o = Body(Coord(cutlass.Float32(1.0), cutlass.Float32(2.0)), [cutlass.Float32(3.0), cutlass.Int32(4)])
        flat = extract_mlir_values(o)
        assert [str(v.type) for v in flat] == ["f32", "f32", "f32", "i32"]
        again = new_from_mlir_values(o, flat)
        assert isinstance(again.pos, Coord) and type(again.forces[1]) is cutlass.Int32
        tree = extract_mlir_values(o, structured=True)
        assert list(tree) == ["pos", "forces"] and list(tree["pos"]) == ["x", "y"] and len(tree["forces"]) == 2
        text = debug_print_mlir_values(o)
        assert "pos:" in text and "x: f32" in text and "[1]: i32" in text
        checked.append(True)

    compile_kernel(body)
    assert checked

    @cute.jit  # a dynamic loop: the preprocessor rewrites jit functions' loops
    def bad(a, b):
        o = Body(Coord(cutlass.Float32(1.0), cutlass.Float32(2.0)), [cutlass.Float32(3.0)])
        for i in range(a.shape[0]):
            o = Body(Coord(cutlass.Int32(1), o.pos.y), o.forces)  # CHANGES
        b[0] = o.pos.y

    raises_at(TypeError, r"pos\.x is f32 before and i32 after", "CHANGES", bad)


def test_a_dataclass_of_numbers_is_carried_through_a_dynamic_loop():
    @cute.jit
    def body(a, b):
        c = Coord(cutlass.Float32(0.0), cutlass.Float32(1.0))
        for i in range(a.shape[0]):
            c = Coord(c.x + a[i], c.y * cutlass.Float32(2.0))
        b[0] = c.x
        b[1] = c.y

    ptx = compile_kernel(body).ptx
    assert re.search(r"\$L__BB\d+_\d+:", ptx), ptx  # a loop in the kernel, not 64 copies of its body
    assert ptx.count("ld.global") < 8, ptx


# --- values around the array --------------------------------------------------------------------------------------

def test_numeric_types_know_their_bytes():
    sizes = {cutlass.Int8: 1, cutlass.Int16: 2, cutlass.Int32: 4, cutlass.Int64: 8, cutlass.Float16: 2,
             cutlass.BFloat16: 2, cutlass.Float32: 4, cutlass.Float64: 8, cutlass.Boolean: 1,
             cutlass.Float8E4M3FN: 1, cutlass.Uint8: 1}
    assert {t: t.bytes for t in sizes} == sizes


def test_packed_float_containers_are_their_values_side_by_side():
    for t, e, n in ((cutlass.Float4E2M1FNx2, cutlass.Float4E2M1FN, 2),
                    (cutlass.Float6E2M3FNx4, cutlass.Float6E2M3FN, 4),
                    (cutlass.Float6E3M2FNx4, cutlass.Float6E3M2FN, 4)):
        assert t.element_type is e and t.elements == n and t.width == n * e.width and t.bytes * 8 == t.width


def test_swizzles_permute_addresses_within_their_span_and_keep_the_low_bits():
    for name in ("none", "s32b", "s64b", "s128b"):
        sw = cutlass.Swizzle.from_name(name)
        assert sw.name == name and sw == cutlass.Swizzle(sw.bbits, sw.mbase, sw.sshift)
        span = max(sw.span_bytes, 1024)
        image = [sw.apply(x) for x in range(span)]
        assert sorted(image) == list(range(span))  # a permutation of each span
        assert all(y % (1 << sw.mbase) == x % (1 << sw.mbase) for x, y in zip(range(span), image))
    with pytest.raises(ValueError, match="unknown swizzle"):
        cutlass.Swizzle.from_name("s16b")


def test_grid_constant_is_an_annotated_type():
    ann = cutlass.GridConstant[cutlass.Int64]
    assert is_grid_constant(ann) and annotated_type(ann) is cutlass.Int64
    assert typing.get_origin(ann) is typing.Annotated
    assert is_grid_constant("cutlass.GridConstant[cuda.TensorMap]") and not is_grid_constant(cutlass.Array)


def test_a_sym_int_argument_alone_or_in_a_tuple_is_a_runtime_integer():
    @cute.kernel
    def k(a: cutlass.Array, n: cutlass.Int64):
        a[0] = cutlass.Float32(n)

    seen = []

    @cute.jit
    def h(a: cute.Tensor, mnk, m0):
        seen.append((type(mnk[0]), type(m0), cute.ceil_div(mnk[0], 64)))
        k(a, mnk[0] + m0).launch(grid=[cute.ceil_div(m0, 64), 1, 1], block=[32, 1, 1])

    m, n = cute.sym_int64(), cute.sym_int32(divisibility=8)
    t = make_fake_compact_tensor(cutlass.Float32, (m, 16), stride_order=(1, 0), assumed_align=16)
    with target("sm_90a"):
        assert cute.compile(h, t, (m, 16, 8), n).cubin
    (t0, t1, g), = seen
    assert t0 is cutlass.Int64 and t1 is cutlass.Int32 and not isinstance(g, int)  # a runtime grid
