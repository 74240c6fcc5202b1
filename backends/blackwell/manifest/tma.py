"""TMA tile loads and stores for sm_100a: the Hopper PTX over the rank, and the 2-CTA (.cta_group::2) load."""
from __future__ import annotations

from manifest_builder import entry, family, operand as op, parameter as param

TMA_HOST_ATTRS = (
    "host hook encode_tma_descriptor writes the 128-byte tensor map (the lent cuTensorMapEncodeTiled) from attrs: "
    "data_type (driver enum int 0-15, or u8 u16 u32 s32 u64 s64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz), rank (1-5), "
    "address (global, 16-byte aligned), dim0..dim{rank-1} (elements, innermost first), stride1..stride{rank-1} "
    "(bytes, multiples of 16), box0..box{rank-1} (1..256), elem_stride0.. (default 1), interleave (0 none, 1 16B, "
    "2 32B), swizzle (0 none, 1 32B, 2 64B, 3 128B, 4 128B_ATOM_32B, 5 128B_ATOM_32B_FLIP_8B, 6 128B_ATOM_64B, or "
    "\"none\" \"32B\" \"64B\" \"128B\"), l2_promotion (0 none, 1 64B, 2 128B, 3 256B), oob_fill (0 zeros, 1 NaN); "
    "pass the map as a __grid_constant__ kernel parameter and its generic address as tmap")


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


def bulk_multicast_atoms():
    """The multicast bulk copy of a byte range (cpasync.CopyBulkG2SMulticastOp): arch-specific PTX, so sm_100a
    needs its own entry; the unicast bulk copies are Hopper's portable sm_90 entries, which run here (Hopper's
    python/bulk_copy.py lowers all three)."""
    yield entry("atoms", id="blackwell.bulk_copy.g2s.multicast", kind="COPY",
                description=("bulk copy with multicast: size bytes from global src into the same shared-memory "
                             "offset (dst) and mbarrier offset (mbar) of every CTA of the cluster whose bit is set in "
                             "cta_mask (low 16 bits); size a multiple of 16 bytes, both addresses 16-byte aligned"),
                python_name="cpasync.CopyBulkG2SMulticastOp", thr_id="1:1",
                operands=[op("dst", "SMEM_ADDRESS", "OUT"), op("src", "GMEM_ADDRESS"), op("mbar", "MBARRIER"),
                          op("size", "SCALAR"), op("cta_mask", "SCALAR")],
                ptx_template=("{ .reg .b16 ww_mask; cvt.u16.u32 ww_mask, $4; "
                              "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                              "[$0], [$1], $3, [$2], ww_mask; }"),
                constraints="r,l,r,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.G"])
