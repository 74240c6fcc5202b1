"""What a trace reaches: the source files of the Python code it runs (through sys.monitoring) and the
@cute.jit / @cute.kernel functions it uses. The function cache (call/function_cache.py) records a first trace
with it and keys its entry on what was reached; the decorated functions note themselves here when they are used,
so this sits below both."""
from __future__ import annotations

import os
import sys

_STDLIB = os.path.realpath(os.path.dirname(os.__file__)) + os.sep  # the interpreter's own library

_recording = None  # the Recording of the trace running now


def note_reached(decorated) -> None:
    """Called when a trace uses a @cute.jit / @cute.kernel function."""
    if _recording is not None:
        _recording.functions.add(decorated)


def note_file(path: str) -> None:
    """Called when a trace reads a file other than Python source (an extern's bitcode): an edit of it is a miss."""
    if _recording is not None:
        _recording.data_files.add(path)


class Recording:
    """The source files of the Python code a trace runs, and the decorated functions it reaches."""

    def __init__(self):
        self.codes: set = set()
        self.functions: set = set()
        self.data_files: set = set()
        self.tool = None
        self.problem = None

    def __enter__(self):
        global _recording
        mon = getattr(sys, "monitoring", None)
        if mon is None:
            self.problem = "this Python has no sys.monitoring to record what the trace runs"
        else:
            for tool in (3, 4):  # ids that no standard tool claims (debugger 0, coverage 1, profiler 2, optimizer 5)
                if mon.get_tool(tool) is None:
                    self.tool = tool
                    break
            if self.tool is None:
                self.problem = "no free sys.monitoring tool id to record what the trace runs"
            else:
                mon.use_tool_id(self.tool, "warpweave function cache")
                codes, disable = self.codes, mon.DISABLE

                def started(code, offset):
                    codes.add(code)
                    return disable  # once per function is enough

                mon.register_callback(self.tool, mon.events.PY_START, started)
                mon.restart_events()  # functions a previous recording saw must be seen again
                mon.set_events(self.tool, mon.events.PY_START)
        self._prev = _recording
        _recording = self
        return self

    def __exit__(self, *exc):
        global _recording
        _recording = self._prev
        if self.tool is not None:
            mon = sys.monitoring
            mon.set_events(self.tool, 0)
            mon.register_callback(self.tool, mon.events.PY_START, None)
            mon.free_tool_id(self.tool)
        return False

    def files(self) -> list:
        paths = {c.co_filename for c in self.codes} | {f.fn.__code__.co_filename for f in self.functions}
        paths |= self.data_files
        out = []
        for p in sorted(paths):
            if p.startswith("<"):
                continue  # frozen modules, generated code (its source is in a file recorded too)
            real = os.path.realpath(p)
            if real.startswith(_STDLIB):
                continue  # the interpreter's own library
            st = os.stat(real)
            out.append([real, st.st_size, st.st_mtime_ns])
        return out
