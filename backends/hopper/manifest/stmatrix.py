"""stmatrix atoms: CuTe's SM90_U32x{1,2,4}_STSM_N and SM90_U16x{2,4,8}_STSM_T, layouts in bits."""
from __future__ import annotations

from manifest_builder import operand

from .common import atom, regs

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
