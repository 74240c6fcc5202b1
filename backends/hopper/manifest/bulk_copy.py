"""Bulk copies of byte ranges (no tensor map): CuTe DSL's cpasync.CopyBulkG2SOp, CopyBulkS2GOp and
CopyBulkG2SMulticastOp. One instruction moves `size` contiguous bytes; the backend's Python (python/bulk_copy.py)
takes the count from the tensors of the cute.copy call and checks what it can while tracing."""
from __future__ import annotations

from manifest_builder import operand

from .common import TARGET, atom

# What the hardware requires of every bulk copy: a violation is undefined (on the H100/H200 a fault).
BULK_RULES = "size is a multiple of 16 bytes and both addresses are 16-byte aligned; the issuing thread alone moves it"


def bulk_copy_atoms():
    mbar, size = operand("mbar", "MBARRIER", "IN"), operand("size", "SCALAR", "IN")
    g2s_ops = [operand("dst", "SMEM_ADDRESS", "OUT"), operand("src", "GMEM_ADDRESS", "IN"), mbar, size]
    return [
        atom("hopper.bulk_copy.g2s", "COPY",
             description=("bulk copy of size bytes from global src to this CTA's shared memory at dst, completing them "
                          "as transaction bytes of mbar (in this CTA); " + BULK_RULES),
             python_name="cpasync.CopyBulkG2SOp", thr_id="1:1", operands=g2s_ops,
             # The destination is this CTA's shared memory, named so (.shared::cta, PTX ISA 8.6) for the reason
             # tma.py's loads give: a .shared::cluster destination costs sm_120a code a check of the address's CTA.
             ptx_template="cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [$0], [$1], $3, [$2];",
             constraints="r,l,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.G"]),
        atom("hopper.bulk_copy.g2s.multicast", "COPY",
             description=("bulk copy with multicast: as hopper.bulk_copy.g2s, into the same shared-memory offset and "
                          "mbarrier offset of every CTA of the cluster whose bit is set in cta_mask (low 16 bits, by "
                          "%cluster_ctarank); " + BULK_RULES),
             python_name="cpasync.CopyBulkG2SMulticastOp", thr_id="1:1",
             operands=g2s_ops + [operand("cta_mask", "SCALAR", "IN")],
             ptx_template=("{ .reg .b16 ww_mask; cvt.u16.u32 ww_mask, $4; "
                           "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                           "[$0], [$1], $3, [$2], ww_mask; }"),
             constraints="r,l,r,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.G"],
             # multicast is sm_90a's (arch-specific), as the TMA multicast load is: not on the portable target
             targets=TARGET),
        atom("hopper.bulk_copy.s2g", "COPY",
             description=("bulk copy of size bytes from this CTA's shared memory at src to global dst, completing "
                          "with the issuing thread's bulk groups (commit_group, then wait_group); " + BULK_RULES),
             python_name="cpasync.CopyBulkS2GOp", thr_id="1:1",
             operands=[operand("dst", "GMEM_ADDRESS", "OUT"), operand("src", "SMEM_ADDRESS", "IN"), size],
             ptx_template="cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;", constraints="l,r,r",
             has_side_effects=True, sass_opcodes=["UBLKCP.G.S"]),
    ]
