#!/usr/bin/env python3
"""Writes blackwell.textproto, the manifest of the Blackwell backend (sm_100a, sm_103a).

The committed textproto is the source the plugin embeds. The tcgen05.mma atoms (~1500 that differ in shape and
types), tcgen05.ld/st and the TMA loads and stores are atom families (manifest.proto, message Family): parameters,
the rules on them and one templated instruction each, expanded by the core when an atom is selected. Edit the tables here, run

    python3 backends/blackwell/generate_manifest.py

and commit both files. Plain Python 3, no dependencies, so it runs anywhere the repository is checked out.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The writer the backends' generators share lives in backends/, beside this backend's folder; this script runs on
# its own (no package holds it), so its parent folder is put on the path.
sys.path.insert(0, os.path.dirname(HERE))
from manifest_builder import (  # noqa: E402
    entry, family, format_element_types, format_entry, format_header, format_target, operand as op, parameter as param,
    write_or_check,
)

TARGET = "sm_100a"
# sm_103a (B300) runs the same tcgen05, tensor-memory, TMA and cluster PTX as sm_100a: each entry names both, and
# the SASS is the same (the conformance compile tier checks each entry on each target).
TARGETS = (TARGET, "sm_103a")


# Entries of sm_103a alone: its 4-bit MMAs with K = 96 and the shared-memory descriptor whose leading field is the
# address of the next buffer (the "byte address absolute" mode, which only those MMAs read).
SM103_ONLY = ("blackwell.sm103.tcgen05.mma.mxf4nvf4", "blackwell.sm103.tcgen05.mma.mxf4",
              "blackwell.sm103.tcgen05.make_smem_desc_next")


def targets_of(fields: dict):
    """sm_103a has no integer tensor-core MMA (ptxas: "Feature '.kind::i8' not supported on .target 'sm_103a'"):
    the kind::i8 family is sm_100a's alone; SM103_ONLY's entries are sm_103a's alone."""
    if fields.get("id") in SM103_ONLY:
        return ("sm_103a",)
    return (TARGET,) if fields.get("id") in ("blackwell.tcgen05.mma.i8", "blackwell.prim.tcgen05.mma.i8") else TARGETS

# Entries that Hopper offers too (TMA, mbarrier, bulk groups, proxy fence) share its Python names, as in CuTe DSL;
# the frontend picks the entry made for the target being compiled for.

# ---------------------------------------------------------------------------------------------------------------
# tcgen05.mma
# ---------------------------------------------------------------------------------------------------------------

# Manifest element type -> the DSL's numeric type name (python_params).
PY_DTYPE = {"f16": "Float16", "bf16": "BFloat16", "tf32": "TFloat32", "f32": "Float32", "e4m3": "Float8E4M3FN",
            "e5m2": "Float8E5M2", "s8": "Int8", "u8": "Uint8", "s32": "Int32", "e2m1": "Float4E2M1FN",
            "ue8m0": "Float8E8M0FNU", "e2m3": "Float6E2M3FN", "e3m2": "Float6E3M2FN"}

# kind -> the Python constructor's positional parameters (CuTe DSL's order) and the parameters it implies.
MMA_SIGNATURES = {
    "f16": (["ab_dtype", "acc_dtype", "shape_mnk", "cta_group", "a_src"], {}),
    "tf32": (["shape_mnk", "cta_group", "a_src"], {"ab_dtype": "TFloat32", "acc_dtype": "Float32"}),
    "f8f6f4": (["ab_dtype", "acc_dtype", "shape_mnk", "cta_group", "a_src"], {}),
    "i8": (["ab_dtype", "shape_mnk", "cta_group", "a_src"], {"acc_dtype": "Int32"}),
}

# kind -> (python class, K of one instruction, [(A/B element type, accumulator type)]). K is always 256 bits of A.
MMA_KINDS = {
    "f16": ("tcgen05.MmaF16BF16Op", 16, [("f16", "f16"), ("f16", "f32"), ("bf16", "f32")]),
    "tf32": ("tcgen05.MmaTF32Op", 8, [("tf32", "f32")]),
    "f8f6f4": ("tcgen05.MmaF8F6F4Op", 32, [("e4m3", "f16"), ("e4m3", "f32"), ("e5m2", "f16"), ("e5m2", "f32")]),
    "i8": ("tcgen05.MmaI8Op", 32, [("s8", "s32"), ("u8", "s32")]),
}


# The dense shapes (MMA_N_RULES below says them as rules):
# (M, N) pairs. With A in shared memory: the PTX ISA's table of dense shapes (cta_group::1: M 64/128, N in
# steps of 8; cta_group::2: M 128/256, N in steps of 16). With A in tensor memory, cta_group::1 takes the same
# shapes (CuTe's SM100 TS traits: N in steps of 8 for M 64 and 128; CuTe DSL's attention decode runs M=128, N=8
# with A in tensor memory); cta_group::2 keeps CuTe's stricter N % 32: the hardware rules are in the idesc, which
# ptxas cannot check, so a shape we are unsure of is better left out. kind::i8 follows CuTe's S8 traits
# (cta_group::1: N = 8 or a multiple of 16; cta_group::2: a multiple of 32).


# ---------------------------------------------------------------------------------------------------------------
# tcgen05.ld / tcgen05.st
# ---------------------------------------------------------------------------------------------------------------

# shape -> (lanes, bits per lane of one repetition, registers per thread of one repetition, largest .num)
TMEM_SHAPES = {"32x32b": (32, 32, 1, 128), "16x64b": (16, 64, 1, 128), "16x128b": (16, 128, 2, 64),
               "16x256b": (16, 256, 4, 32)}


# ---------------------------------------------------------------------------------------------------------------
# tcgen05.cp
# ---------------------------------------------------------------------------------------------------------------

# PTX shape -> (Python class, bits read from shared memory, what lands in tensor memory)
CP_SHAPES = {
    "128x256b": ("Cp128x256bOp", 128 * 256, "128 lanes x 256 bits"),
    "4x256b": ("Cp4x256bOp", 4 * 256, "4 lanes x 256 bits"),
    "128x128b": ("Cp128x128bOp", 128 * 128, "128 lanes x 128 bits"),
    "64x128b.warpx2::02_13": ("Cp2x64x128b0213Op", 64 * 128,
                              "64 rows x 128 bits, multicast: the lane quarters of warps 0 and 2 get one half, "
                              "those of warps 1 and 3 the other"),
    "64x128b.warpx2::01_23": ("Cp2x64x128b0123Op", 64 * 128,
                              "64 rows x 128 bits, multicast: the lane quarters of warps 0 and 1 get one half, "
                              "those of warps 2 and 3 the other"),
    "32x128b.warpx4": ("Cp4x32x128bOp", 32 * 128, "32 rows x 128 bits, multicast to the lane quarters of all four "
                       "warps"),
}


def cp_atoms():
    for cta in (1, 2):
        for shape, (cls, bits, what) in CP_SHAPES.items():
            yield entry(
                "atoms", id=f"blackwell.tcgen05.cp.cta{cta}.{shape.replace('::', '_')}", kind="COPY",
                description=(f"tcgen05.cp.cta_group::{cta}.{shape}: from shared memory (the UMMA descriptor src) to "
                             f"tensor memory at dst, {what}; one thread issues it; asynchronous, completion through "
                             f"blackwell.tcgen05.commit"),
                python_name=f"tcgen05.{cls}", python_params={"cta_group": str(cta)},
                python_signature=["cta_group"], thr_id="1:1",
                layout_unit_bits=32,
                operands=[op("dst", "TMEM_ADDRESS", layout_tv=f"(1,{bits // 32}):(0,1)"),
                          op("src", "SMEM_DESCRIPTOR", layout_tv=f"(1,{bits // 32}):(0,1)")],
                ptx_template=f"tcgen05.cp.cta_group::{cta}.{shape} [$0], $1;", constraints="r,l",
                has_side_effects=True, sass_opcodes=[cp_sass(shape, cta)], conformance="tcgen05_cp")


def cp_sass(shape: str, cta: int) -> str:
    # Observed: UTCCP.T.S[.2CTA][.<dp shape>], the 128x256b shape without a suffix of its own.
    suffix = {"128x256b": "", "4x256b": ".4dp256bit", "128x128b": ".128dp128bit",
              "64x128b.warpx2::02_13": ".2x64dp128bit_lw02_lw13", "64x128b.warpx2::01_23": ".2x64dp128bit_lw01_lw23",
              "32x128b.warpx4": ".4x32dp128bit"}[shape]
    return "UTCCP.T.S" + (".2CTA" if cta == 2 else "") + suffix


# ---------------------------------------------------------------------------------------------------------------
# TMA for sm_100a (same PTX as on Hopper) and its 2-CTA form
# ---------------------------------------------------------------------------------------------------------------

TMA_HOST_ATTRS = (
    "host hook encode_tma_descriptor writes the 128-byte tensor map (the lent cuTensorMapEncodeTiled) from attrs: "
    "data_type (driver enum int 0-15, or u8 u16 u32 s32 u64 s64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz), rank (1-5), "
    "address (global, 16-byte aligned), dim0..dim{rank-1} (elements, innermost first), stride1..stride{rank-1} "
    "(bytes, multiples of 16), box0..box{rank-1} (1..256), elem_stride0.. (default 1), interleave (0 none, 1 16B, "
    "2 32B), swizzle (0 none, 1 32B, 2 64B, 3 128B, 4 128B_ATOM_32B, 5 128B_ATOM_32B_FLIP_8B, 6 128B_ATOM_64B, or "
    "\"none\" \"32B\" \"64B\" \"128B\"), l2_promotion (0 none, 1 64B, 2 128B, 3 256B), oob_fill (0 zeros, 1 NaN); "
    "pass the map as a __grid_constant__ kernel parameter and its generic address as tmap")

# ---------------------------------------------------------------------------------------------------------------
# Primitives
# ---------------------------------------------------------------------------------------------------------------

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


def arithmetic_and_grid_primitives():
    """Two f32 values in one 64-bit register pair per instruction (sm_100 on), and programmatic dependent launch.
    The f32x2 forms take and give (x, y) pairs of f32 values; round to nearest even."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731

    def pair(name, direction="IN"):
        return op(name, "REGISTERS", direction, element_type="f32", values=2, registers=2, register_type="f32")

    for name, n_in in (("add", 2), ("sub", 2), ("mul", 2), ("fma", 3)):
        ins = ["a", "b", "c"][:n_in]
        movs = " ".join(f"mov.b64 ww_{x}, {{${2 + 2 * i}, ${3 + 2 * i}}};" for i, x in enumerate(ins))
        regs = ", ".join(f"ww_{x}" for x in ins)
        what = "a * b + c" if name == "fma" else {"add": "a + b", "sub": "a - b", "mul": "a * b"}[name]
        yield P(id=f"blackwell.{name}.rn.f32x2", kind="OTHER",
                description=f"{name}.rn.f32x2: {what} on two f32 values at once",
                python_name=f"arch.{name}_packed_f32x2",
                operands=[pair("d", "OUT")] + [pair(x) for x in ins],
                ptx_template=("{ .reg .b64 ww_d, " + regs + "; " + movs + f" {name}.rn.f32x2 ww_d, {regs}; "
                              "mov.b64 {$0, $1}, ww_d; }"),
                constraints=",".join(["=f", "=f"] + ["f"] * (2 * n_in)),
                sass_opcodes=[{"add": "FADD2", "sub": "FADD2", "mul": "FMUL2", "fma": "FFMA2"}[name]])
    yield P(id="blackwell.griddepcontrol.wait", kind="WAIT",
            description=("griddepcontrol.wait: waits until the grids this one depends on have completed and their "
                         "memory operations are visible (a no-op when launched without a dependency)"),
            python_name="arch.griddepcontrol_wait", ptx_template="griddepcontrol.wait;", has_side_effects=True,
            sass_opcodes=["ACQBULK"])
    yield P(id="blackwell.griddepcontrol.launch_dependents", kind="OTHER",
            description=("griddepcontrol.launch_dependents: lets the grids that depend on this one be scheduled once "
                         "every CTA of this grid has issued it or exited"),
            python_name="arch.griddepcontrol_launch_dependents", ptx_template="griddepcontrol.launch_dependents;",
            has_side_effects=True, sass_opcodes=["PREEXIT"])


def cluster_primitives():
    """What a cluster of CTAs (and a 2-CTA tcgen05.mma pair) needs beyond the mbarrier basics: cluster barriers,
    the cluster special registers, mapa and remote arrivals, elect.sync, the TMA descriptor prefetch and the proxy
    fences. The PTX is Hopper's; sm_100a code needs entries of its own target (an arch-specific sm_90a entry does
    not run on sm_100a)."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    for name, ptx, pyn in (("blackwell.cluster.arrive", "barrier.cluster.arrive.aligned;", "arch.cluster_arrive"),
                           ("blackwell.cluster.arrive.relaxed", "barrier.cluster.arrive.relaxed.aligned;",
                            "arch.cluster_arrive_relaxed"),
                           ("blackwell.cluster.wait", "barrier.cluster.wait.aligned;", "arch.cluster_wait")):
        yield P(id=name, kind="CLUSTER",
                description=(f"{ptx[:-1]}: every thread of the CTA executes it (aligned); arrive (release, or relaxed: "
                             "no ordering) then wait (acquire) synchronises the cluster's CTAs"),
                python_name=pyn, ptx_template=ptx, has_side_effects=True,
                sass_opcodes=["UCGABAR_WAIT" if name.endswith("wait") else "UCGABAR_ARV"])
    xyz = {"name": "dim", "type": "string", "allowed": ["x", "y", "z"]}
    for name, reg, pyn, what, has_dim in (
            ("blackwell.cluster.ctaid", "cluster_ctaid", "arch.block_idx_in_cluster", "this CTA's index in its cluster",
             True),
            ("blackwell.cluster.nctaid", "cluster_nctaid", "arch.cluster_dim", "the cluster's shape in CTAs", True),
            ("blackwell.cluster.ctarank", "cluster_ctarank", "arch.block_rank_in_cluster",
             "this CTA's linear rank in its cluster", False),
            ("blackwell.cluster.nctarank", "cluster_nctarank", "arch.cluster_size", "the number of CTAs of the cluster",
             False),
            ("blackwell.cluster.clusterid", "clusterid", "arch.cluster_idx", "the cluster's index in the grid", True),
            ("blackwell.cluster.nclusterid", "nclusterid", "arch.cluster_grid_dim", "the grid's shape in clusters",
             True)):
        sreg = f"%{reg}.{{dim}}" if has_dim else f"%{reg}"
        yield P(id=name, kind="CLUSTER", description=f"%{reg}{'.{x,y,z}' if has_dim else ''}: {what}",
                python_name=pyn, operands=[op("value", "SCALAR", "OUT")], attributes=[xyz] if has_dim else [],
                ptx_template=f"mov.u32 $0, {sreg};", constraints="=r",
                sass_opcodes=["S2R"] if reg == "cluster_ctarank" else [])   # S2R of SR_CgaCtaId
    yield P(id="blackwell.cluster.mapa", kind="CLUSTER",
            description=("mapa.shared::cluster: the shared::cluster address of addr (a shared::cta address) in the CTA "
                         "of rank cta_id (e.g. the even CTA of a tcgen05 pair, whose mbarriers track both CTAs' loads)"),
            python_name="arch.mapa",
            operands=[op("remote", "SCALAR", "OUT"), op("addr", "SMEM_ADDRESS"), op("cta_id", "SCALAR")],
            ptx_template="mapa.shared::cluster.u32 $0, $1, $2;", constraints="=r,r,r", sass_opcodes=[])
    yield P(id="blackwell.mbarrier.arrive.cluster", kind="ARRIVE",
            description=("mbarrier.arrive on the mbarrier at the same offset in the CTA of rank cta_id in the cluster "
                         "(release, CTA scope)"),
            python_name="arch.mbarrier_arrive_cluster", operands=[op("mbar", "MBARRIER"), op("cta_id", "SCALAR")],
            ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $1; "
                          "mbarrier.arrive.shared::cluster.b64 _, [ww_remote]; }"),
            constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A1T0"])
    yield P(id="blackwell.elect.sync", kind="ELECT",
            description="elect.sync: true in exactly one active lane of membermask (the lowest)",
            python_name="arch.elect_one", operands=[op("elected", "PREDICATE", "OUT")],
            attributes=[{"name": "membermask", "type": "int", "default_value": "0xffffffff"}],
            ptx_template="{ .reg .b32 ww_lane; elect.sync ww_lane|$0, {membermask}; }", constraints="=b",
            has_side_effects=True, sass_opcodes=["ELECT"])
    yield P(id="blackwell.tma.prefetch_descriptor", kind="OTHER",
            description="prefetch.tensormap: brings the tensor map at tmap (generic address) into the cache. " +
            TMA_HOST_ATTRS,
            python_name="cpasync.prefetch_descriptor", operands=[op("tmap", "TMA_DESCRIPTOR")],
            ptx_template="prefetch.tensormap [$0];", constraints="l", has_side_effects=True,
            sass_opcodes=["UTMACCTL.PF"], host_hook="encode_tma_descriptor")
    for r in range(1, 6):   # cute.prefetch of a TMA load atom: the boxes its copy would load, into L2
        coords = ", ".join(f"${i}" for i in range(1, r + 1))
        yield P(id=f"blackwell.tma.prefetch.{r}d", kind="OTHER",
                description=(f"cp.async.bulk.prefetch.tensor.{r}d.L2: brings the box at coords (elements, innermost "
                             "first) of the tensor map into L2, writing no shared memory; one thread issues it. " +
                             TMA_HOST_ATTRS),
                python_name=f"cpasync.prefetch_tile_{r}d",
                operands=[op("tmap", "TMA_DESCRIPTOR"), op("coords", "COORDINATE", count=r)],
                ptx_template=f"cp.async.bulk.prefetch.tensor.{r}d.L2.global [$0, {{{coords}}}];",
                constraints=",".join(["l"] + ["r"] * r), has_side_effects=True,
                sass_opcodes=[f"UTMAPF.L2.{r}D"], host_hook="encode_tma_descriptor")
    for suffix, what, sass in (("", "all state spaces", "FENCE.VIEW.ASYNC.S"),
                               (".shared::cluster", "the cluster's shared memory", "FENCE.VIEW.ASYNC.S"),
                               (".global", "global memory", "FENCE.VIEW.ASYNC.G")):
        yield P(id="blackwell.fence.proxy_async" + suffix.replace("::", "_"), kind="FENCE",
                description=(f"fence.proxy.async{suffix}: orders generic-proxy accesses of {what} with async-proxy ones "
                             "(TMA, tcgen05.mma)"),
                python_name="arch.fence_proxy_async" + suffix.replace("::", "_").replace(".", "_"),
                ptx_template=f"fence.proxy.async{suffix};", has_side_effects=True, sass_opcodes=[sass])


def register_primitives():
    """setmaxnreg: warp-specialized kernels move registers between their warpgroups (the PTX is Hopper's; sm_100a
    code needs entries of its own target). ptxas emits USETMAXREG only for a kernel whose register count at entry
    it knows (launch bounds), and nvJitLink drops the instruction: cubin_tool "ptxas" assembles such modules with
    ptxas."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    regs = {"name": "n", "type": "int", "allowed": [str(n) for n in range(24, 257, 8)]}
    for d, pyn in (("inc", "arch.setmaxregister_increase"), ("dec", "arch.setmaxregister_decrease")):
        yield P(id=f"blackwell.setmaxnreg.{d}", kind="REGISTER_CONTROL",
                description=(f"setmaxnreg.{d}: every warp of the warpgroup {'raises' if d == 'inc' else 'lowers'} its "
                             "per-thread register budget to n (24..256, multiple of 8); only in a kernel with launch "
                             "bounds"),
                python_name=pyn, attributes=[regs], ptx_template=f"setmaxnreg.{d}.sync.aligned.u32 {{n}};",
                has_side_effects=True,
                sass_opcodes=["USETMAXREG.TRY_ALLOC" if d == "inc" else "USETMAXREG.DEALLOC"], cubin_tool="ptxas")


def experimental_primitives():
    """cutlass.experimental.primitives (python names primitives.*) that are sm_100a instructions: float warp
    reductions (redux.sync .f32, with .abs and .NaN) and the 8-bit forms of ldmatrix (m16n16, transposed) and
    stmatrix (m16n8, transposed). The Ampere and Hopper backends' Python selects them by name and parameters."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    for absq, nanq in (("", ""), (".abs", ""), ("", ".NaN"), (".abs", ".NaN")):
        yield P(id=f"blackwell.redux.sync.f32{absq}{nanq.lower()}", kind="SHUFFLE",
                description=(f"redux.sync.{{min,max}}{absq}{nanq}.f32: the minimum or maximum of value over the lanes "
                             "of mask" + (", of magnitudes" if absq else "") + (", a NaN winning" if nanq else "")),
                python_name="primitives.redux_sync",
                python_params={"type": "f32", "abs": "1" if absq else "0", "nan": "1" if nanq else "0"},
                operands=[op("result", "SCALAR", "OUT", register_type="f32"),
                          op("value", "SCALAR", register_type="f32"), op("mask", "SCALAR")],
                attributes=[{"name": "op", "type": "string", "allowed": ["max", "min"], "default_value": "max"}],
                ptx_template=f"redux.sync.{{op}}{absq}{nanq}.f32 $0, $1, $2;", constraints="=f,f,r",
                has_side_effects=True, sass_opcodes=["CREDUX"])
    for x, nregs in ((1, 2), (2, 4)):
        regs = ", ".join(f"${i}" for i in range(nregs))
        yield P(id=f"blackwell.ldmatrix.m16n16.x{x}.trans.b8", kind="OTHER",
                description=(f"ldmatrix.m16n16.x{x}.trans.b8: {x} 16x16 8-bit matrices from shared memory, transposed, "
                             f"{nregs} 32-bit words a lane"),
                python_name="primitives.ldmatrix",
                python_params={"shape": "m16n16", "num": str(nregs), "layout": "col", "format": "b8"},
                operands=[op("words", "REGISTERS", "OUT", element_type="b32", values=nregs, registers=nregs,
                             register_type="b32"), op("addr", "SMEM_ADDRESS")],
                ptx_template=f"ldmatrix.sync.aligned.m16n16.x{x}.trans.shared.b8 {{{regs}}}, [${nregs}];",
                constraints=",".join(["=r"] * nregs + ["r"]), has_side_effects=True, sass_opcodes=["LDSM"])
    for x in (1, 2, 4):
        regs = ", ".join(f"${i + 1}" for i in range(x))
        yield P(id=f"blackwell.stmatrix.m16n8.x{x}.trans.b8", kind="OTHER",
                description=f"stmatrix.m16n8.x{x}.trans.b8: {x} 16x8 8-bit matrices to shared memory, transposed",
                python_name="primitives.stmatrix",
                python_params={"shape": "m16n8", "num": str(x), "layout": "col", "format": "b8"},
                operands=[op("addr", "SMEM_ADDRESS"), op("words", "REGISTERS", element_type="b32", values=x,
                                                         registers=x, register_type="b32")],
                ptx_template=f"stmatrix.sync.aligned.m16n8.x{x}.trans.shared.b8 [$0], {{{regs}}};",
                constraints=",".join(["r"] * (x + 1)), has_side_effects=True, sass_opcodes=["STSM"])


# ---------------------------------------------------------------------------------------------------------------
# ldmatrix and stmatrix of bytes: m8n16 with unpacking, m16n16 and m16n8 transposed (sm_100a; consumer Blackwell
# re-emits them)
# ---------------------------------------------------------------------------------------------------------------

# unpack_bits -> the source format of the unpacking forms: each 16-byte row of shared memory holds 16 packed 4-bit
# (6-bit) values and 64 (32) bits of padding; each value lands in the low bits of its own byte. Shared memory is
# therefore addressed as bytes (16 a row) whatever the packing, and the layouts are those of the byte matrices.
UNPACK_FORMATS = {"4": "b8x16.b4x16_p64", "6": "b8x16.b6x16_p32"}

# num_matrices -> (thread -> row address, (thread, value) -> bit) over the byte matrices, in bits. An 8x16 byte
# matrix moves as an 8x8 b16 one: thread t gets 4 consecutive bytes of row t/4 per matrix.
LDSM_M8N16_LAYOUTS = {1: ("((8,4),128):((128,0),1)", "(32,32):(32,1)"),
                      2: ("((16,2),128):((128,0),1)", "(32,(32,2)):(32,(1,1024))"),
                      4: ("(32,128):(128,1)", "(32,(32,4)):(32,(1,1024))")}
# The m16n16 transposed load, after the byte shuffle below: thread t (t%4 = q, t/4 = g) gets byte g of rows
# 4q..4q+3 in its first register and byte g+8 of the same rows in its second, per matrix (the (m,k) fragment of an
# 8-bit mma operand read from a k-major tile). Rows are 16 bytes: the bit offset of (row r, byte b) is 128r + 8b.
LDSM_M16N16_LAYOUTS = {1: ("((16,2),128):((128,0),1)", "((4,8),(8,4,2)):((512,8),(1,128,64))"),
                       2: ("(32,128):(128,1)", "((4,8),(8,4,2,2)):((512,8),(1,128,64,2048))")}


def _m16n16_shuffled(x: int, fmt: str) -> str:
    """The m16n16 load, then each matrix's register pair regrouped. The instruction gives thread (q, g) the bytes
    (row 4q, g) (row 4q+1, g) (row 4q, g+8) (row 4q+1, g+8) in its first register and the same of rows 4q+2 and
    4q+3 in its second (CuTe's SM100_U8x8_LDSM_T); CuTe DSL's atom holds each byte column's four rows together, so
    a byte permute takes bytes 0,1 of both registers into the first and bytes 2,3 into the second."""
    n = 2 * x
    tmp = ", ".join(f"%ldsm{i}" for i in range(n))
    lines = [f"{{ .reg .b32 {tmp};", f"ldmatrix.sync.aligned.m16n16.x{x}.trans.shared.{fmt} {{{tmp}}}, [${n}];"]
    for m in range(x):
        a, b = f"%ldsm{2 * m}", f"%ldsm{2 * m + 1}"
        lines += [f"prmt.b32 ${2 * m}, {a}, {b}, 0x5410;", f"prmt.b32 ${2 * m + 1}, {a}, {b}, 0x7632;"]
    return " ".join(lines) + " }"


# num_matrices -> ((thread, value) -> bit, thread -> row address) of the m16n8 transposed byte store (CuTe's
# SM100_U8x{4,8,16}_STSM_T, which CuTe DSL's StMatrix16x8x8bOp keeps as they are): thread t (q = t%4, g = t/4) gives
# byte g of rows 2q and 2q+1, then byte g+8 of them, in its register of each matrix of 8 16-byte rows.
STSM_M16N8_LAYOUTS = {1: ("((4,8),(8,2,2)):((256,8),(1,128,64))", "((8,4),128):((128,0),1)"),
                      2: ("((4,8),(8,2,2,2)):((256,8),(1,128,64,1024))", "((16,2),128):((128,0),1)"),
                      4: ("((4,8),(8,2,2,4)):((256,8),(1,128,64,1024))", "(32,128):(128,1)")}


def byte_ldmatrix_atoms(prefix: str = "blackwell"):
    """CuTe DSL's warp.LdMatrix8x16x8bOp with unpack_bits 4 or 6 (ldmatrix.m8n16 with a source format; without
    unpacking it is Ampere's b16 load), warp.LdMatrix16x16x8bOp (ldmatrix.m16n16.trans of bytes, or of unpacked
    4-/6-bit values) and warp.StMatrix16x8x8bOp (stmatrix.m16n8.trans of bytes). ptxas takes these for sm_100a,
    sm_103a, sm_120a and sm_121a only: consumer Blackwell's generator emits them again under its own prefix and
    targets."""
    common = dict(kind="COPY", thr_id="32:1", layout_unit_bits=1, has_side_effects=True, sass_opcodes=["LDSM"])
    sig = ["transpose", "num_matrices", "unpack_bits"]
    for bits, fmt in UNPACK_FORMATS.items():
        for x, (src, dst) in LDSM_M8N16_LAYOUTS.items():
            yield entry(
                "atoms", id=f"{prefix}.warp.ldmatrix.m8n16.x{x}.u{bits}", **common,
                description=(f"ldmatrix.m8n16.x{x}.{fmt}: {x} 8x16 matri{'ces' if x > 1 else 'x'} of packed "
                             f"{bits}-bit values from shared memory (16-byte rows, threads 0..{8 * x - 1} give their "
                             "addresses), each value widened to a byte in registers"),
                python_name="warp.LdMatrix8x16x8bOp",
                python_params={"transpose": "False", "num_matrices": str(x), "unpack_bits": bits},
                python_signature=sig,
                python_defaults={"transpose": "False", "num_matrices": "1", "unpack_bits": "None"},
                operands=[op("dst", "REGISTERS", "OUT", element_type="b8", values=4 * x, registers=x,
                             register_type="b32", layout_tv=dst),
                          op("src", "SMEM_ADDRESS", layout_tv=src)],
                ptx_template=(f"ldmatrix.sync.aligned.m8n16.x{x}.shared.{fmt} "
                              f"{{{', '.join(f'${i}' for i in range(x))}}}, [${x}];"),
                constraints=",".join(["=r"] * x + ["r"]))
    for bits, fmt in (("None", "b8"), *UNPACK_FORMATS.items()):
        for x, (src, dst) in LDSM_M16N16_LAYOUTS.items():
            what = "bytes" if bits == "None" else f"packed {bits}-bit values, each widened to a byte"
            yield entry(
                "atoms", id=f"{prefix}.warp.ldmatrix.m16n16.x{x}.trans.{'b8' if bits == 'None' else 'u' + bits}",
                **common,
                description=(f"ldmatrix.m16n16.x{x}.trans.{fmt}: {x} 16x16 matri{'ces' if x > 1 else 'x'} of {what}, "
                             "transposed, from shared memory (16-byte rows, threads 0.."
                             f"{16 * x - 1} give their addresses); registers regrouped by a byte permute"),
                python_name="warp.LdMatrix16x16x8bOp",
                python_params={"transpose": "True", "num_matrices": str(x), "unpack_bits": bits},
                python_signature=sig,
                python_defaults={"transpose": "True", "num_matrices": "1", "unpack_bits": "None"},
                operands=[op("dst", "REGISTERS", "OUT", element_type="b8", values=8 * x, registers=2 * x,
                             register_type="b32", layout_tv=dst),
                          op("src", "SMEM_ADDRESS", layout_tv=src)],
                ptx_template=_m16n16_shuffled(x, fmt),
                constraints=",".join(["=r"] * (2 * x) + ["r"]))
    for x, (src, dst) in STSM_M16N8_LAYOUTS.items():
        yield entry(
            "atoms", id=f"{prefix}.warp.stmatrix.m16n8.x{x}.trans.b8", **{**common, "sass_opcodes": ["STSM"]},
            description=(f"stmatrix.m16n8.x{x}.trans.b8: {x} 16x8 byte matri{'ces' if x > 1 else 'x'} from registers "
                         f"to shared memory, transposed (16-byte rows, threads 0..{8 * x - 1} give their addresses)"),
            python_name="warp.StMatrix16x8x8bOp",
            python_params={"transpose": "True", "num_matrices": str(x), "unpack_bits": "None"},
            python_signature=sig,
            python_defaults={"transpose": "True", "num_matrices": "1", "unpack_bits": "None"},
            operands=[op("dst", "SMEM_ADDRESS", "OUT", layout_tv=dst),
                      op("src", "REGISTERS", "IN", element_type="b8", values=4 * x, registers=x,
                         register_type="b32", layout_tv=src)],
            ptx_template=(f"stmatrix.sync.aligned.m16n8.x{x}.trans.shared.b8 [$0], "
                          f"{{{', '.join(f'${i + 1}' for i in range(x))}}};"),
            constraints=",".join(["r"] * (x + 1)))


def clc_primitives(prefix: str = "blackwell", remote_arrive: bool = True):
    """Cluster launch control (sm_100a; consumer Blackwell's generator takes them too, prefix "blackwell_geforce":
    ptxas 13.0 assembles them, the multicast form included, for sm_120a and sm_121a, to the same UGETNEXTWORKID): a
    running cluster asks the hardware to cancel the launch of a cluster that has not started, and takes over its
    work (CuTe DSL's dynamic persistent tile scheduler and PipelineClcFetchAsync are built from these). The
    response is 16 opaque bytes in shared memory; the try_cancel completes its mbarrier by 16 transaction bytes (in
    every CTA of the cluster when multicast), and the query reads it back. A CTA that has seen a failed response
    must not issue another try_cancel. remote_arrive: also the arrival with expect_tx on a peer CTA's mbarrier
    (Hopper's portable sm_90 entry serves consumer Blackwell)."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    resp, mbar = op("response", "SMEM_ADDRESS"), op("mbar", "MBARRIER")
    for suffix, pyn, where, sass in (
            ("", "arch.clc_try_cancel", "this CTA's shared memory at response; its mbarrier at mbar gets",
             "UGETNEXTWORKID.SELFCAST"),
            (".multicast::cluster::all", "arch.clc_try_cancel_multicast",
             "the shared memory of every CTA of the cluster at response's offset; the mbarrier at mbar's offset in "
             "each of them gets", "UGETNEXTWORKID.BROADCAST")):
        yield P(id=f"{prefix}.clc.try_cancel" + (".multicast" if suffix else ""), kind="OTHER",
                description=(f"clusterlaunchcontrol.try_cancel{suffix}: asynchronously asks to cancel the launch of a "
                             "cluster of this grid that has not started; the 16-byte response (canceled or not, and "
                             f"the first CTA id of the canceled cluster) is written to {where} a complete_tx of 16 "
                             "bytes. response is 16-byte aligned; the executing warp's one elected lane should issue it"),
                python_name=pyn, operands=[resp, mbar],
                ptx_template=("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
                              f"{suffix}.b128 [$0], [$1];"),
                constraints="r,r", has_side_effects=True, sass_opcodes=[sass])
    yield P(id=f"{prefix}.clc.query_cancel", kind="OTHER",
            description=("clusterlaunchcontrol.query_cancel on the 16-byte response at response (shared memory, "
                         "read with ld.shared.b128 after its mbarrier phase completed): is_canceled, and the first "
                         "CTA id (x, y, z) of the canceled cluster (undefined when is_canceled is false)"),
            python_name="arch.clc_query_cancel",
            operands=[op("is_canceled", "PREDICATE", "OUT"), op("x", "SCALAR", "OUT"), op("y", "SCALAR", "OUT"),
                      op("z", "SCALAR", "OUT"), resp],
            ptx_template=("{ .reg .b128 ww_resp; ld.shared.b128 ww_resp, [$4]; "
                          "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 $0, ww_resp; "
                          "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {$1, $2, $3, _}, ww_resp; }"),
            constraints="=b,=r,=r,=r,r", has_side_effects=True, sass_opcodes=["LDS.128"])
    if not remote_arrive:
        return
    yield P(id="blackwell.mbarrier.arrive_expect_tx.cluster", kind="ARRIVE",
            description=("mbarrier.arrive.expect_tx on the mbarrier at the same offset in the CTA of rank cta_id in "
                         "the cluster: one arrival that also expects tx_count transaction bytes there (release, "
                         "cluster scope), e.g. for a response multicast to every CTA of the cluster"),
            python_name="arch.mbarrier_arrive_and_expect_tx_cluster",
            operands=[op("mbar", "MBARRIER"), op("tx_count", "SCALAR"), op("cta_id", "SCALAR")],
            ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $2; "
                          "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [ww_remote], $1; }"),
            constraints="r,r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"])


# ---------------------------------------------------------------------------------------------------------------
# Atom families (manifest.proto, message Family): one description per instruction family, expanded by the core
# when an atom is selected. Strings of a template may hold {expr} over the family's parameters.
# ---------------------------------------------------------------------------------------------------------------

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8, "s32": 32, "e2m1": 4,
        "ue8m0": 8, "e2m3": 6, "e3m2": 6}


# The MLIR type a value of each element type is held in (fp8 and integers as integers of their width).
IR_TYPES = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "f32": "f32"}


def element_types_text() -> str:
    """The manifest's element type table: every type an operand names, with its width, the DSL type a Python
    parameter names it by (none for the untyped b8 and b32), and the MLIR type its values are held in."""
    rows = [(t, BITS[t], d) for t, d in PY_DTYPE.items()] + [("b8", 8, ""), ("b32", 32, "")]
    return "".join(line + "\n" for line in format_element_types(rows, IR_TYPES))


# Observed in the cubins of the probe kernels (nvdisasm of ptxas 13.0 output for sm_100a); tf32 shares f16's.
MMA_SASS = {"f16": "UTCHMMA", "tf32": "UTCHMMA", "f8f6f4": "UTCQMMA", "i8": "UTCIMMA", "mxf4nvf4": "UTCOMMA",
            "mxf4": "UTCOMMA", "mxf8f6f4": "UTCQMMA"}

N_RULE = "N is a multiple of 8 from 8 to 256"

# kind -> the rules on N beyond N_RULE, as (sentence, expression): mma_shapes() above, said once.
MMA_N_RULES = {
    "i8": [("with cta_group 1, kind::i8 takes N = 8 or a multiple of 16", "cta == 2 || n == 8 || n % 16 == 0"),
           ("with cta_group 2, kind::i8 takes N a multiple of 32", "cta == 1 || n % 32 == 0")],
    "other": [("with cta_group 2, N is a multiple of 16 (32 with A in tensor memory)",
               "cta == 1 || n % (a_src == 'TMEM' ? 32 : 16) == 0")],
}


# The operand kinds of tcgen05.mma (manifest.proto, Operand.kind): adapters the backend's Python package registers
# (python/tcgen05_mma.py). Named apart from wgmma's "smem_descriptor": a UMMA descriptor is another format.
TMEM_KIND = "tmem"
UMMA_DESC_KIND = "umma_smem_descriptor"


def mma_families():
    for kind, (py, k, types) in MMA_KINDS.items():
        abs_ = list(dict.fromkeys(ab for ab, _ in types))
        accs = list(dict.fromkeys(acc for _, acc in types))
        rules = [("cta_group 1 takes M 64 or 128, cta_group 2 M 128 or 256",
                  "cta == 1 ? m <= 128 : m >= 128")] + MMA_N_RULES["i8" if kind == "i8" else "other"]
        pairs = [f"(ab == '{ab}' && acc == '{acc}')" for ab, acc in types]
        if len(pairs) < len(abs_) * len(accs):
            rules.insert(0, ("the input and accumulator types are one of " +
                             ", ".join(f"{ab}->{acc}" for ab, acc in types), " || ".join(pairs)))
        desc = ("tcgen05.mma.cta_group::{cta}.kind::" + kind + " {m}x{n}x{k}: D[{acc}] (+)= A[{ab}] B[{ab}], A from "
                "{a_src == 'SMEM' ? 'shared memory (a UMMA descriptor)' : 'tensor memory (A is K-major there)'}, "
                "B from shared memory, D in tensor memory at d; one thread issues it"
                "{cta == 2 ? ' for the CTA pair (the even CTA)' : ''}"
                ". idesc: from blackwell.tcgen05.make_instr_desc; enable_input_d false overwrites D")
        yield entry("families", **family(
            f"blackwell.tcgen05.mma.{kind}",
            parameters=[param("ab", values=abs_), param("acc", values=accs),
                        param("cta", set_=(1, 2), rule="cta_group is 1 or 2"),
                        param("a_src", values=("SMEM", "TMEM")),
                        param("m", set_=(64, 128, 256), rule="M is 64, 128 or 256"),
                        param("n", range_=(8, 256, 8), rule=N_RULE),
                        param("k", set_=(k,), rule=f"K is {k} for kind::{kind}: 256 bits of A")],
            rules=rules,
            template=dict(
                id="blackwell.tcgen05.mma.cta{cta}." + kind + ".m{m}n{n}k{k}.{ab}.{acc}.{a_src == 'SMEM' ? 'ss' : 'ts'}",
                kind="MMA", description=desc, python_name=py,
                python_params={"ab_dtype": "{dsl(ab)}", "acc_dtype": "{dsl(acc)}", "shape_mnk": "({m},{n},{k})",
                               "cta_group": "{cta}", "a_src": "{a_src}"},
                python_signature=MMA_SIGNATURES[kind][0], python_defaults=MMA_SIGNATURES[kind][1],
                shape_mnk="({m},{n},{k})", thr_id="{cta}:1",
                operands=[
                    op("d", "TMEM_ADDRESS", element_type="{acc}", kind=TMEM_KIND),
                    op("a", "SMEM_DESCRIPTOR", element_type="{ab}", when="a_src == 'SMEM'", kind=UMMA_DESC_KIND),
                    op("a", "TMEM_ADDRESS", element_type="{ab}", when="a_src == 'TMEM'", kind=TMEM_KIND),
                    op("b", "SMEM_DESCRIPTOR", element_type="{ab}", kind=UMMA_DESC_KIND),
                    op("idesc", "INSTRUCTION_DESCRIPTOR"),
                    op("enable_input_d", "PREDICATE"),
                ],
                ptx_template=("tcgen05.mma.cta_group::{cta}.kind::" + kind +
                              " [$0], {a_src == 'TMEM' ? '[$1]' : '$1'}, $2, $3, $4;"),
                constraints="{a_src == 'TMEM' ? 'r,r,l,r,b' : 'r,l,l,r,b'}",
                has_side_effects=True, sass_opcodes=[MMA_SASS[kind] + "{cta == 2 ? '.2CTA' : ''}"],
                conformance="tcgen05_mma")))


# Block-scaled MMAs: kind -> (python class, K, A/B types, scale-factor types, scale_vec, the constructor's
# positional parameters, the python defaults it implies). D is Float32; each row of A (column of B) has one scale
# factor per K / scale_vec elements, read from tensor memory at scale_a / scale_b (PTX ISA, tcgen05.mma
# .block_scale). nvf4 is kind::mxf4nvf4 with scale_vec::4X (16 elements a scale factor, ue4m3 or ue8m0 scales);
# kind::mxf4 with scale_vec::2X is MXFP4 (32 elements a ue8m0 factor); kind::mxf8f6f4 with scale_vec::1X is MXFP8
# (fp8 A and B of one type, 32 elements a ue8m0 factor). Only A in shared memory here.
BLOCK_SCALED_KINDS = {
    "mxf4nvf4": ("tcgen05.MmaMXF4NVF4Op", 64, ("e2m1",), ("e4m3", "ue8m0"), "4X",
                 ["sf_dtype", "shape_mnk", "cta_group", "a_src"], {"ab_dtype": PY_DTYPE["e2m1"]}),
    "mxf4": ("tcgen05.MmaMXF4Op", 64, ("e2m1",), ("ue8m0",), "2X",
             ["shape_mnk", "cta_group", "a_src"], {"ab_dtype": PY_DTYPE["e2m1"], "sf_dtype": PY_DTYPE["ue8m0"]}),
    "mxf8f6f4": ("tcgen05.MmaMXF8Op", 32, ("e4m3", "e5m2"), ("ue8m0",), "1X",
                 ["ab_dtype", "shape_mnk", "cta_group", "a_src"], {"sf_dtype": PY_DTYPE["ue8m0"]}),
}

# sm_103a's 4-bit MMAs with K = 96 (CuTe DSL's SM103MmaMXF4NVF4Op and SM103MmaMXF4Op): the same instruction
# text, K = 96 said by bit 31 of the instruction descriptor (PTX ISA, the .kind::mxf4 / mxf4nvf4 descriptor: "K
# Dimension, dense K=96 = 1"). The scale vector is named by its block size (.block16 / .block32), as 96 elements
# take 6 or 3 scale factors a row. Their 48 bytes of A or B a row cross a 128-byte swizzle row every third
# instruction, so their descriptors come from blackwell.sm103.tcgen05.make_smem_desc_next.
SM103_BLOCK_SCALED_KINDS = {
    "mxf4nvf4": ("tcgen05.SM103MmaMXF4NVF4Op", 96, ("e2m1",), ("e4m3", "ue8m0"), "block16",
                 ["sf_dtype", "shape_mnk", "cta_group", "a_src"], {"ab_dtype": PY_DTYPE["e2m1"]}),
    "mxf4": ("tcgen05.SM103MmaMXF4Op", 96, ("e2m1",), ("ue8m0",), "block32",
             ["shape_mnk", "cta_group", "a_src"], {"ab_dtype": PY_DTYPE["e2m1"], "sf_dtype": PY_DTYPE["ue8m0"]}),
}


def block_scaled_mma_families(kinds=None, prefix="blackwell.tcgen05.mma"):
    """The block-scaled families of `kinds` (BLOCK_SCALED_KINDS by default; SM103_BLOCK_SCALED_KINDS with prefix
    blackwell.sm103.tcgen05.mma): a scale vector "1X", "2X" or "4X" is written .scale_vec::<v>, a block size
    ("block16", "block32") as itself."""
    for kind, (py, k, abs_, sfs, vec, sig, defaults) in (kinds or BLOCK_SCALED_KINDS).items():
        yield _block_scaled_family(prefix, kind, py, k, abs_, sfs, vec, sig, defaults)


# kind::mxf8f6f4 takes A and B of different formats (PTX ISA, tcgen05.mma: the instruction descriptor's atype and
# btype; CuTe DSL's MmaMXF8F6F4Op(a_dtype, b_dtype, ...)), 8-, 6- or 4-bit each. The 6- and 4-bit ones are read
# from shared memory unpacked: each run of 16 elements fills 16 bytes (the PTX ISA's .b6x16_p32 and .b4x16_p64
# forms, which TMA's 16U6_ALIGN16B and 16U4_ALIGN16B tensor maps write), so their tiles are laid out and described
# as 8-bit ones, K- or MN-major (kind::mxf8f6f4 transposes A and B whatever their formats).
# The tensor maps whose loads unpack 4- and 6-bit values into byte containers (CUDA 12.8's 16U4_ALIGN8B,
# 16U4_ALIGN16B and 16U6_ALIGN16B), which the copy engine of compute capability 10.x has: the Python loads a 6-bit
# tensor, or a 4-bit one asked for as Uint8, through the 16-byte forms, the ones kind::mxf8f6f4 reads.
TMA_UNPACKING = ("16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")

MIXED_BLOCK_SCALED = ("mxf8f6f4", "tcgen05.MmaMXF8F6F4Op", 32, ("e4m3", "e5m2", "e2m3", "e3m2", "e2m1"),
                      ("ue8m0",), "1X", ["a_dtype", "b_dtype", "shape_mnk", "cta_group", "a_src"],
                      {"sf_dtype": PY_DTYPE["ue8m0"]})


def mixed_block_scaled_mma_families():
    kind, py, k, types, sfs, vec, sig, defaults = MIXED_BLOCK_SCALED
    yield _block_scaled_family("blackwell.tcgen05.mma", kind, py, k, types, sfs, vec, sig, defaults, mixed=True)


def _block_scaled_family(prefix, kind, py, k, abs_, sfs, vec, sig, defaults, mixed=False):
    """One block-scaled family; mixed: A's and B's types are parameters a and b of their own (the atom's id names
    them as <a>x<b>, which the instruction-descriptor hook reads), else one type ab."""
    vec = vec if vec.startswith("block") else "scale_vec::" + vec
    a, b = ("{a}", "{b}") if mixed else ("{ab}", "{ab}")
    desc = ("tcgen05.mma.cta_group::{cta}.kind::" + kind + ".block_scale." + vec + " {m}x{n}x{k}: "
            "D[f32] (+)= (A[" + a + "] x SFA[{sf}]) (B[" + b + "] x SFB[{sf}]), A and B from shared memory "
            "(UMMA descriptors), D in tensor memory at d, the scale factors in tensor memory at scale_a and "
            "scale_b; one thread issues it{cta == 2 ? ' for the CTA pair (the even CTA)' : ''}. idesc: from "
            "blackwell.tcgen05.make_instr_desc (its scale-factor ids select the byte of scale_a's and scale_b's "
            "columns where a scale_vec leaves some unused" + ("; bit 31 set: K = 96" if k == 96 else "") +
            "); enable_input_d false overwrites D")
    types = ([param("a", values=abs_), param("b", values=abs_)] if mixed else [param("ab", values=abs_)])
    dtypes = ({"a_dtype": "{dsl(a)}", "b_dtype": "{dsl(b)}"} if mixed else {"ab_dtype": "{dsl(ab)}"})
    return entry("families", **family(
        f"{prefix}.{kind}" + (".mixed" if mixed else ""),
        parameters=types + [param("acc", values=("f32",)), param("sf", values=sfs),
                            param("cta", set_=(1, 2), rule="cta_group is 1 or 2"),
                            param("a_src", values=("SMEM",)),
                            param("m", set_=(128, 256), rule="M is 128 (one CTA) or 256 (a CTA pair)"),
                            param("n", range_=(8, 256, 8), rule=N_RULE),
                            param("k", set_=(k,), rule=f"K is {k} for kind::{kind}" +
                                  (": 256 bits of A" if k != 96 else " on sm_103a (384 bits of A)"))],
        rules=[("cta_group 1 takes M 128, cta_group 2 M 256", "cta == 1 ? m == 128 : m == 256"),
               ("with cta_group 2, N is a multiple of 16", "cta == 1 || n % 16 == 0")],
        template=dict(
            id="blackwell.tcgen05.mma.cta{cta}." + kind + ".m{m}n{n}k{k}." + ("{a}x{b}" if mixed else "{ab}") +
               ".{acc}.{sf}.ss",
            kind="MMA", description=desc, python_name=py,
            python_params={**dtypes, "acc_dtype": "{dsl(acc)}", "sf_dtype": "{dsl(sf)}",
                           "shape_mnk": "({m},{n},{k})", "cta_group": "{cta}", "a_src": "{a_src}"},
            python_signature=sig, python_defaults={**defaults, "acc_dtype": "Float32"},
            shape_mnk="({m},{n},{k})", thr_id="{cta}:1",
            operands=[
                op("d", "TMEM_ADDRESS", element_type="f32", kind=TMEM_KIND),
                op("a", "SMEM_DESCRIPTOR", element_type=a, kind=UMMA_DESC_KIND),
                op("b", "SMEM_DESCRIPTOR", element_type=b, kind=UMMA_DESC_KIND),
                op("idesc", "INSTRUCTION_DESCRIPTOR"),
                op("scale_a", "TMEM_ADDRESS"),
                op("scale_b", "TMEM_ADDRESS"),
                op("enable_input_d", "PREDICATE"),
            ],
            ptx_template=("tcgen05.mma.cta_group::{cta}.kind::" + kind + ".block_scale." + vec +
                          " [$0], $1, $2, $3, [$4], [$5], $6;"),
            constraints="r,l,l,r,r,r,b",
            has_side_effects=True, sass_opcodes=[MMA_SASS[kind] + "{cta == 2 ? '.2CTA' : ''}"],
            conformance="tcgen05_mma")))


# shape -> (thread-value layout of the registers over num and c, the 32-bit columns per lane of the access)
TMEM_REG_LAYOUTS = {
    "32x32b": "(32,{num}):({num},1)",
    "16x64b": "((2,2,8),{num}):(({8 * c},1,{c}),2)",
    "16x128b": "((4,8),(2,{num})):((1,{c}),({8 * c},4))",
    "16x256b": "((4,8),(2,2,{num})):((2,{c}),(1,{8 * c},8))",
}


def tmem_copy_families():
    for shape, (lanes, bits, regs1, max_num) in TMEM_SHAPES.items():
        nums = [1 << i for i in range(max_num.bit_length())]
        cls = shape[0].upper() + shape[1:]
        common = dict(
            parameters=[param("num", set_=nums, rule=f"repeat is x1, x2, x4, ... up to x{max_num} for .{shape}")],
            derived=[("regs", f"{regs1} * num"), ("c", f"{bits // 32} * num")])
        rl, al = TMEM_REG_LAYOUTS[shape], f"(32,{{{lanes} * c}}):(0,1)"
        dp = "" if shape == "32x32b" else f".16dp{shape.split('x')[1][:-1]}bit"
        rep = "{num > 1 ? '.x' + str(num) : ''}"
        yield entry("families", **family(
            f"blackwell.tcgen05.ld.{shape}", **common, template=dict(
                id=f"blackwell.tcgen05.ld.{shape}.x{{num}}", kind="COPY",
                description=(f"tcgen05.ld .{shape}.x{{num}}: {lanes} lanes x {{{bits} * num}} bits of tensor memory "
                             "at src to {regs} b32 registers per thread; warp w of a warpgroup reaches lanes "
                             "32 (w % 4) .. +31 only; complete with blackwell.tcgen05.wait_ld before use"),
                python_name=f"tcgen05.Ld{cls}Op", python_params={"repeat": "x{num}"},
                python_signature=["repeat"], thr_id="32:1", layout_unit_bits=32,
                operands=[op("dst", "REGISTERS", "OUT", element_type="b32", values_expr="regs",
                             registers_expr="regs", register_type="b32", layout_tv=rl),
                          op("src", "TMEM_ADDRESS", layout_tv=al)],
                ptx_template=f"tcgen05.ld.sync.aligned.{shape}.x{{num}}.b32 {{{{seq(0, regs, '$', ', ')}}}}, [${{regs}}];",
                constraints="{repeat('=r', regs)},r", has_side_effects=True,
                sass_opcodes=["LDTM" + dp + rep], conformance="tcgen05_ld")))
        yield entry("families", **family(
            f"blackwell.tcgen05.st.{shape}", **common, template=dict(
                id=f"blackwell.tcgen05.st.{shape}.x{{num}}", kind="COPY",
                description=(f"tcgen05.st .{shape}.x{{num}}: {{regs}} b32 registers per thread to {lanes} lanes x "
                             f"{{{bits} * num}} bits of tensor memory at dst; complete with blackwell.tcgen05.wait_st "
                             "before tcgen05.mma reads it"),
                python_name=f"tcgen05.St{cls}Op", python_params={"repeat": "x{num}"},
                python_signature=["repeat"], thr_id="32:1", layout_unit_bits=32,
                operands=[op("dst", "TMEM_ADDRESS", layout_tv=al),
                          op("src", "REGISTERS", element_type="b32", values_expr="regs", registers_expr="regs",
                             register_type="b32", layout_tv=rl)],
                ptx_template=f"tcgen05.st.sync.aligned.{shape}.x{{num}}.b32 [$0], {{{{seq(1, regs, '$', ', ')}}}};",
                constraints="{repeat('r', regs + 1)}", has_side_effects=True,
                sass_opcodes=["STTM" + dp + rep], conformance="tcgen05_st")))


def _literal_braces(text: str) -> str:
    """Text whose {...} must stay as written inside a family's template (e.g. dim{rank-1} in a description)."""
    return text.replace("{rank-1}", "{'{rank-1}'}")


def tma_families():
    rank = param("rank", range_=(1, 5, 1), rule="rank is from 1 to 5")
    cta = param("cta", set_=(1, 2), rule="cta_group is 1 or 2")
    host = _literal_braces(TMA_HOST_ATTRS)
    for mc in (False, True):
        ins = ("cp.async.bulk.tensor.{rank}d{cta == 2 ? '.cta_group::2' : ''}.shared::cluster.global."
               "mbarrier::complete_tx::bytes" + (".multicast::cluster" if mc else "") +
               " [$0], [$1, {{seq(3, rank, '$', ', ')}}], [$2]" + (", ww_mask;" if mc else ";"))
        if mc:
            ins = "{ .reg .b16 ww_mask; cvt.u16.u32 ww_mask, ${3 + rank}; " + ins + " }"
        ops = [op("dst", "SMEM_ADDRESS"), op("tmap", "TMA_DESCRIPTOR"), op("mbar", "MBARRIER"),
               op("coords", "COORDINATE", count_expr="rank")] + ([op("cta_mask", "SCALAR")] if mc else [])
        more = (" into the same shared-memory and mbarrier offsets of every CTA whose bit is set in cta_mask"
                " (low 16 bits)" if mc else "")
        more += ("{cta == 2 ? '; mbar may be the mbarrier of either CTA of the pair (a shared::cluster address), so "
                 "that one barrier tracks the loads of both CTAs for a cta_group::2 tcgen05.mma' : ''}")
        what = ("TMA tile load" + (" with multicast" if mc else "") + ", {rank}-D"
                "{cta == 2 ? ', 2-CTA (.cta_group::2)' : ''}")
        name = "load.multicast" if mc else "load"
        yield entry("families", **family(
            f"blackwell.tma.{name}", parameters=[rank, cta], template=dict(
                id=f"blackwell.tma.{name}" + "{cta == 2 ? '.cta2' : ''}.{rank}d", kind="COPY",
                description=(f"{what}: the box at coords (elements, innermost first) of the tensor map to shared "
                             f"memory at dst{more}, completing transaction bytes on mbar; one thread issues it. "
                             + host),
                python_name=("cpasync.CopyBulkTensorTileG2SMulticastOp" if mc else "cpasync.CopyBulkTensorTileG2SOp"),
                python_params={"rank": "{rank}", "cta_group": "{cta}"},
                python_signature=["cta_group"], python_defaults={"cta_group": "1"}, thr_id="1:1", operands=ops,
                ptx_template=ins, constraints="r,l,r,{repeat('r', rank)}" + (",r" if mc else ""),
                has_side_effects=True,
                sass_opcodes=["UTMALDG.{rank}D" + (".MULTICAST" if mc else "") + "{cta == 2 ? '.2CTA' : ''}"],
                host_hook="encode_tma_descriptor", conformance="tma_load")))
    yield entry("families", **family(
        "blackwell.tma.store", parameters=[rank], template=dict(
            id="blackwell.tma.store.{rank}d", kind="COPY",
            description=("TMA tile store, {rank}-D: shared memory at src to the box at coords of the tensor map; one "
                         "thread issues it after blackwell.fence.proxy_async.shared_cta; completion through "
                         "blackwell.tma.commit_group / wait_group. " + host),
            python_name="cpasync.CopyBulkTensorTileS2GOp", python_params={"rank": "{rank}"},
            thr_id="1:1",
            operands=[op("tmap", "TMA_DESCRIPTOR"), op("src", "SMEM_ADDRESS"), op("coords", "COORDINATE",
                                                                                  count_expr="rank")],
            ptx_template="cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [$0, {{seq(2, rank, '$', ', ')}}], [$1];",
            constraints="l,r,{repeat('r', rank)}", has_side_effects=True,
            sass_opcodes=["UTMASTG.{rank}D"], host_hook="encode_tma_descriptor", conformance="tma_store")))


COMMENT = """\
# GENERATED by backends/blackwell/generate_manifest.py: edit the script, run
#   python3 backends/blackwell/generate_manifest.py
# and commit both. This file is the source: the plugin embeds it as it is, nothing is generated at build time.
#
# The Blackwell backend (sm_100a). Conventions beyond manifest.proto's:
# - tcgen05.mma atoms have no register operands, hence no layout_tv: A and B are UMMA shared-memory descriptors
#   (or A a tensor-memory address), D a tensor-memory address; element_type names what the memory holds. thr_id
#   counts CTAs, as CuTe's SM100 MMA traits do: 1, or the 2 CTAs of a cta_group::2 pair, CTA p holding rows
#   [p M/2, (p+1) M/2) of A and D and columns [p N/2, (p+1) N/2) of B. The instruction descriptor comes from
#   blackwell.tcgen05.make_instr_desc and shared-memory descriptors from blackwell.tcgen05.make_smem_desc (both
#   lowering hooks of this plugin); enable_input_d is a predicate (false: D = A B, true: D += A B).
# - tcgen05.ld/st/cp layouts are in 32-bit units (layout_unit_bits: 32), one unit per tensor-memory column of a
#   lane and per b32 register: a tile element is column + C * lane, C the columns per lane of the whole access
#   (bits of the shape x .num / 32), lanes counted from the address's lane. They are CuTe's SM100_TMEM_LOAD/STORE
#   thread-value layouts with bits grouped by 32. The tensor-memory side is one address for the warp (a stride-0
#   thread mode).
# - Addresses are IN operands, also where the instruction writes through them (the instruction reads them).
# - Ids: blackwell.tcgen05.mma.cta<1|2>.<kind>.m<M>n<N>k<K>.<ab>.<acc>.<ss|ts> (ss: A in shared memory, ts: A in
#   tensor memory), blackwell.tcgen05.{ld,st}.<shape>.x<num>, blackwell.tcgen05.cp.cta<g>.<shape>,
#   blackwell.tcgen05.*, blackwell.tma.*, blackwell.mbarrier.*, blackwell.fence.*.
# - sass_opcodes are what nvdisasm shows for ptxas 13.0's sm_100a code of each probe kernel.
"""


# ---------------------------------------------------------------------------------------------------------------
# cutlass.experimental.primitives: tcgen05 instructions with every operand at run time
# ---------------------------------------------------------------------------------------------------------------

# A collector-buffer use of A (.collector::a::<op>), by CuTe DSL's names of it
COLLECTOR_OPS = ("discard", "lastuse", "fill", "use")
# block-scaled kinds and the scale-vector qualifiers each takes
PRIM_BLOCK_SCALED = {"mxf8f6f4": ("block32",), "mxf4": ("block32",), "mxf4nvf4": ("block16", "block32")}


def experimental_tcgen05_primitives():
    """cutlass.experimental.primitives' tcgen05 operations whose operands the kernel computes: the MMA with run-time
    descriptors (its instruction descriptor a register, not a constant of the atom), disable-output-lane masks,
    scale-input-d, .ashift and collector-buffer uses; tensor-memory loads and stores with 16-bit packing and the
    16x32bx2 shape. The backend's Python (tcgen05_primitives.py) adapts CuTe DSL's signatures onto them."""
    cta = param("cta", set_=(1, 2), rule="cta_group is 1 or 2")
    # kind::i8 is sm_100a's only (targets_of): a family of its own
    for group, kinds in (("float", ("f16", "tf32", "f8f6f4")), ("i8", ("i8",))):
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.mma.{group}", primitive=True,
            parameters=[cta, param("kind", values=kinds), param("a_src", values=("SMEM", "TMEM")),
                        param("collector", values=("none",) + COLLECTOR_OPS), param("lanes", set_=(0, 1),
                        rule="lanes 1: a disable-output-lane mask"), param("scale", set_=(0, 1),
                        rule="scale 1: a scale-input-d"), param("ashift", set_=(0, 1), rule="ashift 1: .ashift")],
            derived=[("nmask", "lanes == 1 ? 4 * cta : 0")],
            rules=[("scale-input-d is for kind::f16 and kind::tf32", "scale == 0 || kind == 'f16' || kind == 'tf32'"),
                   (".ashift takes A from tensor memory", "ashift == 0 || a_src == 'TMEM'"),
                   (".ashift takes no collector use", "ashift == 0 || collector == 'none'")],
            template=dict(
                id=("blackwell.prim.tcgen05.mma.cta{cta}.{kind}.{a_src == 'SMEM' ? 'ss' : 'ts'}.{collector}"
                    ".l{lanes}.s{scale}.a{ashift}"),
                kind="OTHER",
                description=("tcgen05.mma.cta_group::{cta}.kind::{kind}: D (+)= A B with every operand a register: d the "
                             "tensor-memory address of D, a a UMMA descriptor (or A's tensor-memory address), b B's "
                             "descriptor, idesc the instruction descriptor, enable_input_d false overwrites D; "
                             "{lanes == 1 ? 'mask: the disable-output-lane words; ' : ''}"
                             "{scale == 1 ? 'scale_input_d (0..15, attribute): D scaled by 2^-s first; ' : ''}"
                             "{ashift == 1 ? '.ashift: A shifted down one row; ' : ''}"
                             "{collector == 'none' ? '' : 'A through the collector buffer (' + collector + '); '}"
                             "one thread issues it"),
                python_name="tcgen05.prim_mma",
                python_params={"cta_group": "{cta}", "kind": "{kind}", "a_src": "{a_src}", "collector": "{collector}",
                               "lanes": "{lanes}", "scale": "{scale}", "ashift": "{ashift}"},
                operands=[op("d", "TMEM_ADDRESS"),
                          op("a", "SMEM_DESCRIPTOR", when="a_src == 'SMEM'"),
                          op("a", "TMEM_ADDRESS", when="a_src == 'TMEM'"),
                          op("b", "SMEM_DESCRIPTOR"), op("idesc", "SCALAR"), op("enable_input_d", "PREDICATE"),
                          op("mask", "SCALAR", count_expr="nmask", when="lanes == 1")],
                attributes=[{"name": "scale_input_d", "type": "int", "allowed": [str(i) for i in range(16)],
                             "default_value": "0"}],
                ptx_template=("tcgen05.mma.cta_group::{cta}.kind::{kind}{ashift == 1 ? '.ashift' : ''}"
                              "{collector == 'none' ? '' : '.collector::a::' + collector}"
                              " [$0], {a_src == 'TMEM' ? '[$1]' : '$1'}, $2, $3"
                              "{lanes == 1 ? ', {' + seq(5, nmask, '$', ', ') + '}' : ''}, $4"
                              "{scale == 1 ? ', {scale_input_d}' : ''};"),
                constraints="{a_src == 'TMEM' ? 'r,r,l,r,b' : 'r,l,l,r,b'}{lanes == 1 ? ',' + repeat('r', nmask) : ''}",
                has_side_effects=True, sass_opcodes=[])))
    yield entry("families", **family(
        "blackwell.prim.tcgen05.mma.block_scale", primitive=True,
        parameters=[cta, param("kind", values=tuple(PRIM_BLOCK_SCALED)), param("a_src", values=("SMEM", "TMEM")),
                    param("vec", values=("block16", "block32"))],
        rules=[("kind::mxf4nvf4 takes block16 or block32, the other kinds block32",
                "vec == 'block32' || kind == 'mxf4nvf4'")],
        template=dict(
            id="blackwell.prim.tcgen05.mma.cta{cta}.{kind}.{vec}.{a_src == 'SMEM' ? 'ss' : 'ts'}",
            kind="OTHER",
            description=("tcgen05.mma.cta_group::{cta}.kind::{kind}.block_scale.{vec}: D (+)= (A x SFA) (B x SFB), "
                         "every operand a register: d, scale_a and scale_b tensor-memory addresses, a a UMMA "
                         "descriptor (or A's tensor-memory address), b B's descriptor, idesc the block-scaled "
                         "instruction descriptor; one thread issues it"),
            python_name="tcgen05.prim_mma_block_scale",
            python_params={"cta_group": "{cta}", "kind": "{kind}", "a_src": "{a_src}", "vec": "{vec}"},
            operands=[op("d", "TMEM_ADDRESS"),
                      op("a", "SMEM_DESCRIPTOR", when="a_src == 'SMEM'"),
                      op("a", "TMEM_ADDRESS", when="a_src == 'TMEM'"),
                      op("b", "SMEM_DESCRIPTOR"), op("idesc", "SCALAR"), op("scale_a", "TMEM_ADDRESS"),
                      op("scale_b", "TMEM_ADDRESS"), op("enable_input_d", "PREDICATE")],
            ptx_template=("tcgen05.mma.cta_group::{cta}.kind::{kind}.block_scale.{vec} [$0], "
                          "{a_src == 'TMEM' ? '[$1]' : '$1'}, $2, $3, [$4], [$5], $6;"),
            constraints="{a_src == 'TMEM' ? 'r,r,l,r,r,r,b' : 'r,l,l,r,r,r,b'}",
            has_side_effects=True, sass_opcodes=[])))
    # tensormap.replace (Hopper's entries are sm_90a's): one family over the field and the state space
    yield entry("families", **family(
        "blackwell.prim.tensormap.replace", primitive=True,
        parameters=[param("field", values=("global_address", "rank", "box_dim", "global_dim", "global_stride",
                                           "element_stride")),
                    param("space", values=("generic", "global", "shared::cta"))],
        derived=[("wide", "field == 'global_address' || field == 'global_stride'"),
                 ("per_dim", "field != 'global_address' && field != 'rank'")],
        template=dict(
            id="blackwell.prim.tensormap.replace.{field}.{space == 'shared::cta' ? 'shared_cta' : space}",
            kind="OTHER",
            description=("tensormap.replace.tile.{field}: sets that field{per_dim ? ' of dimension ord (0..4)' : ''} "
                         "of the tensor map at addr ({space}) to new_value"),
            python_name="tensormap.replace", python_params={"field": "{field}", "space": "{space}"},
            operands=[op("addr", "SMEM_ADDRESS", when="space == 'shared::cta'"),
                      op("addr", "GMEM_ADDRESS", when="space != 'shared::cta'"),
                      op("new_value", "SCALAR", register_type="b64", when="wide"),
                      op("new_value", "SCALAR", register_type="b32", when="!wide")],
            attributes=[{"name": "ord", "type": "int", "allowed": [str(i) for i in range(5)], "default_value": "0"}],
            ptx_template=("tensormap.replace.tile.{field}{space == 'generic' ? '' : '.' + space}.b1024."
                          "{wide ? 'b64' : 'b32'} [$0]{per_dim ? ', {ord}' : ''}, $1;"),
            constraints="{space == 'shared::cta' ? 'r' : 'l'},{wide ? 'l' : 'r'}", has_side_effects=True,
            sass_opcodes=[])))
    # tcgen05.cp of every shape, optionally decompressing narrow elements to 8-bit holders on the way
    shapes = {"128x256b": "128x256b", "4x256b": "4x256b", "128x128b": "128x128b",
              "64x128b.warpx2_02_13": "64x128b.warpx2::02_13", "64x128b.warpx2_01_23": "64x128b.warpx2::01_23",
              "32x128b.warpx4": "32x128b.warpx4"}
    for name, ptx in shapes.items():
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.cp.{name}", primitive=True,
            parameters=[cta, param("fmt", values=("none", "b6x16_p32", "b4x16_p64"))],
            template=dict(
                id=f"blackwell.prim.tcgen05.cp.cta{{cta}}.{name}.{{fmt}}", kind="OTHER",
                description=(f"tcgen05.cp.cta_group::{{cta}}.{ptx}: shared memory (the UMMA descriptor src) to tensor "
                             "memory at dst{fmt == 'none' ? '' : ', each narrow element (' + fmt + ') widened to an "
                             "8-bit holder (.b8x16)'}; asynchronous, completion through tcgen05.commit"),
                python_name="tcgen05.prim_cp", python_params={"cta_group": "{cta}", "shape": name, "fmt": "{fmt}"},
                operands=[op("dst", "TMEM_ADDRESS"), op("src", "SMEM_DESCRIPTOR")],
                ptx_template=(f"tcgen05.cp.cta_group::{{cta}}.{ptx}{{fmt == 'none' ? '' : '.b8x16.' + fmt}} "
                              "[$0], $1;"),
                constraints="r,l", has_side_effects=True, sass_opcodes=[])))
    # tcgen05.ld / st with packing, and the 16x32bx2 shape (two 16-lane halves, the second at an immediate column
    # offset); registers per thread are those of the shape's x1 times the repetition
    shapes = dict(TMEM_SHAPES, **{"16x32bx2": (16, 32, 1, 128)})
    for shape, (lanes, bits, regs1, max_num) in shapes.items():
        nums = [1 << i for i in range(max_num.bit_length())]
        half = shape == "16x32bx2"
        common = dict(primitive=True,
                      parameters=[param("num", set_=nums, rule=f"repeat is x1, x2, ... up to x{max_num} for .{shape}"),
                                  param("pack", set_=(0, 1), rule="pack 1: 16-bit halves of two columns")],
                      derived=[("regs", f"{regs1} * num")])
        attrs = [{"name": "half_offset", "type": "int", "default_value": "0"}] if half else []
        off = ", {half_offset}" if half else ""
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.ld.{shape}", **common, template=dict(
                id=f"blackwell.prim.tcgen05.ld.{shape}.x{{num}}.p{{pack}}", kind="OTHER",
                description=(f"tcgen05.ld .{shape}.x{{num}}{{pack == 1 ? '.pack::16b' : ''}}: {lanes} lanes of tensor "
                             "memory at src to {regs} b32 registers per thread (pack: two 16-bit columns a register)"
                             + ("; half_offset: the second half's column offset" if half else "")),
                python_name="tcgen05.prim_ld", python_params={"shape": shape, "num": "{num}", "pack": "{pack}"},
                operands=[op("dst", "REGISTERS", "OUT", element_type="b32", values_expr="regs",
                             registers_expr="regs", register_type="b32"), op("src", "TMEM_ADDRESS")],
                attributes=attrs,
                ptx_template=(f"tcgen05.ld.sync.aligned.{shape}.x{{num}}{{pack == 1 ? '.pack::16b' : ''}}.b32 "
                              f"{{{{seq(0, regs, '$', ', ')}}}}, [${{regs}}]{off};"),
                constraints="{repeat('=r', regs)},r", has_side_effects=True, sass_opcodes=[])))
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.st.{shape}", **common, template=dict(
                id=f"blackwell.prim.tcgen05.st.{shape}.x{{num}}.p{{pack}}", kind="OTHER",
                description=(f"tcgen05.st .{shape}.x{{num}}{{pack == 1 ? '.unpack::16b' : ''}}: {{regs}} b32 "
                             f"registers per thread to {lanes} lanes of tensor memory at dst (unpack: a register's "
                             "16-bit halves to two columns)"),
                python_name="tcgen05.prim_st", python_params={"shape": shape, "num": "{num}", "pack": "{pack}"},
                operands=[op("dst", "TMEM_ADDRESS"),
                          op("src", "REGISTERS", element_type="b32", values_expr="regs", registers_expr="regs",
                             register_type="b32")],
                attributes=attrs,
                ptx_template=(f"tcgen05.st.sync.aligned.{shape}.x{{num}}{{pack == 1 ? '.unpack::16b' : ''}}.b32 "
                              f"[$0]{off}, {{{{seq(1, regs, '$', ', ')}}}};"),
                constraints="{repeat('r', regs + 1)}", has_side_effects=True, sass_opcodes=[])))


def manifest_text() -> str:
    out = [format_header(
        comment=COMMENT, name="blackwell", version="0.2.0",
        description="NVIDIA Blackwell (sm_100a): tcgen05.mma (1 and 2 CTA), tensor memory alloc/ld/st/cp, UMMA "
                    "descriptors, tcgen05 commit and fences, TMA and mbarrier for sm_100a",
        # Its Python builds its TMA atoms and shared-memory layout atoms on Hopper's (warpweave.backends.hopper).
        extends=("hopper",),
        python_modules=("tcgen05",),
        module_map={"warpweave.utils.blackwell_helpers": "helpers", "warpweave.utils.sm100": "helpers",
                    "warpweave.utils.gemm.sm100": "gemm_sm100",
                    "warpweave.utils.blockscaled_layout": "blockscaled_layout",
                    "warpweave.utils.mixed_input_helpers": "mixed_input"},
        on_load=("adapters",),
        python_enums=(("tcgen05.OperandSource", ("SMEM", "TMEM")), ("tcgen05.OperandMajorMode", ("K", "MN")),
                      ("tcgen05.Repetition", tuple(f"x{1 << i}" for i in range(8))))),
        "\n" + format_target(dict(name=TARGET, compute_capability=100, arch_specific=True, llvm_cpu="sm_100a",
                                   ptx_features="+ptx88", jit_arch="sm_100a", smem_capacity_bytes=232448,
                                   max_threads_per_block=1024, max_cluster_size=16,
                                   tma_unpacking=TMA_UNPACKING)) + "\n",
        "\n" + format_target(dict(name="sm_103a", compute_capability=103, arch_specific=True, llvm_cpu="sm_103a",
                                   ptx_features="+ptx88", jit_arch="sm_103a", smem_capacity_bytes=232448,
                                   max_threads_per_block=1024, max_cluster_size=16,
                                   tma_unpacking=TMA_UNPACKING)) + "\n"]
    out.append("\n" + element_types_text())
    sections = [
        ("tcgen05.mma families: kinds f16, tf32, f8f6f4 and i8; cta_group 1 and 2; A from shared or tensor memory",
         mma_families()),
        ("Block-scaled tcgen05.mma families: kind::mxf4nvf4 (nvf4 and mxf4 inputs, scale factors in tensor memory)",
         block_scaled_mma_families()),
        ("Block-scaled tcgen05.mma kind::mxf8f6f4 with A and B of different formats",
         mixed_block_scaled_mma_families()),
        ("sm_103a's block-scaled tcgen05.mma families with K = 96 (4-bit A and B)",
         block_scaled_mma_families(SM103_BLOCK_SCALED_KINDS, "blackwell.sm103.tcgen05.mma")),
        ("tcgen05.ld / tcgen05.st families: tensor memory <-> registers, by shape, over the repetition",
         tmem_copy_families()),
        ("tcgen05.cp: shared memory -> tensor memory", cp_atoms()),
        ("TMA tile load and store families (the Hopper PTX, for sm_100a) over the rank, with the 2-CTA load",
         tma_families()),
        ("Primitives: descriptors, tensor-memory allocation, commit, waits, fences, bulk groups, mbarriers",
         primitives()),
        ("Primitives: packed f32x2 arithmetic, grid dependency control", arithmetic_and_grid_primitives()),
        ("Primitives: clusters (barriers, special registers, mapa, remote arrivals), elect, TMA descriptor prefetch, "
         "proxy fences", cluster_primitives()),
        ("Primitives: cluster launch control (try_cancel, query_cancel) and the remote arrive with expect_tx",
         clc_primitives()),
        ("Primitives: register budgets of warpgroups", register_primitives()),
        ("cutlass.experimental.primitives: tcgen05.mma, tcgen05.ld and tcgen05.st with run-time operands",
         experimental_tcgen05_primitives()),
        ("cutlass.experimental.primitives: float warp reductions, 8-bit ldmatrix / stmatrix",
         experimental_primitives()),
        ("Warp-level matrix loads and stores of bytes: LdMatrix8x16x8bOp's unpacking forms, LdMatrix16x16x8bOp, "
         "StMatrix16x8x8bOp",
         byte_ldmatrix_atoms()),
    ]
    for title, entries in sections:
        out.append("\n# " + "-" * 110 + f"\n# {title}\n# " + "-" * 110 + "\n\n")
        out.append("\n".join(format_entry(s, e, targets_of(e)) + "\n" for s, e in entries))
    return "".join(out)


def main(argv) -> int:
    return write_or_check(os.path.join(HERE, "blackwell.textproto"), manifest_text(), argv,
                          "backends/blackwell/generate_manifest.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
