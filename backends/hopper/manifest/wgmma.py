"""wgmma: the four families of warpgroup MMAs, and the descriptor, fences, commit and wait around them.

Facts about the hardware used here (PTX ISA 8.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"
chapter; the layouts agree with CuTe's GMMA ALayout/CLayout):
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

from manifest_builder import attribute, family, format_entry, operand, parameter

from .common import TARGET, primitive
from .element_types import TYPES

N_INT = [8, 16, 24] + list(range(32, 257, 16))

A_REG_LAYOUT = {
    16: "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))",
    32: "((4,8,4),(2,2)):((64,1,16),(8,256))",
    8: "((4,8,4),(4,2,2)):((256,1,16),(64,8,1024))",
}


def smem_layout(mn: int, k: int) -> str:
    return f"(128,({mn},{k})):(0,(1,{mn}))"


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


def wgmma_control_primitives():
    """The shared-memory descriptor hook, wgmma.fence, commit_group, wait_group and the compiler-only fence on an
    accumulator register: sm_90a only, as wgmma is."""
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
    return out
