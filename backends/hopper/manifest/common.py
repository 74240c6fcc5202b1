"""The generation's targets and the writers of its atoms and primitives, which name both targets unless told."""
from __future__ import annotations

from manifest_builder import format_instruction

TARGET = "sm_90a"
# The portable sm_90 target: code for it runs on every device of compute capability 9.0 and above. TMA, bulk
# groups, mbarrier transaction counts, proxy fences, clusters, elect.sync, stmatrix and griddepcontrol are sm_90
# PTX (not arch-specific; TMA multicast aside, see hopper.tma.load.multicast), so they are offered there too, and a later generation whose backend does not list
# them itself (consumer Blackwell, sm_120a) uses these entries by extending this backend. wgmma and setmaxnreg
# are sm_90a-only (arch-specific PTX) and stay on TARGET.
PORTABLE = "sm_90"
BOTH = (TARGET, PORTABLE)


def atom(id_, kind, *, targets=BOTH, **kw):
    return format_instruction("atoms", dict(id=id_, kind=kind, **kw), targets)


def primitive(id_, kind, *, targets=BOTH, **kw):
    return format_instruction("primitives", dict(id=id_, kind=kind, **kw), targets)


def regs(first: int, n: int) -> str:
    return ", ".join(f"${i}" for i in range(first, first + n))
