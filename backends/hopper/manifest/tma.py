"""TMA: tile loads (with multicast), stores, reduction stores and prefetches over the rank, the descriptor
prefetch and the bulk groups that complete stores."""
from __future__ import annotations

from manifest_builder import attribute, operand

from .common import TARGET, atom, primitive, regs

TMA_HOST_DOC = (
    "host hook encode_tma_descriptor writes the 128-byte tensor map (the lent cuTensorMapEncodeTiled) from attrs: "
    "data_type (driver enum int, or u8 u16 u32 s32 u64 s64 f16 f32 f64 bf16 f32_ftz tf32 tf32_ftz), rank (1-5), "
    "address (global, 16-byte aligned), dim0..dim{rank-1} (elements, innermost first), stride1..stride{rank-1} "
    "(bytes, multiples of 16; stride0, if given, must be the element size), box0..box{rank-1} (1..256), "
    "elem_stride0.. (default 1), interleave (0 none, 1 16B, 2 32B), swizzle (0 none, 1 32B, 2 64B, 3 128B, or "
    "\"none\" \"32B\" \"64B\" \"128B\"), l2_promotion (0 none, 1 64B, 2 128B, 3 256B), oob_fill (0 zeros, 1 NaN); "
    "pass the map as a __grid_constant__ kernel parameter and its generic address as tmap")

# Measured on the H200 (driver 580): a box whose innermost start coords[0] * element size is not a multiple of
# 16 bytes faults with an illegal instruction, for loads and stores alike; a store at a negative coordinate
# faults too, while a load there reads zeros.
TMA_LOAD_COORDS = ("coords[0] * element size must be a multiple of 16 bytes (another start faults: illegal "
                   "instruction); a box may hang off either end of the tensor, and what lies outside reads as zero "
                   "(or NaN, per oob_fill). ")
TMA_STORE_COORDS = ("coords must be non-negative and coords[0] * element size a multiple of 16 bytes (either "
                    "violation faults: illegal instruction); elements past the tensor's high end are not written. ")


# The Python ops are CuTe DSL's, shared with Blackwell's TMA loads: there cta_group picks 1 or 2 CTAs, here only 1.
CTA_GROUP_ONE = {"cta_group": "1"}


def tma_entries():
    out = []
    for r in range(1, 6):
        coords = lambda first: "{" + regs(first, r) + "}"  # noqa: E731
        cop = operand("coords", "COORDINATE", "IN", count=r)
        # Loads: dst, tmap, mbar, coords[, cta_mask]
        load_ops = [operand("dst", "SMEM_ADDRESS", "OUT"), operand("tmap", "TMA_DESCRIPTOR", "IN"),
                    operand("mbar", "MBARRIER", "IN"), cop]
        out.append(atom(
            f"hopper.tma.load.{r}d", "COPY",
            description=(f"TMA tile load, {r}-D: the box at coords (elements, innermost first) of the tensor map to "
                         "shared memory at dst (128-byte aligned), completing mbar's transaction bytes; one thread "
                         "issues it. " + TMA_LOAD_COORDS + TMA_HOST_DOC),
            python_name="cpasync.CopyBulkTensorTileG2SOp", python_params={"rank": str(r), **CTA_GROUP_ONE},
            python_signature=["cta_group"], python_defaults=CTA_GROUP_ONE, thr_id="1:1",
            operands=load_ops,
            # The destination is this CTA's shared memory, so it is named as such (.shared::cta, PTX ISA 8.6):
            # for a .shared::cluster destination ptxas's sm_120a code first checks whether the address lies in
            # another CTA and calls out of the kernel if so (a stack frame, STL and CALL.ABS per load); sm_90a
            # and sm_100a code is the same UTMALDG either way.
            ptx_template=(f"cp.async.bulk.tensor.{r}d.shared::cta.global.mbarrier::complete_tx::bytes "
                          f"[$0], [$1, {coords(3)}], [$2];"),
            constraints=",".join(["r", "l", "r"] + ["r"] * r), has_side_effects=True, sass_opcodes=[f"UTMALDG.{r}D"],
            host_hook="encode_tma_descriptor", conformance="hopper_tma"))
        out.append(atom(
            f"hopper.tma.load.multicast.{r}d", "COPY",
            description=(f"TMA tile load with multicast, {r}-D: as hopper.tma.load.{r}d, into the same shared-memory "
                         "offset and mbarrier offset of every CTA of the cluster whose bit is set in cta_mask (low 16 "
                         "bits, by %cluster_ctarank). " + TMA_LOAD_COORDS + TMA_HOST_DOC),
            python_name="cpasync.CopyBulkTensorTileG2SMulticastOp", python_params={"rank": str(r), **CTA_GROUP_ONE},
            python_signature=["cta_group"], python_defaults=CTA_GROUP_ONE, thr_id="1:1",
            operands=load_ops + [operand("cta_mask", "SCALAR", "IN")],
            ptx_template=("{ .reg .b16 ww_mask; cvt.u16.u32 ww_mask, $" + str(3 + r) + "; "
                          f"cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes"
                          f".multicast::cluster [$0], [$1, {coords(3)}], [$2], ww_mask; }}"),
            constraints=",".join(["r", "l", "r"] + ["r"] * r + ["r"]), has_side_effects=True,
            sass_opcodes=[f"UTMALDG.{r}D.MULTICAST"], host_hook="encode_tma_descriptor", conformance="hopper_tma",
            # Hardware multicast is sm_90a's (and sm_100a's, in Blackwell's manifest): ptxas takes the PTX for
            # sm_120a too but emulates it there with global loads and shared stores (no UTMALDG.MULTICAST), so
            # the portable target does not offer it, and a consumer-Blackwell program that asks for it is told.
            targets=TARGET))
        store_ops = [operand("tmap", "TMA_DESCRIPTOR", "IN"), operand("src", "SMEM_ADDRESS", "IN"), cop]
        out.append(atom(
            f"hopper.tma.store.{r}d", "COPY",
            description=(f"TMA tile store, {r}-D: shared memory at src to the box at coords of the tensor map; one "
                         "thread issues it after fence.proxy.async.shared::cta; completion through "
                         "hopper.tma.commit_group / wait_group. " + TMA_STORE_COORDS + TMA_HOST_DOC),
            python_name="cpasync.CopyBulkTensorTileS2GOp", python_params={"rank": str(r)}, thr_id="1:1",
            operands=store_ops,
            ptx_template=f"cp.async.bulk.tensor.{r}d.global.shared::cta.bulk_group [$0, {coords(2)}], [$1];",
            constraints=",".join(["l", "r"] + ["r"] * r), has_side_effects=True, sass_opcodes=[f"UTMASTG.{r}D"],
            host_hook="encode_tma_descriptor", conformance="hopper_tma"))
        out.append(atom(
            f"hopper.tma.reduce.{r}d", "COPY",
            description=(f"TMA tile reduction store, {r}-D: combines shared memory at src into the box at coords "
                         "with op (add by default; min, max, inc, dec, and, or, xor), per the tensor map's type: "
                         "add f16, bf16, f32, s32, u32, u64; min and max f16, bf16, s32, u32, s64, u64; inc and dec "
                         "u32; and, or, xor s32, u32, s64, u64. " + TMA_STORE_COORDS + TMA_HOST_DOC),
            python_name="cpasync.CopyReduceBulkTensorTileS2GOp", python_params={"rank": str(r)}, thr_id="1:1",
            operands=store_ops,
            attributes=[attribute("op", type_="string",
                                  allowed=("add", "min", "max", "inc", "dec", "and", "or", "xor"), default="add")],
            ptx_template=(f"cp.reduce.async.bulk.tensor.{r}d.global.shared::cta.{{op}}.bulk_group "
                          f"[$0, {coords(2)}], [$1];"),
            constraints=",".join(["l", "r"] + ["r"] * r), has_side_effects=True, sass_opcodes=[f"UTMAREDG.{r}D"],
            host_hook="encode_tma_descriptor", conformance="hopper_tma"))
        out.append(primitive(
            f"hopper.tma.prefetch.{r}d", "OTHER",
            description=f"TMA tile prefetch into L2, {r}-D: the box at coords of the tensor map. " + TMA_HOST_DOC,
            python_name=f"cpasync.prefetch_tile_{r}d", operands=[operand("tmap", "TMA_DESCRIPTOR", "IN"), cop],
            ptx_template=f"cp.async.bulk.prefetch.tensor.{r}d.L2.global [$0, {coords(1)}];",
            constraints=",".join(["l"] + ["r"] * r), has_side_effects=True, sass_opcodes=[f"UTMAPF.L2.{r}D"],
            host_hook="encode_tma_descriptor"))
    out.append(primitive(
        "hopper.tma.prefetch_descriptor", "OTHER",
        description=("prefetch.tensormap: brings the tensor map at tmap (generic address) into the cache. " +
                     TMA_HOST_DOC),
        python_name="cpasync.prefetch_descriptor", operands=[operand("tmap", "TMA_DESCRIPTOR", "IN")],
        ptx_template="prefetch.tensormap [$0];", constraints="l", has_side_effects=True, sass_opcodes=["UTMACCTL.PF"],
        host_hook="encode_tma_descriptor"))
    out.append(primitive(
        "hopper.tma.commit_group", "COMMIT",
        description="cp.async.bulk.commit_group: closes the bulk group of this thread's TMA stores issued so far",
        python_name="arch.cp_async_bulk_commit_group", ptx_template="cp.async.bulk.commit_group;",
        has_side_effects=True, sass_opcodes=["UTMACMDFLUSH"]))
    out.append(primitive(
        "hopper.tma.wait_group.read", "WAIT",
        description="cp.async.bulk.wait_group.read n: waits until at most n bulk groups still read their shared-memory "
                    "source (the buffer may then be reused)",
        python_name="arch.cp_async_bulk_wait_group_read",
        attributes=[attribute("n")], ptx_template="cp.async.bulk.wait_group.read {n};", has_side_effects=True,
        sass_opcodes=["DEPBAR.LE"]))
    out.append(primitive(
        "hopper.tma.wait_group", "WAIT",
        description="cp.async.bulk.wait_group n: waits until at most n bulk groups are pending (writes visible)",
        python_name="arch.cp_async_bulk_wait_group",
        attributes=[attribute("n")], ptx_template="cp.async.bulk.wait_group {n};", has_side_effects=True,
        sass_opcodes=["DEPBAR.LE"]))
    return out
