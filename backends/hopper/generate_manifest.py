#!/usr/bin/env python3
"""Writes backends/hopper/hopper.textproto, the Hopper backend's manifest.

The wgmma atoms (every type combination x every N x both A sources, 912 of them) are four families
(manifest.proto, message Family): parameters with their legal domains, the rules tying them together, and one
templated instruction each; the core expands an atom when it is selected. Everything else is listed here too so
that the file has one author. The committed
textproto is what the plugin embeds: edit this script, run it, and commit both.

    python3 backends/hopper/generate_manifest.py            # rewrites hopper.textproto next to this script
    python3 backends/hopper/generate_manifest.py --check    # exits 1 if the committed file is stale

Facts about the hardware used below (PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate" and
"Tensor Copy" chapters; the layouts agree with CuTe's GMMA ALayout/CLayout and STSM copy traits):
- wgmma D/C fragment of a 64xN tile over 128 threads: the i-th accumulator value of lane l of warp w is
  row 16*w + l/4 + 8*((i/2)%2), column 2*(l%4) + i%2 + 8*(i/4). As a CuTe layout of (thread, value) onto the
  column-major (m + 64*n) tile: ((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512)).
- wgmma A from registers (K-major only) has the same row pattern, with the K columns of one 32-bit register
  contiguous: 16-bit types ((4,8,4),(2,2,2)):((128,1,16),(64,8,512)), tf32 ((4,8,4),(2,2)):((64,1,16),(8,256)),
  8-bit types ((4,8,4),(4,2,2)):((256,1,16),(64,8,1024)).
- A or B from shared memory is read through a 64-bit matrix descriptor; every thread of the warpgroup passes the
  same one, so its layout is the whole tile with a stride-0 thread mode: (128,(M,K)):(0,(1,M)). Descriptor
  operands carry the tile's element_type and values = M*K (the tile) for that layout; the core passes them as one
  i64 either way.
- Only 16-bit inputs accept the transpose immediates (MN-major A/B); tf32, fp8 and integer inputs are K-major.
- Integer wgmma has no scale immediates and supports N in {8,16,24} and multiples of 16 up to 256.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The writer the backends' generators share lives in backends/, beside this backend's folder; this script runs on
# its own (no package holds it), so its parent folder is put on the path.
sys.path.insert(0, os.path.dirname(HERE))
from manifest_builder import (  # noqa: E402
    attribute, family, format_element_types, format_entry, format_header, format_instruction, format_target, operand,
    parameter, write_or_check,
)

OUT = os.path.join(HERE, "hopper.textproto")
TARGET = "sm_90a"
# The portable sm_90 target: code for it runs on every device of compute capability 9.0 and above. TMA, bulk
# groups, mbarrier transaction counts, proxy fences, clusters, elect.sync, stmatrix and griddepcontrol are sm_90
# PTX (not arch-specific; TMA multicast aside, see hopper.tma.load.multicast), so they are offered there too, and a later generation whose backend does not list
# them itself (consumer Blackwell, sm_120a) uses these entries by extending this backend. wgmma and setmaxnreg
# are sm_90a-only (arch-specific PTX) and stay on TARGET.
PORTABLE = "sm_90"
BOTH = (TARGET, PORTABLE)


def atom(id_, kind, *, targets=BOTH, **kw):
    return format_instruction("atoms", dict(id=id_, kind=kind, **kw), targets)


def primitive(id_, kind, *, targets=BOTH, **kw):
    return format_instruction("primitives", dict(id=id_, kind=kind, **kw), targets)


def regs(first: int, n: int) -> str:
    return ", ".join(f"${i}" for i in range(first, first + n))


# --------------------------------------------------------------------------------------------------------------
# wgmma

# PTX type -> (bits, DSL type name)
TYPES = {"f16": (16, "Float16"), "bf16": (16, "BFloat16"), "tf32": (32, "TFloat32"), "e4m3": (8, "Float8E4M3FN"),
         "e5m2": (8, "Float8E5M2"), "s8": (8, "Int8"), "u8": (8, "Uint8"), "f32": (32, "Float32"),
         "s32": (32, "Int32")}

N_ALL = list(range(8, 257, 8))
N_INT = [8, 16, 24] + list(range(32, 257, 16))

# (family python_name, A type, B type, accumulator type, N values)
WGMMA_FAMILIES = []
for acc in ("f16", "f32"):
    WGMMA_FAMILIES.append(("warpgroup.MmaF16BF16Op", "f16", "f16", acc, N_ALL))
WGMMA_FAMILIES.append(("warpgroup.MmaF16BF16Op", "bf16", "bf16", "f32", N_ALL))
WGMMA_FAMILIES.append(("warpgroup.MmaTF32Op", "tf32", "tf32", "f32", N_ALL))
for acc in ("f32", "f16"):
    for a in ("e4m3", "e5m2"):
        for b in ("e4m3", "e5m2"):
            WGMMA_FAMILIES.append(("warpgroup.MmaF8Op", a, b, acc, N_ALL))
for a in ("s8", "u8"):
    for b in ("s8", "u8"):
        WGMMA_FAMILIES.append(("warpgroup.MmaI8Op", a, b, "s32", N_INT))

A_REG_LAYOUT = {
    16: "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))",
    32: "((4,8,4),(2,2)):((64,1,16),(8,256))",
    8: "((4,8,4),(4,2,2)):((256,1,16),(64,8,1024))",
}


def smem_layout(mn: int, k: int) -> str:
    return f"(128,({mn},{k})):(0,(1,{mn}))"


# The MLIR type a value of each element type is held in (fp8 and integers as integers of their width).
IR_TYPES = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "f32": "f32"}


def element_types() -> str:
    """The manifest's element type table: every type an operand names, with its width, the DSL type a Python
    parameter names it by (none for the untyped bNN), and the MLIR type its values are held in."""
    rows = [(t, bits, dsl) for t, (bits, dsl) in TYPES.items()] + [("b16", 16, ""), ("b32", 32, "")]
    return "\n".join(format_element_types(rows, IR_TYPES))


# (family id, Python class, A types, B types (None: B is A's type), accumulator types, K, N domain and its rule,
#  type rules)
N_RANGE = dict(range_=(8, 256, 8), rule="N is a multiple of 8 from 8 to 256")
N_INT_SET = dict(set_=N_INT, rule="N is 8, 16, 24 or a multiple of 16 from 32 to 256")
WGMMA_FAMILY_SPECS = [
    ("hopper.wgmma.f16bf16", "warpgroup.MmaF16BF16Op", ("f16", "bf16"), None, ("f16", "f32"), 16, N_RANGE,
     [("bf16 inputs accumulate in f32", "a != 'bf16' || acc == 'f32'")]),
    ("hopper.wgmma.tf32", "warpgroup.MmaTF32Op", ("tf32",), None, ("f32",), 8, N_RANGE, []),
    ("hopper.wgmma.f8", "warpgroup.MmaF8Op", ("e4m3", "e5m2"), ("e4m3", "e5m2"), ("f32", "f16"), 32, N_RANGE, []),
    ("hopper.wgmma.i8", "warpgroup.MmaI8Op", ("s8", "u8"), ("s8", "u8"), ("s32",), 32, N_INT_SET, []),
]


def wgmma_family(fid, pyname, a_types, b_types, accs, k, n_domain, rules):
    abits = TYPES[a_types[0]][0]
    is_int = accs == ("s32",)
    is_16 = abits == 16
    params = [parameter("a", values=a_types)]
    derived = []
    if b_types:
        params.append(parameter("b", values=b_types))
    else:
        derived.append(("b", "a"))
    params += [parameter("acc", values=accs),
               parameter("m", set_=(64,), rule="M is 64: a warpgroup MMA covers 64 rows"),
               parameter("n", **n_domain),
               parameter("k", set_=(k,), rule=f"K is {k}: 256 bits of the {abits}-bit input type"),
               parameter("a_src", values=("SMEM", "RMEM"))]
    # D/C: N/2 values per thread; 16-bit accumulators pack two per 32-bit register. The template numbers D's
    # registers first, then A (4 registers or one descriptor), B's descriptor, C (tied to D) and scale_d.
    derived += [("rs", "a_src == 'RMEM'"), ("dregs", "n / 2 * bits(acc) / 32"), ("b_idx", "dregs + (rs ? 4 : 1)"),
                ("scale_idx", "b_idx + 1 + dregs"), ("dtype", "acc == 'f32' ? 'f32' : 'b32'")]
    d_layout = "((4,8,4),(2,2,{n / 8})):((128,1,16),(64,8,512))"
    ops = [operand("d", "REGISTERS", "OUT", element_type="{acc}", values_expr="n / 2", registers_expr="dregs",
                   register_type="{dtype}", layout_tv=d_layout),
           operand("a", "REGISTERS", "IN", element_type="{a}", values=64 * k // 128, registers=4, register_type="b32",
                   layout_tv=A_REG_LAYOUT[abits], when="rs"),
           operand("a", "SMEM_DESCRIPTOR", "IN", element_type="{a}", values=64 * k, layout_tv=smem_layout(64, k),
                   when="!rs"),
           operand("b", "SMEM_DESCRIPTOR", "IN", element_type="{b}", values_expr="n * k",
                   layout_tv="(128,({n},{k})):(0,(1,{n}))"),
           # C is the same registers as D: wgmma reads and writes its accumulators in place.
           operand("c", "REGISTERS", "IN", element_type="{acc}", values_expr="n / 2", registers_expr="dregs",
                   register_type="{dtype}", layout_tv=d_layout),
           operand("scale_d", "PREDICATE", "IN")]
    attrs = []
    tail = ""
    if not is_int:
        attrs.append(attribute("scale_a", allowed=("1", "-1"), default="1"))
        attrs.append(attribute("scale_b", allowed=("1", "-1"), default="1"))
        tail += ", {scale_a}, {scale_b}"
    if is_16:
        attrs.append(attribute("tnsp_a", allowed=("0", "1"), default="0", when="!rs"))
        attrs.append(attribute("tnsp_b", allowed=("0", "1"), default="0"))
        tail += "{rs ? '' : ', {tnsp_a}'}, {tnsp_b}"
    template = ("wgmma.mma_async.sync.aligned.m{m}n{n}k{k}.{acc}.{a}.{b} {{seq(0, dregs, '$', ', ')}}, "
                "{rs ? '{' + seq(dregs, 4, '$', ', ') + '}' : '$' + str(dregs)}, ${b_idx}, ${scale_idx}" + tail + ";")
    constraints = ("{join(',', repeat(acc == 'f32' ? '=f' : '=r', dregs), rs ? 'r,r,r,r' : 'l', 'l', seq(0, dregs), "
                   "'b')}")
    python_params = {}
    if b_types:
        python_params["ab_dtype"] = "{a == b ? dsl(a) : ''}"   # same-type atoms are selectable by ab_dtype too
        python_params["a_dtype"] = "{dsl(a)}"
        python_params["b_dtype"] = "{dsl(b)}"
    else:
        python_params["ab_dtype"] = "{dsl(a)}"
    python_params.update({"acc_dtype": "{dsl(acc)}", "shape_mnk": "({m},{n},{k})", "a_src": "{a_src}"})
    # Positional order of CuTe DSL's constructors (instruction shape before the A source); with mixed fp8/int8
    # types A and B are named apart, and ab_dtype still selects the same-type atoms.
    signature = (["a_dtype", "b_dtype"] if b_types else ["ab_dtype"]) + ["acc_dtype", "shape_mnk", "a_src"]
    majors = ("A/B K-major or MN-major (tnsp_a/tnsp_b: 0 = K-major, 1 = MN-major"
              "{rs ? '; A from registers is K-major)' : ')'}") if is_16 else "A and B K-major"
    scale = "; scale_d false: D = A*B, true: D = A*B + C" + ("" if is_int else "; scale_a/scale_b negate A/B with -1")
    desc = ("wgmma.mma_async m{m}n{n}k{k}, {a} x {b} -> {acc}, A from {rs ? 'registers' : 'shared memory (descriptor)'}"
            ", B from shared memory (descriptor); " + majors + scale +
            "; asynchronous: fence, commit and wait with hopper.wgmma.*")
    # What ptxas 13.0 prints (checked for every atom): HGMMA.64xNx16.F32[.BF16] / .F16, HGMMA.64xNx8.F32.TF32,
    # QGMMA.64xNx32.<acc>.<A>.<B>, IGMMA.64xNx32.<A>.<B>.
    if is_int:
        sass_op = "IGMMA.64x{n}x{k}.{upper(a)}.{upper(b)}"
    elif abits == 8:
        sass_op = "QGMMA.64x{n}x{k}.{upper(acc)}.{upper(a)}.{upper(b)}"
    else:
        sass_op = "HGMMA.64x{n}x{k}.{upper(acc)}{a == 'f16' ? '' : '.' + upper(a)}"
    return format_entry("families", family(
        fid, parameters=params, derived=derived, rules=rules,
        template=dict(id="hopper.wgmma.m{m}n{n}k{k}.{acc}.{a}.{b}.{rs ? 'rs' : 'ss'}", kind="MMA", description=desc,
                      python_name=pyname, python_params=python_params, python_signature=signature,
                      shape_mnk="({m},{n},{k})", thr_id="128:1", operands=ops, attributes=attrs,
                      ptx_template=template, constraints=constraints, has_side_effects=True, sass_opcodes=[sass_op],
                      conformance="hopper_wgmma")), TARGET)


def wgmma_families():
    return [wgmma_family(*spec) for spec in WGMMA_FAMILY_SPECS]


# --------------------------------------------------------------------------------------------------------------
# stmatrix: CuTe's SM90_U32x{1,2,4}_STSM_N and SM90_U16x{2,4,8}_STSM_T, layouts in bits

STSM_LAYOUTS = {
    # x: (source registers (thread, bit), destination (thread supplying the row address, bit))
    (1, False): ("(32,32):(32,1)", "((8,4),128):((128,0),1)"),
    (2, False): ("(32,(32,2)):(32,(1,1024))", "((16,2),128):((128,0),1)"),
    (4, False): ("(32,(32,4)):(32,(1,1024))", "(32,128):(128,1)"),
    (1, True): ("((4,8),(16,2)):((256,16),(1,128))", "((8,4),128):((128,0),1)"),
    (2, True): ("((4,8),(16,2,2)):((256,16),(1,128,1024))", "((16,2),128):((128,0),1)"),
    (4, True): ("((4,8),(16,2,4)):((256,16),(1,128,1024))", "(32,128):(128,1)"),
}


def stmatrix_atoms():
    out = []
    for trans in (False, True):
        for x in (1, 2, 4):
            src_l, dst_l = STSM_LAYOUTS[(x, trans)]
            t = ".trans" if trans else ""
            rows = 8 * x
            out.append(atom(
                f"hopper.stmatrix.x{x}{t}.b16", "COPY",
                description=(f"stmatrix x{x}{t}: {x} 8x8 b16 matri{'ces' if x > 1 else 'x'} from registers to shared "
                             f"memory{', transposed' if trans else ''}; threads 0..{rows - 1} give the row addresses "
                             f"(16-byte aligned), thread t's register j holds two b16 of matrix j"),
                python_name="warp.StMatrix8x8x16bOp",
                python_params={"transpose": str(trans), "num_matrices": str(x)},
                python_signature=["transpose", "num_matrices"], python_defaults={"transpose": "False"},
                thr_id="32:1", layout_unit_bits=1,
                operands=[operand("dst", "SMEM_ADDRESS", "OUT", layout_tv=dst_l),
                          operand("src", "REGISTERS", "IN", element_type="b16", values=2 * x, registers=x,
                                  register_type="b32", layout_tv=src_l)],
                ptx_template=f"stmatrix.sync.aligned.m8n8.x{x}{t}.shared.b16 [$0], {{{regs(1, x)}}};",
                constraints=",".join(["r"] * (1 + x)), has_side_effects=True,
                sass_opcodes=[f"STSM.16.{'MT88' if trans else 'M88'}{'' if x == 1 else '.' + str(x)}"],
                conformance="hopper_stmatrix"))
    return out


# --------------------------------------------------------------------------------------------------------------
# TMA

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


# --------------------------------------------------------------------------------------------------------------
# barriers, fences, clusters, registers, wgmma control, the descriptor hook

def grid_dependency_primitives():
    """Programmatic dependent launch (sm_90 on): a kernel launched with use_pdl may start before the one it
    depends on has finished, and waits for it where it needs its results."""
    return [
        primitive("hopper.griddepcontrol.wait", "WAIT",
                  description=("griddepcontrol.wait: waits until the grids this one depends on have completed and "
                               "their memory operations are visible (a no-op when launched without a dependency)"),
                  python_name="arch.griddepcontrol_wait", ptx_template="griddepcontrol.wait;",
                  has_side_effects=True, sass_opcodes=["ACQBULK"]),
        primitive("hopper.griddepcontrol.launch_dependents", "OTHER",
                  description=("griddepcontrol.launch_dependents: lets the grids that depend on this one be "
                               "scheduled once every CTA of this grid has issued it or exited"),
                  python_name="arch.griddepcontrol_launch_dependents",
                  ptx_template="griddepcontrol.launch_dependents;", has_side_effects=True, sass_opcodes=["PREEXIT"]),
    ]


# The (operation, type) groups of cp.reduce.async.bulk to a global destination, as ptxas 13.0 takes them (every
# other pair it refuses, e.g. "Incorrect type '.f32' for operation '.and'"): (group, operations, types, suffix).
BULK_REDUCE_GROUPS = (
    ("bitwise", ("and", "or", "xor"), ("b32", "b64"), ""),
    ("counter", ("inc", "dec"), ("u32",), ""),
    ("add", ("add",), ("u32", "s32", "u64", "f32", "f64"), ""),
    ("add_noftz", ("add",), ("f16", "bf16"), ".noftz"),
    ("minmax", ("min", "max"), ("u32", "s32", "u64", "s64", "f16", "bf16"), ""),
)


def other_primitives():
    out = []
    P = primitive
    out.append(P(
        "hopper.wgmma.make_smem_desc", "DESCRIPTOR",
        description=("the 64-bit wgmma shared-memory matrix descriptor of the tile at addr (a 32-bit shared address), "
                     "computed with integer ops by the hook make_smem_desc. Attrs: leading_byte_offset and "
                     "stride_byte_offset (bytes, multiples of 16, < 2^18; LBO is ignored by the hardware for "
                     "swizzled K-major layouts), swizzle (0 none, 32, 64 or 128 bytes), base_offset (0..7, for "
                     "swizzle patterns that do not start on a pattern boundary; default 0). Bits: [0,14) addr>>4 "
                     "(addr mod 2^18), [16,30) LBO>>4, [32,46) SBO>>4, [49,52) base offset, [62,64) swizzle "
                     "(0 none, 1 128B, 2 64B, 3 32B)"),
        python_name="warpgroup.make_smem_desc",
        operands=[operand("desc", "SCALAR", "OUT", register_type="b64"), operand("addr", "SMEM_ADDRESS", "IN")],
        attributes=[attribute("leading_byte_offset", default="16"), attribute("stride_byte_offset"),
                    attribute("swizzle", allowed=("0", "32", "64", "128"), default="0"),
                    attribute("base_offset", allowed=tuple(str(i) for i in range(8)), default="0")],
        lowering_hook="make_smem_desc", targets=TARGET))
    out.append(P("hopper.wgmma.fence", "FENCE",
                 description="wgmma.fence: orders register and shared-memory accesses before the next wgmma "
                             "(needed before the first wgmma and whenever its accumulators or A registers changed)",
                 python_name="warpgroup.fence", ptx_template="wgmma.fence.sync.aligned;", has_side_effects=True,
                 sass_opcodes=["WARPGROUP.ARRIVE"], targets=TARGET))
    out.append(P("hopper.wgmma.commit_group", "COMMIT",
                 description="wgmma.commit_group: closes a group of the wgmma issued so far (in SASS: the group's "
                             "last HGMMA carries gsb0; an empty group becomes a no-op HGMMA with gsb0)",
                 python_name="warpgroup.commit_group", ptx_template="wgmma.commit_group.sync.aligned;",
                 has_side_effects=True, sass_opcodes=["gsb0"], targets=TARGET))
    out.append(P("hopper.wgmma.wait_group", "WAIT",
                 description="wgmma.wait_group n: waits until at most n wgmma groups are pending",
                 python_name="warpgroup.wait_group", attributes=[attribute("n")],
                 ptx_template="wgmma.wait_group.sync.aligned {n};", has_side_effects=True,
                 sass_opcodes=["WARPGROUP.DEPBAR.LE"], targets=TARGET))
    for rt, cons in (("f32", "f"), ("b32", "r")):
        et = "f32" if rt == "f32" else "b32"
        out.append(P(
            f"hopper.wgmma.fence_operand.{rt}", "FENCE",
            description=("a compiler-only fence on one accumulator register (emits a PTX comment): keeps the "
                         "compiler from moving its reads and writes across wgmma issue and wait"),
            python_name=f"warpgroup.fence_operand_{rt}",
            operands=[operand("out", "REGISTERS", "OUT", element_type=et, values=1, registers=1, register_type=rt),
                      operand("in", "REGISTERS", "IN", element_type=et, values=1, registers=1, register_type=rt)],
            ptx_template="// wgmma operand $0 $1", constraints=f"={cons},0", has_side_effects=True, targets=TARGET))

    # mbarrier
    out.append(P("hopper.mbarrier.init", "BARRIER",
                 description="mbarrier.init: the 8-byte mbarrier at mbar expects count arrivals per phase",
                 python_name="arch.mbarrier_init",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("count", "SCALAR", "IN")],
                 ptx_template="mbarrier.init.shared::cta.b64 [$0], $1;", constraints="r,r", has_side_effects=True,
                 sass_opcodes=["SYNCS.EXCH.64"]))
    out.append(P("hopper.mbarrier.init_fence", "FENCE",
                 description="fence.mbarrier_init.release.cluster: makes mbarrier.init visible to the cluster (and "
                             "to TMA) before they use the barrier. No SASS of its own under ptxas 13.0 (mbarrier.init "
                             "already carries FENCE.VIEW.ASYNC.S)",
                 python_name="arch.mbarrier_init_fence", ptx_template="fence.mbarrier_init.release.cluster;",
                 has_side_effects=True))
    out.append(P("hopper.mbarrier.arrive", "ARRIVE",
                 description="mbarrier.arrive: one arrival on this CTA's mbarrier (release, CTA scope)",
                 python_name="arch.mbarrier_arrive", operands=[operand("mbar", "MBARRIER", "IN")],
                 ptx_template="mbarrier.arrive.shared::cta.b64 _, [$0];", constraints="r", has_side_effects=True,
                 sass_opcodes=["SYNCS.ARRIVE.TRANS64.A1T0"]))
    out.append(P("hopper.mbarrier.arrive.cluster", "ARRIVE",
                 description="mbarrier.arrive on the mbarrier at the same offset in the CTA of rank cta_id in the "
                             "cluster (release, CTA scope: a pipeline's consumer arrives once its reads of the "
                             "stage have completed, so the peer's TMA writes that the arrival permits cannot "
                             "overtake them; a cluster-scope release would cost a MEMBAR.ALL.GPU per arrival)",
                 python_name="arch.mbarrier_arrive_cluster",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("cta_id", "SCALAR", "IN")],
                 ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $1; "
                               "mbarrier.arrive.shared::cluster.b64 _, [ww_remote]; }"),
                 constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A1T0"]))
    out.append(P("hopper.mbarrier.arrive_expect_tx", "ARRIVE",
                 description="mbarrier.arrive.expect_tx: one arrival that also expects tx_count more transaction "
                             "bytes (e.g. of TMA loads) in this phase",
                 python_name="arch.mbarrier_arrive_and_expect_tx",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("tx_count", "SCALAR", "IN")],
                 ptx_template="mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", constraints="r,r",
                 has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"]))
    out.append(P("hopper.mbarrier.arrive_expect_tx.cluster", "ARRIVE",
                 description="mbarrier.arrive.expect_tx on the mbarrier at the same offset in the CTA of rank cta_id "
                             "in the cluster: an arrival there that also expects tx_count more bytes, sent ahead of "
                             "the st.async writes into that CTA that complete them (a tile scheduler's broadcast)",
                 python_name="arch.mbarrier_arrive_and_expect_tx_cluster",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("tx_count", "SCALAR", "IN"),
                           operand("cta_id", "SCALAR", "IN")],
                 ptx_template=("{ .reg .b32 ww_remote; mapa.shared::cluster.u32 ww_remote, $0, $2; "
                               "mbarrier.arrive.expect_tx.shared::cluster.b64 _, [ww_remote], $1; }"),
                 constraints="r,r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"]))
    out.append(P("hopper.mbarrier.expect_tx", "BARRIER",
                 description="mbarrier.expect_tx: expects tx_count more transaction bytes in the current phase, "
                             "without arriving",
                 python_name="arch.mbarrier_expect_tx",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("tx_count", "SCALAR", "IN")],
                 ptx_template="mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [$0], $1;", constraints="r,r",
                 has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED.A0TR"]))
    out.append(P("hopper.mbarrier.try_wait.parity", "WAIT",
                 description="mbarrier.try_wait.parity: true once the phase of parity phase (0 or 1) has completed; "
                             "may block for a time-limit first. Loop on it, or use hopper.mbarrier.wait.parity",
                 python_name="arch.mbarrier_try_wait",
                 operands=[operand("done", "PREDICATE", "OUT"), operand("mbar", "MBARRIER", "IN"),
                           operand("phase", "SCALAR", "IN")],
                 ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;", constraints="=b,r,r",
                 has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]))
    # The loop's try_wait carries a suspend-time hint (10 ms, the phase's completion wakes the thread first): ptxas
    # then parks a waiting warp in NANOSLEEP.SYNCS, woken by the barrier, where without it the warp re-issues the
    # try_wait in a loop. A warp-specialised kernel's producer waits on an empty stage for as long as the
    # consumers' epilogue lasts, on the schedulers those consumers issue from (CuTe DSL's and CUTLASS's waits carry
    # the same hint).
    # The loop's back-edge is a uniform branch (bra.uni), as in CuTe DSL's wait: the lanes of a warp that wait on
    # one barrier and phase get one answer from each try, so the warp leaves the loop together, and ptxas need not
    # keep the loop's exit as a point where the warp reconverges. In a kernel where that exit sat in a long-lived
    # region (dense_blockscaled_gemm_persistent_amax's epilogue before its register fixes) ptxas took 50 registers
    # instead of 57. It asks that every lane of a warp running the wait names the same barrier and phase, as every
    # pipeline's does; lanes that wait on barriers of their own loop on mbarrier_try_wait instead (a DSL loop,
    # whose branch the compiler keeps divergent).
    out.append(P("hopper.mbarrier.wait.parity", "WAIT",
                 description=("waits (a try_wait.parity loop in PTX) until the phase of parity phase has completed; "
                              "the lanes of a warp that run it together wait on the same barrier and phase (the loop "
                              "exits for the whole warp at once); lanes with barriers of their own loop on "
                              "mbarrier_try_wait"),
                 python_name="arch.mbarrier_wait",
                 operands=[operand("mbar", "MBARRIER", "IN"), operand("phase", "SCALAR", "IN")],
                 ptx_template=("{ .reg .pred ww_done; ww_wait: mbarrier.try_wait.parity.shared::cta.b64 ww_done, "
                               "[$0], $1, 10000000; @!ww_done bra.uni ww_wait; }"),
                 constraints="r,r", has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]))
    out.append(P("hopper.mbarrier.inval", "BARRIER",
                 description="mbarrier.inval: invalidates the mbarrier so that its memory can be reused",
                 python_name="arch.mbarrier_inval", operands=[operand("mbar", "MBARRIER", "IN")],
                 ptx_template="mbarrier.inval.shared::cta.b64 [$0];", constraints="r", has_side_effects=True,
                 sass_opcodes=["SYNCS.CCTL.IV"]))

    # proxy fences
    # SASS seen: FENCE.VIEW.ASYNC.S for the shared spaces and for the unqualified fence (with MEMBARs), .G for global.
    for suffix, what, sass in (("", "all state spaces", "FENCE.VIEW.ASYNC.S"),
                               (".shared::cta", "this CTA's shared memory", "FENCE.VIEW.ASYNC.S"),
                               (".shared::cluster", "the cluster's shared memory", "FENCE.VIEW.ASYNC.S"),
                               (".global", "global memory", "FENCE.VIEW.ASYNC.G")):
        name = "hopper.fence.proxy.async" + suffix.replace("::", "_")
        out.append(P(name, "FENCE",
                     description=f"fence.proxy.async{suffix}: orders generic-proxy accesses of {what} with async-proxy "
                                 "ones (TMA, wgmma), e.g. smem writes before a TMA store reads them",
                     python_name="arch.fence_proxy_async" + suffix.replace("::", "_").replace(".", "_"),
                     ptx_template=f"fence.proxy.async{suffix};", has_side_effects=True, sass_opcodes=[sass]))

    # clusters
    for name, ptx, pyn, sass in (
            ("hopper.cluster.arrive", "barrier.cluster.arrive.aligned;", "arch.cluster_arrive", "UCGABAR_ARV"),
            ("hopper.cluster.arrive.relaxed", "barrier.cluster.arrive.relaxed.aligned;", "arch.cluster_arrive_relaxed",
             "UCGABAR_ARV"),
            ("hopper.cluster.wait", "barrier.cluster.wait.aligned;", "arch.cluster_wait", "UCGABAR_WAIT")):
        out.append(P(name, "CLUSTER",
                     description=f"{ptx[:-1]}: every thread of the CTA executes it (aligned); arrive (release, or "
                                 "relaxed: no ordering) then wait (acquire) synchronises the cluster's CTAs",
                     python_name=pyn, ptx_template=ptx, has_side_effects=True, sass_opcodes=[sass]))
    xyz = attribute("dim", type_="string", allowed=("x", "y", "z"))
    # ptxas reads most of these from the launch's constant bank (LDC) or derives them from %ctaid, so only
    # %cluster_ctarank has a recognisable SASS operand (SR_CgaCtaId).
    for name, reg, pyn, what, has_dim in (
            ("hopper.cluster.ctaid", "cluster_ctaid", "arch.block_idx_in_cluster", "this CTA's index in its cluster",
             True),
            ("hopper.cluster.nctaid", "cluster_nctaid", "arch.cluster_dim", "the cluster's shape in CTAs", True),
            ("hopper.cluster.ctarank", "cluster_ctarank", "arch.block_rank_in_cluster",
             "this CTA's linear rank in its cluster", False),
            ("hopper.cluster.nctarank", "cluster_nctarank", "arch.cluster_size", "the number of CTAs of the cluster",
             False),
            ("hopper.cluster.clusterid", "clusterid", "arch.cluster_idx", "the cluster's index in the grid", True),
            ("hopper.cluster.nclusterid", "nclusterid", "arch.cluster_grid_dim", "the grid's shape in clusters", True)):
        sreg = f"%{reg}.{{dim}}" if has_dim else f"%{reg}"
        out.append(P(name, "CLUSTER", description=f"%{reg}{'.{x,y,z}' if has_dim else ''}: {what}",
                     python_name=pyn, operands=[operand("value", "SCALAR", "OUT")],
                     attributes=[xyz] if has_dim else [], ptx_template=f"mov.u32 $0, {sreg};", constraints="=r",
                     sass_opcodes=["SR_CgaCtaId"] if reg == "cluster_ctarank" else []))
    out.append(P("hopper.cluster.is_explicit", "CLUSTER",
                 description="%is_explicit_cluster: whether the launch named a cluster shape",
                 python_name="arch.is_explicit_cluster", operands=[operand("value", "PREDICATE", "OUT")],
                 ptx_template="mov.pred $0, %is_explicit_cluster;", constraints="=b"))
    out.append(P("hopper.cluster.mapa", "CLUSTER",
                 description="mapa.shared::cluster: the shared::cluster address of addr (a shared::cta address) in "
                             "the CTA of rank cta_id",
                 python_name="arch.mapa",
                 operands=[operand("remote", "SCALAR", "OUT"), operand("addr", "SMEM_ADDRESS", "IN"),
                           operand("cta_id", "SCALAR", "IN")],
                 ptx_template="mapa.shared::cluster.u32 $0, $1, $2;", constraints="=r,r,r", sass_opcodes=["PRMT"]))

    # elect, registers
    out.append(P("hopper.elect.sync", "ELECT",
                 description="elect.sync: true in exactly one active lane of membermask (the lowest)",
                 python_name="arch.elect_one", operands=[operand("elected", "PREDICATE", "OUT")],
                 attributes=[attribute("membermask", default="0xffffffff")],
                 ptx_template="{ .reg .b32 ww_lane; elect.sync ww_lane|$0, {membermask}; }", constraints="=b",
                 has_side_effects=True, sass_opcodes=["ELECT"]))
    regs_allowed = tuple(str(n) for n in range(24, 257, 8))
    # ptxas emits USETMAXREG only for a kernel whose register count at entry it knows (launch bounds: maxntid and
    # minctasm, or maxnreg); nvJitLink drops the instruction (C7504, "to maintain compatibility across compilation
    # units"): cubin_tool "ptxas" makes the core assemble a module that uses them with ptxas.
    for d, pyn in (("inc", "arch.setmaxregister_increase"), ("dec", "arch.setmaxregister_decrease")):
        out.append(P(f"hopper.setmaxnreg.{d}", "REGISTER_CONTROL",
                     description=f"setmaxnreg.{d}: every warp of the warpgroup {'raises' if d == 'inc' else 'lowers'} "
                                 "its per-thread register budget to n (24..256, multiple of 8). Takes effect only "
                                 "in a kernel with launch bounds (maxntid and minctasm 1, or maxnreg); a kernel "
                                 "that uses it is assembled with ptxas, as nvJitLink drops the instruction",
                     python_name=pyn, attributes=[attribute("n", allowed=regs_allowed)],
                     ptx_template=f"setmaxnreg.{d}.sync.aligned.u32 {{n}};", has_side_effects=True,
                     sass_opcodes=["USETMAXREG.TRY_ALLOC" if d == "inc" else "USETMAXREG.DEALLOC"], cubin_tool="ptxas",
                     targets=TARGET))
    return out


def experimental_tma_primitives():
    """cutlass.experimental.primitives' tensor-map edits (tensormap.replace, sm_90a): a field of the 128-byte tensor
    map at addr (generic, global, or in this CTA's shared memory) set to new_value. The tensor-copy primitives themselves
    are the TMA entries above, which the backend's Python (tma_primitives.py) selects; it adapts CuTe DSL's
    signature (TensormapField, ord) onto these."""
    out = []
    # field -> (value type, takes an ordinal): .field1 (whole map) and .field2 (one dimension, ord an immediate)
    fields = {"global_address": ("b64", False), "rank": ("b32", False), "box_dim": ("b32", True),
              "global_dim": ("b32", True), "global_stride": ("b64", True), "element_stride": ("b32", True)}
    for space, role, acons in (("generic", "GMEM_ADDRESS", "l"), ("global", "GMEM_ADDRESS", "l"),
                               ("shared::cta", "SMEM_ADDRESS", "r")):
        ss = "" if space == "generic" else "." + space
        for field, (ty, ordinal) in fields.items():
            where = "[$0], {ord}, $1" if ordinal else "[$0], $1"
            attrs = [attribute("ord", allowed=range(5), default=0)] if ordinal else []
            out.append(primitive(
                f"hopper.tensormap.replace.{field}.{space.replace('::', '_')}", "OTHER",
                description=(f"tensormap.replace.tile.{field}: sets the {field.replace('_', ' ')}"
                             + (" of dimension ord (0..4, innermost first)" if ordinal else "")
                             + f" of the tensor map at addr ({space}) to new_value; the map is used by TMA after a "
                             "fence.proxy.tensormap::generic release/acquire"),
                python_name="tensormap.replace", python_params={"field": field, "space": space},
                operands=[operand("addr", role, "IN"), operand("new_value", "SCALAR", "IN", register_type=ty)],
                attributes=attrs,
                ptx_template=f"tensormap.replace.tile.{field}{ss}.b1024.{ty} {where};",
                constraints=f"{acons},{'l' if ty == 'b64' else 'r'}", has_side_effects=True,
                sass_opcodes=[], targets=TARGET))
    return out


def experimental_sync_primitives():
    """cutlass.experimental.primitives (python names primitives.*) that are sm_90 instructions and that no other
    entry already is: mbarrier arrivals that return their state or reach another CTA's barrier, waits with a
    suspend-time hint or on a state, non-tensor bulk copies, red on another CTA's shared memory (and 16-bit bf16
    red). The backend's Python adapts CuTe DSL's signatures (enumerations, pointers) onto them."""
    P = primitive
    mbar, phase = operand("mbar", "MBARRIER", "IN"), operand("phase", "SCALAR", "IN")
    done = operand("done", "PREDICATE", "OUT")
    limit = operand("time_limit", "SCALAR", "IN")
    scope = attribute("scope", type_="string", allowed=("cta", "cluster"), default="cta")
    # relaxed (PTX 8.6): an arrival that orders nothing, e.g. after a fence.release.sync_restrict of its own
    sem = attribute("sem", type_="string", allowed=("release", "relaxed"), default="release")
    out = [
        P("hopper.mbarrier.arrive.state", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cta: one arrival on this CTA's mbarrier; "
                      "returns the barrier's state before it (a token for mbarrier.try_wait)",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cta"},
          operands=[operand("state", "SCALAR", "OUT", register_type="b64"), mbar], attributes=[sem, scope],
          ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cta.b64 $0, [$1];", constraints="=l,r",
          has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"]),
        P("hopper.mbarrier.arrive.shared_cluster", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cluster: one arrival on the mbarrier at a "
                      "shared::cluster address (another CTA's, from mapa); no state is returned",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cluster"},
          operands=[mbar], attributes=[sem, scope],
          ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cluster.b64 _, [$0];", constraints="r",
          has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"]),
        P("hopper.mbarrier.arrive.state.count", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cta with a count: count arrivals on this CTA's "
                      "mbarrier at once; returns the barrier's state before them",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cta"},
          operands=[operand("state", "SCALAR", "OUT", register_type="b64"), mbar, operand("count", "SCALAR", "IN")],
          attributes=[sem, scope], ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cta.b64 $0, [$1], $2;",
          constraints="=l,r,r", has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64"]),
        P("hopper.mbarrier.arrive.shared_cluster.count", "ARRIVE",
          description="mbarrier.arrive.{release,relaxed}.{cta,cluster}.shared::cluster with a count: count arrivals on the "
                      "mbarrier at a shared::cluster address (another CTA's, from mapa)",
          python_name="primitives.mbarrier_arrive", python_params={"space": "shared::cluster"},
          operands=[mbar, operand("count", "SCALAR", "IN")], attributes=[sem, scope],
          ptx_template="mbarrier.arrive.{sem}.{scope}.shared::cluster.b64 _, [$0], $1;", constraints="r,r",
          has_side_effects=True, sass_opcodes=["SYNCS.ARRIVE.TRANS64.RED"]),
        P("hopper.mbarrier.try_wait.parity.hint", "WAIT",
          description="mbarrier.try_wait.parity with a suspend-time hint: true once the phase of parity phase has "
                      "completed; the thread may sleep up to time_limit nanoseconds first",
          python_name="primitives.mbarrier_try_wait_parity", operands=[done, mbar, phase, limit],
          ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2, $3;", constraints="=b,r,r,r",
          has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]),
        P("hopper.mbarrier.try_wait.parity.plain", "WAIT",
          description="mbarrier.try_wait.parity: true once the phase of parity phase has completed (the thread "
                      "may block for a system-dependent time first)",
          python_name="primitives.mbarrier_try_wait_parity", operands=[done, mbar, phase],
          ptx_template="mbarrier.try_wait.parity.shared::cta.b64 $0, [$1], $2;", constraints="=b,r,r",
          has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]),
        P("hopper.mbarrier.try_wait.state.hint", "WAIT",
          description="mbarrier.try_wait on a state token (from an arrival): true once that phase has completed; "
                      "the thread may sleep up to time_limit nanoseconds first",
          python_name="primitives.mbarrier_try_wait_timelimit",
          operands=[done, mbar, operand("state", "SCALAR", "IN", register_type="b64"), limit],
          ptx_template="mbarrier.try_wait.shared::cta.b64 $0, [$1], $2, $3;", constraints="=b,r,l,r",
          has_side_effects=True, sass_opcodes=["SYNCS.PHASECHK.TRANS64.TRYWAIT"]),
        P("hopper.bulk.shared_cluster.global", "OTHER",
          description="cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes: size bytes (a multiple "
                      "of 16, 16-byte aligned addresses) from global src to shared dst, completing them on mbar",
          python_name="primitives.cp_async_bulk_shared_cluster_global",
          operands=[operand("dst", "SMEM_ADDRESS", "IN"), operand("src", "GMEM_ADDRESS", "IN"), mbar,
                    operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $3, [$2];",
          constraints="r,l,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.G"]),
        P("hopper.bulk.global.shared_cta", "OTHER",
          description="cp.async.bulk.global.shared::cta.bulk_group: size bytes (a multiple of 16) from shared src "
                      "to global dst, completing with this thread's bulk groups",
          python_name="primitives.cp_async_bulk_global_shared_cta",
          operands=[operand("dst", "GMEM_ADDRESS", "IN"), operand("src", "SMEM_ADDRESS", "IN"),
                    operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;", constraints="l,r,r",
          has_side_effects=True, sass_opcodes=["UBLKCP.G.S"]),
        P("hopper.bulk.shared_cluster.shared_cta", "OTHER",
          description="cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes: size bytes from this "
                      "CTA's shared src to dst in a CTA of the cluster, completing them on mbar (in dst's CTA)",
          python_name="primitives.cp_async_bulk_shared_cluster_shared_cta",
          operands=[operand("dst", "SMEM_ADDRESS", "IN"), operand("src", "SMEM_ADDRESS", "IN"), mbar,
                    operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [$0], [$1], $3, [$2];",
          constraints="r,r,r,r", has_side_effects=True, sass_opcodes=["UBLKCP.S.S"]),
        P("hopper.bulk.prefetch", "OTHER",
          description="cp.async.bulk.prefetch.L2.global: brings size bytes (a multiple of 16) at src into L2",
          python_name="primitives.cp_async_bulk_prefetch",
          operands=[operand("src", "GMEM_ADDRESS", "IN"), operand("size", "SCALAR", "IN")],
          ptx_template="cp.async.bulk.prefetch.L2.global [$0], $1;", constraints="l,r", has_side_effects=True,
          sass_opcodes=["UBLKPF"]),
    ]
    # cp.reduce.async.bulk of a byte range (no tensor map): the (operation, type) pairs ptxas 13.0 takes for a global
    # destination, one entry a group of them (the wrapper in python/primitives.py picks the group and names the
    # pairs when a program asks for another); f16/bf16 adds are .noftz only. Each with and without an L2 cache hint.
    for group, ops, types, noftz in BULK_REDUCE_GROUPS:
        for hint in (False, True):
            h = ".L2::cache_hint" if hint else ""
            out.append(P(
                f"hopper.bulk_reduce.global.shared_cta.{group}" + (".hint" if hint else ""), "OTHER",
                description=(f"cp.reduce.async.bulk.global.shared::cta.bulk_group{h}.{{op}}{noftz}.{{type}}: "
                             "reduces size bytes (a multiple of 16, 16-byte aligned addresses) of shared src into "
                             "global dst element by element, completing with this thread's bulk groups"
                             + (", with the L2 cache policy in hint" if hint else "")),
                python_name="primitives.cp_reduce_async_bulk_global_shared_cta",
                python_params={"group": group, "hint": str(hint)},
                operands=[operand("dst", "GMEM_ADDRESS", "IN"), operand("src", "SMEM_ADDRESS", "IN"),
                          operand("size", "SCALAR", "IN")]
                + ([operand("hint", "SCALAR", "IN", register_type="b64")] if hint else []),
                attributes=[attribute("op", type_="string", allowed=ops, default=ops[0]),
                            attribute("type", type_="string", allowed=types, default=types[0])],
                ptx_template=(f"cp.reduce.async.bulk.global.shared::cta.bulk_group{h}.{{op}}{noftz}.{{type}} "
                              "[$0], [$1], $2" + (", $3;" if hint else ";")),
                constraints="l,r,r" + (",l" if hint else ""), has_side_effects=True,
                sass_opcodes=["UBLKRED.G.S"]))
    # fence.sync_restrict (PTX 8.6, sm_90 on): release orders this thread's shared::cta writes, acquire makes
    # shared::cluster ones visible, both at cluster scope; cheaper than a full fence.acq_rel.cluster where only a
    # peer CTA's mbarrier arrival has to order shared memory. SASS seen (ptxas 13.0): the acquire emits none.
    for order, space, sass in (("release", "shared::cta", ["MEMBAR.ALL.CTA", "FENCE.VIEW.ASYNC.S"]),
                               ("acquire", "shared::cluster", [])):
        out.append(P(f"hopper.fence.sync_restrict.{order}", "FENCE",
                     description=(f"fence.{order}.sync_restrict::{space}.cluster: a fence of {order} semantics at cluster scope "
                                  f"restricted to the {space} state space"),
                     python_name="primitives.fence_sync_restrict", python_params={"order": order},
                     ptx_template=f"fence.{order}.sync_restrict::{space}.cluster;", has_side_effects=True,
                     sass_opcodes=sass))
    # red: on another CTA's shared memory (cluster scope), and bf16 adds (sm_90) everywhere. SASS seen (ptxas 13.0):
    # a generic ATOM for shared::cluster, and a compare-and-swap loop for the scalar 16-bit float adds.
    def red_sass(space, bits):
        if bits == 16:
            return "CAS"
        return {"global": "RED", "shared::cta": "ATOMS", "shared::cluster": "ATOM"}[space]

    sem = attribute("sem", type_="string", allowed=("relaxed", "release"), default="relaxed")
    red_scope = attribute("scope", type_="string", allowed=("cluster", "cta", "gpu", "sys"), default="cluster")
    widths = ((32, "b32", "r", ("add", "min", "max", "and", "or", "xor", "inc", "dec"), ("u32", "s32", "b32", "f32")),
              (64, "b64", "l", ("add", "min", "max", "and", "or", "xor"), ("u64", "s64", "b64", "f64")),
              (16, "b16", "h", ("add",), ("f16", "bf16")))
    for space, role, acons in (("shared::cluster", "SMEM_ADDRESS", "r"), ("global", "GMEM_ADDRESS", "l"),
                               ("shared::cta", "SMEM_ADDRESS", "r")):
        for bits, rt, vcons, ops, types in widths:
            if space != "shared::cluster" and bits != 16:
                continue  # Ampere's entries
            noftz = ".noftz" if bits == 16 else ""
            out.append(P(
                f"hopper.red.{space.replace('::', '_')}.b{bits}", "OTHER",
                description=f"red.{{sem}}.{{scope}}.{space}.{{op}}{noftz}.{{type}}: an atomic reduction of value into "
                            f"the {bits}-bit word at addr, without a result",
                python_name="primitives.red", python_params={"space": space, "bits": str(bits)},
                operands=[operand("addr", role, "IN"), operand("value", "SCALAR", "IN", register_type=rt)],
                attributes=[attribute("op", type_="string", allowed=ops, default="add"),
                            attribute("type", type_="string", allowed=types, default=types[0]), sem, red_scope],
                ptx_template=f"red.{{sem}}.{{scope}}.{space}.{{op}}{noftz}.{{type}} [$0], $1;",
                constraints=f"{acons},{vcons}", has_side_effects=True,
                sass_opcodes=[red_sass(space, bits)]))
    # the tensormap proxy: a tensor map written through generic stores (tensormap.replace, st.global) is released
    # to it by the writer and acquired from it (the 128 bytes at its address) before TMA uses it
    fscope = attribute("scope", type_="string", allowed=("gpu", "cta", "cluster", "sys"), default="gpu")
    out.append(P("hopper.fence.proxy.tensormap.release", "FENCE",
                 description="fence.proxy.tensormap::generic.release: orders this thread's generic-proxy writes of a "
                             "tensor map before later tensormap-proxy reads of it, at scope",
                 python_name="primitives.fence_proxy_release", attributes=[fscope],
                 ptx_template="fence.proxy.tensormap::generic.release.{scope};", has_side_effects=True,
                 sass_opcodes=["MEMBAR.ALL.GPU"]))
    out.append(P("hopper.fence.proxy.tensormap.acquire", "FENCE",
                 description="fence.proxy.tensormap::generic.acquire: makes the 128-byte tensor map at addr (generic "
                             "address), released by its writer, visible to this thread's tensormap-proxy reads",
                 python_name="primitives.fence_proxy_acquire", operands=[operand("addr", "GMEM_ADDRESS", "IN")],
                 attributes=[fscope], ptx_template="fence.proxy.tensormap::generic.acquire.{scope} [$0], 128;",
                 constraints="l", has_side_effects=True, sass_opcodes=["CCTL"]))
    # stmatrix of 32-bit words (CuTe DSL's primitives take the packed words, not the atoms' b16 values)
    for x in (1, 2, 4):
        for layout, trans in (("row", ""), ("col", ".trans")):
            out.append(P(
                f"hopper.stmatrix.m8n8.x{x}{trans}.words", "OTHER",
                description=f"stmatrix.m8n8.x{x}{trans}.b16: {x} 8x8 16-bit matrices to shared memory"
                            + (", transposed" if trans else "") + ", from one packed 32-bit word a matrix a lane",
                python_name="primitives.stmatrix",
                python_params={"shape": "m8n8", "num": str(x), "layout": layout, "format": "b16"},
                operands=[operand("addr", "SMEM_ADDRESS", "IN"),
                          operand("words", "REGISTERS", "IN", element_type="b32", values=x, registers=x,
                                  register_type="b32")],
                ptx_template=f"stmatrix.sync.aligned.m8n8.x{x}{trans}.shared.b16 [$0], {{{regs(1, x)}}};",
                constraints=",".join(["r"] * (x + 1)), has_side_effects=True, sass_opcodes=["STSM"]))
    return out


HEADER = format_header(
    comment="""\
# GENERATED by backends/hopper/generate_manifest.py: edit the script, run
#   python3 backends/hopper/generate_manifest.py
# and commit both. The plugin embeds this file.
#
# The Hopper backend (sm_90a; its TMA, mbarrier, cluster, fence, elect, stmatrix and griddepcontrol entries also
# for the portable sm_90 target, which later generations' devices can use). Thread-value layouts are in CuTe notation; MMA layouts map (thread, value) to the
# column-major index of (m,k), (n,k) or (m,n); copy layouts map (thread, value) to the bit (layout_unit_bits: 1).
# Ids: hopper.wgmma.m64n<N>k<K>.<acc>.<a>.<b>.<ss|rs> (instances of the hopper.wgmma.* families), hopper.stmatrix.*, hopper.tma.*, hopper.mbarrier.*,
# hopper.fence.*, hopper.cluster.*, hopper.elect.sync, hopper.setmaxnreg.*.""",
    name="hopper", version="0.1.0",
    description="NVIDIA Hopper (sm_90a): wgmma, TMA, mbarrier, clusters, setmaxnreg, stmatrix, proxy fences",
    python_modules=("warp", "warpgroup", "cpasync"),
    module_map={"warpweave.utils.hopper_helpers": "helpers", "warpweave.cute.arch.smem": "dsmem",
                "warpweave.utils.distributed": "distributed"},
    on_load=("adapters",),
    conformance_probes={"hopper_wgmma": "conformance.wgmma", "hopper_tma": "conformance.tma",
                        "hopper_stmatrix": "conformance.stmatrix"},
) + "\n" + format_target(dict(name=TARGET, compute_capability=90, arch_specific=True, llvm_cpu="sm_90a",
                                ptx_features="+ptx86", jit_arch="sm_90a", smem_capacity_bytes=232448,
                                max_threads_per_block=1024, max_cluster_size=16)) + "\n\n" \
    + format_target(dict(name=PORTABLE, compute_capability=90, llvm_cpu="sm_90", ptx_features="+ptx86",
                         jit_arch="sm_90", smem_capacity_bytes=232448, max_threads_per_block=1024,
                         max_cluster_size=8)) + "\n"


def dsmem_primitives():
    """Stores into another CTA's shared memory (distributed shared memory) that complete transaction bytes on an
    mbarrier there: st.async, what cpasync.CopyDsmemStoreOp copies with. Both addresses are shared::cluster
    addresses (arch.mapa of a shared::cta one)."""
    out = []
    for bits, reg in ((32, "r"), (64, "l")):
        out.append(primitive(
            f"hopper.st_async.b{bits}", "OTHER",
            description=(f"st.async.shared::cluster.mbarrier::complete_tx::bytes.b{bits}: stores value at dst (a "
                         "shared::cluster address, possibly another CTA's) and completes its bytes on the mbarrier "
                         "at mbar (a shared::cluster address in the same CTA as dst)"),
            python_name=f"cpasync.dsmem_store_b{bits}",
            operands=[operand("dst", "SCALAR", "IN"), operand("value", "SCALAR", "IN"), operand("mbar", "SCALAR", "IN")],
            ptx_template=f"st.async.shared::cluster.mbarrier::complete_tx::bytes.b{bits} [$0], $1, [$2];",
            constraints=f"r,{reg},r", has_side_effects=True, sass_opcodes=["STAS" if bits == 32 else "STAS.64"]))
    return out


def red_vector_primitives():
    """Vector reductions into global memory without a result (sm_90 PTX): n f32 added to n consecutive words in
    one instruction, each word's add atomic on its own (not the n as a whole), what split-K's partial sums use."""
    out = []
    for n in (2, 4):
        out.append(primitive(
            f"hopper.red.global.add.v{n}.f32", "OTHER",
            description=(f"red.{{sem}}.{{scope}}.global.add.v{n}.f32: adds the {n} f32 of value to the {n} words at "
                         f"addr ({4 * n}-byte aligned), each atomically, without a result"),
            python_name="primitives.red_vector", python_params={"width": str(n)},
            operands=[operand("addr", "GMEM_ADDRESS", "IN"),
                      operand("value", "REGISTERS", "IN", element_type="f32", values=n, registers=n,
                              register_type="f32")],
            attributes=[attribute("sem", type_="string", allowed=("relaxed", "release"), default="relaxed"),
                        attribute("scope", type_="string", allowed=("cta", "cluster", "gpu", "sys"), default="gpu")],
            ptx_template=f"red.{{sem}}.{{scope}}.global.add.v{n}.f32 [$0], {{{regs(1, n)}}};",
            constraints="l," + ",".join(["f"] * n), has_side_effects=True, sass_opcodes=["REDG.E.ADD.F32x" + str(n)]))
    return out


# multimem's packed element types: PTX type -> (the accumulator the reduction may use, DSL element type)
MULTIMEM_TYPES = {"f32": ("", "Float32"), "f16x2": (".acc::f32", "Float16"), "bf16x2": (".acc::f32", "BFloat16"),
                  "u32": ("", "Uint32"), "s32": ("", "Int32")}


def _multimem_order(ordered: str):
    """A multicast access's sem (relaxed, or `ordered`: acquire for loads, release for writes) and scope (system
    by default: the other GPUs read and write the memory)."""
    return [attribute("sem", type_="string", allowed=("relaxed", ordered), default="relaxed"),
            attribute("scope", type_="string", allowed=("cta", "cluster", "gpu", "sys"), default="sys")]


def multimem_primitives():
    """Multicast memory (NVLink SHARP): one access through a multicast address reaches the memory of every GPU
    that mapped it. ld_reduce reads the reduction over all of them, st writes to all of them, red reduces into all
    of them, each over 1, 2 or 4 32-bit words (the packed pairs of 16-bit floats are reduced in f32). The
    utils.distributed functions of this backend's Python are made of them."""
    out = []
    for ptx_t, (acc, dsl_t) in MULTIMEM_TYPES.items():
        for n in (1, 2, 4):
            if ptx_t in ("u32", "s32") and n > 1:
                continue    # PTX's integer ld_reduce is scalar
            vec = f".v{n}" if n > 1 else ""
            dst = "{" + regs(0, n) + "}" if n > 1 else "$0"
            src = "{" + regs(1, n) + "}" if n > 1 else "$1"
            words = "word" if n == 1 else f"{n} words"
            regs_ = dict(element_type="b32", values=n, registers=n, register_type="b32")
            addr = operand("addr", "GMEM_ADDRESS", "IN")
            for load in (True, False):
                if load:
                    ident, template = f"ld_reduce.add{vec}", f"ld_reduce.{{sem}}.{{scope}}.global.add{acc}{vec}"
                    what = f"the sum over every GPU of the multicast address addr of its {words} of {ptx_t} there"
                    operands = [operand("d", "REGISTERS", "OUT", **regs_), addr]
                    template = f"multimem.{template}.{ptx_t} {dst}, [${n}];"
                    constraints = ",".join(["=r"] * n) + ",l"
                else:
                    ident = f"st{vec}"
                    what = (f"stores value ({words}) at the multicast address addr, in the memory of every GPU that "
                            "mapped it")
                    operands = [addr, operand("value", "REGISTERS", "IN", **regs_)]
                    template = f"multimem.st.{{sem}}.{{scope}}.global{vec}.{ptx_t} [$0], {src};"
                    constraints = "l," + ",".join(["r"] * n)
                out.append(primitive(
                    f"hopper.multimem.{ident}.{ptx_t}", "OTHER",
                    description=template.split(" ")[0] + ": " + what,
                    python_name="distributed.multimem_ld_reduce" if load else "distributed.multimem_st",
                    python_params={"type": ptx_t, "words": str(n)}, operands=operands,
                    attributes=_multimem_order("acquire" if load else "release"), ptx_template=template,
                    constraints=constraints, has_side_effects=True, sass_opcodes=["LDGMC" if load else "STG"]))
    out.append(primitive(
        "hopper.multimem.red.add.u32", "OTHER",
        description=("multimem.red.{sem}.{scope}.global.add.u32: adds value to the word at the multicast address "
                     "addr in the memory of every GPU that mapped it, atomically in each, without a result"),
        python_name="distributed.multimem_red",
        operands=[operand("addr", "GMEM_ADDRESS", "IN"), operand("value", "SCALAR", "IN", register_type="b32")],
        attributes=_multimem_order("release"),
        ptx_template="multimem.red.{sem}.{scope}.global.add.u32 [$0], $1;", constraints="l,r",
        has_side_effects=True, sass_opcodes=["REDG"]))
    return out


def render() -> str:
    blocks = stmatrix_atoms() + [b for b in tma_entries()] + other_primitives() \
        + grid_dependency_primitives() + dsmem_primitives() + red_vector_primitives() + experimental_sync_primitives() \
        + multimem_primitives() \
        + experimental_tma_primitives()
    # atoms first, then primitives, each group in generation order
    atoms = [b for b in blocks if b.startswith("atoms {")]
    prims = [b for b in blocks if b.startswith("primitives {")]
    return (HEADER + "\n" + element_types() + "\n\n" + "\n\n".join(wgmma_families()) + "\n\n" +
            "\n\n".join(atoms + prims) + "\n")


def main(argv) -> int:
    return write_or_check(OUT, render(), argv, "backends/hopper/generate_manifest.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
