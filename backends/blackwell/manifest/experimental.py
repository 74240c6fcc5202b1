"""cutlass.experimental.primitives that are sm_100a instructions: tcgen05.mma, tcgen05.ld, tcgen05.st and
tcgen05.cp with run-time operands, tensormap.replace, float warp reductions and 8-bit ldmatrix / stmatrix."""
from __future__ import annotations

from manifest_builder import entry, family, operand as op, parameter as param

from .tmem_copy import TMEM_SHAPES

# A collector-buffer use of A (.collector::a::<op>), by CuTe DSL's names of it
COLLECTOR_OPS = ("discard", "lastuse", "fill", "use")
# block-scaled kinds and the scale-vector qualifiers each takes
PRIM_BLOCK_SCALED = {"mxf8f6f4": ("block32",), "mxf4": ("block32",), "mxf4nvf4": ("block16", "block32")}


def experimental_tcgen05_primitives():
    """cutlass.experimental.primitives' tcgen05 operations whose operands the kernel computes: the MMA with run-time
    descriptors (its instruction descriptor a register, not a constant of the atom), disable-output-lane masks,
    scale-input-d, .ashift and collector-buffer uses; tensor-memory loads and stores with 16-bit packing and the
    16x32bx2 shape. The backend's Python (tcgen05_primitives.py) adapts CuTe DSL's signatures onto them."""
    cta = param("cta", set_=(1, 2), rule="cta_group is 1 or 2")
    # kind::i8 is no sm_103a instruction and scale-input-d no sm_110a one (targets_of): families of their own
    for group, kinds, scales in (("float", ("f16", "tf32", "f8f6f4"), (0,)), ("scale_input_d", ("f16", "tf32"), (1,)),
                                 ("i8", ("i8",), (0, 1))):
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.mma.{group}", primitive=True,
            parameters=[cta, param("kind", values=kinds), param("a_src", values=("SMEM", "TMEM")),
                        param("collector", values=("none",) + COLLECTOR_OPS), param("lanes", set_=(0, 1),
                        rule="lanes 1: a disable-output-lane mask"), param("scale", set_=scales,
                        rule="scale 1: a scale-input-d"), param("ashift", set_=(0, 1), rule="ashift 1: .ashift")],
            derived=[("nmask", "lanes == 1 ? 4 * cta : 0")],
            rules=[("scale-input-d is for kind::f16 and kind::tf32", "scale == 0 || kind == 'f16' || kind == 'tf32'"),
                   (".ashift takes A from tensor memory", "ashift == 0 || a_src == 'TMEM'"),
                   (".ashift takes no collector use", "ashift == 0 || collector == 'none'")],
            template=dict(
                id=("blackwell.prim.tcgen05.mma.cta{cta}.{kind}.{a_src == 'SMEM' ? 'ss' : 'ts'}.{collector}"
                    ".l{lanes}.s{scale}.a{ashift}"),
                kind="OTHER",
                description=("tcgen05.mma.cta_group::{cta}.kind::{kind}: D (+)= A B with every operand a register: d the "
                             "tensor-memory address of D, a a UMMA descriptor (or A's tensor-memory address), b B's "
                             "descriptor, idesc the instruction descriptor, enable_input_d false overwrites D; "
                             "{lanes == 1 ? 'mask: the disable-output-lane words; ' : ''}"
                             "{scale == 1 ? 'scale_input_d (0..15, attribute): D scaled by 2^-s first; ' : ''}"
                             "{ashift == 1 ? '.ashift: A shifted down one row; ' : ''}"
                             "{collector == 'none' ? '' : 'A through the collector buffer (' + collector + '); '}"
                             "one thread issues it"),
                python_name="tcgen05.prim_mma",
                python_params={"cta_group": "{cta}", "kind": "{kind}", "a_src": "{a_src}", "collector": "{collector}",
                               "lanes": "{lanes}", "scale": "{scale}", "ashift": "{ashift}"},
                operands=[op("d", "TMEM_ADDRESS"),
                          op("a", "SMEM_DESCRIPTOR", when="a_src == 'SMEM'"),
                          op("a", "TMEM_ADDRESS", when="a_src == 'TMEM'"),
                          op("b", "SMEM_DESCRIPTOR"), op("idesc", "SCALAR"), op("enable_input_d", "PREDICATE"),
                          op("mask", "SCALAR", count_expr="nmask", when="lanes == 1")],
                attributes=[{"name": "scale_input_d", "type": "int", "allowed": [str(i) for i in range(16)],
                             "default_value": "0"}],
                ptx_template=("tcgen05.mma.cta_group::{cta}.kind::{kind}{ashift == 1 ? '.ashift' : ''}"
                              "{collector == 'none' ? '' : '.collector::a::' + collector}"
                              " [$0], {a_src == 'TMEM' ? '[$1]' : '$1'}, $2, $3"
                              "{lanes == 1 ? ', {' + seq(5, nmask, '$', ', ') + '}' : ''}, $4"
                              "{scale == 1 ? ', {scale_input_d}' : ''};"),
                constraints="{a_src == 'TMEM' ? 'r,r,l,r,b' : 'r,l,l,r,b'}{lanes == 1 ? ',' + repeat('r', nmask) : ''}",
                has_side_effects=True, sass_opcodes=[])))
    yield entry("families", **family(
        "blackwell.prim.tcgen05.mma.block_scale", primitive=True,
        parameters=[cta, param("kind", values=tuple(PRIM_BLOCK_SCALED)), param("a_src", values=("SMEM", "TMEM")),
                    param("vec", values=("block16", "block32"))],
        rules=[("kind::mxf4nvf4 takes block16 or block32, the other kinds block32",
                "vec == 'block32' || kind == 'mxf4nvf4'")],
        template=dict(
            id="blackwell.prim.tcgen05.mma.cta{cta}.{kind}.{vec}.{a_src == 'SMEM' ? 'ss' : 'ts'}",
            kind="OTHER",
            description=("tcgen05.mma.cta_group::{cta}.kind::{kind}.block_scale.{vec}: D (+)= (A x SFA) (B x SFB), "
                         "every operand a register: d, scale_a and scale_b tensor-memory addresses, a a UMMA "
                         "descriptor (or A's tensor-memory address), b B's descriptor, idesc the block-scaled "
                         "instruction descriptor; one thread issues it"),
            python_name="tcgen05.prim_mma_block_scale",
            python_params={"cta_group": "{cta}", "kind": "{kind}", "a_src": "{a_src}", "vec": "{vec}"},
            operands=[op("d", "TMEM_ADDRESS"),
                      op("a", "SMEM_DESCRIPTOR", when="a_src == 'SMEM'"),
                      op("a", "TMEM_ADDRESS", when="a_src == 'TMEM'"),
                      op("b", "SMEM_DESCRIPTOR"), op("idesc", "SCALAR"), op("scale_a", "TMEM_ADDRESS"),
                      op("scale_b", "TMEM_ADDRESS"), op("enable_input_d", "PREDICATE")],
            ptx_template=("tcgen05.mma.cta_group::{cta}.kind::{kind}.block_scale.{vec} [$0], "
                          "{a_src == 'TMEM' ? '[$1]' : '$1'}, $2, $3, [$4], [$5], $6;"),
            constraints="{a_src == 'TMEM' ? 'r,r,l,r,r,r,b' : 'r,l,l,r,r,r,b'}",
            has_side_effects=True, sass_opcodes=[])))
    # tensormap.replace (Hopper's entries are sm_90a's): one family over the field and the state space
    yield entry("families", **family(
        "blackwell.prim.tensormap.replace", primitive=True,
        parameters=[param("field", values=("global_address", "rank", "box_dim", "global_dim", "global_stride",
                                           "element_stride")),
                    param("space", values=("generic", "global", "shared::cta"))],
        derived=[("wide", "field == 'global_address' || field == 'global_stride'"),
                 ("per_dim", "field != 'global_address' && field != 'rank'")],
        template=dict(
            id="blackwell.prim.tensormap.replace.{field}.{space == 'shared::cta' ? 'shared_cta' : space}",
            kind="OTHER",
            description=("tensormap.replace.tile.{field}: sets that field{per_dim ? ' of dimension ord (0..4)' : ''} "
                         "of the tensor map at addr ({space}) to new_value"),
            python_name="tensormap.replace", python_params={"field": "{field}", "space": "{space}"},
            operands=[op("addr", "SMEM_ADDRESS", when="space == 'shared::cta'"),
                      op("addr", "GMEM_ADDRESS", when="space != 'shared::cta'"),
                      op("new_value", "SCALAR", register_type="b64", when="wide"),
                      op("new_value", "SCALAR", register_type="b32", when="!wide")],
            attributes=[{"name": "ord", "type": "int", "allowed": [str(i) for i in range(5)], "default_value": "0"}],
            ptx_template=("tensormap.replace.tile.{field}{space == 'generic' ? '' : '.' + space}.b1024."
                          "{wide ? 'b64' : 'b32'} [$0]{per_dim ? ', {ord}' : ''}, $1;"),
            constraints="{space == 'shared::cta' ? 'r' : 'l'},{wide ? 'l' : 'r'}", has_side_effects=True,
            sass_opcodes=[])))
    # tcgen05.cp of every shape, optionally decompressing narrow elements to 8-bit holders on the way
    shapes = {"128x256b": "128x256b", "4x256b": "4x256b", "128x128b": "128x128b",
              "64x128b.warpx2_02_13": "64x128b.warpx2::02_13", "64x128b.warpx2_01_23": "64x128b.warpx2::01_23",
              "32x128b.warpx4": "32x128b.warpx4"}
    for name, ptx in shapes.items():
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.cp.{name}", primitive=True,
            parameters=[cta, param("fmt", values=("none", "b6x16_p32", "b4x16_p64"))],
            template=dict(
                id=f"blackwell.prim.tcgen05.cp.cta{{cta}}.{name}.{{fmt}}", kind="OTHER",
                description=(f"tcgen05.cp.cta_group::{{cta}}.{ptx}: shared memory (the UMMA descriptor src) to tensor "
                             "memory at dst{fmt == 'none' ? '' : ', each narrow element (' + fmt + ') widened to an "
                             "8-bit holder (.b8x16)'}; asynchronous, completion through tcgen05.commit"),
                python_name="tcgen05.prim_cp", python_params={"cta_group": "{cta}", "shape": name, "fmt": "{fmt}"},
                operands=[op("dst", "TMEM_ADDRESS"), op("src", "SMEM_DESCRIPTOR")],
                ptx_template=(f"tcgen05.cp.cta_group::{{cta}}.{ptx}{{fmt == 'none' ? '' : '.b8x16.' + fmt}} "
                              "[$0], $1;"),
                constraints="r,l", has_side_effects=True, sass_opcodes=[])))
    # tcgen05.ld / st with packing, and the 16x32bx2 shape (two 16-lane halves, the second at an immediate column
    # offset); registers per thread are those of the shape's x1 times the repetition
    shapes = dict(TMEM_SHAPES, **{"16x32bx2": (16, 32, 1, 128)})
    for shape, (lanes, bits, regs1, max_num) in shapes.items():
        nums = [1 << i for i in range(max_num.bit_length())]
        half = shape == "16x32bx2"
        common = dict(primitive=True,
                      parameters=[param("num", set_=nums, rule=f"repeat is x1, x2, ... up to x{max_num} for .{shape}"),
                                  param("pack", set_=(0, 1), rule="pack 1: 16-bit halves of two columns")],
                      derived=[("regs", f"{regs1} * num")])
        attrs = [{"name": "half_offset", "type": "int", "default_value": "0"}] if half else []
        off = ", {half_offset}" if half else ""
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.ld.{shape}", **common, template=dict(
                id=f"blackwell.prim.tcgen05.ld.{shape}.x{{num}}.p{{pack}}", kind="OTHER",
                description=(f"tcgen05.ld .{shape}.x{{num}}{{pack == 1 ? '.pack::16b' : ''}}: {lanes} lanes of tensor "
                             "memory at src to {regs} b32 registers per thread (pack: two 16-bit columns a register)"
                             + ("; half_offset: the second half's column offset" if half else "")),
                python_name="tcgen05.prim_ld", python_params={"shape": shape, "num": "{num}", "pack": "{pack}"},
                operands=[op("dst", "REGISTERS", "OUT", element_type="b32", values_expr="regs",
                             registers_expr="regs", register_type="b32"), op("src", "TMEM_ADDRESS")],
                attributes=attrs,
                ptx_template=(f"tcgen05.ld.sync.aligned.{shape}.x{{num}}{{pack == 1 ? '.pack::16b' : ''}}.b32 "
                              f"{{{{seq(0, regs, '$', ', ')}}}}, [${{regs}}]{off};"),
                constraints="{repeat('=r', regs)},r", has_side_effects=True, sass_opcodes=[])))
        yield entry("families", **family(
            f"blackwell.prim.tcgen05.st.{shape}", **common, template=dict(
                id=f"blackwell.prim.tcgen05.st.{shape}.x{{num}}.p{{pack}}", kind="OTHER",
                description=(f"tcgen05.st .{shape}.x{{num}}{{pack == 1 ? '.unpack::16b' : ''}}: {{regs}} b32 "
                             f"registers per thread to {lanes} lanes of tensor memory at dst (unpack: a register's "
                             "16-bit halves to two columns)"),
                python_name="tcgen05.prim_st", python_params={"shape": shape, "num": "{num}", "pack": "{pack}"},
                operands=[op("dst", "TMEM_ADDRESS"),
                          op("src", "REGISTERS", element_type="b32", values_expr="regs", registers_expr="regs",
                             register_type="b32")],
                attributes=attrs,
                ptx_template=(f"tcgen05.st.sync.aligned.{shape}.x{{num}}{{pack == 1 ? '.unpack::16b' : ''}}.b32 "
                              f"[$0]{off}, {{{{seq(1, regs, '$', ', ')}}}};"),
                constraints="{repeat('r', regs + 1)}", has_side_effects=True, sass_opcodes=[])))


def experimental_primitives():
    """cutlass.experimental.primitives (python names primitives.*) that are sm_100a instructions: float warp
    reductions (redux.sync .f32, with .abs and .NaN) and the 8-bit forms of ldmatrix (m16n16, transposed) and
    stmatrix (m16n8, transposed). The Ampere and Hopper backends' Python selects them by name and parameters."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    for absq, nanq in (("", ""), (".abs", ""), ("", ".NaN"), (".abs", ".NaN")):
        yield P(id=f"blackwell.redux.sync.f32{absq}{nanq.lower()}", kind="SHUFFLE",
                description=(f"redux.sync.{{min,max}}{absq}{nanq}.f32: the minimum or maximum of value over the lanes "
                             "of mask" + (", of magnitudes" if absq else "") + (", a NaN winning" if nanq else "")),
                python_name="primitives.redux_sync",
                python_params={"type": "f32", "abs": "1" if absq else "0", "nan": "1" if nanq else "0"},
                operands=[op("result", "SCALAR", "OUT", register_type="f32"),
                          op("value", "SCALAR", register_type="f32"), op("mask", "SCALAR")],
                attributes=[{"name": "op", "type": "string", "allowed": ["max", "min"], "default_value": "max"}],
                ptx_template=f"redux.sync.{{op}}{absq}{nanq}.f32 $0, $1, $2;", constraints="=f,f,r",
                has_side_effects=True, sass_opcodes=["CREDUX"])
    for x, nregs in ((1, 2), (2, 4)):
        regs = ", ".join(f"${i}" for i in range(nregs))
        yield P(id=f"blackwell.ldmatrix.m16n16.x{x}.trans.b8", kind="OTHER",
                description=(f"ldmatrix.m16n16.x{x}.trans.b8: {x} 16x16 8-bit matrices from shared memory, transposed, "
                             f"{nregs} 32-bit words a lane"),
                python_name="primitives.ldmatrix",
                python_params={"shape": "m16n16", "num": str(nregs), "layout": "col", "format": "b8"},
                operands=[op("words", "REGISTERS", "OUT", element_type="b32", values=nregs, registers=nregs,
                             register_type="b32"), op("addr", "SMEM_ADDRESS")],
                ptx_template=f"ldmatrix.sync.aligned.m16n16.x{x}.trans.shared.b8 {{{regs}}}, [${nregs}];",
                constraints=",".join(["=r"] * nregs + ["r"]), has_side_effects=True, sass_opcodes=["LDSM"])
    for x in (1, 2, 4):
        regs = ", ".join(f"${i + 1}" for i in range(x))
        yield P(id=f"blackwell.stmatrix.m16n8.x{x}.trans.b8", kind="OTHER",
                description=f"stmatrix.m16n8.x{x}.trans.b8: {x} 16x8 8-bit matrices to shared memory, transposed",
                python_name="primitives.stmatrix",
                python_params={"shape": "m16n8", "num": str(x), "layout": "col", "format": "b8"},
                operands=[op("addr", "SMEM_ADDRESS"), op("words", "REGISTERS", element_type="b32", values=x,
                                                         registers=x, register_type="b32")],
                ptx_template=f"stmatrix.sync.aligned.m16n8.x{x}.trans.shared.b8 [$0], {{{regs}}};",
                constraints=",".join(["r"] * (x + 1)), has_side_effects=True, sass_opcodes=["STSM"])
