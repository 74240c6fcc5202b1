"""What the host side reads from a stream input: its CUstream handle. The call path, exported modules, cute.testing
and the CUDA facade all read streams the same way (a tensor input's view is runtime.runtime_view)."""
from __future__ import annotations

from ..base.errors import DSLTypeError, DSLValueError, user_location
from .runtime import FakeStream


def stream_handle(x) -> int:
    """The CUstream handle of a stream argument: None (the default stream), an int, a torch stream, a
    cuda.bindings CUstream (int() of it), or anything with cuda_stream / ptr / handle."""
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    if isinstance(x, FakeStream):
        raise DSLValueError("a fake stream (make_fake_stream) can be compiled for but not launched on: pass a "
                            "real stream to the compiled function", user_location(3))
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(x, attr, None)
        if v is not None:
            return int(v)
    try:
        return int(x)
    except (TypeError, ValueError):
        raise DSLTypeError(f"cannot use a {type(x).__name__} as a CUDA stream", user_location(3)) from None


def is_stream(x) -> bool:
    name = type(x).__name__
    return isinstance(x, FakeStream) or name in ("Stream", "ExternalStream", "CUstream") and not isinstance(
        x, (int, float))


def event_handle(x) -> int:
    """The CUevent handle of an event argument: an int, a cuda.bindings CUevent or cudaEvent_t (int() of it), a
    torch.cuda.Event (its cuda_event); None is no event (0)."""
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    v = getattr(x, "cuda_event", None)
    if v is not None:
        return int(v)
    try:
        return int(x)
    except (TypeError, ValueError):
        raise DSLTypeError(f"cannot use a {type(x).__name__} as a CUDA event", user_location(3)) from None


def is_event(x) -> bool:
    return type(x).__name__ in ("CUevent", "cudaEvent_t", "Event") and not isinstance(x, (int, float))


class HostEvent:
    """An event argument of a jit function while tracing (its handle is read at each call), for the event
    attributes of a launch."""

    def __init__(self, arg_index):
        self.arg_index = arg_index
