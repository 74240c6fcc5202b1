"""A one-line progress bar for long searches and suites (the autotuner, the conformance suite).

It draws only on a terminal: on a pipe or a file (CI logs, `| tee`) it writes nothing, so that logs hold results,
not carriage returns. WARPWEAVE_PROGRESS=1 forces the bar on, 0 forces it off.
"""
from __future__ import annotations

import os
import sys
import time


def _wanted(stream) -> bool:
    env = os.environ.get("WARPWEAVE_PROGRESS", "").strip()
    if env in ("0", "1"):
        return env == "1"
    return bool(getattr(stream, "isatty", None)) and stream.isatty()


class Progress:
    """progress.start(label, total); progress.step(); ...; progress.finish(note). Also a context manager:
    `with Progress("tune", 8) as p: ... p.step(detail="copy_bits=64")`."""

    def __init__(self, label: str = "", total: int = 0, *, stream=None, width: int = 30, enabled: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _wanted(self.stream) if enabled is None else bool(enabled)
        self.width = max(1, int(width))
        self.label, self.total, self.done, self.detail = label, max(0, int(total)), 0, ""
        self.t0 = time.perf_counter()
        self._shown = 0  # characters of the last line drawn (to blank a longer one)
        self._active = False
        self._drawn_at = 0.0

    def __enter__(self):
        self.start(self.label, self.total)
        return self

    def __exit__(self, *exc):
        self.finish()
        return False

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done, self.detail = label, max(0, int(total)), 0, ""
        self.t0 = time.perf_counter()
        self._active = True
        self._draw(force=True)

    def step(self, n: int = 1, detail: str | None = None) -> None:
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        if detail is not None:
            self.detail = detail
        self._draw(force=self.done == self.total)

    def finish(self, note: str = "") -> None:
        """Ends the bar's line; `note` is written on a line of its own whether or not a bar is drawn."""
        if self._active:
            self.done = max(self.done, self.total)
            self._draw(force=True)
            if self.enabled:
                self.stream.write("\n")
            self._active = False
        if note:
            self.stream.write(f"  {note}\n")
        self.stream.flush()

    def line(self) -> str:
        """The text of the bar as it stands (also what the tests read)."""
        frac = self.done / self.total if self.total else 1.0
        fill = int(frac * self.width)
        text = (f"{self.label:<9} [{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total} "
                f"{time.perf_counter() - self.t0:6.1f}s")
        return text + (f"  {self.detail}" if self.detail else "")

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._drawn_at < 0.1:  # at most ten redraws a second
            return
        self._drawn_at = now
        text = self.line()
        pad = max(0, self._shown - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._shown = len(text)


__all__ = ["Progress"]
