"""Stores and reductions without a result that reach past the thread's CTA: st.async into another CTA's shared
memory, vector reductions into global memory, and multicast memory across GPUs."""
from __future__ import annotations

from manifest_builder import attribute, operand

from .common import primitive, regs


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
