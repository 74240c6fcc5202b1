"""tcgen05.mma, dense: the families of kinds f16, tf32, f8f6f4 and i8, and what the block-scaled ones share with
them (SASS names, the rule on N, the operand kinds)."""
from __future__ import annotations

from manifest_builder import entry, family, operand as op, parameter as param

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

# Observed in the cubins of the probe kernels (nvdisasm of ptxas 13.0 output for sm_100a); tf32 shares f16's.
MMA_SASS = {"f16": "UTCHMMA", "tf32": "UTCHMMA", "f8f6f4": "UTCQMMA", "i8": "UTCIMMA", "mxf4nvf4": "UTCOMMA",
            "mxf4": "UTCOMMA", "mxf8f6f4": "UTCQMMA"}

N_RULE = "N is a multiple of 8 from 8 to 256"

# kind -> the rules on N beyond N_RULE, as (sentence, expression). The dense (M, N) shapes they make: with A in
# shared memory, the PTX ISA's table (cta_group::1: M 64/128, N in steps of 8; cta_group::2: M 128/256, N in
# steps of 16). With A in tensor memory, cta_group::1 takes the same shapes (CuTe's SM100 TS traits: N in steps of
# 8 for M 64 and 128; CuTe DSL's attention decode runs M=128, N=8 with A in tensor memory); cta_group::2 keeps
# CuTe's stricter N % 32: the hardware rules are in the idesc, which ptxas cannot check, so a shape we are unsure
# of is better left out. kind::i8 follows CuTe's S8 traits (cta_group::1: N = 8 or a multiple of 16;
# cta_group::2: a multiple of 32).
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
