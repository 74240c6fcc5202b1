"""warpweave.ext, the API backends' Python packages use: operand kinds, memory spaces, host arguments, module
maps and error locations. (The example plugin's package uses each through a real plugin in test_plugins.py.)"""
import os
import types

import pytest

from warpweave import ext
from warpweave._dsl.registry import backend_python
from warpweave._dsl.base import errors
from warpweave._dsl.atoms import host_arguments, operand_kinds


def test_an_operand_kind_without_adapter_is_a_clear_error():
    op = {"name": "a", "role": "REGISTERS", "kind": "no_such_kind"}
    with pytest.raises(TypeError) as e:
        operand_kinds.adapter(op, "vendor.mma.x")
    msg = str(e.value)
    assert "vendor.mma.x" in msg and "'no_such_kind'" in msg and "registers" in msg


def test_operand_kinds_default_to_their_role_and_register_by_name():
    assert operand_kinds.kind_of({"name": "a", "role": "SMEM_DESCRIPTOR"}) == "smem_descriptor"
    assert operand_kinds.kind_of({"name": "a", "role": "REGISTERS", "kind": "b1_words"}) == "b1_words"

    class Mine(ext.OperandKind):
        pass

    ext.register_operand_kind("test_ext_kind", Mine())
    got = operand_kinds.adapter({"name": "a", "role": "REGISTERS", "kind": "test_ext_kind"}, "x")
    assert isinstance(got, Mine)
    with pytest.raises(TypeError):
        ext.register_operand_kind("bad", object())


def test_memory_spaces_are_a_registry():
    from warpweave._dsl.values import tensor

    ext.register_memory_space("test_space", 6)
    assert tensor.ptr_type("test_space") == "!llvm.ptr<6>"
    ext.register_memory_space("test_space", 6)  # idempotent
    with pytest.raises(ValueError):
        ext.register_memory_space("test_space", 5)
    with pytest.raises(ValueError, match="no loaded backend registers the memory space 'nowhere'"):
        tensor.ptr_type("nowhere")
    # an address step wider than a byte is a power of two of bits (tensor memory's 32-bit columns)
    from warpweave._dsl.values import address_units

    assert address_units.unit_bits("test_space") is None
    with pytest.raises(ValueError, match="address_bits is a power of two"):
        ext.register_memory_space("test_units", 7, address_bits=12)
    ext.register_memory_space("test_units", 7, address_bits=32)
    assert address_units.unit_bits("test_units") == 32


def test_host_argument_producers_are_checked_and_memoised():
    with pytest.raises(ValueError):
        ext.register_host_argument("test.bad", lambda t: b"", size=12, align=8)  # not a multiple of align
    with pytest.raises(TypeError):
        ext.register_host_argument("test.bad", None, size=8)
    calls = []

    def produce(t, scale=1):
        calls.append(t.data_ptr)
        return (t.data_ptr * scale).to_bytes(8, "little")

    ext.register_host_argument("test.ptr", produce, size=8)
    h = host_arguments.HostArgument(1, host_arguments.producer("test.ptr"), 0, {"scale": 2})
    t = types.SimpleNamespace(data_ptr=0x100, shape=(4,), stride=(1,))
    assert h.value(t) == (0x200).to_bytes(8, "little")
    assert h.value(t) == (0x200).to_bytes(8, "little") and calls == [0x100]  # memoised on address, shape, strides
    t2 = types.SimpleNamespace(data_ptr=0x100, shape=(8,), stride=(1,))
    h.value(t2)
    assert calls == [0x100, 0x100]
    ext.register_host_argument("test.short", lambda t: b"\0" * 4, size=8)
    h2 = host_arguments.HostArgument(2, host_arguments.producer("test.short"), 0, {})
    with pytest.raises(ValueError, match="returned 4 bytes, not 8"):
        h2.value(t)
    with pytest.raises(ValueError, match="no loaded backend produces the host argument 'test.none'"):
        host_arguments.producer("test.none")


def test_host_arguments_are_made_in_host_code_from_tensor_arguments():
    with pytest.raises(TypeError, match="made in @cute.jit host code"):
        ext.host_argument("test.ptr", None)


def test_module_maps_may_fill_only_public_namespaces():
    b = types.SimpleNamespace(name="vendor", path="/x/ww_vendor.so")
    ok = {"module_map": {"warpweave.utils.vendor_helpers": "helpers"}}
    backend_python._check_spec(b, ok, {})
    for public, rel in (("warpweave.cute", "helpers"), ("warpweave.ext", "x"), ("os.path", "x"),
                        ("warpweave.utils.x", "../evil"), ("warpweave.utils.x", "")):
        with pytest.raises(backend_python.BackendPythonError):
            backend_python._check_spec(b, {"module_map": {public: rel}}, {})
    with pytest.raises(backend_python.BackendPythonError, match="both claim"):
        backend_python._check_spec(b, ok, {"warpweave.utils.vendor_helpers": ("other", "helpers")})


def test_a_backend_package_with_a_declared_but_missing_directory_is_refused(tmp_path):
    b = types.SimpleNamespace(name="vendor", path=str(tmp_path / "ww_vendor.so"),
                              manifest={"python_package": {"module_map": {"warpweave.utils.v": "h"}}})
    pk = backend_python.Packages()
    pk.mount_all([b])
    assert "vendor" in pk.refused and "has no" in pk.refused["vendor"]


def test_errors_inside_registered_library_code_name_the_users_line(tmp_path):
    lib = tmp_path / "vendorlib"
    lib.mkdir()
    (lib / "helper.py").write_text("from warpweave import ext\n\ndef check(x):\n"
                                   "    raise ext.user_error(f'bad {x}')\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("vendorlib_helper", lib / "helper.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ext.register_library_dir(str(lib))
    with pytest.raises(ext.DSLValueError) as e:
        mod.check(3)  # this line is the user's
    assert e.value.location[0] == __file__
    assert errors.is_user_file(__file__) and not errors.is_user_file(str(lib / "helper.py"))


def test_pipelines_are_library_code():
    import warpweave.pipeline  # noqa: F401 - registers the pipelines component as library code
    import warpweave_pipelines

    d = os.path.dirname(warpweave_pipelines.__file__)
    assert not errors.is_user_file(os.path.join(d, "pipeline_async.py"))


def test_backends_answer_option_queries_through_their_host_hook():
    from warpweave._dsl.registry import backend_options

    assert backend_options.parse("cubin_tool=ptxas\nptxas_option=-O3\nptxas_option=-v\nnoise\n") == {
        "cubin_tool": ["ptxas"], "ptxas_option": ["-O3", "-v"]}
    # Hopper keeps setmaxnreg in the cubin only through ptxas; its other instructions build with either tool.
    assert backend_options.cubin_tool("hopper", "hopper.setmaxnreg.inc.sync.aligned.u32") == "ptxas"
    assert backend_options.cubin_tool("hopper", "hopper.mbarrier.init") == ""
    # A backend without the hook (Ampere has no host hooks at all) has nothing to say.
    assert backend_options.ask("ampere", "compile", instruction="ampere.anything") == {}


def test_a_rolled_range_stays_one_loop_in_the_kernel():
    """ext.rolled_range over static bounds is a loop of the kernel, kept rolled (library code's copies of many words,
    tensormap_update.py): its body appears once in the PTX, under the assembler's no-unroll hint, where a Python
    range would repeat it per trip. Outside a kernel it is refused."""
    import re

    import numpy as np

    import warpweave as cutlass
    import warpweave.cute as cute
    from warpweave.cute.runtime import from_dlpack
    from dsl_helpers import target
    from warpweave._dsl.base.entry_name import entry_name

    @cute.kernel
    def k(src: cute.Tensor, dst: cute.Tensor):
        for i in ext.rolled_range(12):
            dst[i] = src[i] * cutlass.Int32(3)

    @cute.jit
    def host(src: cute.Tensor, dst: cute.Tensor):
        k(src, dst).launch(grid=(1, 1, 1), block=(1, 1, 1))

    args = [from_dlpack(np.zeros(12, np.int32)) for _ in range(2)]
    with target("sm_90a"):
        ptx = cute.compile(host, *args).info["ptx"]
    body = ptx[ptx.index(f".entry {entry_name('k')}("):]
    assert '.pragma "nounroll"' in body and re.search(r"@%p\d+ bra\s+\$L__BB\d+_\d+;", body)
    assert len(re.findall(r"st\.global\.b32", body)) == 1 and len(re.findall(r"ld\.global\.b32", body)) == 1
    with pytest.raises(errors.DSLValueError, match="in a kernel"):
        list(ext.rolled_range(4))
