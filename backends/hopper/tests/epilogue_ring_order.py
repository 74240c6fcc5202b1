"""Ordering of a TMA-store epilogue through a ring of shared-memory buffers, read from a kernel's PTX.

An epilogue of this kind repeats, per output tile: the consumer threads write a sub-tile into buffer b (generic
proxy), fence towards the async proxy, meet at a named barrier, and one thread stores buffer b to global memory with
bulk tensor copies (asynchronous bulk groups, one group a sub-tile). Two hazards make results timing dependent while
nothing faults and no sanitizer reports anything (the bulk copy engine reads shared memory on its own):
  - a store reads buffer b before every thread's writes to b are fenced and past a barrier (read after write);
  - the threads write buffer b again while an earlier store may still read it: the store warp must have waited
    (bulk wait_group.read n) until that store's group is done, before a barrier that the writes come after
    (write after read).
The check abstracts the epilogue's PTX into events in the store warp's execution order (writes, fences, named
barriers, stores, commits, waits), places every address in a buffer by evaluating it for each consumer thread (the
address arithmetic is straight-line integer code from the thread index and the shared-memory base), and replays
the sequence twice (the tile loop), so that the buffers' reuse across tiles is checked too.
"""
import re
from dataclasses import dataclass, field

_ADDR = re.compile(r"\[(%r\d+)(?:\+(-?\d+))?\]")
_DEF = re.compile(r"([a-z][\w.]*)\s+(%r\d+),\s*(.*);$")
_MASK = 0xFFFFFFFF


@dataclass
class Event:
    kind: str                  # "write", "fence", "barrier", "store", "commit", "wait"
    line: int
    buffers: frozenset = field(default_factory=frozenset)   # write / store: the buffers its addresses fall in
    n: int = 0                 # wait: the groups that may stay pending


class _Addresses:
    """Evaluates 32-bit shared-memory addresses of a thread: the dynamic shared memory's base is 0."""

    def __init__(self, lines):
        self.defs = {}
        for i, line in enumerate(lines):
            m = _DEF.match(line.strip())
            if m:
                self.defs.setdefault(m.group(2), []).append((m.group(1), m.group(3), i + 1))

    def __call__(self, reg, tid):
        return self._reg(reg, tid, 0)

    def _operand(self, text, tid, depth):
        text = text.strip()
        if text.startswith("%r"):
            return self._reg(text, tid, depth + 1)
        if text == "%tid.x":
            return tid
        if re.fullmatch(r"-?\d+", text):
            return int(text) & _MASK
        if re.fullmatch(r"__ww_\w+", text):
            return 0
        raise ValueError(f"cannot evaluate operand {text!r}")

    def _reg(self, reg, tid, depth):
        defs = self.defs.get(reg, [])
        if len(defs) != 1 or depth > 64:
            raise ValueError(f"{reg} has {len(defs)} definitions: not straight-line address arithmetic")
        op, args, line = defs[0]
        a = [self._operand(x, tid, depth) for x in args.split(",")]
        s = lambda v: v - (1 << 32) if v & 0x80000000 else v  # noqa: E731
        base = op.split(".")[0]
        if base == "mov":
            return a[0]
        if base == "add":
            return (a[0] + a[1]) & _MASK
        if base == "sub":
            return (a[0] - a[1]) & _MASK
        if op == "mul.lo.s32":
            return (a[0] * a[1]) & _MASK
        if base == "shl":
            return (a[0] << a[1]) & _MASK
        if op in ("shr.u32", "shr.b32"):
            return a[0] >> a[1]
        if op == "shr.s32":
            return (s(a[0]) >> a[1]) & _MASK
        if base == "and":
            return a[0] & a[1]
        if base == "or":
            return a[0] | a[1]
        if base == "xor":
            return a[0] ^ a[1]
        if op == "bfe.u32":
            return (a[0] >> a[1]) & ((1 << a[2]) - 1)
        raise ValueError(f"line {line}: cannot evaluate {op} {args}")


def _store_warp_path(lines, start):
    """The lines the store warp runs from line start on, in execution order: through the blocks the compiler laid
    out elsewhere (the tile loop's last sub-tile often ends in a block placed before the loop), taking the
    fall-through of every predicated branch (the code skipped by the other warps and lanes: the store warp's elected
    lane runs all of it) and leaving loops at their back edges, until the kernel returns."""
    labels = {line.strip()[:-1]: i for i, line in enumerate(lines) if re.match(r"\s*\$\w+:\s*$", line)}
    i, seen = start, set()
    while i < len(lines) and i not in seen:
        seen.add(i)
        line = lines[i].strip()
        jump = re.match(r"bra(?:\.uni)?\s+(\$\w+);", line)
        if jump:
            i = labels[jump.group(1)]
            continue
        if line.startswith("ret;"):
            return
        yield i, line
        i += 1


def epilogue_events(ptx, buffer_bytes, threads):
    """The epilogue's events of one tile in execution order, from the mainloop's last wgmma wait (the first in the
    text) to the store warp's final wait (the block's tail, after the tile loop), which is left out. A write's
    buffers are those its address falls in for the given threads; the ring starts at the lowest store source."""
    lines = ptx.splitlines()
    addr = _Addresses(lines)
    start = next(i for i, line in enumerate(lines) if "wgmma.wait_group.sync.aligned 0;" in line)
    path = list(_store_warp_path(lines, start))
    sources = [addr(_ADDR.findall(line)[-1][0], 0) + int(_ADDR.findall(line)[-1][1] or 0) for _, line in path
               if line.startswith("cp.async.bulk.tensor") and ".global.shared::cta" in line]
    assert sources, "no TMA store in the epilogue"
    ring = min(sources)

    def buffers(reg, imm, tids):
        return frozenset((addr(reg, t) + imm - ring) // buffer_bytes for t in tids)

    events = []
    for i, line in path:
        if line.startswith(("stmatrix", "st.shared")):
            reg, imm = _ADDR.search(line).groups()
            events.append(Event("write", i + 1, buffers(reg, int(imm or 0), threads)))
        elif line.startswith("fence.proxy.async"):
            events.append(Event("fence", i + 1))
        elif re.match(r"bar\.sync\s+[1-9]", line):
            events.append(Event("barrier", i + 1))
        elif line.startswith("cp.async.bulk.wait_group.read"):
            events.append(Event("wait", i + 1, n=int(re.search(r"read\s+(\d+)", line).group(1))))
        elif line.startswith("cp.async.bulk.commit_group"):
            events.append(Event("commit", i + 1))
        elif line.startswith("cp.async.bulk.tensor") and ".global.shared::cta" in line:
            reg, imm = _ADDR.findall(line)[-1]
            events.append(Event("store", i + 1, buffers(reg, int(imm or 0), [0])))
    # The last event is the store warp's wait for all its stores before the block leaves (after the tile loop).
    assert events and events[-1].kind == "wait" and events[-1].n == 0, events[-3:]
    return events[:-1]


def hazards(events, buffers_in_ring):
    """The read-after-write and write-after-read hazards of the epilogue, replayed over two tiles. A store belongs
    to the bulk group its thread commits next; a wait_group.read n completes every committed group but the latest n.
    """
    problems = []
    committed = 0
    pending = []                   # (group, buffer, line) of the stores issued so far
    waited = set()                 # groups known complete by a wait ...
    ordered = set()                # ... and ordered before the later writes by a barrier after that wait
    state = {}                     # buffer -> "written", "fenced" or "published" (fenced, then a barrier)
    for e in events + events:
        outside = sorted(b for b in e.buffers if not 0 <= b < buffers_in_ring)
        if outside:
            problems.append(f"line {e.line}: an address outside the ring's {buffers_in_ring} buffers ({outside})")
        if e.kind == "store":
            for b in e.buffers:
                if state.get(b) != "published":
                    problems.append(f"line {e.line}: the store reads buffer {b} before its writes are fenced and "
                                    f"past a barrier")
                pending.append((committed, b, e.line))
        elif e.kind == "commit":
            committed += 1
        elif e.kind == "wait":
            waited |= set(range(committed - e.n))
        elif e.kind == "barrier":
            ordered |= waited
            state = {b: "published" if s == "fenced" else s for b, s in state.items()}
        elif e.kind == "fence":
            state = {b: "fenced" if s == "written" else s for b, s in state.items()}
        elif e.kind == "write":
            for b in e.buffers:
                for g, sb, line in pending:
                    if sb == b and g not in ordered:
                        problems.append(f"line {e.line}: a write to buffer {b} while the store at line {line} "
                                        f"(bulk group {g}) may still read it")
                state[b] = "written"
    return sorted(set(problems))


def store_buffers(events):
    """The buffers each bulk group of one tile reads, in order."""
    out, group = [], set()
    for e in events:
        if e.kind == "store":
            group |= e.buffers
        elif e.kind == "commit" and group:
            out.append(sorted(group))
            group = set()
    return out
