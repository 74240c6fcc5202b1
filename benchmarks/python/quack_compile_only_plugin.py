"""A pytest plugin (quack_tests.py --compile-only): QuACK's own tests on a machine without a GPU, under warpweave's
compile-only mode. The tests' CUDA tensors are made on the CPU (their device arguments, .cuda() and .to("cuda")
are rewritten by a torch function mode, random generators asked for on CUDA are made on the CPU, and a tensor says
it is a CUDA one), torch reports one device of the capability QUACK_ARCH names (sm_90 unless
set), ops that QuACK registers for CUDA serve the CPU too, and each test runs inside compile_only(): QuACK's host
code runs, its kernels trace, compile and assemble, and the first launch ends the test. A test that reaches it (or
ends without launching) passes; one whose kernel does not trace or compile fails with the error at QuACK's line.
What a test checks after its first launch (values, gradients) is not checked here. Under CuTe DSL itself (the
reference column, CUTE_DSL_ARCH set), a test passes the same way: its first launch fails on the CPU tensor it is
handed, or on the missing device, after its kernels compiled; what it would ask the driver for before that (the
clusters QuACK sizes its grids by, device attributes read while a kernel's IR is built) the same stand-in device
answers."""
import os
import re

import pytest
import torch
from torch.overrides import TorchFunctionMode

_DIGITS = re.sub(r"\D", "", os.environ.setdefault("QUACK_ARCH", "sm_90"))  # sm_90, sm_90a, 90, sm_100a, ...
_CC = (int(_DIGITS[:-1]), int(_DIGITS[-1]))


class _Properties:
    name = "compile-only stand-in"
    major, minor = _CC
    multi_processor_count = 132
    total_memory = 80 << 30
    L2_cache_size = 50 << 20
    shared_memory_per_block_optin = 227 << 10


torch.cuda.is_available = lambda: True
torch.cuda.get_device_capability = lambda device=None: _CC
torch.cuda.get_device_properties = lambda *a, **k: _Properties()
torch.cuda.get_device_name = lambda *a, **k: _Properties.name
torch.cuda.device_count = lambda: 1
torch.cuda.current_device = lambda: 0
for _name in ("synchronize", "manual_seed", "manual_seed_all", "empty_cache"):
    setattr(torch.cuda, _name, lambda *a, **k: None)


def _host_memory_info(device=None):
    """(free, total) bytes of the stand-in device: its tensors live in host memory, so a test that sizes itself by
    the free memory (or skips when short of it) sizes itself by what the CPU can still hold."""
    fields = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            fields[key] = int(rest.split()[0]) * 1024
    return fields.get("MemAvailable", fields.get("MemFree", 0)), fields["MemTotal"]


torch.cuda.mem_get_info = _host_memory_info


def _eager(model=None, **options):
    """torch.compile on the stand-in: the function itself, run eagerly (torch's compilers would target the CUDA
    device the CPU tensors stand for)."""
    return model if model is not None else (lambda fn: fn)


torch.compile = _eager


def _on_cpu(device):
    if isinstance(device, int) or str(device).startswith("cuda"):
        return "cpu"
    return device


# torch's matrix products that take out_dtype= (an accumulation in f32 written once in the output's type) exist only
# for CUDA; on the CPU that stands in for it, the same result is the product in f32, converted once.
_DTYPE_PRODUCTS = {torch.mm, torch.bmm, torch.addmm, torch.baddbmm, torch.Tensor.mm, torch.Tensor.bmm}


def _product_in_f32(func, args, kwargs):
    out_dtype, out = kwargs.pop("out_dtype"), kwargs.pop("out", None)
    wide = tuple(a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
    result = func(*wide, **kwargs).to(out_dtype)
    if out is None:
        return result
    return out.copy_(result)


class CudaOnCpu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _DTYPE_PRODUCTS and kwargs.get("out_dtype") is not None:
            return _product_in_f32(func, args, kwargs)
        if kwargs.get("device") is not None:
            kwargs["device"] = _on_cpu(kwargs["device"])
        name = getattr(func, "__name__", "")
        if name == "cuda":
            return args[0]
        if name == "to":
            args = tuple(_on_cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
        return func(*args, **kwargs)


class _Generator(torch.Generator):
    """A random generator asked for on CUDA is made on the CPU, where the tensors it fills live."""

    def __new__(cls, device="cpu"):
        return super().__new__(cls, _on_cpu(device))

    def __init__(self, device="cpu"):
        pass


torch.Generator = _Generator
# Every tensor of a test stands for a CUDA one (its host-side checks assert so before a launch).
torch.Tensor.is_cuda = property(lambda self: self.device.type in ("cuda", "cpu"))

_custom_op = torch.library.custom_op


def _custom_op_on_any_device(*args, **kwargs):
    if kwargs.get("device_types") in ("cuda", ("cuda",), ["cuda"]):
        kwargs["device_types"] = None  # the CPU tensors that stand for CUDA ones dispatch to it too
    return _custom_op(*args, **kwargs)


torch.library.custom_op = _custom_op_on_any_device
torch._library.custom_ops.custom_op = _custom_op_on_any_device
CudaOnCpu().__enter__()


def _under_warpweave() -> bool:
    import cutlass
    return cutlass.__spec__.name == "warpweave"


# CuTe DSL itself (the reference column) compiles for CUTE_DSL_ARCH without a GPU; its first launch then stops at the
# CPU tensor the compiled function is handed (TVM FFI checks the device), or where the compiled module is loaded,
# at the driver that finds no device.
_REFERENCE_LAUNCH = ("expected device_type=cuda", "CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_NOT_INITIALIZED",
                     "no CUDA-capable device", "cudaErrorInsufficientDriver")


def _reference_launch(exc) -> bool:
    """Whether the test's error, or one it was raised from (QuACK's autotuner reports its configs' launch
    failures in an error of its own), is the reference's first launch."""
    import traceback
    error = exc[1]
    while error is not None:
        text = str(error)
        if any(m in text for m in _REFERENCE_LAUNCH):
            files = [f.f_code.co_filename for f, _ in traceback.walk_tb(error.__traceback__)]
            if any(("tvm_ffi" in f or os.sep + "cutlass" + os.sep in f) for f in files) or "tvm_ffi" in text:
                return True
        error = error.__cause__ or error.__context__
    return False


class _StandInHardwareInfo:
    """The reference column's HardwareInfo without a driver: the device _Properties describes (QuACK sizes its
    persistent grids by it before it compiles; CuTe DSL's own asks the driver, which is absent here, and the test
    would stop before any kernel compiled). One CTA per multiprocessor, as warpweave's compile-only stand-in."""

    def __init__(self, device_id=0):
        self.device_id = device_id

    def get_device_multiprocessor_count(self):
        return _Properties.multi_processor_count

    def get_max_active_clusters(self, cluster_size, stream=None):
        return _Properties.multi_processor_count // cluster_size

    def get_l2_cache_size_in_bytes(self):
        return _Properties.L2_cache_size

    def get_smem_capacity_in_bytes(self):
        return _Properties.shared_memory_per_block_optin


# The device attributes CuTe DSL asks the driver for while it builds a kernel's IR (a kernel of two or more CTAs
# per multiprocessor is given the multiprocessor's shared memory for its carveout), as the stand-in device has them.
_STAND_IN_ATTRIBUTES = {
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 228 << 10,
    "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": _Properties.shared_memory_per_block_optin,
    "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT": _Properties.multi_processor_count,
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": _CC[0],
    "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": _CC[1],
}


def _stand_in_device_attribute(attribute, device_id=0):
    name = getattr(attribute, "name", str(attribute))
    if name not in _STAND_IN_ATTRIBUTES:
        raise RuntimeError(f"the compile-only stand-in device has no {name}")
    return _STAND_IN_ATTRIBUTES[name]


def pytest_configure(config):
    if not _under_warpweave():
        import cutlass.utils
        import cutlass.base_dsl.runtime.cuda as reference_cuda
        cutlass.utils.HardwareInfo = _StandInHardwareInfo
        reference_cuda.get_device_attribute = _stand_in_device_attribute


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not _under_warpweave():
        outcome = yield
        exc = outcome.excinfo
        if exc is not None and _reference_launch(exc):
            outcome.force_result(None)
        return
    from warpweave._dsl.registry import compile_only
    with compile_only.compile_only():
        outcome = yield
    exc = outcome.excinfo
    if exc is not None and issubclass(exc[0], compile_only.LaunchSkipped):
        outcome.force_result(None)
