"""Primitives: the register budgets of warpgroups (setmaxnreg, sm_90a only)."""
from __future__ import annotations

from manifest_builder import attribute

from .common import TARGET, primitive


def register_primitives():
    out = []
    P = primitive
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
