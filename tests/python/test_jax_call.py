"""cutlass.jax on the CPU: how cutlass_call shows JAX arrays to a @cute.jit function (modes, static and dynamic
layouts, divisibility, symbolic shapes of jax.export), its compile-only runs (a host-only function runs on host
copies, one that launches kernels goes to the session), the FFI targets jax.export is told of, JAX arrays through
from_dlpack, and the errors that name the user's line. The calls that launch on a GPU are the GPU job's."""
import os

import pytest

jax = pytest.importorskip("jax", reason="cutlass.jax needs JAX (requirements.txt pins it)")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import warpweave as cutlass  # noqa: E402
import warpweave.cute as cute  # noqa: E402
import warpweave.jax as cjax  # noqa: E402
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError  # noqa: E402
from warpweave._dsl.jax_call.tensor_spec import ArrayView  # noqa: E402
from warpweave._dsl.registry import compile_only  # noqa: E402
from warpweave._dsl.base.entry_name import entry_name  # noqa: E402
from warpweave.cute.runtime import from_dlpack  # noqa: E402

from dsl_helpers import target  # noqa: E402

HERE = os.path.basename(__file__)


def _row_major(shape):
    out, acc = [0] * len(shape), 1
    for j in range(len(shape) - 1, -1, -1):
        out[j] = acc
        acc *= shape[j]
    return out


@pytest.mark.parametrize("shape,mode", [((4, 6), (1, 0)), ((2, 3, 5), (2, 0, 1)), ((7, 1, 3, 2), (3, 1, 2, 0)),
                                        ((8,), None)])
def test_static_view_is_the_array_seen_in_mode_order(shape, mode):
    """Kernel mode k of a static view is array dimension mode[k], with that dimension's row-major stride."""
    v = ArrayView(shape, jnp.float32, cjax.TensorSpec(mode=mode, static=True), False, "input 0")
    rt = v.fake()
    order = mode or tuple(range(len(shape)))
    strides = _row_major(shape)
    assert rt.shape == tuple(shape[j] for j in order)
    assert rt.stride == tuple(strides[j] for j in order)
    assert rt.element_type is cutlass.Float32 and rt.assumed_align == 256


def test_dynamic_view_keeps_extents_at_run_time_with_their_divisibility():
    v = ArrayView((64, 48, 8), jnp.float16, cjax.TensorSpec(mode=(1, 0, 2)), False, "input 0")
    rt = v.fake()
    assert all(rt.dynamic_shape)
    assert v.divisibility == (48, 64, 8)
    # the unit stride (the array's last dimension) stays compiled in; the others are runtime values
    assert rt.dynamic_stride == [True, True, False] and rt.stride[2] == 1
    spec = cjax.TensorSpec(divisibility=(16, 8))
    assert ArrayView((64, 48), jnp.float32, spec, False, "x").divisibility == (16, 8)


def test_symbolic_shapes_take_what_jax_export_proves():
    m, n, k = jax.export.symbolic_shape("32*M, N, 6*K")
    v = ArrayView((m, n, k), jnp.float32, None, False, "input 0")
    assert v.divisibility == (32, 1, 2)
    assert v.fake().dynamic_shape == [True, True, True]
    with pytest.raises(DSLValueError, match="static but its shape"):
        ArrayView((m, n), jnp.float32, None, True, "input 0")


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8",
                                  "bool", "float8_e4m3fn", "float8_e5m2"])
def test_element_types_round_trip(name):
    d = jnp.dtype(name)
    assert cjax.cutlass_to_jax_dtype(cjax.jax_to_cutlass_dtype(d)) == d


def test_bad_specs_are_refused_at_the_users_line():
    with pytest.raises(DSLValueError, match="not a permutation") as e:
        cjax.TensorSpec(mode=(0, 0))
    assert HERE in str(e.value)
    with pytest.raises(DSLTypeError, match="output_shape_dtype") as e:
        cjax.cutlass_call(lambda stream, a: None, output_shape_dtype=3)
    assert HERE in str(e.value)
    call = cjax.cutlass_call(lambda stream, a, b: None, output_shape_dtype=jax.ShapeDtypeStruct((4,), jnp.float32),
                             input_output_aliases={0: 0})
    with pytest.raises(DSLValueError, match="aliases output 0") as e:
        call(jnp.zeros((5,), jnp.float32))
    assert HERE in str(e.value)
    call = cjax.cutlass_call(lambda stream, a, b: None, output_shape_dtype=jax.ShapeDtypeStruct((4,), jnp.float32),
                             input_spec=(cjax.TensorSpec(mode=(1, 0)),))
    with pytest.raises(DSLValueError, match="rank 1") as e:
        call(jnp.zeros((4,), jnp.float32))
    assert HERE in str(e.value)


@cute.kernel
def _add_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    i, _, _ = cute.arch.thread_idx()
    c[i] = a[i] + b[i]


@cute.jit
def _launch_add(stream, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    _add_kernel(a, b, c).launch(grid=[1, 1, 1], block=[a.shape[0], 1, 1], stream=stream)


def test_compile_only_stops_at_a_kernel_launch_inside_jit():
    call = cjax.cutlass_call(_launch_add, output_shape_dtype=jax.ShapeDtypeStruct((32,), jnp.float32))
    x = jnp.arange(32, dtype=jnp.float32)
    with target("sm_80"), compile_only.compile_only() as session:
        with pytest.raises(compile_only.LaunchSkipped, match="_add_kernel"):
            jax.jit(call)(x, x)
    assert [c.launches[0].kernel for c in session.compiled] == [entry_name("_add_kernel")]
    # the call named is the user's line, not JAX's tracing
    assert session.skipped[0][1].startswith(__file__)


def test_compile_only_skip_returns_arrays_of_the_outputs_types():
    call = cjax.cutlass_call(_launch_add, output_shape_dtype=(jax.ShapeDtypeStruct((16,), jnp.float32),)[0])
    x = jnp.ones((16,), jnp.float32)
    with target("sm_80"), compile_only.compile_only(on_launch="skip") as session:
        out = jax.jit(call)(x, x)
    assert out.shape == (16,) and out.dtype == jnp.float32
    assert len(session.skipped) >= 1


def test_host_only_function_sees_modes_statics_and_aliases():
    """A function that launches nothing runs (on host copies) in a compile-only run; what it is traced with shows
    the views: a permuted static input, a dynamic one, Python static values compiled in, aliased outputs left out."""
    seen = []

    @cute.jit
    def host(a: cute.Tensor, b: cute.Tensor, x: cutlass.Int32, c: cute.Tensor):
        seen.append((a.shape, a.stride, cute.is_static(b.shape[0]), x, c.shape))

    call = cjax.cutlass_call(lambda stream, a, b, c, *, x: host(a, b, x, c),
                             output_shape_dtype=(jax.ShapeDtypeStruct((3, 5), jnp.float32),
                                                 jax.ShapeDtypeStruct((4, 6), jnp.float32)),
                             input_spec=(cjax.TensorSpec(mode=(1, 0), static=True), None),
                             input_output_aliases={0: 1}, x=7)
    a = jnp.arange(24, dtype=jnp.float32).reshape(4, 6)
    b = jnp.zeros((3, 5), jnp.float32)
    with target("sm_80"), compile_only.compile_only() as session:
        c, a2 = jax.jit(call)(a, b)
    (a_shape, a_stride, b_static, x, c_shape), = seen
    assert (a_shape, a_stride) == ((6, 4), (1, 6)) and not b_static and x == 7
    assert len(c_shape) == 2
    assert not session.skipped
    # the aliased output starts as its input (the host function wrote nothing)
    np.testing.assert_array_equal(np.asarray(a2), np.asarray(a))
    assert c.shape == (3, 5)


def test_inputs_keep_their_tree():
    """A list of arrays reaches the function as a list of tensors."""
    seen = []

    @cute.jit
    def host(inputs, out: cute.Tensor):
        seen.append((type(inputs).__name__, len(inputs)))

    call = cjax.cutlass_call(lambda stream, inputs, out: host(inputs, out),
                             output_shape_dtype=jax.ShapeDtypeStruct((8,), jnp.float32))
    xs = [jnp.zeros((8,), jnp.float32)] * 3
    with target("sm_80"), compile_only.compile_only():
        jax.jit(call)(xs)
    assert seen == [("list", 3)]


def test_from_dlpack_reads_a_jax_array():
    x = jnp.arange(12, dtype=jnp.bfloat16).reshape(3, 4)
    rt = from_dlpack(x)
    assert rt.shape == (3, 4) and rt.stride == (4, 1)
    assert rt.element_type is cutlass.BFloat16 and rt.data_ptr == x.unsafe_buffer_pointer()
    assert rt.device == "cpu"


def test_export_keeps_the_targets_it_was_told_of():
    """Outside a compile-only run each compiled function is an FFI target (through jax-tvm-ffi); jax.export lowers
    for CUDA with its custom call, allowed by get_export_disabled_safety_checks(), read after tracing."""
    pytest.importorskip("jax_tvm_ffi", reason="cutlass_call's targets are registered through jax-tvm-ffi")
    pytest.importorskip("tvm_ffi", reason="the TVM FFI entry needs apache-tvm-ffi")

    def f(a):
        return cjax.cutlass_call(_launch_add, output_shape_dtype=a)(a, a)

    checks = cjax.get_export_disabled_safety_checks()
    m, = jax.export.symbolic_shape("16*M")
    with target("sm_80"):
        exp = jax.export.export(jax.jit(f), platforms=["cuda"], disabled_checks=checks)(
            jax.ShapeDtypeStruct((m,), jnp.float32))
    text = exp.mlir_module()
    names = [c.is_custom_call() for c in checks]
    assert names and any(n in text for n in names)
    with pytest.raises(ValueError, match="custom_call"):
        with target("sm_80"):
            jax.export.export(jax.jit(f), platforms=["cuda"])(jax.ShapeDtypeStruct((m,), jnp.float32))


def test_host_only_function_runs_as_a_host_callback_outside_compile_only(capfd):
    """No kernel: the host code runs at each call of the JAX computation (traced once), on the arrays as the
    kernel sees them (here transposed by the spec's mode)."""
    traced = []

    @cute.jit
    def host(a: cute.Tensor, out: cute.Tensor):
        traced.append(len(a.shape))
        cute.printf("host code: a has {} rows", a.shape[0])

    call = cjax.cutlass_call(lambda stream, a, out: host(a, out),
                             output_shape_dtype=jax.ShapeDtypeStruct((2, 3), jnp.float32),
                             input_spec=cjax.TensorSpec(mode=(1, 0)))
    f = jax.jit(lambda a: call(a) + 1)
    with target("sm_80"):
        outs = [np.asarray(f(jnp.ones((2, 3), jnp.float32))) for _ in range(2)]
    assert traced == [2]
    assert capfd.readouterr().out.count("host code: a has 3 rows") == 2
    np.testing.assert_array_equal(outs[1], np.ones((2, 3), np.float32))


def test_the_tvm_ffi_entry_reads_permuted_arrays_in_mode_order():
    """XLA hands buffers over in the array's dimension order; the entry of a call with TensorSpec(mode=...) reads
    kernel mode k from dimension mode[k] (and builds: the C compiler accepts it)."""
    pytest.importorskip("tvm_ffi", reason="the TVM FFI entry needs apache-tvm-ffi")
    from warpweave._dsl.export import tvm_ffi_call
    from warpweave._dsl.export import tvm_ffi_spec as spec
    from warpweave._dsl.jax_call import cutlass_call as cc

    mode = (2, 0, 1)
    views = [ArrayView((4, 8, 16), jnp.float32, cjax.TensorSpec(mode=mode, static=static), False, f"array {k}")
             for k, static in enumerate((False, True, False))]
    with target("sm_80"):
        entry = cc._compile(_launch_add, views[:2], views[2:], jax.tree_util.tree_structure((0, 0)), {}, {},
                            tvm_ffi=True)
    tensors = [p for p in entry.ffi.params if isinstance(p, spec.Tensor)]
    assert [p.dims for p in tensors] == [mode] * 3
    _, source = tvm_ffi_call._entry_texts(entry.compiled, "ww_fn", entry.ffi.params)
    for k, j in enumerate(mode):
        assert source.count(f"psh[{k}] = sh[{j}]; pst[{k}] = st[{j}];") == 3


def test_jax_tvm_ffi_hands_xla_buffers_to_the_entry():
    """The data path a GPU run takes, on the CPU: XLA's FFI call reaches the compiled function's TVM FFI entry
    through jax-tvm-ffi with the buffers in order (inputs, then outputs), and the entry's own check answers (host
    buffers are not CUDA memory), so the packages' ABIs agree with the entry's."""
    jax_tvm_ffi = pytest.importorskip("jax_tvm_ffi", reason="cutlass_call's targets are registered through it")
    from warpweave._dsl.jax_call import cutlass_call as cc
    from warpweave._dsl.jax_call.tensor_spec import ArrayView

    views = [ArrayView((32,), jnp.float32, None, False, f"array {k}") for k in range(3)]
    with target("sm_80"):
        entry = cc._compile(_launch_add, views[:2], views[2:], jax.tree_util.tree_structure((0, 0)), {}, {},
                            tvm_ffi=True)
    jax_tvm_ffi.register_ffi_target("warpweave_test_host_buffers", entry.ffi.__tvm_ffi_object__(),
                                    ["args", "rets"], platform="cpu")
    with jax.default_device(jax.devices("cpu")[0]):
        x = jnp.zeros((32,), jnp.float32)
        call = jax.ffi.ffi_call("warpweave_test_host_buffers", jax.ShapeDtypeStruct((32,), jnp.float32))
        with pytest.raises(Exception, match="in0 is not in CUDA memory"):
            call(x, x).block_until_ready()


@cute.kernel
def _add_blocks_kernel(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    c[tidx, bidx] = a[tidx, bidx] + b[tidx, bidx]


@cute.jit
def _print_and_add_blocks(stream, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
    cute.printf("a: {}", a.layout)  # host code: printed at each call, by the entry too
    _add_blocks_kernel(a, b, c).launch(grid=[a.shape[-1], 1, 1], block=[a.shape[-2], 1, 1], stream=stream)


@pytest.mark.parametrize("static", [True, False])
def test_tvm_ffi_entry_of_a_printing_function_prints_in_c(static):
    """A function that prints layouts on the host before its launch (CuTe DSL's cutlass_call_sharding.py, whose
    per-shard blocks are static tensors) gets a TVM FFI entry, so XLA can call it: the print is C code there, fixed
    text for a static layout, the call's extents for a dynamic one."""
    pytest.importorskip("tvm_ffi", reason="the TVM FFI entry needs apache-tvm-ffi")
    from warpweave._dsl.export import tvm_ffi_call
    from warpweave._dsl.jax_call import cutlass_call as cc

    views = [ArrayView((16, 64), jnp.float32, None, static, f"array {k}") for k in range(3)]
    with target("sm_90a"):
        entry = cc._compile(_print_and_add_blocks, views[:2], views[2:], jax.tree_util.tree_structure((0, 0)), {},
                            {}, tvm_ffi=True)
    assert entry.target is not None and len(entry.compiled.host_actions) == 1
    _, source = tvm_ffi_call._entry_texts(entry.compiled, "ww_fn", entry.ffi.params)
    prints = [ln.strip() for ln in source.splitlines() if ln.strip().startswith("printf(")]
    assert len(prints) == 1
    assert prints[0].startswith('printf("a: (16,64):(64,1)\\012")') == static


def _jax_gpu():
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


@pytest.mark.skipif(not _jax_gpu(), reason="runs kernels: needs a GPU and JAX's CUDA backend")
@pytest.mark.parametrize("static", [False, True])
def test_cutlass_call_runs_kernels_inside_jit(static):
    pytest.importorskip("jax_tvm_ffi", reason="cutlass_call's targets are registered through it")
    call = cjax.cutlass_call(_launch_add, output_shape_dtype=jax.ShapeDtypeStruct((128,), jnp.float32),
                             use_static_tensors=static)
    a = cjax.testing.create_tensor((128,), jnp.float32, jax.random.key(1))
    b = cjax.testing.create_tensor((128,), jnp.float32, jax.random.key(2))
    f = jax.jit(lambda a, b: call(a, b) * 2)
    np.testing.assert_allclose(np.asarray(f(a, b)), 2 * (np.asarray(a) + np.asarray(b)), rtol=1e-6)
    # another computation with the same call on arrays of the same types: its compiled function and target are
    # reused
    n = len(cjax.get_export_disabled_safety_checks())
    g = jax.jit(lambda a, b: call(a, b) - 1)
    np.testing.assert_allclose(np.asarray(g(b, b)), 2 * np.asarray(b) - 1, rtol=1e-6)
    assert len(cjax.get_export_disabled_safety_checks()) == n


@pytest.mark.skipif(not _jax_gpu(), reason="runs kernels: needs a GPU and JAX's CUDA backend")
def test_cutlass_call_writes_an_aliased_input_in_place():
    pytest.importorskip("jax_tvm_ffi", reason="cutlass_call's targets are registered through it")

    @cute.kernel
    def twice(a: cute.Tensor):
        i, _, _ = cute.arch.thread_idx()
        a[i] = a[i] * 2

    @cute.jit
    def launch(stream, a: cute.Tensor):
        twice(a).launch(grid=[1, 1, 1], block=[a.shape[0], 1, 1], stream=stream)

    call = cjax.cutlass_call(launch, output_shape_dtype=jax.ShapeDtypeStruct((64,), jnp.float32),
                             input_output_aliases={0: 0})
    a = jnp.arange(64, dtype=jnp.float32)
    out = jax.jit(call, donate_argnums=0)(a + 0)
    np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(64, dtype=np.float32))


@pytest.mark.skipif(not _jax_gpu(), reason="runs kernels: needs a GPU and JAX's CUDA backend")
@pytest.mark.parametrize("static", [False, True])
def test_a_permuted_array_reaches_the_kernel_in_mode_order(static):
    pytest.importorskip("jax_tvm_ffi", reason="cutlass_call's targets are registered through it")

    @cute.kernel
    def copy(a: cute.Tensor, c: cute.Tensor):
        i, _, _ = cute.arch.thread_idx()
        j, _, _ = cute.arch.block_idx()
        c[i, j] = a[i, j]

    @cute.jit
    def launch(stream, a: cute.Tensor, c: cute.Tensor):
        copy(a, c).launch(grid=[a.shape[1], 1, 1], block=[a.shape[0], 1, 1], stream=stream)

    a = cjax.testing.create_tensor((24, 40), jnp.float32, jax.random.key(3))
    call = cjax.cutlass_call(launch, output_shape_dtype=jax.ShapeDtypeStruct((40, 24), jnp.float32),
                             input_spec=cjax.TensorSpec(mode=(1, 0), static=static))
    np.testing.assert_array_equal(np.asarray(jax.jit(call)(a)), np.asarray(a).T)


@pytest.mark.skipif(_jax_gpu(), reason="checks the stand-in used where no GPU is present")
def test_compile_only_stands_in_for_gpu_ffi_targets_without_a_gpu():
    """jax_tvm_ffi.register_ffi_target(..., platform="gpu") of a function compiled with --enable-tvm-ffi, then
    jax.ffi.ffi_call of it (as CuTe DSL's tvm_ffi/ programs do): the call goes to the session at the user's line;
    outside the session, JAX's own functions are back."""
    jax_tvm_ffi = pytest.importorskip("jax_tvm_ffi", reason="the stand-in is for its targets")
    pytest.importorskip("tvm_ffi", reason="the TVM FFI entry needs apache-tvm-ffi")
    from warpweave.cute.runtime import make_fake_tensor, make_fake_stream

    ffi_call = jax.ffi.ffi_call
    t = make_fake_tensor(cutlass.Float32, (cute.sym_int(),))
    with target("sm_80"), compile_only.compile_only() as session:
        f = cute.compile(_launch_add, make_fake_stream(use_tvm_ffi_env_stream=True), t, t, t,
                         options="--enable-tvm-ffi")
        jax_tvm_ffi.register_ffi_target("warpweave_test_gpu_add", f, platform="gpu")
        call = jax.ffi.ffi_call("warpweave_test_gpu_add", jax.ShapeDtypeStruct((8,), jnp.float32))
        with pytest.raises(compile_only.LaunchSkipped, match="warpweave_test_gpu_add .*_add_kernel"):
            call(jnp.zeros(8), jnp.zeros(8))
    assert session.skipped[-1][1].startswith(__file__)
    assert jax.ffi.ffi_call is ffi_call
