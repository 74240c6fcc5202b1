"""Primitives: the register budgets of warpgroups."""
from __future__ import annotations

from manifest_builder import entry


def register_primitives():
    """setmaxnreg: warp-specialized kernels move registers between their warpgroups (the PTX is Hopper's; sm_100a
    code needs entries of its own target). ptxas emits USETMAXREG only for a kernel whose register count at entry
    it knows (launch bounds), and nvJitLink drops the instruction: cubin_tool "ptxas" assembles such modules with
    ptxas."""
    P = lambda **kw: entry("primitives", **kw)  # noqa: E731
    regs = {"name": "n", "type": "int", "allowed": [str(n) for n in range(24, 257, 8)]}
    for d, pyn in (("inc", "arch.setmaxregister_increase"), ("dec", "arch.setmaxregister_decrease")):
        yield P(id=f"blackwell.setmaxnreg.{d}", kind="REGISTER_CONTROL",
                description=(f"setmaxnreg.{d}: every warp of the warpgroup {'raises' if d == 'inc' else 'lowers'} its "
                             "per-thread register budget to n (24..256, multiple of 8); only in a kernel with launch "
                             "bounds"),
                python_name=pyn, attributes=[regs], ptx_template=f"setmaxnreg.{d}.sync.aligned.u32 {{n}};",
                has_side_effects=True,
                sass_opcodes=["USETMAXREG.TRY_ALLOC" if d == "inc" else "USETMAXREG.DEALLOC"], cubin_tool="ptxas")
