"""Primitives of the tcgen05 machinery and what a TMA pipeline around it needs: descriptors, tensor-memory
allocation, commit, waits, fences, bulk groups and mbarriers."""
from __future__ import annotations

from manifest_builder import entry, operand as op

CTA_GROUP = {"name": "cta_group", "type": "int", "allowed": ["1", "2"], "default_value": "1"}


def primitives():
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    # Descriptors. Their results are SCALAR operands (an i32 / an i64 through register_type) because the core
    # returns only register, scalar, predicate and coordinate outputs as results.
    yield P(id="blackwell.tcgen05.make_instr_desc", kind="DESCRIPTOR",
            description=(
                "the 32-bit tcgen05.mma instruction descriptor, a constant built by the hook tcgen05_instr_desc from "
                "attrs: atom (an MMA atom id; supplies the types, M and N), or a_type b_type (f16 bf16 tf32 e4m3 "
                "e5m2 e2m3 e3m2 e2m1 s8 u8), d_type (f16 f32 s32), m (64 128 256: the whole pair's M for "
                "cta_group::2), n (8..256, multiple of 8); and a_major b_major (\"K\" or \"MN\", or 0/1; default K), "
                "negate_a negate_b (0/1, float kinds), saturate (0/1, i8 only). Bits: [3] saturate, [4,6) D format "
                "(f16 0, f32 1, s32 2), [7,10) A format, [10,13) B format (f16 0 bf16 1 tf32 2; e4m3 0 e5m2 1 e2m3 3 "
                "e3m2 4 e2m1 5; u8 0 s8 1), [13] negate A, [14] negate B, [15] A MN-major, [16] B MN-major, "
                "[17,23) N>>3, [24,29) M>>4; the rest 0 (dense, no shift). For a block-scaled atom (kind::mxf4nvf4 and "
                "mxf4: e2m1, code 1; kind::mxf8f6f4: e4m3 0, e5m2 1, either major) D is f32 and has no field; its "
                "sfa_id and sfb_id (0..3, default 0: the byte of "
                "the scale factors' tensor-memory column the instruction starts at) and scale type are: [4,6) SFB id, "
                "[23] scale type (ue4m3 0, ue8m0 1), [27,29) M>>7 (not [24,29) M>>4), [29,31) SFA id"),
            python_name="tcgen05.make_instr_desc",
            operands=[op("idesc", "SCALAR", "OUT", register_type="b32")],
            attributes=[{"name": "atom", "type": "string"}, {"name": "a_type", "type": "string"},
                        {"name": "b_type", "type": "string"}, {"name": "d_type", "type": "string"},
                        {"name": "m", "type": "int"}, {"name": "n", "type": "int"},
                        {"name": "a_major", "type": "string", "allowed": ["K", "MN"], "default_value": "K"},
                        {"name": "b_major", "type": "string", "allowed": ["K", "MN"], "default_value": "K"},
                        {"name": "negate_a", "type": "int", "allowed": ["0", "1"], "default_value": "0"},
                        {"name": "negate_b", "type": "int", "allowed": ["0", "1"], "default_value": "0"},
                        {"name": "saturate", "type": "int", "allowed": ["0", "1"], "default_value": "0"},
                        {"name": "sfa_id", "type": "int", "allowed": ["0", "1", "2", "3"], "default_value": "0"},
                        {"name": "sfb_id", "type": "int", "allowed": ["0", "1", "2", "3"], "default_value": "0"}],
            lowering_hook="tcgen05_instr_desc")
    yield P(id="blackwell.tcgen05.make_smem_desc", kind="DESCRIPTOR",
            description=(
                "the 64-bit UMMA shared-memory matrix descriptor (tcgen05.mma A/B, tcgen05.cp source) of the tile at "
                "addr (a 32-bit shared address), integer ops from the hook umma_smem_desc. Attrs: "
                "leading_byte_offset and stride_byte_offset (bytes, multiples of 16, < 2^18), swizzle (\"NONE\" "
                "\"128B_BASE32B\" \"128B\" \"64B\" \"32B\", or the span in bytes 0 32 64 128; default NONE), base_offset "
                "(0..7, default 0), lbo_mode (0 relative, 1 absolute; default 0). Bits: [0,14) (addr>>4) mod 2^14, "
                "[16,30) LBO>>4, [32,46) SBO>>4, [46,48) version 1, [49,52) base offset, [52] LBO mode, [61,64) "
                "layout (none 0, 128B with 32B atoms 1, 128B 2, 64B 4, 32B 6)"),
            python_name="tcgen05.make_smem_desc",
            operands=[op("desc", "SCALAR", "OUT", register_type="b64"), op("addr", "SMEM_ADDRESS")],
            attributes=[{"name": "leading_byte_offset", "type": "int", "default_value": "16"},
                        {"name": "stride_byte_offset", "type": "int"},
                        {"name": "swizzle", "type": "string", "default_value": "NONE"},
                        {"name": "base_offset", "type": "int", "allowed": [str(i) for i in range(8)],
                         "default_value": "0"},
                        {"name": "lbo_mode", "type": "int", "allowed": ["0", "1"], "default_value": "0"}],
            lowering_hook="umma_smem_desc")
    yield P(id="blackwell.sm103.tcgen05.make_smem_desc_next", kind="DESCRIPTOR",
            description=(
                "sm_103a: the 64-bit UMMA shared-memory descriptor of a K-major tile at addr whose rows go on at "
                "next_addr (both 32-bit shared addresses): the leading field holds next_addr, not a byte offset "
                "(LBO mode 1, byte address absolute), so that one instruction of 48 bytes of K a row reads the rest "
                "of a row from another buffer (the K = 96 4-bit MMAs). Only the 128-byte swizzle, base offset 0. "
                "Attrs: stride_byte_offset (bytes, a multiple of 16, < 2^18), swizzle (128B). Bits: [0,14) "
                "(addr>>4) mod 2^14, [16,30) (next_addr>>4) mod 2^14, [32,46) SBO>>4, [46,48) version 1, [52] 1, "
                "[61,64) 2"),
            python_name="tcgen05.make_smem_desc_next",
            operands=[op("desc", "SCALAR", "OUT", register_type="b64"), op("addr", "SMEM_ADDRESS"),
                      op("next_addr", "SMEM_ADDRESS")],
            attributes=[{"name": "stride_byte_offset", "type": "int"},
                        {"name": "swizzle", "type": "string", "allowed": ["128B"], "default_value": "128B"}],
            lowering_hook="umma_smem_desc")
    # Tensor memory allocation: one warp executes each (sync.aligned).
    yield P(id="blackwell.tcgen05.alloc", kind="ALLOCATOR",
            description=("tcgen05.alloc: one warp allocates ncols columns (a power of two, 32..512) of tensor memory "
                         "(for both CTAs of the pair with cta_group 2) and writes the base address to shared memory "
                         "at dst; blocks while the columns are taken"),
            python_name="tcgen05.alloc_tmem",
            operands=[op("dst", "SMEM_ADDRESS"), op("ncols", "SCALAR")], attributes=[CTA_GROUP],
            ptx_template="tcgen05.alloc.cta_group::{cta_group}.sync.aligned.shared::cta.b32 [$0], $1;",
            constraints="r,r", has_side_effects=True, sass_opcodes=["UTCATOMSWS"])
    yield P(id="blackwell.tcgen05.dealloc", kind="ALLOCATOR",
            description="tcgen05.dealloc: the allocating warp frees ncols columns of tensor memory at taddr",
            python_name="tcgen05.dealloc_tmem",
            operands=[op("taddr", "TMEM_ADDRESS"), op("ncols", "SCALAR")], attributes=[CTA_GROUP],
            ptx_template="tcgen05.dealloc.cta_group::{cta_group}.sync.aligned.b32 $0, $1;",
            constraints="r,r", has_side_effects=True, sass_opcodes=["UTCATOMSWS.AND"])
    yield P(id="blackwell.tcgen05.relinquish_alloc_permit", kind="ALLOCATOR",
            description="tcgen05.relinquish_alloc_permit: this CTA will allocate no more tensor memory",
            python_name="tcgen05.relinquish_tmem_alloc_permit", attributes=[CTA_GROUP],
            ptx_template="tcgen05.relinquish_alloc_permit.cta_group::{cta_group}.sync.aligned;",
            has_side_effects=True, sass_opcodes=["UVIRTCOUNT.DEALLOC.SMPOOL"])
    yield P(id="blackwell.tcgen05.commit", kind="COMMIT",
            description=("tcgen05.commit: the mbarrier at mbar (shared::cluster address; with cta_group 2 it may be "
                         "the peer CTA's) gets one arrival once all prior async tcgen05 operations of this thread "
                         "(mma, cp, shift) have completed"),
            python_name="tcgen05.commit", operands=[op("mbar", "MBARRIER")], attributes=[CTA_GROUP],
            ptx_template="tcgen05.commit.cta_group::{cta_group}.mbarrier::arrive::one.shared::cluster.b64 [$0];",
            constraints="r", has_side_effects=True, sass_opcodes=["UTCBAR"])
    yield P(id="blackwell.tcgen05.commit.multicast", kind="COMMIT",
            description=("tcgen05.commit with multicast: as blackwell.tcgen05.commit, arriving on the mbarrier at the "
                         "same offset in every CTA of the cluster whose bit is set in cta_mask (low 16 bits)"),
            python_name="tcgen05.commit_multicast", operands=[op("mbar", "MBARRIER"), op("cta_mask", "SCALAR")],
            attributes=[CTA_GROUP],
            ptx_template=("{ .reg .b16 ww_mask; cvt.u16.u32 ww_mask, $1; tcgen05.commit.cta_group::{cta_group}"
                          ".mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [$0], ww_mask; }"),
            constraints="r,r", has_side_effects=True, sass_opcodes=["UTCBAR"])
    yield P(id="blackwell.tcgen05.shift", kind="OTHER",
            description=("tcgen05.shift.down: shifts the 32-byte rows of tensor memory at taddr down by one lane "
                         "(lanes 0..126 move to 1..127); asynchronous, completion through blackwell.tcgen05.commit"),
            python_name="tcgen05.shift", operands=[op("taddr", "TMEM_ADDRESS")], attributes=[CTA_GROUP],
            ptx_template="tcgen05.shift.cta_group::{cta_group}.down [$0];", constraints="r",
            has_side_effects=True, sass_opcodes=["UTCSHIFT"])
    yield P(id="blackwell.tcgen05.wait_ld", kind="WAIT",
            description="tcgen05.wait::ld: waits until this thread's prior tcgen05.ld have completed (their registers are valid)",
            python_name="tcgen05.wait_ld", ptx_template="tcgen05.wait::ld.sync.aligned;", has_side_effects=True,
            sass_opcodes=[])
    yield P(id="blackwell.tcgen05.wait_st", kind="WAIT",
            description="tcgen05.wait::st: waits until this thread's prior tcgen05.st have completed",
            python_name="tcgen05.wait_st", ptx_template="tcgen05.wait::st.sync.aligned;", has_side_effects=True,
            sass_opcodes=["FENCE.VIEW.ASYNC.T"])
    yield P(id="blackwell.tcgen05.fence.before_thread_sync", kind="FENCE",
            description=("tcgen05.fence::before_thread_sync: orders this thread's prior async tcgen05 operations "
                         "before a following thread synchronisation (barrier, mbarrier arrive)"),
            python_name="tcgen05.fence_before_thread_sync", ptx_template="tcgen05.fence::before_thread_sync;",
            has_side_effects=True, sass_opcodes=[])
    yield P(id="blackwell.tcgen05.fence.after_thread_sync", kind="FENCE",
            description=("tcgen05.fence::after_thread_sync: orders this thread's following async tcgen05 operations "
                         "after a preceding thread synchronisation (barrier, mbarrier wait)"),
            python_name="tcgen05.fence_after_thread_sync", ptx_template="tcgen05.fence::after_thread_sync;",
            has_side_effects=True, sass_opcodes=[])
    # Bulk-group completion of TMA stores and the proxy fence before them.
    yield P(id="blackwell.tma.commit_group", kind="COMMIT",
            description="cp.async.bulk.commit_group: closes the bulk group of this thread's TMA stores issued so far",
            python_name="arch.cp_async_bulk_commit_group",
            ptx_template="cp.async.bulk.commit_group;", has_side_effects=True, sass_opcodes=["UTMACMDFLUSH"])
    yield P(id="blackwell.tma.wait_group.read", kind="WAIT",
            description=("cp.async.bulk.wait_group.read n: waits until at most n bulk groups still read their "
                         "shared-memory source (the buffer may then be reused)"),
            python_name="arch.cp_async_bulk_wait_group_read",
            attributes=[{"name": "n", "type": "int"}], ptx_template="cp.async.bulk.wait_group.read {n};",
            has_side_effects=True, sass_opcodes=["DEPBAR.LE"])
    yield P(id="blackwell.tma.wait_group", kind="WAIT",
            description="cp.async.bulk.wait_group n: waits until at most n bulk groups are pending (writes visible)",
            python_name="arch.cp_async_bulk_wait_group",
            attributes=[{"name": "n", "type": "int"}], ptx_template="cp.async.bulk.wait_group {n};",
            has_side_effects=True, sass_opcodes=["DEPBAR.LE"])
    yield P(id="blackwell.fence.proxy_async.shared_cta", kind="FENCE",
            description=("fence.proxy.async.shared::cta: makes this thread's generic-proxy shared-memory writes visible "
                         "to the async proxy (TMA store, tcgen05.mma and tcgen05.cp reading shared memory)"),
            python_name="arch.fence_proxy_async_shared_cta",
            ptx_template="fence.proxy.async.shared::cta;", has_side_effects=True, sass_opcodes=["FENCE.VIEW.ASYNC.S"])
    # mbarrier basics, for TMA loads and tcgen05.commit.
    yield P(id="blackwell.mbarrier.init", kind="BARRIER",
            description="mbarrier.init: the 8-byte mbarrier at mbar expects count arrivals per phase",
            python_name="arch.mbarrier_init",
            operands=[op("mbar", "MBARRIER"), op("count", "SCALAR")],
            ptx_template="mbarrier.init.shared::cta.b64 [$0], $1;", constraints="r,r", has_side_effects=True,
            sass_opcodes=["STS.64", "SYNCS.CCTL.IVALL"])
    yield P(id="blackwell.mbarrier.init_fence", kind="FENCE",
            description=("fence.mbarrier_init.release.cluster: makes mbarrier.init visible to the cluster, TMA and "
                         "tcgen05.commit before they use the barrier"),
            python_name="arch.mbarrier_init_fence",
            ptx_template="fence.mbarrier_init.release.cluster;", has_side_effects=True,
            sass_opcodes=[])
    yield P(id="blackwell.mbarrier.arrive", kind="ARRIVE",
            description="mbarrier.arrive: one arrival on this CTA's mbarrier (release, CTA scope)",
            python_name="arch.mbarrier_arrive", operands=[op("mbar", "MBARRIER")],
            ptx_template="mbarrier.arrive.shared::cta.b64 _, [$0];", constraints="r", has_side_effects=True,
            sass_opcodes=["SYNCS.ARRIVE.TRANS64.A1T0"])
    yield P(id="blackwell.mbarrier.arrive_expect_tx", kind="ARRIVE",
            description=("mbarrier.arrive.expect_tx: one arrival that also expects tx_count more transaction bytes "
                         "(e.g. of TMA loads) in this phase"),
            python_name="arch.mbarrier_arrive_and_expect_tx",
            operands=[op("mbar", "MBARRIER"), op("tx_count", "SCALAR")],
            ptx_template="mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", constraints="r,r",
            has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"])
    yield P(id="blackwell.mbarrier.expect_tx", kind="BARRIER",
            description=("mbarrier.expect_tx: expects tx_count more transaction bytes in the current phase, without "
                         "arriving (the arrival comes apart, e.g. from mbarrier.arrive)"),
            python_name="arch.mbarrier_expect_tx",
            operands=[op("mbar", "MBARRIER"), op("tx_count", "SCALAR")],
            ptx_template="mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", constraints="r,r",
            has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A0TR"])
    yield P(id="blackwell.mbarrier.try_wait.parity", kind="WAIT",
            description=("mbarrier.try_wait.parity: true once the phase of parity phase (0 or 1) has completed; may "
                         "block for a time-limit first. Loop on it, or use blackwell.mbarrier.wait.parity"),
            python_name="arch.mbarrier_try_wait",
            operands=[op("done", "PREDICATE", "OUT"), op("mbar", "MBARRIER"), op("phase", "SCALAR")],
            ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;", constraints="=b,r,r",
            has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"])
    yield P(id="blackwell.mbarrier.wait.parity", kind="WAIT",
            description=("waits (a try_wait.parity loop in PTX) until the phase of parity phase has completed; the "
                         "lanes of a warp that run it together wait on the same barrier and phase (the loop exits "
                         "for the whole warp at once); lanes with barriers of their own loop on mbarrier_try_wait"),
            python_name="arch.mbarrier_wait",
            operands=[op("mbar", "MBARRIER"), op("phase", "SCALAR")],
            # The suspend-time hint parks the waiting warp until the phase completes, and the back-edge is a uniform
            # branch, as on sm_90 (see Hopper's).
            ptx_template=("{ .reg .pred ww_done; ww_wait: mbarrier.try_wait.parity.shared::cta.b64 ww_done, [$0], $1, "
                          "10000000; @!ww_done bra.uni ww_wait; }"),
            constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"])
