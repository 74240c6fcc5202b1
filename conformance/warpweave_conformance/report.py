"""The human side: a progress bar on stderr (a terminal only), and the table of instructions x tiers per backend."""
from __future__ import annotations

import sys
from collections import Counter, OrderedDict

from warpweave.progress import Progress as _Progress

from .records import FAIL, MANIFEST_ENTRY, PASS, SKIP

CELL = {PASS: "pass", FAIL: "FAIL", SKIP: "skip"}


class Progress(_Progress):
    """The suite's bar: warpweave.progress's (drawn on a terminal only, quiet on a pipe or file)."""

    def __init__(self, stream=None, width: int = 30):
        super().__init__(stream=stream, width=width)


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
