"""Copies to and from tensor memory: tcgen05.ld / tcgen05.st (registers) and tcgen05.cp (from shared memory)."""
from __future__ import annotations

from manifest_builder import entry, family, operand as op, parameter as param

# shape -> (lanes, bits per lane of one repetition, registers per thread of one repetition, largest .num)
TMEM_SHAPES = {"32x32b": (32, 32, 1, 128), "16x64b": (16, 64, 1, 128), "16x128b": (16, 128, 2, 64),
               "16x256b": (16, 256, 4, 32)}

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
