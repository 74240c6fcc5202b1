"""tcgen05.mma .block_scale: kinds mxf4nvf4, mxf4 and mxf8f6f4 (A and B of one format or of two), and sm_103a's
4-bit kinds with K = 96."""
from __future__ import annotations

from manifest_builder import entry, family, operand as op, parameter as param

from .element_types import PY_DTYPE
from .mma import MMA_SASS, N_RULE, TMEM_KIND, UMMA_DESC_KIND

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
