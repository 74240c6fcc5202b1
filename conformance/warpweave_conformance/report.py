"""The human side: a progress bar on stderr, and the table of instructions x tiers per backend."""
from __future__ import annotations

import sys
import time
from collections import Counter, OrderedDict

from .records import FAIL, MANIFEST_ENTRY, PASS, SKIP

CELL = {PASS: "pass", FAIL: "FAIL", SKIP: "skip"}


class Progress:
    """A one-line bar on a terminal; on a pipe or file, a line at each tenth, so logs stay short."""

    def __init__(self, stream=None, width: int = 30):
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.total = 0
        self.done = 0
        self.label = ""
        self.t0 = time.perf_counter()
        self._last_tenth = -1

    def start(self, label: str, total: int) -> None:
        self.label, self.total, self.done, self._last_tenth = label, max(0, total), 0, -1
        self.t0 = time.perf_counter()
        self._draw(force=True)

    def step(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n) if self.total else self.done + n
        self._draw()

    def finish(self, note: str = "") -> None:
        self.done = self.total
        self._draw(force=True)
        if self.tty:
            self.stream.write("\n")
        if note:
            self.stream.write(f"  {note}\n")
        self.stream.flush()

    def _draw(self, force: bool = False) -> None:
        frac = self.done / self.total if self.total else 1.0
        fill = int(frac * self.width)
        line = (f"{self.label:<9} [{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total} "
                f"{time.perf_counter() - self.t0:6.1f}s")
        if self.tty:
            self.stream.write("\r" + line)
            self.stream.flush()
            return
        tenth = int(frac * 10)
        if force and self.done == 0 or tenth != self._last_tenth:
            self._last_tenth = tenth
            self.stream.write(line + "\n")
            self.stream.flush()


def _columns(records):
    cols = []
    for r in records:
        col = r.tier if r.tier == "manifest" else f"{r.tier} {r.target}".strip()
        if col not in cols:
            cols.append(col)
    order = {"manifest": 0, "compile": 1, "execute": 2}
    return sorted(cols, key=lambda c: (order.get(c.split()[0], 9), c))


def table(records, device: str = "", out=None) -> None:
    """Per backend: one row per instruction, one column per tier and target (GPU generation)."""
    out = out or sys.stdout
    by_backend = OrderedDict()
    for r in records:
        by_backend.setdefault(r.backend, []).append(r)
    for backend, recs in by_backend.items():
        cols = _columns(recs)
        rows = OrderedDict()
        for r in recs:
            col = r.tier if r.tier == "manifest" else f"{r.tier} {r.target}".strip()
            rows.setdefault(r.atom, {})[col] = r
        width = max([len(a) for a in rows] + [len("instruction")])
        cw = [max(len(c), 4) for c in cols]
        out.write(f"\n== {backend}" + (f"  (device: {device})" if device else "") + "\n")
        out.write(f"{'instruction':<{width}}  " + "  ".join(f"{c:<{w}}" for c, w in zip(cols, cw)) + "\n")
        for atom, cells in rows.items():
            line = f"{atom:<{width}}  " + "  ".join(
                f"{CELL[cells[c].status] if c in cells else '-':<{w}}" for c, w in zip(cols, cw))
            out.write(line.rstrip() + "\n")
        counts = Counter(r.status for r in recs)
        out.write(f"-- {backend}: {counts[PASS]} pass, {counts[FAIL]} fail, {counts[SKIP]} skip\n")
    fails = [r for r in records if r.status == FAIL]
    if fails:
        out.write(f"\nFailures ({len(fails)}):\n")
        for r in fails:
            where = f" [{r.tier}{' ' + r.target if r.target else ''}]"
            out.write(f"  {r.backend} {r.atom if r.atom != MANIFEST_ENTRY else '(manifest)'}{where}: "
                      f"{r.reason.strip()}\n")
    skips = Counter((r.tier, _skip_key(r.reason)) for r in records if r.status == SKIP)
    if skips:
        out.write("\nSkipped:\n")
        for (tier, reason), n in sorted(skips.items(), key=lambda kv: -kv[1]):
            out.write(f"  {n:5d} x [{tier}] {reason}\n")
    out.flush()


def _skip_key(reason: str) -> str:
    """Skip reasons grouped: the ones that name a target list or an id are folded by their stem."""
    for stem in ("not usable on ", "no execute probe for kind "):
        if reason.startswith(stem):
            return reason.split(" (")[0]
    return reason
