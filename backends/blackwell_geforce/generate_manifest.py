#!/usr/bin/env python3
"""Writes blackwell_geforce.textproto, the manifest of the consumer Blackwell backend (sm_120a, sm_121a).

The committed textproto is what the plugin embeds: edit the tables here, run

    python3 backends/blackwell_geforce/generate_manifest.py            # rewrites the textproto next to this script
    python3 backends/blackwell_geforce/generate_manifest.py --check    # exits 1 if the committed file is stale

and commit both. Plain Python 3, no dependencies.

What this generation is, and so what the manifest holds:
- Consumer Blackwell has neither tcgen05 (no tensor memory, no UMMA) nor wgmma: its tensor cores are driven by the
  warp-level mma.sync of Ampere, extended with fp6/fp4 inputs and with block scaling. Everything of Ampere's
  manifest (mma.sync f16/bf16/tf32/int8 and Ada's fp8 shapes, ldmatrix, cp.async, named barriers, shuffles) has
  non-arch-specific targets (sm_80, sm_89) and so applies on compute capability 12.x as it is: the manifest
  declares `extends: "ampere"` and repeats none of it.
- TMA, mbarrier (transaction counts, try_wait), bulk groups, proxy fences, clusters, elect.sync, stmatrix and
  griddepcontrol are sm_90 PTX, not arch-specific: Hopper's manifest offers them for its portable sm_90 target
  too, which a 12.x device can use, so the manifest declares `extends: "hopper"` as well (Hopper's host hook
  encodes the tensor maps, its Python package makes the TMA atoms) and repeats none of it. What stays Hopper's
  alone (wgmma, setmaxnreg: sm_90a-only) a 12.x device cannot use, as it should not.
- What is new, all arch-specific (ptxas refuses it for plain sm_120: "Feature '.kind::f8f6f4' not supported"),
  four families of warp-level mma.sync, row.col, over 32 threads:
    kind::f8f6f4      m16n8k32, A and B each of e4m3 e5m2 e3m2 e2m3 e2m1, f32 or f16 accumulate
    kind::mxf8f6f4    m16n8k32 with .block_scale.scale_vec::1X, ue8m0 scales (one per 32 values of K)
    kind::mxf4        m16n8k64, e2m1, .block_scale.scale_vec::2X, ue8m0 scales
    kind::mxf4nvf4    m16n8k64, e2m1, .block_scale with scale_vec::2X and ue8m0 (mxf4) or scale_vec::4X and
                      ue4m3 (nvf4): ptxas refuses the other two pairings
- Register fragments: with kind::f8f6f4 and kind::mxf8f6f4 every fp6 and fp4 value sits in an 8-bit container (four
  values in a b32 register, as fp8's), so their layouts are fp8's m16n8k32 ones; the manifest names those container
  types e3m2_b8, e2m3_b8 and e2m1_b8 (8 bits each). kind::mxf4 and kind::mxf4nvf4 pack eight e2m1 values into a b32
  register (m16n8k64: 32 values of A and 16 of B per thread).
- Scale factors: one b32 register per operand (scale_a, scale_b), passed as a SCALAR operand; the instruction's
  immediate selectors {byte_id, thread_id} say which byte of it and which thread of each thread group supply the
  factors. ptxas 13.0 takes thread_id_a 0..1 and thread_id_b 0..3; byte_id 0..3 with scale_vec::1X, 0 or 2 with
  2X, 0 with 4X. They are attributes (defaults 0), substituted at emission.
- sass_opcodes are what nvdisasm shows for ptxas 13.0's sm_120a and sm_121a code (QMMA for the 8-bit containers,
  QMMA.SF / OMMA.SF for the block-scaled kinds, the scale type as .E8 or .UE4M3.4X).
- Cluster launch control (clusterlaunchcontrol.try_cancel, its multicast form and query_cancel): datacenter
  Blackwell's PTX, which ptxas 13.0 assembles for sm_120a and sm_121a too (UGETNEXTWORKID, .BROADCAST when
  multicast; plain sm_120 refuses the multicast form), so its generator's entries are named here again.
- Shared memory: 99 KiB per block (101376 bytes, the opt-in limit of compute capability 12.x), against 227 KiB on
  sm_90a and sm_100a.
"""
from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The writer the backends' generators share lives in backends/, beside this backend's folder; this script runs on
# its own (no package holds it), so its parent folder is put on the path.
sys.path.insert(0, os.path.dirname(HERE))
from manifest_builder import (  # noqa: E402
    attribute, entry, family, format_element_types, format_entry, format_header, format_target, operand as op,
    parameter as param, write_or_check,
)
# The byte ldmatrix forms (m8n16 with unpacking, m16n16 transposed) are datacenter Blackwell's PTX, which ptxas takes
# for this generation's arch-specific targets too; its generator's table is the one source of them.
_spec = importlib.util.spec_from_file_location(
    "blackwell_generate_manifest", os.path.join(os.path.dirname(HERE), "blackwell", "generate_manifest.py"))
_blackwell = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_blackwell)
byte_ldmatrix_atoms = _blackwell.byte_ldmatrix_atoms
clc_primitives = _blackwell.clc_primitives

OUT = os.path.join(HERE, "blackwell_geforce.textproto")
# Both chips of the generation take the same instructions and produce the same SASS; each is its own
# arch-specific target, so a device of either gets code built for it.
TARGETS = ("sm_120a", "sm_121a")
# The copy engine of compute capability 12.x unpacks 4- and 6-bit values into byte containers as 10.x's does (the
# tensor maps 16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B); its block-scaled mma.sync reads fp6/fp4 so.
TMA_UNPACKING = ("16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")

# (name, bits, DSL type): the element types operands name. The _b8 types are fp6/fp4 values in 8-bit containers.
ELEMENT_TYPES = [
    ("f16", 16, "Float16"), ("f32", 32, "Float32"),
    ("e4m3", 8, "Float8E4M3FN"), ("e5m2", 8, "Float8E5M2"),
    ("e3m2_b8", 8, "Float6E3M2FN"), ("e2m3_b8", 8, "Float6E2M3FN"), ("e2m1_b8", 8, "Float4E2M1FN"),
    ("e2m1", 4, "Float4E2M1FN"),
    ("ue8m0", 8, "Float8E8M0FNU"), ("ue4m3", 8, "Float8E4M3FN"),
    ("b8", 8, ""), ("b32", 32, ""),
]
IR_TYPES = {"f16": "f16", "f32": "f32"}

F8F6F4 = ["e4m3", "e5m2", "e3m2_b8", "e2m3_b8", "e2m1_b8"]

# Thread-value layouts onto the column-major (m,k), (n,k) and (m,n) tiles, in units of the element type. Thread t
# is lane t: its group t/4 picks the row of A and C and the column of B, its place in the group t%4 the K columns.
# 8-bit values (fp8, and fp6/fp4 in containers), m16n8k32: A's values 0-3 are 4 K-consecutive values of row g,
# 4-7 of row g+8, 8-15 the same 16 K further on; B's 0-3 and 4-7 are 4 K-consecutive values 16 apart.
LAYOUT_A_K32 = "((4,8),(4,2,2)):((64,1),(16,8,256))"
LAYOUT_B_K32 = "((4,8),(4,2)):((32,1),(8,128))"
# Packed e2m1, m16n8k64: the same pattern with 8 K-consecutive values a register and a 32-K step.
LAYOUT_A_K64 = "((4,8),(8,2,2)):((128,1),(16,8,512))"
LAYOUT_B_K64 = "((4,8),(8,2)):((64,1),(8,256))"
# C and D: values 0-1 of row g, 2-3 of row g+8, two N-consecutive columns 2*(t%4).
LAYOUT_C = "((4,8),(2,2)):((32,1),(16,8))"

# The PTX spelling of an operand type: a container type is spelled as the value's type.
PTX_A, PTX_B = "replace(a, '_b8', '')", "replace(b, '_b8', '')"
# Said in the description of an instance with such an input.
CONTAINER_NOTE = "{a != " + PTX_A + " || b != " + PTX_B + " ? '; fp6/fp4 values each in an 8-bit container' : ''}"


def accumulator(name, direction, f16_allowed):
    """C or D: four f32 registers, or (f16) four values packed into two b32 registers."""
    if not f16_allowed:
        return op(name, "REGISTERS", direction, element_type="f32", values=4, registers=4, register_type="f32",
                  layout_tv=LAYOUT_C)
    return op(name, "REGISTERS", direction, element_type="{acc}", values=4, register_type="{acc == 'f32' ? 'f32' : 'b32'}",
              layout_tv=LAYOUT_C, registers_expr="dregs")


# The operand kind of the block-scaled MMAs' A and B (python/adapters.py): registers whose fragment takes the element
# type of the partition it is made from, as CuTe DSL's block-scaled warp MMAs make theirs. Their mixed FP4 x FP8
# GEMMs hold the 4-bit operand unpacked in bytes (an Int8 tensor) and move each value within its byte before the
# MMA; a fragment of the atom's 4-bit type would instead convert the bytes to FP4 numbers.
PARTITION_TYPED_KIND = "registers_of_partition_type"


def ab_operands(k, kind=None):
    a_layout, b_layout = (LAYOUT_A_K32, LAYOUT_B_K32) if k == 32 else (LAYOUT_A_K64, LAYOUT_B_K64)
    a_values, b_values = (16, 8) if k == 32 else (32, 16)
    return [op("a", "REGISTERS", element_type="{a}", values=a_values, registers=4, register_type="b32",
               layout_tv=a_layout, kind=kind),
            op("b", "REGISTERS", element_type="{b}", values=b_values, registers=2, register_type="b32",
               layout_tv=b_layout, kind=kind)]


def f8f6f4_family():
    """kind::f8f6f4: no scaling; every pairing of the five input types, f32 or f16 accumulate."""
    return family(
        "blackwell_geforce.mma.f8f6f4",
        parameters=[param("a", values=F8F6F4, rule="A is e4m3, e5m2, e3m2, e2m3 or e2m1"),
                    param("b", values=F8F6F4, rule="B is e4m3, e5m2, e3m2, e2m3 or e2m1"),
                    param("acc", values=["f32", "f16"], rule="the accumulator is f32 or f16")],
        derived=[("dregs", "acc == 'f32' ? 4 : 2")],
        template=dict(
            id="blackwell_geforce.mma.m16n8k32.f8f6f4.{acc}.{a}.{b}", kind="MMA",
            description="mma.sync m16n8k32 kind::f8f6f4, {" + PTX_A + "} x {" + PTX_B + "}, {acc} accumulate" + CONTAINER_NOTE,
            python_name="warp.MmaF8F6F4Op",
            python_params={"a_dtype": "{dsl(a)}", "b_dtype": "{dsl(b)}", "acc_dtype": "{dsl(acc)}",
                           "shape_mnk": "(16,8,32)"},
            python_signature=["a_dtype", "b_dtype", "acc_dtype", "shape_mnk"],
            python_defaults={"shape_mnk": "(16,8,32)"},
            shape_mnk="(16,8,32)", thr_id="32:1",
            operands=[accumulator("d", "OUT", True), *ab_operands(32), accumulator("c", "IN", True)],
            ptx_template=("mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.{acc}.{" + PTX_A + "}.{" + PTX_B + "}.{acc} "
                          "{{seq(0, dregs, '$', ', ')}}, {{seq(dregs, 4, '$', ', ')}}, "
                          "{{seq(dregs + 4, 2, '$', ', ')}}, {{seq(dregs + 6, dregs, '$', ', ')}};"),
            constraints=("{join(',', repeat(acc == 'f32' ? '=f' : '=r', dregs), 'r,r,r,r,r,r', "
                         "repeat(acc == 'f32' ? 'f' : 'r', dregs))}"),
            sass_opcodes=["QMMA.16832.{upper(acc)}.{upper(" + PTX_A + ")}.{upper(" + PTX_B + ")}"],
            conformance="blackwell_geforce_mma"))


# The selectors' legal values by scale_vec, as ptxas 13.0 takes them.
BYTE_IDS = {1: range(4), 2: (0, 2), 4: (0,)}


def scale_attributes(vec_of):
    """byte_id_a/b and thread_id_a/b; vec_of: [(scale_vec, when-expression or None)]."""
    out = []
    for vec, when in vec_of:
        out += [attribute("byte_id_a", allowed=BYTE_IDS[vec], default=0, when=when),
                attribute("byte_id_b", allowed=BYTE_IDS[vec], default=0, when=when)]
    out += [attribute("thread_id_a", allowed=range(2), default=0),
            attribute("thread_id_b", allowed=range(4), default=0)]
    return out


def block_scaled_family(fid, *, kind, k, python_name, ab_types, sf_vec, signature, sass):
    """A block-scaled kind: f32 accumulate, scale factors in scale_a/scale_b. sf_vec: [(sf type, scale_vec)]."""
    sfs = [sf for sf, _ in sf_vec]
    vec_expr = " : ".join(f"sf == '{sf}' ? {v}" for sf, v in sf_vec[:-1]) + (" : " if len(sf_vec) > 1 else "") \
        + str(sf_vec[-1][1])
    vec_of = [(v, f"sf == '{sf}'" if len(sf_vec) > 1 else None) for sf, v in sf_vec]
    two_types = len(ab_types) > 1
    return family(
        fid,
        parameters=[param("a", values=ab_types, rule="A is " + ", ".join(t.replace("_b8", "") for t in ab_types)),
                    param("b", values=ab_types, rule="B is " + ", ".join(t.replace("_b8", "") for t in ab_types)),
                    param("sf", values=sfs, rule="the scale factors are " + " or ".join(sfs))],
        derived=[("vec", vec_expr)],
        template=dict(
            id=f"blackwell_geforce.mma.m16n8k{k}.{kind}.f32.{{a}}.{{b}}.{{sf}}", kind="MMA",
            description=(f"mma.sync m16n8k{k} kind::{kind}.block_scale.scale_vec::{{vec}}X: D[f32] = (A[{{{PTX_A}}}] x "
                         f"SFA[{{sf}}]) (B[{{{PTX_B}}}] x SFB[{{sf}}]) + C, one scale factor per {{{k} / vec}} values of "
                         "K; scale_a and scale_b are the b32 registers holding the factors, the attributes byte_id_a "
                         "and thread_id_a (byte_id_b, thread_id_b) pick the byte and the thread of each group that "
                         "supplies them" + (CONTAINER_NOTE if two_types else "")),
            python_name=python_name,
            python_params={"a_dtype": "{dsl(a)}", "b_dtype": "{dsl(b)}" if two_types else "",
                           "acc_dtype": "Float32", "sf_dtype": "{dsl(sf)}", "shape_mnk": f"(16,8,{k})"},
            python_signature=signature,
            python_defaults={"acc_dtype": "Float32", "shape_mnk": f"(16,8,{k})"},
            shape_mnk=f"(16,8,{k})", thr_id="32:1",
            operands=[accumulator("d", "OUT", False), *ab_operands(k, PARTITION_TYPED_KIND),
                      accumulator("c", "IN", False), op("scale_a", "SCALAR"), op("scale_b", "SCALAR")],
            attributes=scale_attributes(vec_of),
            ptx_template=(f"mma.sync.aligned.m16n8k{k}.row.col.kind::{kind}.block_scale.scale_vec::{{vec}}X.f32."
                          f"{{{PTX_A}}}.{{{PTX_B}}}.f32.{{sf}} {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, "
                          "{$10, $11, $12, $13}, $14, {{byte_id_a}, {thread_id_a}}, $15, {{byte_id_b}, {thread_id_b}};"),
            constraints="=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f,r,r",
            sass_opcodes=[sass],
            conformance="blackwell_geforce_mma_block_scaled"))


def families():
    yield "families", f8f6f4_family()
    yield "families", block_scaled_family(
        "blackwell_geforce.mma.mxf8f6f4", kind="mxf8f6f4", k=32, python_name="warp.MmaMXF8F6F4Op",
        ab_types=F8F6F4, sf_vec=[("ue8m0", 1)], signature=["a_dtype", "b_dtype", "acc_dtype", "sf_dtype"],
        sass="QMMA.SF.16832.F32.{upper(" + PTX_A + ")}.{upper(" + PTX_B + ")}.E8")
    yield "families", block_scaled_family(
        "blackwell_geforce.mma.mxf4", kind="mxf4", k=64, python_name="warp.MmaMXF4Op",
        ab_types=["e2m1"], sf_vec=[("ue8m0", 2)], signature=["a_dtype", "acc_dtype", "sf_dtype"],
        sass="OMMA.SF.16864.F32.E2M1.E2M1.E8")
    # CuTe DSL's MmaMXF4NVF4Op(a_dtype, acc_dtype, sf_dtype): the scale type says the vector size (ue8m0: 32
    # values a factor, mxf4; ue4m3: 16, nvf4).
    yield "families", block_scaled_family(
        "blackwell_geforce.mma.mxf4nvf4", kind="mxf4nvf4", k=64, python_name="warp.MmaMXF4NVF4Op",
        ab_types=["e2m1"], sf_vec=[("ue8m0", 2), ("ue4m3", 4)], signature=["a_dtype", "acc_dtype", "sf_dtype"],
        sass="OMMA.SF.16864.F32.E2M1.E2M1.{sf == 'ue4m3' ? 'UE4M3.4X' : 'E8'}")


COMMENT = """\
# GENERATED by backends/blackwell_geforce/generate_manifest.py: edit the script, run
#   python3 backends/blackwell_geforce/generate_manifest.py
# and commit both. The plugin embeds this file.
#
# The consumer Blackwell backend (sm_120a, sm_121a): warp-level mma.sync with fp6/fp4 inputs and the block-scaled
# kinds; no tcgen05, no wgmma. Ampere's warp-level atoms and Hopper's TMA, mbarrier, cluster and stmatrix entries
# apply here through their non-arch-specific targets (sm_80, sm_89, sm_90), so this manifest extends "ampere" and
# "hopper" and holds only what is new. Layouts are in CuTe notation over the column-major (m,k),
# (n,k) and (m,n) tiles, in units of the element type (e*_b8: an fp6/fp4 value in an 8-bit container).
# Ids: blackwell_geforce.mma.m16n8k<K>.<kind>.<acc>.<a>.<b>[.<scale type>]."""


def register_control():
    """setmaxnreg: arch-specific PTX that ptxas takes for sm_90a and for sm_120a and sm_121a (not for plain sm_90
    or sm_120), so Hopper's sm_90a entries do not reach this generation and it names its own. Warp-specialized
    kernels (a TMA producer warp beside mma.sync consumer warps) move registers between their warpgroups with it.
    As on Hopper, ptxas emits USETMAXREG only for a kernel with launch bounds, and nvJitLink drops it."""
    regs_allowed = tuple(str(n) for n in range(24, 257, 8))
    for d, pyn in (("inc", "arch.setmaxregister_increase"), ("dec", "arch.setmaxregister_decrease")):
        yield entry("primitives", id=f"blackwell_geforce.setmaxnreg.{d}", kind="REGISTER_CONTROL",
                    description=(f"setmaxnreg.{d}: every warp of the warpgroup "
                                 f"{'raises' if d == 'inc' else 'lowers'} its per-thread register budget to n "
                                 "(24..256, multiple of 8); takes effect only in a kernel with launch bounds, which "
                                 "is assembled with ptxas"),
                    python_name=pyn, attributes=[attribute("n", allowed=regs_allowed)],
                    ptx_template=f"setmaxnreg.{d}.sync.aligned.u32 {{n}};", has_side_effects=True,
                    sass_opcodes=["USETMAXREG.TRY_ALLOC" if d == "inc" else "USETMAXREG.DEALLOC"],
                    cubin_tool="ptxas")


def manifest_text() -> str:
    out = [format_header(
        comment=COMMENT, name="blackwell_geforce", version="0.1.0",
        description=("NVIDIA consumer Blackwell (sm_120a, sm_121a): warp-level mma.sync kind::f8f6f4 and the "
                     "block-scaled kinds mxf8f6f4, mxf4 and mxf4nvf4; Ampere's warp-level atoms and Hopper's TMA, "
                     "mbarrier and clusters through extends"),
        # blackwell: CuTe DSL keeps the sm_120 GEMM helpers in the modules of datacenter Blackwell's
        # (utils.blackwell_helpers, utils.blockscaled_layout), whose scale-factor atom this generation shares; its
        # sm_100a entries do not reach a 12.x device (arch-specific targets).
        extends=("ampere", "hopper", "blackwell"),
        python_modules=("warp",),
        module_map={"warpweave.utils.blackwell_helpers": "helpers", "warpweave.utils.sm100": "helpers",
                    "warpweave.utils.blockscaled_layout": "blockscaled_layout"},
        on_load=("adapters",))]
    for name, cc in (("sm_120a", 120), ("sm_121a", 121)):
        # +ptx88: sm_121a needs PTX ISA 8.8 (8.7 has sm_120a and the fp6/fp4 mma.sync); one version for both.
        # max_cluster_size: the portable limit of compute capability 9.0 on; CuTe's sm_120 kernels use 1x1 clusters
        # (there is no TMA multicast to share loads over), which the limit allows.
        out.append("\n" + format_target(dict(name=name, compute_capability=cc, arch_specific=True, llvm_cpu=name,
                                              ptx_features="+ptx88", jit_arch=name, smem_capacity_bytes=101376,
                                              max_threads_per_block=1024, max_cluster_size=8,
                                              tma_unpacking=TMA_UNPACKING)) + "\n")
    out.append("\n" + "\n".join(format_element_types(ELEMENT_TYPES, IR_TYPES)) + "\n")
    out.append("\n# " + "-" * 110 + "\n# mma.sync kind::f8f6f4 and the block-scaled kinds (warp-level, 32 threads)\n# "
               + "-" * 110 + "\n\n")
    out.append("\n".join(format_entry(s, e, TARGETS) + "\n" for s, e in families()))
    out.append("\n# " + "-" * 110 + "\n# Warp-level matrix loads and stores of bytes (datacenter Blackwell's forms, "
               "for sm_120a and sm_121a)\n# " + "-" * 110 + "\n\n")
    out.append("\n".join(format_entry(s, e, TARGETS) + "\n" for s, e in byte_ldmatrix_atoms("blackwell_geforce")))
    out.append("\n# " + "-" * 110 + "\n# Cluster launch control (datacenter Blackwell's instructions, which ptxas 13.0 "
               "takes for sm_120a and sm_121a)\n# " + "-" * 110 + "\n\n")
    out.append("\n".join(format_entry(s, e, TARGETS) + "\n"
                          for s, e in clc_primitives("blackwell_geforce", remote_arrive=False)))
    out.append("\n# " + "-" * 110 + "\n# register control\n# " + "-" * 110 + "\n\n")
    out.append("\n".join(format_entry(s, e, TARGETS) + "\n" for s, e in register_control()))
    return "".join(out)


def main(argv) -> int:
    return write_or_check(OUT, manifest_text(), argv, "backends/blackwell_geforce/generate_manifest.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
