"""The host side of warpweave.profile: decoding the event buffer and writing a Chrome / Perfetto trace.

The trace is the JSON Object Format of the Trace Event Format (what chrome://tracing and ui.perfetto.dev open): one
process per SM ("SM 12"), one thread per hardware warp slot of that SM ("warp 5"), one complete event ("ph": "X")
per region a warp entered and left, with its CTA and its warp index in the CTA as arguments. Timestamps are
microseconds from the earliest event. Each SM's cycle counter is mapped onto the global timer by a least-squares
fit over that SM's events (clock="clock64", the default: cycle resolution, aligned across SMs); clock="globaltimer"
uses the global timer as read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .._dsl.base.errors import DSLValueError, user_location
from .device_events import END_BIT, RECORD_BYTES


@dataclass
class Event:
    """One begin or end record of a warp."""
    globaltimer: int
    clock: int
    sm: int
    hw_warp: int
    region: int
    end: bool
    cta: int
    warp: int
    slot: int


@dataclass
class ProfileData:
    """What a profiled run recorded: its events (per warp slot, in the order each warp recorded them), the names of
    the regions, and how many events each slot dropped for want of room."""
    events: list
    names: dict
    dropped: dict = field(default_factory=dict)
    unrecorded: int = 0     # events of warps beyond the buffer's slots

    @property
    def total_dropped(self) -> int:
        return sum(self.dropped.values())


def decode(buffer: bytes, max_warps: int, events_per_warp: int, names: dict) -> ProfileData:
    """The events of a raw event buffer (records, one 32-bit count per warp slot, then the 32-bit count of events
    of warps beyond the slots and 4 bytes of padding)."""
    import numpy as np

    need = max_warps * events_per_warp * RECORD_BYTES + max_warps * 4 + 8
    if len(buffer) < need:
        raise DSLValueError(f"profile buffer of {len(buffer)} bytes, expected {need} for {max_warps} warps of "
                            f"{events_per_warp} events", user_location(3))
    words = np.frombuffer(buffer, dtype="<u8", count=max_warps * events_per_warp * 4).reshape(
        max_warps, events_per_warp, 4)
    counts = np.frombuffer(buffer, dtype="<u4", count=max_warps, offset=max_warps * events_per_warp * RECORD_BYTES)
    events, dropped = [], {}
    for slot in np.nonzero(counts)[0]:
        n = int(counts[slot])
        kept = min(n, events_per_warp)
        if n > kept:
            dropped[int(slot)] = n - kept
        for w0, w1, w2, w3 in words[slot, :kept].tolist():
            events.append(Event(w0, w1, w2 & 0xFFFF, (w2 >> 16) & 0xFFFF, (w2 >> 32) & 0xFFFF, bool(w2 >> END_BIT & 1),
                                w3 & 0xFFFFFFFF, w3 >> 32, int(slot)))
    lost = int(np.frombuffer(buffer, dtype="<u4", count=1, offset=max_warps * events_per_warp * RECORD_BYTES +
                             max_warps * 4)[0])
    return ProfileData(events, dict(names), dropped, lost)


def _clock_maps(events) -> dict:
    """sm -> (ns per cycle, offset): each SM's clock64 fitted to the global timer (None where one point only)."""
    by_sm: dict = {}
    for e in events:
        by_sm.setdefault(e.sm, []).append((e.clock, e.globaltimer))
    maps = {}
    for sm, pts in by_sm.items():
        n = len(pts)
        mx = sum(p[0] for p in pts) / n
        my = sum(p[1] for p in pts) / n
        sxx = sum((p[0] - mx) ** 2 for p in pts)
        if n < 2 or sxx == 0:
            maps[sm] = None
            continue
        slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
        if slope <= 0:  # a timer that did not move with the clock: use the timer
            maps[sm] = None
            continue
        maps[sm] = (slope, my - slope * mx)
    return maps


def timestamps(events, clock: str = "clock64") -> list[float]:
    """Each event's time in ns on a common axis."""
    if clock not in ("clock64", "globaltimer"):
        raise DSLValueError(f"clock is 'clock64' or 'globaltimer', got {clock!r}", user_location(3))
    if clock == "globaltimer":
        return [float(e.globaltimer) for e in events]
    maps = _clock_maps(events)
    out = []
    for e in events:
        m = maps.get(e.sm)
        out.append(m[0] * e.clock + m[1] if m else float(e.globaltimer))
    return out


@dataclass
class Span:
    name: str
    start_ns: float
    end_ns: float
    sm: int
    hw_warp: int
    cta: int
    warp: int
    depth: int


def spans(data: ProfileData, clock: str = "clock64"):
    """(the regions each warp entered and left, the problems found): an end without its begin, a begin never
    ended, an end of another region than the innermost open one."""
    ts = timestamps(data.events, clock)
    out, problems = [], []
    stacks: dict = {}
    for e, t in zip(data.events, ts):
        key = (e.slot, e.cta, e.warp)
        stack = stacks.setdefault(key, [])
        name = data.names.get(e.region, f"region {e.region}")
        if not e.end:
            stack.append((e, t))
            continue
        if not stack:
            problems.append(f"CTA {e.cta} warp {e.warp}: end of {name!r} without a begin")
            continue
        b, tb = stack[-1]
        if b.region != e.region:  # the stray end is dropped; the open region stays open
            problems.append(f"CTA {e.cta} warp {e.warp}: end of {name!r} inside "
                            f"{data.names.get(b.region, b.region)!r}")
            continue
        stack.pop()
        out.append(Span(name, tb, t, b.sm, b.hw_warp, b.cta, b.warp, len(stack)))
    for (slot, cta, warp), stack in stacks.items():
        for b, _ in stack:
            if slot not in data.dropped:  # a full slot loses its ends: said once, as dropped events
                problems.append(f"CTA {cta} warp {warp}: {data.names.get(b.region, b.region)!r} never ended")
    if data.unrecorded:
        problems.append(f"{data.unrecorded} events of warps beyond the buffer's slots were not recorded (give the "
                        "Profiler more max_warps)")
    if data.dropped:
        problems.append(f"{data.total_dropped} events dropped in {len(data.dropped)} warps (give the Profiler more "
                        "events_per_warp)")
    return out, problems


def chrome_trace(data: ProfileData, clock: str = "clock64") -> dict:
    """The trace as a JSON-ready dict: {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}."""
    found, problems = spans(data, clock)
    t0 = min((s.start_ns for s in found), default=0.0)
    events = []
    tracks = {}
    for s in found:
        tracks.setdefault(s.sm, {}).setdefault(s.hw_warp, set()).add(s.warp)
    for sm in sorted(tracks):
        events.append({"name": "process_name", "ph": "M", "pid": sm, "tid": 0, "args": {"name": f"SM {sm}"}})
        events.append({"name": "process_sort_index", "ph": "M", "pid": sm, "tid": 0, "args": {"sort_index": sm}})
        for hw in sorted(tracks[sm]):
            warps = ",".join(str(w) for w in sorted(tracks[sm][hw]))
            events.append({"name": "thread_name", "ph": "M", "pid": sm, "tid": hw,
                           "args": {"name": f"warp slot {hw} (CTA warp {warps})"}})
    for s in sorted(found, key=lambda s: (s.sm, s.hw_warp, s.start_ns, -s.end_ns)):
        events.append({"name": s.name, "cat": "region", "ph": "X", "pid": s.sm, "tid": s.hw_warp,
                       "ts": round((s.start_ns - t0) / 1e3, 4), "dur": round(max(0.0, s.end_ns - s.start_ns) / 1e3, 4),
                       "args": {"cta": s.cta, "warp": s.warp}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"producer": "warpweave.profile", "clock": clock, "problems": problems,
                          "dropped_events": data.total_dropped, "unrecorded_events": data.unrecorded}}


def write_chrome_trace(data: ProfileData, path: str, clock: str = "clock64") -> dict:
    trace = chrome_trace(data, clock)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(trace, f)
    return trace
