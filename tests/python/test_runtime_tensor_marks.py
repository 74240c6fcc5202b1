"""What mark_layout_dynamic keeps static and what a tensor's __cache_key__ says, as CuTe DSL programs rely on them
(FlashAttention keys its compiled kernels on the same facts): the leading dimension's unit stride and broadcast
modes' zero strides stay compiled in; extents and other strides are run-time values, which do not split the key;
a leading dimension that cannot be deduced is refused; a call may pass a static value where the compiled
function has a run-time one it divides; and one whose tensors divide less than the compiled ones gets a function
compiled for them."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLValueError
from warpweave._dsl.registry import compile_only
from warpweave._dsl.values.runtime import RuntimeTensor, satisfies

from dsl_helpers import target


def view(shape, strides, dtype=cutlass.BFloat16, addr=0x10000):
    return RuntimeTensor(None, addr, shape, strides, dtype, "cuda", 16)


def test_the_leading_unit_stride_and_broadcast_strides_stay_static():
    t = view((4, 8), (0, 1)).mark_layout_dynamic()
    assert t.dynamic_shape == [True, True] and t.dynamic_stride == [False, False]
    t = view((4, 8, 2), (8, 1, 32)).mark_layout_dynamic()
    assert t.dynamic_stride == [True, False, True]


@pytest.mark.parametrize("shape,strides,lead", [((1, 4), (1, 1), 1), ((4, 1), (1, 1), 0), ((4,), (1,), 0)])
def test_a_unit_stride_of_one_element_beside_the_leading_one_does_not_make_it_ambiguous(shape, strides, lead):
    t = view(shape, strides).mark_layout_dynamic()
    assert [not d for d in t.dynamic_stride] == [i == lead for i in range(len(shape))]


@pytest.mark.parametrize("shape", [(1, 1), (2, 2)])
def test_an_ambiguous_leading_dimension_is_refused(shape):
    with pytest.raises(RuntimeError, match="cannot deduce the leading dimension") as e:
        view(shape, (1, 1)).mark_layout_dynamic()
    assert e.value.location[0] == __file__
    assert view(shape, (1, 1)).mark_layout_dynamic(leading_dim=1).dynamic_stride == [True, False]


def test_the_cache_key_groups_tensors_by_what_a_kernel_depends_on():
    key = lambda *a, **k: view(*a, **k).mark_layout_dynamic().__cache_key__  # noqa: E731
    assert key((2, 3), (3, 1)) == key((5, 7), (7, 1)) == key((4, 8), (8, 1))   # sizes and strides are run time
    assert key((3, 2), (1, 3)) == key((4, 1), (1, 1)) != key((2, 3), (3, 1))   # the leading dimension is not
    assert key((4,), (0,)) != key((4,), (1,))                                  # nor a broadcast
    assert key((4,), (1,)) != key((4,), (1,), dtype=cutlass.Float32)
    # the divisibility a stride happens to have is the call's specialisation, not the key's
    assert view((4, 8), (8, 1)).mark_layout_dynamic().spec() != view((4, 7), (7, 1)).mark_layout_dynamic().spec()


def test_a_static_value_satisfies_a_compiled_run_time_one_it_divides():
    compiled = view((64, 128), (128, 1)).mark_layout_dynamic().spec()
    assert satisfies(view((64, 128), (128, 1)).spec(), compiled)              # a fully static view of the same
    assert satisfies(view((64, 128), (0, 1)).mark_layout_dynamic().spec(), compiled)   # a broadcast row stride
    assert not satisfies(view((64, 127), (127, 1)).spec(), compiled)          # 127 breaks the divisibility



def test_a_compiled_function_called_with_tensors_that_divide_less_compiles_again_for_them():
    # a library's cache of compiled functions is keyed on the declared layout (FlashAttention's, as CuTe DSL
    # tensors key it): a row stride of 120 reaches the function compiled when the rows were 128 apart
    @cute.kernel
    def k(a: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        a[tidx, 0] = cutlass.Float32(1.0)

    @cute.jit
    def h(a: cute.Tensor):
        k(a).launch(grid=[1, 1, 1], block=[4, 1, 1])

    def rows(n, cols):
        return RuntimeTensor(None, 0x10000, (n, cols), (cols, 1), cutlass.Float32, "cuda", 16).mark_layout_dynamic()

    with target("sm_80"), compile_only.compile_only("skip"):
        c = cute.compile(h, rows(64, 128))
        c(rows(32, 128))
        assert not c._siblings
        c(rows(64, 120))
        c(rows(16, 120))
        assert [s[3] for (s,) in c._siblings] == [(("?", 8), 1)]   # one more specialisation, made once
        with pytest.raises(DSLValueError, match="does not match the compiled specialisation"):
            c(RuntimeTensor(None, 0x10000, (64, 128), (1, 64), cutlass.Float32, "cuda", 16).mark_layout_dynamic())


def test_a_function_called_through_tvm_ffi_is_compiled_for_the_declared_layout_only():
    # FlashAttention compiles once from its first call's tensors and calls with any of the layout: an LSE of 113
    # rows must reach the function compiled when it had 128
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        a[tidx, 0] = b[tidx, 0]

    @cute.jit
    def h(a: cute.Tensor, b: cute.Tensor):
        k(a, b).launch(grid=[1, 1, 1], block=[4, 1, 1])

    a = RuntimeTensor(None, 0x10000, (4, 128), (128, 1), cutlass.Float32, "cuda", 16).mark_layout_dynamic()
    b = RuntimeTensor(None, 0x20000, (4, 128), (128, 1), cutlass.Float32, "cuda").mark_compact_shape_dynamic(
        1, divisibility=4)
    with target("sm_80"):
        plain = cute.compile(h, a, b)
        ffi = cute.compile(h, a, b, options="--enable-tvm-ffi")
    assert [p.spec for p in plain.plans] == [a.spec(), b.spec()]
    assert plain.plans[0].spec[3] == (("?", 16), 1)
    # the row stride as declared: nothing for a's, the multiple of 4 of b's compact rows; alignment as declared
    assert [p.spec for p in ffi.compiled.plans] == [a.__cache_key__, b.__cache_key__]
    assert ffi.compiled.plans[0].spec[3] == (("?", 1), 1) and ffi.compiled.plans[1].spec[3] == (("?", 4), 1)
    assert (ffi.compiled.plans[0].spec[4], ffi.compiled.plans[1].spec[4]) == (16, 4)
