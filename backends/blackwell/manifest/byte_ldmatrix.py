"""Warp-level matrix loads and stores of bytes: ldmatrix m8n16 with unpacking, m16n16 and m16n8 transposed
(sm_100a; consumer Blackwell's generator emits them again for its own targets)."""
from __future__ import annotations

from manifest_builder import entry, operand as op

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
