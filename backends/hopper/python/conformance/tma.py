"""Execute probe of kind "hopper_tma": TMA tile copies (sm_90a) through a tensor map made by the backend's own
host hook (encode_tma_descriptor), on a 32-bit integer tensor of the atom's rank.

Why this kind has its own probe: a TMA copy needs a tensor map that names a device address, so it cannot be
built before the buffers exist, and its completion goes through an mbarrier (loads) or a bulk group (stores);
the generic probes' (in, out) kernels have neither.

- load: each block (one case) initialises an mbarrier, arrives on it expecting the box's bytes, issues the load
  of the box at the case's coordinates into shared memory, waits on the barrier's phase 0 and copies the box to
  `out`. Cases: a box inside the tensor, one hanging off the low end (negative coordinates) and one off the high
  end (in every dimension); out-of-bounds elements must read as zero.
- load.multicast: a cluster of two CTAs; rank 0 issues the load with cta_mask 0b11, both CTAs' barriers expect
  the bytes, and both must receive the box (exercises clusters, the mbarrier-init fence and cluster barriers).
- store / reduce (add): one block fills shared memory with the box from `in`, fences it into the async proxy,
  stores (or adds) it at coordinates hanging off the high end, commits and waits for the bulk group; the tensor
  must hold the box where it is in bounds and be untouched elsewhere.

The kernel takes (tmap, in, out): the tensor map by value as a grid-constant parameter (the convention the
manifest documents: the instruction gets the parameter's generic address), and the tensor's address is only in
the map. Coordinates keep the hardware's rules that the manifest states: the innermost start is a multiple of
16 bytes, and stores start at non-negative coordinates (the H200 faults otherwise).
"""
from __future__ import annotations

import re
import struct

import numpy as np

from warpweave import _core
from warpweave.ext import emit_instruction

from warpweave_conformance.probes import FAIL, PASS, SKIP, kernel_name

DIMS = [36, 7, 5, 4, 3]     # innermost first; 36 * 4 bytes keeps every stride a multiple of 16
BOX = [8, 4, 2, 2, 2]       # 8 * 4 bytes: the inner box extent must be a multiple of 16 bytes
BLOCK = 128
EBYTES = 4
TMAP_BYTES = 128            # CUtensorMap


def _kind(entry: dict):
    m = re.match(r".*\.tma\.(load\.multicast|load|store|reduce)\.(\d)d$", entry.get("id", ""))
    return (m.group(1), int(m.group(2))) if m else (None, 0)


def load_cases(rank: int) -> list:
    return [[4, 1, 1, 1, 0][:rank], [-4, -1, -1, -1, -1][:rank], _high_end(rank)]


def store_case(rank: int) -> list:
    return _high_end(rank)


def _high_end(rank: int) -> list:
    # Off the high end in every dimension; DIMS[0] - 4 keeps the innermost start a multiple of 16 bytes.
    return [DIMS[0] - 4, DIMS[1] - 2, DIMS[2] - 1, DIMS[3] - 1, DIMS[4] - 1][:rank]


def tensor_map_attrs(rank: int, address: int) -> dict:
    """Attributes of encode_tma_descriptor for the probe's tensor (see the manifest entries' description)."""
    attrs = {"data_type": "s32", "rank": rank, "address": int(address), "swizzle": "none"}
    stride = EBYTES
    for i in range(rank):
        attrs[f"dim{i}"] = DIMS[i]
        attrs[f"box{i}"] = BOX[i]
        if i:
            attrs[f"stride{i}"] = stride
        stride *= DIMS[i]
    return attrs


def box_reference(g: np.ndarray, coords: list, rank: int, fill=0) -> tuple:
    """(box values, in-bounds mask) of the box at coords (innermost first) of g (numpy, outermost first)."""
    shape = tuple(BOX[:rank][::-1])
    idx = np.indices(shape)                                  # outermost first
    vals = np.full(shape, fill, dtype=g.dtype)
    pos = [idx[rank - 1 - i] + coords[i] for i in range(rank)]  # innermost first
    ok = np.ones(shape, dtype=bool)
    for i in range(rank):
        ok &= (pos[i] >= 0) & (pos[i] < DIMS[i])
    sel = tuple(np.where(ok, pos[rank - 1 - j], 0) for j in range(rank))
    vals[ok] = g[sel][ok]
    return vals, ok, sel


class _K:
    """A small kernel builder over the IR builder: constants, arithmetic, memory, scf.if."""

    def __init__(self, b):
        self.b = b

    def i32(self, v):
        return self.b.constant_int(int(v), "i32")

    def add(self, x, y):
        return self.b.op1("arith.addi", [x, y], self.b.type_of(x))

    def mul(self, x, y):
        return self.b.op1("arith.muli", [x, y], self.b.type_of(x))

    def eq(self, x, y):
        return self.b.op1("arith.cmpi", [x, y], "i1", "predicate = 0 : i64")

    def ult(self, x, y):
        return self.b.op1("arith.cmpi", [x, y], "i1", "predicate = 6 : i64")

    def gep(self, ptr, off, space):
        return self.b.op1("llvm.getelementptr", [ptr, off], f"!llvm.ptr<{space}>",
                          "elem_type = i8, rawConstantIndices = array<i32: -2147483648>")

    def load(self, ptr, ty="i32"):
        return self.b.op1("llvm.load", [ptr], ty, "alignment = 4 : i64")

    def store(self, v, ptr):
        self.b.op0("llvm.store", [v, ptr], "alignment = 4 : i64")

    def when(self, cond, body):
        self.b.begin_region([])
        body()
        self.b.op0("scf.yield", [])
        self.b.end_region()
        self.b.begin_region([])
        self.b.op0("scf.yield", [])
        self.b.end_region()
        self.b.op0("scf.if", [cond], num_regions=2)


def build(backend_name: str, entry: dict, prims: dict, kname: str, kind: str, rank: int) -> tuple:
    """The kernel (tmap, in, out) as MLIR text, and the byte sizes (in per case, out per case)."""
    box_bytes = int(np.prod(BOX[:rank])) * EBYTES
    coords_bytes = 32
    in_case = coords_bytes + (box_bytes if kind in ("store", "reduce") else 0)
    out_case = box_bytes
    b = _core.IRBuilder()
    smem = f"{kname}_smem"
    b.add_module_text(f"llvm.mlir.global internal @{smem}() {{addr_space = 3 : i32, alignment = 128 : i64}} : "
                      f"!llvm.array<{box_bytes + 16} x i8>")
    tmap, inp, out = b.begin_function(
        kname, ["!llvm.ptr", "!llvm.ptr<1>", "!llvm.ptr<1>"], "nvvm.kernel",
        [f"llvm.byval = !llvm.array<{TMAP_BYTES} x i8>, llvm.align = 64 : i64, nvvm.grid_constant", "", ""])
    k = _K(b)
    tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
    bid = b.op1("nvvm.read.ptx.sreg.ctaid.x", [], "i32")
    sptr = b.op1("llvm.mlir.addressof", [], "!llvm.ptr<3>", f"global_name = @{smem}")
    sbase = b.op1("llvm.ptrtoint", [sptr], "i32")
    mbar = k.add(sbase, k.i32(box_bytes))
    tmap_addr = b.op1("llvm.ptrtoint", [tmap], "i64")   # the parameter's generic address
    case = bid
    if kind == "load.multicast":
        # One case per cluster of two: both CTAs read the same coordinates and write their own copy.
        case = b.op1("arith.divui", [bid, k.i32(2)], "i32")
    cin = k.gep(inp, k.mul(case, k.i32(in_case)), 1)
    coords = [k.load(k.gep(cin, k.i32(4 * i), 1)) for i in range(rank)]
    is0 = k.eq(tid, k.i32(0))

    def emit(ident, inputs=None, attrs=None):
        return emit_instruction(b, backend_name, prims[ident], inputs or {}, attrs or {})

    def per_word(words, fn):
        # Every thread handles words tid, tid + 128, ...; the last round is guarded.
        for j in range(-(-words // BLOCK)):
            w = k.add(tid, k.i32(j * BLOCK))
            if (j + 1) * BLOCK <= words:
                fn(w)
            else:
                k.when(k.ult(w, k.i32(words)), lambda w=w: fn(w))

    if kind.startswith("load"):
        def init():
            emit("mbarrier.init", {"mbar": [mbar], "count": [k.i32(1)]})
            emit("mbarrier.init_fence")
        k.when(is0, init)
        if kind == "load.multicast":
            emit("cluster.arrive")
            emit("cluster.wait")
        else:
            b.op0("nvvm.barrier0", [])

        def issue():
            emit("mbarrier.arrive_expect_tx", {"mbar": [mbar], "tx_count": [k.i32(box_bytes)]})
            if kind == "load.multicast":
                rank_v = emit("cluster.ctarank")["value"][0]

                def multicast():
                    emit_instruction(b, backend_name, entry, {"dst": [sbase], "tmap": [tmap_addr], "mbar": [mbar],
                                                              "coords": coords, "cta_mask": [k.i32(3)]})
                k.when(k.eq(rank_v, k.i32(0)), multicast)
            else:
                emit_instruction(b, backend_name, entry, {"dst": [sbase], "tmap": [tmap_addr], "mbar": [mbar],
                                                          "coords": coords})
        k.when(is0, issue)
        emit("mbarrier.wait.parity", {"mbar": [mbar], "phase": [k.i32(0)]})
        obase = k.gep(out, k.mul(bid, k.i32(out_case)), 1)
        per_word(box_bytes // 4, lambda w: k.store(k.load(k.gep(sptr, k.mul(w, k.i32(4)), 3)),
                                                    k.gep(obase, k.mul(w, k.i32(4)), 1)))
        if kind == "load.multicast":
            # Neither CTA leaves while the other's copy may still be in flight into its shared memory.
            emit("cluster.arrive")
            emit("cluster.wait")
    else:
        dbase = k.gep(cin, k.i32(coords_bytes), 1)
        per_word(box_bytes // 4, lambda w: k.store(k.load(k.gep(dbase, k.mul(w, k.i32(4)), 1)),
                                                    k.gep(sptr, k.mul(w, k.i32(4)), 3)))
        # Written through the generic proxy, read by TMA through the async proxy.
        emit("fence.proxy.async.shared_cta")
        b.op0("nvvm.barrier0", [])

        def issue():
            emit_instruction(b, backend_name, entry, {"tmap": [tmap_addr], "src": [sbase], "coords": coords},
                             {"op": "add"} if kind == "reduce" else {})
            emit("tma.commit_group")
            emit("tma.wait_group", attrs={"n": 0})
        k.when(is0, issue)
    b.end_function()
    return str(b), in_case, out_case


NEEDED = {
    "load": ["mbarrier.init", "mbarrier.init_fence", "mbarrier.arrive_expect_tx", "mbarrier.wait.parity"],
    "load.multicast": ["mbarrier.init", "mbarrier.init_fence", "mbarrier.arrive_expect_tx", "mbarrier.wait.parity",
                       "cluster.arrive", "cluster.wait", "cluster.ctarank"],
    "store": ["fence.proxy.async.shared_cta", "tma.commit_group", "tma.wait_group"],
    "reduce": ["fence.proxy.async.shared_cta", "tma.commit_group", "tma.wait_group"],
}


def uses(backend) -> set:
    """The backend's primitives that the probes of this kind run (named in the execute tier's report)."""
    name = getattr(backend, "name", backend)
    return {f"{name}.{i}" for ids in NEEDED.values() for i in ids}


def prepare(backend, entry: dict, seed: int | None = None):
    """Host side: (kernel MLIR, kernel name, plan) or (status, reason)."""
    name = getattr(backend, "name", backend)
    kind, rank = _kind(entry)
    if kind is None:
        return SKIP, "not a hopper TMA tile copy (load, load.multicast, store, reduce)"
    if entry.get("host_hook") != "encode_tma_descriptor":
        return SKIP, "the probe builds its tensor map with the encode_tma_descriptor host hook"
    prims = {}
    for ident in NEEDED[kind]:
        full = f"{name}.{ident}"
        found = [p for p in backend.manifest.get("primitives", []) if p.get("id") == full]
        if not found:
            return SKIP, f"the backend lacks {full}, which the probe needs"
        prims[ident] = found[0]
    kname = kernel_name(entry)
    mlir, in_case, out_case = build(name, entry, prims, kname, kind, rank)
    rng = np.random.default_rng(seed)
    cases = load_cases(rank) if kind.startswith("load") else [store_case(rank)]
    box_words = int(np.prod(BOX[:rank]))
    data = rng.integers(-(1 << 20), 1 << 20, (len(cases), box_words), dtype=np.int32)
    in_bytes = np.zeros((len(cases), in_case), dtype=np.uint8)
    for i, c in enumerate(cases):
        in_bytes[i, :4 * rank] = np.array(c, dtype="<i4").view(np.uint8)
        if kind in ("store", "reduce"):
            in_bytes[i, 32:] = data[i].astype("<i4").view(np.uint8)
    g0 = rng.integers(-(1 << 20), 1 << 20, tuple(DIMS[:rank][::-1]), dtype=np.int32)
    return {"mlir": mlir, "kernel": kname, "kind": kind, "rank": rank, "cases": cases, "in": in_bytes.reshape(-1),
            "out_case": out_case, "box_data": data, "tensor": g0}


def check(plan: dict, tensor_after: np.ndarray, out: np.ndarray) -> tuple:
    """Compares what the kernel left in `out` (loads) or in the tensor (stores) with the reference."""
    kind, rank, g0 = plan["kind"], plan["rank"], plan["tensor"]
    shape = tuple(BOX[:rank][::-1])
    if kind.startswith("load"):
        copies = 2 if kind == "load.multicast" else 1
        got = np.asarray(out, dtype=np.uint8)[: len(plan["cases"]) * copies * plan["out_case"]]
        got = got.view("<i4").reshape((len(plan["cases"]) * copies,) + shape)
        for i, c in enumerate(plan["cases"]):
            want, ok, _ = box_reference(g0, c, rank)
            for j in range(copies):
                g = got[i * copies + j]
                if not np.array_equal(g, want):
                    bad = np.argwhere(g != want)[0]
                    pos = tuple(int(x) for x in bad[::-1])
                    who = f" (cluster rank {j})" if copies > 1 else ""
                    return FAIL, (f"box at coords {c}{who}: element {pos} (innermost first) is {int(g[tuple(bad)])}, "
                                  f"expected {int(want[tuple(bad)])}" + ("" if ok[tuple(bad)] else
                                                                          " (out of bounds: zero fill)"))
        return PASS, (f"{len(plan['cases'])} boxes (inside, off the low end, off the high end) match the tensor, "
                      "zero-filled out of bounds" + (", in both CTAs of the cluster" if copies > 1 else ""))
    c = plan["cases"][0]
    box = plan["box_data"][0].reshape(shape)
    want = g0.copy()
    _, ok, sel = box_reference(g0, c, rank)
    upd = want[sel]
    upd = np.where(ok, box + (upd if kind == "reduce" else 0), upd)
    want[tuple(s[ok] for s in sel)] = upd[ok]
    if np.array_equal(tensor_after, want):
        return PASS, (f"the box at coords {c} was {'added' if kind == 'reduce' else 'stored'} where in bounds; "
                      "the rest of the tensor is untouched")
    bad = np.argwhere(tensor_after != want)[0]
    return FAIL, (f"tensor element {tuple(int(x) for x in bad[::-1])} (innermost first) is "
                  f"{int(tensor_after[tuple(bad)])}, expected {int(want[tuple(bad)])}; box at coords {c}")


def execute(backend, entry, torch):
    from warpweave_conformance import gpu

    plan = prepare(backend, entry)
    if isinstance(plan, tuple):
        return plan
    cc = gpu.device_cc()
    cubin = gpu.compile_for_device(plan["mlir"], backend, entry, cc)
    dev = "cuda"
    tensor = torch.from_numpy(plan["tensor"].copy()).to(dev)
    attrs = tensor_map_attrs(plan["rank"], tensor.data_ptr())
    tmap = bytes(_core.plugin_host_call(backend.name, entry["host_hook"], attrs, TMAP_BYTES))
    d_in = torch.from_numpy(plan["in"].copy()).to(dev)
    multicast = plan["kind"] == "load.multicast"
    blocks = len(plan["cases"]) * (2 if multicast else 1)
    d_out = torch.full((max(16, blocks * plan["out_case"]),), 0xFF, dtype=torch.uint8, device=dev)
    torch.cuda.synchronize()
    module = _core.Module.load(cubin)
    fn = module.function(plan["kernel"])
    # The driver copies each parameter from its offset in this buffer; the map's 64-byte alignment is the
    # parameter's own (declared in the kernel), not the buffer's.
    params = tmap + struct.pack("<QQ", d_in.data_ptr(), d_out.data_ptr())
    stream = torch.cuda.current_stream().cuda_stream
    _core.launch(fn, [blocks, 1, 1], [BLOCK, 1, 1], [2, 1, 1] if multicast else [], 0, int(stream), params,
                 [0, TMAP_BYTES, TMAP_BYTES + 8])
    torch.cuda.synchronize()
    out = d_out.cpu().numpy()
    after = tensor.cpu().numpy()
    del module
    return check(plan, after, out)
