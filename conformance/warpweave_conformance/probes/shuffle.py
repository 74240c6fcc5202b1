"""Execute probe of kind "shuffle": shfl.sync (idx, up, down, bfly) on 32-bit values.

Every lane holds a distinct random value; cases cover the whole warp and 8-lane segments (the clamp operand's
segment mask), uniform and per-lane source lanes / deltas / lane masks. Expected values follow the PTX ISA's
definition of shfl.sync, lane by lane, including the lanes that keep their own value when the source is out of
range (and the optional predicate result saying whether it was in range).
"""
from __future__ import annotations

import re

import numpy as np

from warpweave import _core

from .. import gpu
from ..kernels import ProbeKernel, Record, default_attrs, host_buffers, in_image, is_result, out_records, plan_inputs
from . import FAIL, PASS, SKIP, execute_probe, kernel_name

LANES = 32


def reference(mode: str, a: np.ndarray, b: np.ndarray, c: np.ndarray):
    """(d, pred) per lane of one warp, as the PTX ISA defines shfl.sync with every lane taking part."""
    d, pred = np.zeros(LANES, dtype=np.uint64), np.zeros(LANES, dtype=np.uint8)
    for lane in range(LANES):
        bval, cval, seg = int(b[lane]) & 0x1F, int(c[lane]) & 0x1F, (int(c[lane]) >> 8) & 0x1F
        max_lane = (lane & seg) | (cval & ~seg & 0x1F)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            p = j >= max_lane
        elif mode == "down":
            j = lane + bval
            p = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            p = j <= max_lane
        else:
            j = min_lane | (bval & ~seg & 0x1F)
            p = j <= max_lane
        if not p:
            j = lane
        d[lane] = a[j]
        pred[lane] = 1 if p else 0
    return d, pred


def _slots(entry):
    """Template operand number -> operand: results first, then inputs, in listed order (emit_instruction's rule)."""
    from ..kernels import _ins
    ops = entry.get("operands", [])
    out = []
    for op in [o for o in ops if is_result(o)] + [o for o in ops if not is_result(o)]:
        out.extend([op] * _ins.operand_slots(op))
    return out


def prepare(backend, entry: dict, seed: int | None = None):
    name = getattr(backend, "name", backend)
    m = re.search(r"shfl\.sync\.(idx|up|down|bfly)\.b32\s+([^;]+);", entry.get("ptx_template", ""))
    if not m:
        return SKIP, "the shuffle probe knows shfl.sync.{idx,up,down,bfly}.b32 templates only"
    mode = m.group(1)
    # PTX operand order: d[|p], a, b, c, membermask. Each is a template operand ($n) or an immediate.
    tokens = [t.strip() for t in m.group(2).split(",")]
    if len(tokens) != 5:
        return SKIP, f"unexpected shfl.sync operand list {m.group(2)!r}"
    slots = _slots(entry)
    roles = {}
    for key, tok in zip(("a", "b", "c", "mask"), tokens[1:]):
        ref = re.fullmatch(r"\$(\d+)", tok)
        if ref:
            if int(ref.group(1)) >= len(slots):
                return FAIL, f"the template refers to ${ref.group(1)}, beyond the operands"
            roles[key] = slots[int(ref.group(1))]
        else:
            try:
                roles[key] = int(tok, 0)
            except ValueError:
                return SKIP, f"shfl.sync operand {tok!r} is neither a template operand nor an integer"
    ops = entry.get("operands", [])
    results = [o for o in ops if is_result(o)]
    value_out = [o for o in results if o["role"] == "REGISTERS"]
    pred_out = [o for o in results if o["role"] == "PREDICATE"]
    if len(value_out) != 1 or len(results) != 1 + len(pred_out) or isinstance(roles["a"], int):
        return SKIP, "the shuffle probe takes one 32-bit value in and out (and an optional predicate out)"
    value_in = [roles["a"]]
    attrs, problem = default_attrs(entry)
    if problem:
        return SKIP, problem

    rng = np.random.default_rng(seed)
    full_c = 0 if mode == "up" else 0x1F
    seg8_c = ((32 - 8) << 8) | full_c
    clamps = [roles["c"]] if isinstance(roles["c"], int) else [full_c, seg8_c]
    bs = [None] if isinstance(roles["b"], int) else list({"idx": (5, 30), "up": (1, 3), "down": (1, 6),
                                                           "bfly": (1, 17)}[mode]) + ["random"]
    if isinstance(roles["mask"], int) and roles["mask"] & 0xFFFFFFFF != 0xFFFFFFFF:
        return SKIP, "the shuffle probe runs whole warps; the template's member mask leaves lanes out"
    configs = []
    for c in clamps:
        for bsel in bs:
            if bsel is None:
                bv = np.full(LANES, roles["b"])
            elif bsel == "random":
                bv = rng.integers(0, 32, LANES)
            else:
                bv = np.full(LANES, bsel)
            configs.append((c, bv))
    n = len(configs)
    a = np.stack([rng.choice(1 << 31, LANES, replace=False).astype(np.uint64) * 2 + 1 for _ in range(n)])
    in_rec, out_rec = Record(), Record()
    plan_inputs(entry, in_rec)
    out_rec.add(value_out[0]["name"], "i32", 1)
    if pred_out:
        out_rec.add(pred_out[0]["name"], "i8", 1)
    recs, data, out_size = host_buffers(n, LANES, in_rec, out_rec)
    u32 = lambda x: np.asarray(x, dtype=np.uint64).astype("<u4").view(np.uint8).reshape(n, LANES, 4)  # noqa: E731
    in_rec.put(recs, value_in[0]["name"], u32(a))
    for key, values in (("b", np.stack([bv for _, bv in configs])), ("c", np.stack([np.full(LANES, c) for c, _ in configs])),
                        ("mask", np.full((n, LANES), 0xFFFFFFFF))):
        if not isinstance(roles[key], int):
            in_rec.put(recs, roles[key]["name"], u32(values))

    kname = kernel_name(entry)
    b = _core.IRBuilder()
    k = ProbeKernel(b, kname, LANES, in_rec, out_rec)
    res = k.emit(name, entry, attrs)
    for o in results:
        k.write(o["name"], res[o["name"]])
    k.end()

    refs = [reference(mode, a[i], bv, np.full(LANES, c)) for i, (c, bv) in enumerate(configs)]

    def check(out: np.ndarray):
        recs_out = out_records(out, n, LANES, out_rec)
        got = np.ascontiguousarray(out_rec.get(recs_out, value_out[0]["name"])).view("<u4")[..., 0]
        for i, (c, bv) in enumerate(configs):
            d, p = refs[i]
            bad = np.nonzero(got[i].astype(np.uint64) != d)[0]
            if bad.size:
                lane = int(bad[0])
                src = [int(x) for x in np.nonzero(a[i] == got[i, lane])[0]]
                return FAIL, (f"shfl.{mode} clamp {c:#x}, b {int(bv[lane])}: lane {lane} got the value of lane "
                              f"{src[0] if src else '?'}, expected lane {int(np.nonzero(a[i] == d[lane])[0][0])}"
                              f" ({bad.size} lanes wrong)")
            if pred_out:
                gp = out_rec.get(recs_out, pred_out[0]["name"])[i, :, 0]
                wrong = np.nonzero((gp != 0) != (p != 0))[0]
                if wrong.size:
                    return FAIL, f"shfl.{mode} clamp {c:#x}: the predicate of lane {int(wrong[0])} is wrong"
        return PASS, f"{n} configurations of shfl.sync.{mode} (whole warp and 8-lane segments) match the PTX ISA"

    return gpu.Probe(str(b), kname, n, LANES, in_image(recs, data), out_size, check,
                     in_rec=in_rec, out_rec=out_rec)


def execute(backend, entry, torch):
    return execute_probe(prepare, backend, entry, torch)
