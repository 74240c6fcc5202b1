"""`cutlass.base_dsl.runtime.cuda`: the helpers CuTe DSL programs use with cuda-bindings: `checkCudaErrors` (the
values of a cuda-bindings call, or a DSLCudaRuntimeError naming its error), `load_cubin_module_data` (a CUmodule of a
cubin), `get_device_attribute` (a device's attribute), and `cuda`, the driver bindings themselves (whose enumerations
code reads, and whose helpers libraries wrap). They need cuda-bindings (`pip install cuda-bindings`), as the programs that call them do."""
from ..._dsl.base.errors import DSLCudaRuntimeError, DSLRuntimeError, user_location

try:
    from cuda.bindings import driver as _driver
except ImportError:  # cuda-bindings is optional: its absence is named when a helper is called
    _driver = None

cuda = _driver  # CuTe DSL's name for the driver bindings


def _require():
    if _driver is None:
        raise DSLRuntimeError("cutlass.base_dsl.runtime.cuda needs cuda-bindings (pip install cuda-bindings)",
                              user_location(3))


def _error_name(err) -> str:
    """The name of a driver (CUresult) or runtime (cudaError_t) error: its enum member's name, which needs no
    driver to be read."""
    name = getattr(err, "name", None)
    return name if isinstance(name, str) else str(err)


def checkCudaErrors(result):  # noqa: N802 - CuTe DSL's name
    """`result` of a cuda-bindings call, (error, values...): the values (None, one value, or a tuple) when the error
    is success, else a DSLCudaRuntimeError naming the error at the user's line (its error_code the error)."""
    _require()
    if not isinstance(result, tuple) or not result:
        raise DSLRuntimeError(f"checkCudaErrors takes the tuple a cuda-bindings call returns, got {result!r}",
                              user_location(2))
    err = result[0]
    if int(getattr(err, "value", err)) != 0:
        raise DSLCudaRuntimeError(f"CUDA error {int(getattr(err, 'value', err))} ({_error_name(err)})",
                                  user_location(2), err, _error_name(err))
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def load_cubin_module_data(cubin_data: bytes):
    """The CUmodule of a cubin (cuModuleLoadData), in the current context."""
    _require()
    if not isinstance(cubin_data, (bytes, bytearray)):
        raise DSLRuntimeError(f"load_cubin_module_data takes the cubin's bytes, got {type(cubin_data).__name__}",
                              user_location(2))
    err, module = _driver.cuModuleLoadData(bytes(cubin_data))
    if int(err) != 0:
        raise DSLRuntimeError(f"cuModuleLoadData failed: CUDA error {int(err)} ({_error_name(err)})", user_location(2))
    return module


def get_device_attribute(attribute, device_id: int = 0):
    """The value of a device attribute (a CUdevice_attribute) of device `device_id`, from the driver."""
    _require()
    (err,) = _driver.cuInit(0)
    if int(err) != 0:
        raise DSLCudaRuntimeError(f"cuInit failed: CUDA error {int(err)} ({_error_name(err)})", user_location(2), err,
                                  _error_name(err))
    err, value = _driver.cuDeviceGetAttribute(attribute, device_id)
    if int(err) != 0:
        raise DSLCudaRuntimeError(f"cuDeviceGetAttribute({_error_name(attribute)}) failed: CUDA error {int(err)} "
                                  f"({_error_name(err)})", user_location(2), err, _error_name(err))
    return value


__all__ = ["checkCudaErrors", "cuda", "get_device_attribute", "load_cubin_module_data"]
