"""warpweave.cuda (CuTe DSL's cutlass.cuda): the CUDA context kernels run in."""
from __future__ import annotations

from . import _core
from ._dsl.base.errors import DSLRuntimeError, user_location
from ._dsl.registry import compile_only
from ._dsl.values.host_inputs import stream_handle


def initialize_cuda_context(device_id: int = 0) -> None:
    """Makes device_id's primary context current (warpweave otherwise does so at the first launch). In a
    compile-only run (python -m warpweave run --compile-only) there is no device, and nothing is done."""
    if compile_only.current() is not None:
        return
    if not _core.driver_available():
        raise DSLRuntimeError(f"initialize_cuda_context: no CUDA driver ({_core.driver_unavailable_reason()})",
                              user_location(2))
    if not 0 <= device_id < _core.device_count():
        raise DSLRuntimeError(f"initialize_cuda_context: no CUDA device {device_id} ({_core.device_count()} present)",
                              user_location(2))
    _core.set_device(device_id)


def default_stream():
    """The default stream as a cuda.bindings CUstream (handle 0)."""
    from cuda.bindings import driver

    return driver.CUstream(0)


def stream_sync(stream) -> None:
    """Waits until the work queued on `stream` (a CUstream, torch stream or handle) has finished."""
    handle = stream_handle(stream)
    if not _core.driver_available():
        raise DSLRuntimeError(f"stream_sync: no CUDA driver ({_core.driver_unavailable_reason()})", user_location(2))
    from cuda.bindings import driver

    (err,) = driver.cuStreamSynchronize(driver.CUstream(handle))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DSLRuntimeError(f"stream_sync: cuStreamSynchronize failed: {err.name}", user_location(2))

