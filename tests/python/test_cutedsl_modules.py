"""CuTe DSL's module layout and names: every module imports as a module, names sit where CuTe DSL has them, and
the `cutlass` alias of the migration runner maps onto the very same module objects, only while it is installed."""
import importlib
import importlib.util
import os
import subprocess
import sys
import types

import pytest

import warpweave
import warpweave as cutlass
import warpweave.cute as cute
from warpweave import migrate

MODULES = ["warpweave.cute.nvgpu.warp", "warpweave.cute.nvgpu.warpgroup", "warpweave.cute.nvgpu.cpasync",
           "warpweave.cute.nvgpu.tcgen05", "warpweave.testing", "warpweave.cute.testing", "warpweave.utils",
           "warpweave.utils.hardware_info", "warpweave.utils.tensor_helpers", "warpweave.pipeline",
           "warpweave.torch", "warpweave.cute.runtime", "warpweave.runtime", "warpweave.cuda", "warpweave.migrate",
           "warpweave.cute.arch"]


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_as_a_module(name):
    mod = importlib.import_module(name)
    assert isinstance(mod, types.ModuleType)
    assert sys.modules[name] is mod and mod.__name__ == name
    parent, _, child = name.rpartition(".")
    assert getattr(importlib.import_module(parent), child) is mod  # the attribute and the module are one object


def test_nvgpu_submodules_are_manifest_driven():
    import warpweave.cute.nvgpu.cpasync as cpasync
    import warpweave.cute.nvgpu.warp as warp

    from warpweave._dsl.registry.plugins import registry

    registry.load()
    offered = {ins["python_name"] for b in registry.backends.values() for ins in b.atoms + b.primitives
               if ins.get("python_name", "").startswith("warp.")}
    assert offered, "the Ampere backend offers warp-level atoms"
    for full in offered:
        assert hasattr(warp, full.split(".", 1)[1]), full
    assert set(n.split(".", 1)[1] for n in offered) <= set(dir(warp))
    with pytest.raises(AttributeError, match="no loaded backend offers warp.NoSuchOp"):
        warp.NoSuchOp  # noqa: B018
    assert cute.nvgpu.LoadCacheMode is cpasync.LoadCacheMode  # CuTe DSL names the enum in both places
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("warpweave.cute.nvgpu.no_such_module")


def test_from_import_of_an_unknown_op_is_an_import_error():
    # CuTe DSL's submodules by kind are the module's names through another path...
    from warpweave.cute.nvgpu.cpasync.copy import CopyBulkTensorTileG2SOp
    from warpweave.cute.nvgpu.warp.mma import MmaF16BF16Op
    import warpweave.cute.nvgpu.cpasync as cpasync
    import warpweave.cute.nvgpu.warp as warp

    assert MmaF16BF16Op is warp.MmaF16BF16Op and CopyBulkTensorTileG2SOp is cpasync.CopyBulkTensorTileG2SOp
    # ...and no other name becomes a module: an op no backend offers fails at the import, not at its first use
    for stmt in ("from warpweave.cute.nvgpu.warp import NoSuchOp", "from warpweave.cute.nvgpu.cpasync import nosuch",
                 "import warpweave.cute.nvgpu.warp.nosuch"):
        with pytest.raises(ImportError):
            exec(stmt, {})


def test_names_at_cute_dsl_places():
    assert cute.Int32 is cutlass.Int32 and cute.Float16 is cutlass.Float16
    assert cutlass.Tensor is cute.Tensor and cutlass.Pointer is cute.Pointer
    assert cutlass.testing.benchmark is cute.testing.benchmark
    assert cutlass.testing.JitArguments is cute.testing.JitArguments
    assert cutlass.runtime.make_fake_stream is cute.runtime.make_fake_stream
    assert cute.sym_int is cute.runtime.sym_int and cute.AddressSpace is cute.runtime.AddressSpace
    for name in ("GenerateLineInfo", "KeepPTX", "KeepCUBIN", "OptLevel", "PtxasOptions", "GPUArch"):
        assert hasattr(cute, name), name
    assert issubclass(cute.testing.CantImplementError, Exception)
    assert callable(cutlass.utils.HardwareInfo) and callable(cutlass.utils.get_smem_capacity_in_bytes)
    from warpweave.pipeline import pipeline_init_arrive, pipeline_init_wait  # noqa: F401
    x = object()
    assert cutlass.dynamic_expr(x) is x
    assert cutlass.AddressSpace is cute.AddressSpace
    assert cutlass.utils.is_fp8_dtype is cutlass.utils.tensor_helpers.is_fp8_dtype
    assert cute.sym_int64().width == 64 and cute.sym_int32(divisibility=2).divisibility == 2
    wide = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (cute.sym_int64(), 4))
    assert wide.index_bits == 64  # 64-bit extents: the kernel indexes with 64 bits


def test_every_pipeline_of_cutedsl_is_there():
    from warpweave.pipeline import PipelineOrder, PipelineTmaMultiConsumersAsync  # noqa: F401
    with pytest.raises(AttributeError):
        warpweave.pipeline.NoSuchThing  # noqa: B018


def test_dsl_user_op_drops_location_keywords():
    @cutlass.dsl_user_op
    def twice(x, *, loc=None, ip=None):
        assert loc is None and ip is None
        return 2 * x

    assert twice(3, loc="somewhere", ip=None) == 6


def test_smem_capacity_comes_from_the_manifests():
    from warpweave._dsl.registry.plugins import registry

    registry.load()
    seen = 0
    for b in registry.backends.values():
        for t in b.manifest.get("targets", []):
            if t.get("smem_capacity_bytes"):
                assert cutlass.utils.get_smem_capacity_in_bytes(t["name"]) == t["smem_capacity_bytes"]
                seen += 1
            for cc, cap in zip(t.get("also_serves", []), t.get("also_serves_smem_capacity_bytes", [])):
                assert cutlass.utils.get_smem_capacity_in_bytes(f"sm_{cc}") == cap
    assert seen >= 3
    assert cutlass.utils.get_smem_capacity_in_bytes("sm_90") == cutlass.utils.get_smem_capacity_in_bytes("sm_90a")
    with pytest.raises(ValueError, match="target name"):
        cutlass.utils.get_smem_capacity_in_bytes("hopper")
    with pytest.raises(ValueError, match="no loaded backend"):
        cutlass.utils.get_smem_capacity_in_bytes("sm_30")


def test_hardware_info_needs_a_device():
    from dsl_helpers import has_gpu

    if has_gpu():
        info = cutlass.utils.HardwareInfo()
        assert info.get_device_multiprocessor_count() > 0 and info.get_l2_cache_size_in_bytes() > 0
    else:
        with pytest.raises(RuntimeError, match="HardwareInfo needs a CUDA device"):
            cutlass.utils.HardwareInfo()


# --- the cutlass alias ------------------------------------------------------------------------------------------

def test_alias_gives_the_same_module_objects_and_only_inside():
    assert "cutlass" not in sys.modules
    with migrate.cutlass_alias():
        import cutlass as c
        import cutlass.cute as c_cute
        import cutlass.cute.nvgpu.warp as c_warp
        import cutlass.utils.hardware_info as c_hw
        from cutlass.cute.runtime import from_dlpack

        assert c is warpweave and c_cute is warpweave.cute and c.cute is cute
        assert c_warp is cute.nvgpu.warp and c_hw is warpweave.utils.hardware_info
        assert from_dlpack is cute.runtime.from_dlpack
        assert sys.modules["cutlass.cute"] is cute
        with pytest.raises(ModuleNotFoundError, match="warpweave.utils.no_such_helpers does not exist"):
            import cutlass.utils.no_such_helpers  # noqa: F401
        # a probe for an optional module answers None, as for any module that does not exist (programs ask so
        # whether their CuTe DSL has a part before they import it); one that exists has a spec
        assert importlib.util.find_spec("cutlass.utils.no_such_helpers") is None
        assert importlib.util.find_spec("cutlass.utils.hardware_info") is not None
    assert not any(n == "cutlass" or n.startswith("cutlass.") for n in sys.modules)
    assert warpweave.__spec__.name == "warpweave" and cute.__spec__.name == "warpweave.cute"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cutlass")


def test_importing_warpweave_installs_no_alias():
    r = subprocess.run([sys.executable, "-c", "import warpweave, warpweave.cute\nimport cutlass"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode != 0 and "No module named 'cutlass'" in r.stderr


def test_cuda_bindings_stays_the_real_package():
    pytest.importorskip("cuda.bindings.driver")
    with migrate.cutlass_alias():
        import cuda.bindings.driver as drv

        assert not drv.__name__.startswith("warpweave")
        from warpweave._dsl.values.host_inputs import is_stream as _is_stream, stream_handle

        s = drv.CUstream(4096)
        assert _is_stream(s) and stream_handle(s) == 4096
