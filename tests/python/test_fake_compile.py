"""Compiling without memory or a GPU: sym_int extents, fake tensors and streams, compile options, host-side
decisions and prints, pointers and lists of tensors as arguments, and CuTe DSL's reading of stride_order."""
import itertools
import os
import random
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import (from_dlpack, make_fake_compact_tensor, make_fake_stream, make_fake_tensor,
                                    make_ptr)

from dsl_helpers import target


@cute.kernel
def scale_kernel(x: cute.Tensor, y: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * 128 + tidx
    if i < n:
        y[i] = x[i] * 3.0


@cute.jit
def scale(x: cute.Tensor, y: cute.Tensor, stream):
    n = cute.size(x)
    scale_kernel(x, y, n).launch(grid=[(n + 127) // 128, 1, 1], block=[128, 1, 1], stream=stream)


def dim_order(strides):
    """torch's Tensor.dim_order(): the modes from the largest stride to the smallest."""
    return tuple(sorted(range(len(strides)), key=lambda i: -strides[i]))


def test_fake_compact_strides_rank_like_cute_dsl():
    rng = random.Random(5)
    for _ in range(50):
        rank = rng.randint(1, 4)
        shape = tuple(rng.randint(2, 7) for _ in range(rank))
        order = tuple(rng.sample(range(rank), rank))
        t = make_fake_compact_tensor(cutlass.Float32, shape, stride_order=order)
        # CuTe DSL's stride_order ranks the strides: order[i] == 0 for the contiguous mode. The same tensor made by
        # numpy lays the modes out from the largest rank (outermost) to rank 0, then views them back.
        outer_first = sorted(range(rank), key=lambda m: -order[m])
        ref = np.empty(tuple(shape[i] for i in outer_first), np.float32).transpose(
            [outer_first.index(i) for i in range(rank)])
        assert t.stride == tuple(s // 4 for s in ref.strides), (shape, order)
        assert dim_order(t.stride) == tuple(outer_first)
    # CuTe DSL's own figures: (64, 32, 2) with (1, 0, 2) is (32, 1, 2048); the default is column-major.
    assert make_fake_compact_tensor(cutlass.Float16, (64, 32, 2), stride_order=(1, 0, 2)).stride == (32, 1, 2048)
    assert make_fake_compact_tensor(cutlass.Float16, (64, 32, 2), stride_order=(2, 0, 1)).stride == (64, 1, 32)
    assert make_fake_compact_tensor(cutlass.Float16, (3, 4, 5)).stride == (1, 3, 12)
    with pytest.raises(ValueError, match="not a permutation"):
        make_fake_compact_tensor(cutlass.Float32, (3, 4), stride_order=(0, 0))


def test_tensors_answer_their_alignment_under_cute_dsls_private_name_too():
    """Code written against CuTe DSL reads a tensor's alignment as _assumed_align (QuACK's tests do): the same number
    as assumed_align for fake tensors of every width and for from_dlpack's, and it cannot be set apart from it."""
    n = cute.sym_int()
    for dtype, align in itertools.product((cutlass.Int4, cutlass.Float4E2M1FN, cutlass.Boolean, cutlass.Float16,
                                           cutlass.Float32), (1, 2, 4, 8, 16)):
        t = make_fake_tensor(dtype, (n,), stride=(1,), assumed_align=align)
        assert t._assumed_align == t.assumed_align == align
    assert make_fake_compact_tensor(cutlass.Int8, (8, 4), assumed_align=None)._assumed_align == 1
    a = np.zeros(64, np.float32)
    t = from_dlpack(a, assumed_align=4)
    assert t._assumed_align == t.assumed_align == 4
    with pytest.raises(AttributeError):
        t._assumed_align = 16


def test_sym_int_extents_make_dynamic_specialisations():
    m = cute.sym_int(divisibility=8)
    t = make_fake_compact_tensor(cutlass.Float16, (m, 64), stride_order=(1, 0))  # mode 1 contiguous
    spec = t.spec()
    assert spec[2] == (("?", 8), 64) and spec[3] == (64, 1)
    u = make_fake_compact_tensor(cutlass.Float16, (32, m), stride_order=(0, 1))  # mode 0 contiguous
    assert u.spec()[2] == (32, ("?", 8)) and u.spec()[3] == (1, 32)
    k = cute.sym_int()
    v = make_fake_compact_tensor(cutlass.Float32, (4, k, 6))  # column-major: the stride outside k is symbolic too
    assert v.spec()[3][:2] == (1, 4) and v.spec()[3][2][0] == "?"
    w = make_fake_tensor(cutlass.Float32, (cute.sym_int(), 16), stride=(cute.sym_int(divisibility=4), 1))
    assert w.spec()[2][0] == ("?", 1) and w.spec()[3][0] == ("?", 4)
    with pytest.raises(ValueError, match="divisibility"):
        cute.sym_int(divisibility=0)
    with pytest.raises(TypeError, match="sym_int"):
        make_fake_tensor(cutlass.Float32, (2.5, 3))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_compile_fake_tensors_and_stream(arch):
    n = cute.sym_int(divisibility=4)
    x = make_fake_compact_tensor(cutlass.Float32, (n,))
    y = make_fake_compact_tensor(cutlass.Float32, (n,))
    with target(arch):
        c = cute.compile(scale, x, y, make_fake_stream())
    assert c.cubin and c.target["name"] == arch
    assert "mul.f32" in c.ptx or "mul.rn.f32" in c.ptx
    with pytest.raises(ValueError, match="fake tensor"):
        c(x, y, 0)
    from warpweave._dsl.values.host_inputs import stream_handle

    with pytest.raises(ValueError, match="fake stream"):
        stream_handle(make_fake_stream())


def test_compile_options_both_spellings(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")  # each compilation makes its PTX here
    x = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),))
    with target("sm_80"):
        plain = cute.compile(scale, x, x, None)
        lined = cute.compile[cute.GenerateLineInfo](scale, x, x, None)
        lined2 = cute.compile(scale, x, x, None, options="--generate-line-info --opt-level 3")
        o0 = cute.compile[cute.OptLevel(0), cute.GenerateLineInfo(False)](scale, x, x, None)
    assert ".loc" in lined.ptx and ".loc" in lined2.ptx and ".loc" not in plain.ptx
    assert o0.ptx != plain.ptx  # no optimisation: different code
    with pytest.raises(ValueError, match="invalid options"):
        cute.compile(scale, x, x, None, options="--opt-level two")
    with pytest.raises(ValueError, match="unexpected 'stray'"):
        cute.compile(scale, x, x, None, options="stray")
    with pytest.raises(ValueError, match=r"\[0, 3\]"):
        cute.OptLevel(5)
    with target("sm_80"):   # accepted: it compiles cute.testing.assert_'s checks in (test_device_assertions.py)
        cute.compile[cute.EnableAssertions](scale, x, x, None)
    with pytest.raises(TypeError, match="not a compile option"):
        cute.compile[42]


def test_keep_ptx_and_gpu_arch(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_DUMP_DIR", str(tmp_path))
    monkeypatch.delenv("WARPWEAVE_KEEP", raising=False)
    x = make_fake_compact_tensor(cutlass.Float32, (cute.sym_int(),))
    with target("sm_80"):
        c = cute.compile[cute.KeepPTX, cute.KeepCUBIN, cute.GPUArch("sm_90a")](scale, x, x, None)
    assert c.target["name"] == "sm_90a"  # GPUArch wins over WARPWEAVE_ARCH
    kept = os.listdir(tmp_path)
    assert any(f.endswith(".ptx") for f in kept) and any(f.endswith(".cubin") for f in kept)
    assert "WARPWEAVE_KEEP" not in os.environ  # only for that compilation


@cute.jit
def branchy(n: cutlass.Int32):
    if n > 3:
        cute.printf("big {}", n)
    else:
        cute.printf("small {}", n)


def test_host_branches_on_runtime_values_at_each_call(capsys):
    # An `if` of the host side on a runtime value is a branch of the compiled host code (host_branch.py).
    with target("sm_80"):
        c = cute.compile(branchy, cutlass.Int32(8))
        for n in (9, 2, 3, 4):
            c(cutlass.Int32(n))
    assert capsys.readouterr().out.splitlines() == ["big 9", "small 2", "small 3", "big 4"]


def _size_class(n):
    # Not rewritten (no @cute.jit): Python asks for the comparison's truth now.
    return "big" if n > 3 else "small"


@cute.jit
def decided_in_python(n: cutlass.Int32):
    cute.printf(_size_class(n) + " {}", n)


def test_truth_asked_by_python_is_guarded(capsys):
    with target("sm_80"):
        c = cute.compile(decided_in_python, cutlass.Int32(8))
        c(cutlass.Int32(9))
        with pytest.raises(ValueError, match="decide host code of the compiled function otherwise"):
            c(cutlass.Int32(2))
        decided_in_python(cutlass.Int32(2))   # called directly: compiled again for the other outcome
        decided_in_python(cutlass.Int32(10))
    assert capsys.readouterr().out.splitlines() == ["big 9", "small 2", "big 10"]


@cute.jit
def prints_device_value(x: cute.Tensor):
    cute.printf("{}", x[0])


def test_host_printf_of_an_element_prints_each_calls_value(capsys):
    # The host side reads tensor elements at each call (host_values.py); a fake tensor has no memory to read.
    with target("sm_80"):
        x = np.array([2.5, 0, 0, 0], np.float32)
        f = cute.compile(prints_device_value, from_dlpack(x))
        f(from_dlpack(x))
        x[0] = -1.0
        f(from_dlpack(x))
        assert capsys.readouterr().out.splitlines()[-2:] == ["2.500000", "-1.000000"]


def test_mark_compact_shape_dynamic_reads_stride_order_as_dim_order():
    for perm in itertools.permutations(range(3)):
        a = np.zeros((4, 6, 8), np.float32).transpose(perm)
        t = from_dlpack(a)
        strides = t.stride
        order = dim_order(strides)
        inner = order[-1]
        t.mark_compact_shape_dynamic(mode=inner, stride_order=order, divisibility=2)
        # The strides outside the dynamic mode depend on it; the others do not.
        outer = set(order[:order.index(inner)])
        assert [i for i, d in enumerate(t.dynamic_stride) if d] == sorted(outer)
        with pytest.raises(ValueError, match="does not match the strides"):
            from_dlpack(a).mark_compact_shape_dynamic(mode=inner, stride_order=tuple(reversed(order)))


def test_from_dlpack_keywords():
    a = np.zeros((4, 4), np.float32)
    assert from_dlpack(a, use_32bit_stride=True).use_32bit_stride is True
    with pytest.raises(TypeError, match="unexpected keyword"):
        from_dlpack(a, no_such_keyword=1)
    assert from_dlpack(a, enable_tvm_ffi=True).spec() == from_dlpack(a).spec()  # the same view (test_tvm_ffi.py)
    t = from_dlpack(np.zeros(8, np.uint8))
    t.element_type = cutlass.Float8E4M3FN  # fp8 over uint8 storage, as cutlass.torch does
    assert t.spec()[1] == "Float8E4M3FN"
    with pytest.raises(TypeError, match="bits wide"):
        t.element_type = cutlass.Float32


@cute.kernel
def from_pointer_kernel(p: cute.Pointer):
    t = cute.make_tensor(p, cute.make_layout(8))
    tidx, _, _ = cute.arch.thread_idx()
    t[tidx] = 1.0


@cute.jit
def from_pointer(p: cute.Pointer):
    from_pointer_kernel(p).launch(grid=[1, 1, 1], block=[8, 1, 1])


def test_pointer_arguments():
    p = make_ptr(cutlass.Float32, 0x10000, cute.AddressSpace.gmem, assumed_align=16)
    with target("sm_80"):
        c = cute.compile(from_pointer, p)
    assert c.plans[0].kind == "pointer" and "st.global" in c.ptx
    with pytest.raises(ValueError, match="not aligned"):
        make_ptr(cutlass.Float32, 0x10004, assumed_align=16)
    with pytest.raises(ValueError, match="global memory"):
        make_ptr(cutlass.Float32, 0x10000, cute.AddressSpace.smem)
    assert make_ptr(cutlass.Float32, np.zeros(4, np.float32).ctypes.data).address > 0


@cute.kernel
def sum_kernel(xs, y: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = xs[0][tidx] + xs[1][tidx]


@cute.jit
def sum_two(xs, y: cute.Tensor):
    sum_kernel(xs, y).launch(grid=[1, 1, 1], block=[16, 1, 1])


def test_lists_of_tensors_are_arguments():
    xs = [from_dlpack(np.zeros(16, np.float32)), from_dlpack(np.ones(16, np.float32))]
    y = from_dlpack(np.zeros(16, np.float32))
    with target("sm_80"):
        c = cute.compile(sum_two, xs, y)
    assert c.plans[0].kind == "tree" and [p.kind for p in c.plans[0].children] == ["tensor", "tensor"]
    params = re.search(r"\.entry \w+\(([^)]*)\)", c.ptx, re.S).group(1)
    assert params.count(".param") == 3  # both list elements and y


@cute.kernel
def fill_kernel(y: cute.Tensor, v):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = v


@cute.jit
def shaped_by_numbers(problem, y: cute.Tensor):
    m, n = problem
    assert not m.is_static and not n.is_static     # known when called, not when compiled
    layout = cute.make_layout((m, n))              # the extents are symbols: no 0 from the placeholder values
    fill_kernel(y, cute.size(layout)).launch(grid=[1, 1, 1], block=[16, 1, 1])


def test_a_tuple_of_dsl_numbers_is_dynamic():
    # CuTe DSL programs compile with (Int32(0), Int32(0), ...) as placeholder problem shapes: each number is an
    # argument of the compiled function, as an Int32 argument of its own is, not the constant 0.
    y = from_dlpack(np.zeros(16, np.int32))
    with target("sm_80"):
        c = cute.compile(shaped_by_numbers, (cutlass.Int32(0), cutlass.Int32(0)), y)
    assert c.plans[0].kind == "tree" and [p.kind for p in c.plans[0].children] == ["int", "int"]
    params = re.search(r"\.entry \w+\(([^)]*)\)", c.ptx, re.S).group(1)
    assert params.count(".param") == 3 and "mul.lo.s32" in c.ptx    # y, m and n: m * n computed in the kernel


@cute.jit
def print_views(x: cute.Tensor):
    cute.print_tensor(x)
    cute.print_tensor(x[None, 1])


def test_host_print_tensor_reads_the_argument_at_each_call(capsys):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    with target("sm_80"):
        print_views(from_dlpack(a).mark_layout_dynamic())
        b = np.arange(6, dtype=np.float32).reshape(2, 3) * 10
        print_views(from_dlpack(b).mark_layout_dynamic())  # the same compiled function, other extents and data
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "tensor<Float32, gmem, align 16, (4,3):(3,1)> data="
    assert out[1:5] == [f"  [{', '.join('%f' % v for v in row)}]" for row in a]
    assert out[6] == "  [1.000000, 4.000000, 7.000000, 10.000000]"  # column 1, in its layout's order
    assert out[7] == "tensor<Float32, gmem, align 16, (2,3):(3,1)> data="
    assert out[8:10] == ["  [0.000000, 10.000000, 20.000000]", "  [30.000000, 40.000000, 50.000000]"]


def test_testing_convert_compiles():
    from warpweave.cute import convert_kernel

    src = from_dlpack(np.zeros((4, 8), np.float32)).mark_layout_dynamic()
    dst = from_dlpack(np.zeros((4, 8), np.float16)).mark_layout_dynamic()
    with target("sm_80"):
        c = cute.compile(convert_kernel._convert, src, dst, cutlass.Int32(32))
    assert "cvt.rn.f16.f32" in c.ptx


@cute.jit
def print_coords(a: cute.Tensor):
    cute.print_tensor(cute.make_identity_tensor(a.layout.shape))


def test_host_print_of_a_coordinate_tensor(capsys):
    with target("sm_80"):
        print_coords(from_dlpack(np.zeros((2, 3), np.float32)).mark_layout_dynamic())
        print_coords(from_dlpack(np.zeros((3, 1), np.float32)).mark_layout_dynamic())
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["coord_tensor<(2,3):(1@0,1@1)> data=", "  [(0,0), (0,1), (0,2)]", "  [(1,0), (1,1), (1,2)]"]
    assert out[3:] == ["coord_tensor<(3,1):(1@0,1@1)> data=", "  [(0,0)]", "  [(1,0)]", "  [(2,0)]"]
