"""The device side of warpweave.profile: what a region's begin or end adds to a kernel.

Each warp owns a slot of the event buffer: slot = linear CTA index * warps per CTA + warp index in its CTA. Lane 0
of the warp writes one 32-byte record per event,

    word 0  %globaltimer (ns)          word 1  %clock64 (SM cycles)
    word 2  SM id | hardware warp id << 16 | region id << 32 | end << 48
    word 3  linear CTA index | warp index in the CTA << 32

at record `n` of its slot, and the event count n + 1 into the slot's counter (so that the host knows how many
were dropped once the slot is full). The count lives in a private variable of the thread, set to 0 at the
kernel's entry: LLVM keeps it in a register (loops included), so an event costs two timer reads, a compare and
lane 0's stores. The special registers are read through the NVVM dialect (architecture-neutral). Warps beyond the
buffer's slots are not recorded, only counted (one relaxed atomic add per event, into the word after the
counters); events beyond a slot's capacity are counted by the slot's counter.
"""
from __future__ import annotations

from .._dsl.base import trace
from .._dsl.base.errors import DSLTypeError, user_location

RECORD_BYTES = 32
END_BIT = 48


class _KernelProfile:
    """What one kernel's events share, emitted once at its entry."""

    def __init__(self, counter, lane_ok, lost, slot_records, slot_counter, who, where):
        self.counter = counter          # !llvm.ptr to the thread's private event count (i32)
        self.lane_ok = lane_ok          # i1: lane 0 of a warp that has a slot
        self.lost = lost                # i1: lane 0 of a warp beyond the slots (its events are only counted)
        self.slot_records = slot_records  # i64: the address of the warp's first record
        self.slot_counter = slot_counter  # i64: the address of the warp's counter
        self.who = who                  # i64: word 2 without the region and kind
        self.where = where              # i64: word 3


def _sreg(b, name, ty="i32"):
    return b.op1(f"nvvm.read.ptx.sreg.{name}", [], ty)


def _i64(b, v):
    return b.op1("arith.extui", [v], "i64")


def _setup(b, prof) -> _KernelProfile:
    c = lambda v, t="i64": b.constant_int(v, t)  # noqa: E731
    with trace.at_entry():
        counter = b.op1("llvm.alloca", [c(1, "i32")], "!llvm.ptr", "alignment = 4 : i64, elem_type = i32")
        b.op0("llvm.store", [c(0, "i32"), counter], "alignment = 4 : i64")
        lane = _sreg(b, "laneid")
        tid = [_i64(b, _sreg(b, f"tid.{a}")) for a in "xyz"]
        ntid = [_i64(b, _sreg(b, f"ntid.{a}")) for a in "xyz"]
        cta = [_i64(b, _sreg(b, f"ctaid.{a}")) for a in "xyz"]
        ncta = [_i64(b, _sreg(b, f"nctaid.{a}")) for a in "xyz"]
        add = lambda x, y: b.op1("arith.addi", [x, y], "i64")  # noqa: E731
        mul = lambda x, y: b.op1("arith.muli", [x, y], "i64")  # noqa: E731
        linear = lambda i, n: add(i[0], mul(n[0], add(i[1], mul(n[1], i[2]))))  # noqa: E731
        thread = linear(tid, ntid)
        warp = b.op1("arith.divui", [thread, c(32)], "i64")
        threads = mul(ntid[0], mul(ntid[1], ntid[2]))
        warps = b.op1("arith.divui", [add(threads, c(31)), c(32)], "i64")
        block = linear(cta, ncta)
        slot = add(mul(block, warps), warp)
        has_slot = b.op1("arith.cmpi", [slot, c(prof.max_warps)], "i1", "predicate = 6 : i64")  # ult
        lane0 = b.op1("arith.cmpi", [lane, c(0, "i32")], "i1", "predicate = 0 : i64")  # eq
        lane_ok = b.op1("arith.andi", [has_slot, lane0], "i1")
        no_slot = b.op1("arith.xori", [has_slot, b.constant_int(1, "i1")], "i1")
        lost = b.op1("arith.andi", [no_slot, lane0], "i1")
        records = add(c(prof.address), mul(slot, c(prof.events_per_warp * RECORD_BYTES)))
        counters = add(c(prof.address + prof.counters_offset), mul(slot, c(4)))
        smid = _i64(b, _sreg(b, "smid"))
        hw_warp = _i64(b, _sreg(b, "warpid"))
        who = b.op1("arith.ori", [smid, b.op1("arith.shli", [hw_warp, c(16)], "i64")], "i64")
        where = b.op1("arith.ori", [block, b.op1("arith.shli", [warp, c(32)], "i64")], "i64")
    return _KernelProfile(counter, lane_ok, lost, records, counters, who, where)


def _store(b, value, address_i64, offset):
    c = b.constant_int
    a = b.op1("arith.addi", [address_i64, c(offset, "i64")], "i64") if offset else address_i64
    p = b.op1("llvm.inttoptr", [a], "!llvm.ptr<1>")
    b.op0("llvm.store", [value, p], f"alignment = {16 if offset % 16 == 0 else 8} : i64")


def _store_record(b, address_i64, words):
    """The four words of a record as two 16-byte stores (records are 32-byte aligned)."""
    p = b.op1("llvm.inttoptr", [address_i64], "!llvm.ptr<1>")
    for half in range(2):
        v = b.op1("llvm.mlir.undef", [], "vector<2xi64>")
        for lane in range(2):
            v = b.op1("llvm.insertelement", [v, words[2 * half + lane], b.constant_int(lane, "i32")], "vector<2xi64>")
        q = p if half == 0 else b.op1("llvm.getelementptr", [p], "!llvm.ptr<1>",
                                      "elem_type = i8, rawConstantIndices = array<i32: 16>")
        b.op0("llvm.store", [v, q], "alignment = 16 : i64")


def _if(b, cond, body):
    b.begin_region([])
    body()
    b.op0("scf.yield", [])
    b.end_region()
    b.begin_region([])
    b.op0("scf.yield", [])
    b.end_region()
    b.op("scf.if", [cond], [], num_regions=2)


def event(prof, name: str, end: bool) -> None:
    """Emits one begin (end=False) or end event of the region `name` at the current point of the kernel."""
    st = trace.current()
    b = trace.builder()
    ks = st.kernel
    kp = getattr(ks, "ww_profile", None)
    if kp is None:
        kp = _setup(b, prof)
        ks.ww_profile = kp
    rid = prof.region_id(name)
    c = b.constant_int
    gtime = _sreg(b, "globaltimer", "i64")
    clock = _sreg(b, "clock64", "i64")
    n = b.op1("llvm.load", [kp.counter], "i32", "alignment = 4 : i64")
    n1 = b.op1("arith.addi", [n, c(1, "i32")], "i32")
    b.op0("llvm.store", [n1, kp.counter], "alignment = 4 : i64")
    word2 = b.op1("arith.ori", [kp.who, c((rid << 32) | (int(end) << END_BIT), "i64")], "i64")

    def record():
        _store(b, n1, kp.slot_counter, 0)
        room = b.op1("arith.cmpi", [n, c(prof.events_per_warp, "i32")], "i1", "predicate = 6 : i64")  # ult

        def write():
            at = b.op1("arith.addi", [kp.slot_records, b.op1("arith.muli", [_i64(b, n), c(RECORD_BYTES, "i64")],
                                                               "i64")], "i64")
            _store_record(b, at, [gtime, clock, word2, kp.where])
        _if(b, room, write)
    _if(b, kp.lane_ok, record)

    def count_lost():
        p = b.op1("llvm.inttoptr", [c(prof.address + prof.lost_offset, "i64")], "!llvm.ptr<1>")
        b.op1("llvm.atomicrmw", [p, c(1, "i32")], "i32",
              'bin_op = 1 : i64, ordering = 2 : i64, syncscope = "device", alignment = 4 : i64')  # add, relaxed
    _if(b, kp.lost, count_lost)


def check_in_kernel(what: str) -> None:
    st = trace.current_or_none()
    if st is None or st.kernel is None:
        raise DSLTypeError(f"cute.profile.{what} marks device code: call it inside a @cute.kernel function",
                           user_location(3))
