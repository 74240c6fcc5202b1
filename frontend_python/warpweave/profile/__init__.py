"""warpweave.profile (also cute.profile): timed regions inside kernels, written as a Perfetto / Chrome trace.

    prof = warpweave.profile.Profiler()                      # a device buffer for the events
    compiled = cute.compile[warpweave.profile.Profile(prof)](gemm, a, b, c)

    @cute.kernel
    def kernel(...):
        with cute.profile.region("mainloop"):                # or cute.profile.begin("mainloop") ... end(...)
            ...

    compiled(a, b, c)
    prof.write_trace("gemm.json")                            # open in ui.perfetto.dev

Each warp's lane 0 records a begin and an end event per region (the global timer, the SM's cycle counter, the
SM, the hardware warp slot, the CTA, the warp in the CTA) into its own slot of the buffer (device_events.py says how).
Regions nest; call them where the whole warp runs them (warp-uniform code: a warp-specialised kernel's role
branches are). Without the Profile option a region adds nothing to the kernel: no parameter, no instruction.
The buffer's address is a constant of the profiled kernels, so a compilation serves that Profiler only (on the
device that was current when it was made), and a Profiler a kernel was compiled against is kept for the rest of
the process.
"""
from __future__ import annotations

import weakref
from dataclasses import replace

from .. import _core
from .._dsl.base import trace as _trace
from .._dsl.base.compile_options import CompileOption, as_options
from .._dsl.call.jit import compile as cute_compile
from .._dsl.base.errors import DSLRuntimeError, DSLTypeError, DSLValueError, user_location
from . import device_events
from .trace import Event, ProfileData, Span, chrome_trace, decode, spans, write_chrome_trace

_profilers: "weakref.WeakValueDictionary[tuple, Profiler]" = weakref.WeakValueDictionary()
# A profiler whose address a kernel holds lives as long as the process: its kernels may run (and write into its
# buffer) after the caller dropped it.
_compiled_against: dict = {}

# Where a profiler without a device (compile-only) pretends its buffer is: page-aligned, never dereferenced.
_NO_DEVICE_ADDRESS = 0x7F0000000000


class Profiler:
    """The event buffer of profiled kernels: `max_warps` warp slots of `events_per_warp` events each (32 bytes
    an event). A launch's warps start their slots afresh: reset() and read() between launches keep each one's
    events apart, else a later launch overwrites an earlier one's. Without a GPU it is a compile-only profiler:
    kernels compile against it, nothing can be read."""

    def __init__(self, max_warps: int = 8192, events_per_warp: int = 128):
        for what, v, hi in (("max_warps", max_warps, 1 << 24), ("events_per_warp", events_per_warp, 1 << 20)):
            if not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= hi:
                raise DSLValueError(f"Profiler: {what} is an integer in 1..{hi}, got {v!r}", user_location(2))
        self.max_warps, self.events_per_warp = max_warps, events_per_warp
        self.counters_offset = max_warps * events_per_warp * device_events.RECORD_BYTES
        self.lost_offset = self.counters_offset + 4 * max_warps  # events of warps beyond max_warps (a u32)
        self.nbytes = self.lost_offset + 8
        self._names: dict[str, int] = {}
        self.buffer = None
        if _core.driver_available() and _core.device_count() > 0:
            self.buffer = _core.DeviceBuffer(self.nbytes)
            self.address = int(self.buffer.ptr)
            self.reset()
        else:
            self.address = _NO_DEVICE_ADDRESS
        self.token = ("warpweave.profile", self.address, max_warps, events_per_warp, id(self))
        _profilers[self.token] = self

    # --- regions ---------------------------------------------------------------------------------------------------

    def region_id(self, name: str) -> int:
        if not isinstance(name, str) or not name:
            raise DSLTypeError(f"cute.profile: a region is named by a non-empty string, got {name!r}",
                               user_location(4))
        rid = self._names.get(name)
        if rid is None:
            if len(self._names) >= 0xFFFF:
                raise DSLValueError("cute.profile: more than 65535 region names", user_location(4))
            rid = self._names[name] = len(self._names)
        return rid

    @property
    def names(self) -> dict[int, str]:
        return {i: n for n, i in self._names.items()}

    # --- the buffer ------------------------------------------------------------------------------------------------

    def _need_device(self, what):
        if self.buffer is None:
            raise DSLRuntimeError(f"Profiler.{what}: this profiler has no device buffer (no GPU: compile-only)",
                                  user_location(3))

    def reset(self) -> None:
        """Forgets the recorded events (before a run to be traced on its own)."""
        self._need_device("reset")
        self.buffer.copy_from_host(bytes(self.nbytes))

    def raw(self) -> bytes:
        self._need_device("raw")
        _core.synchronize()
        return self.buffer.copy_to_host()

    def read(self) -> ProfileData:
        """The events recorded since the last reset (waits for the device)."""
        return decode(self.raw(), self.max_warps, self.events_per_warp, self.names)

    def trace(self, clock: str = "clock64") -> dict:
        return chrome_trace(self.read(), clock)

    def write_trace(self, path: str, clock: str = "clock64") -> dict:
        """Writes the recorded events as a Chrome / Perfetto trace JSON file; returns the trace."""
        return write_chrome_trace(self.read(), path, clock)

    def compile(self, fn, *args, options=None, **kwargs):
        """cute.compile(fn, *args, **kwargs) with this profiler (and any other options)."""
        return cute_compile(fn, *args, options=as_options(options) + [Profile(self)], **kwargs)

    def __repr__(self):
        where = f"{self.address:#x}" if self.buffer is not None else "no device"
        return f"Profiler({self.max_warps} warps x {self.events_per_warp} events, {where})"


class Profile(CompileOption):
    """The compile option that profiles: cute.compile[warpweave.profile.Profile(profiler)](fn, *args)."""

    def __init__(self, profiler: Profiler):
        if not isinstance(profiler, Profiler):
            raise DSLTypeError(f"Profile takes a warpweave.profile.Profiler, got {type(profiler).__name__}",
                               user_location(2))
        self.profiler = profiler

    def apply(self, opts):
        return replace(opts, profile=self.profiler.token)


def _active(what: str):
    """The profiler of the kernel being traced, or None when the compilation is not profiled."""
    device_events.check_in_kernel(what)
    token = _trace.current().profile
    if token is None:
        return None
    prof = _profilers.get(token)
    if prof is None:
        raise DSLRuntimeError("cute.profile: the Profiler of this compilation no longer exists", user_location(3))
    _compiled_against[token] = prof
    return prof


def begin(name: str) -> None:
    """Marks the start of the region `name` for the calling warp."""
    prof = _active("begin")
    if prof is not None:
        device_events.event(prof, name, end=False)


def end(name: str) -> None:
    """Marks the end of the region `name` (the innermost open one) for the calling warp."""
    prof = _active("end")
    if prof is not None:
        device_events.event(prof, name, end=True)


class region:
    """`with cute.profile.region("mainloop"): ...`: begin on entry, end on exit."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        prof = _active("region")
        if prof is not None:
            device_events.event(prof, self.name, end=False)
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            prof = _active("region")
            if prof is not None:
                device_events.event(prof, self.name, end=True)
        return False


__all__ = ["Profiler", "Profile", "region", "begin", "end", "ProfileData", "Event", "Span", "decode", "spans",
           "chrome_trace", "write_chrome_trace"]
