"""The generation's targets, sm_100a and sm_103a, and which of them each entry is for."""
from __future__ import annotations

TARGET = "sm_100a"
# sm_103a (B300) runs the same tcgen05, tensor-memory, TMA and cluster PTX as sm_100a: each entry names both, and
# the SASS is the same (the conformance compile tier checks each entry on each target). sm_110a (compute capability
# 11.0, a family of its own: sm_110f) runs them too, from PTX ISA 9.0 on (LLVM refuses the CPU with an older PTX
# version); ptxas 13.0 assembles every tcgen05.mma family for it into the same SASS as sm_100a's.
SM110 = "sm_110a"
TARGETS = (TARGET, "sm_103a", SM110)


# Entries of sm_103a alone: its 4-bit MMAs with K = 96 and the shared-memory descriptor whose leading field is the
# address of the next buffer (the "byte address absolute" mode, which only those MMAs read).
SM103_ONLY = ("blackwell.sm103.tcgen05.mma.mxf4nvf4", "blackwell.sm103.tcgen05.mma.mxf4",
              "blackwell.sm103.tcgen05.make_smem_desc_next")
# Entries sm_110a lacks, as ptxas 13.0 says: "Instruction 'redux.f32' not supported on .target 'sm_110a'",
# "Feature 'argument scale-inp-d-imm' not supported on .target 'sm_110a'"; and the packed f32x2 arithmetic, which
# it assembles into two scalar instructions (FADD, FMUL, FFMA) instead of the paired ones these entries are for.
NOT_SM110 = ("blackwell.redux.sync.f32", "blackwell.redux.sync.f32.abs", "blackwell.redux.sync.f32.nan",
             "blackwell.redux.sync.f32.abs.nan", "blackwell.prim.tcgen05.mma.scale_input_d",
             *(f"blackwell.{op}.{r}.f32x2" for op in ("add", "sub", "mul", "fma") for r in ("rn", "rnd")))
# The integer tensor-core MMAs: sm_103a has none (ptxas: "Feature '.kind::i8' not supported on .target 'sm_103a'")
I8 = ("blackwell.tcgen05.mma.i8", "blackwell.prim.tcgen05.mma.i8")


def targets_of(fields: dict):
    """The targets of an entry: SM103_ONLY's are sm_103a's alone, the kind::i8 families sm_100a's and sm_110a's,
    NOT_SM110's sm_100a's and sm_103a's, the rest every target's."""
    ident = fields.get("id")
    if ident in SM103_ONLY:
        return ("sm_103a",)
    if ident in I8:
        return (TARGET, SM110)
    if ident in NOT_SM110:
        return (TARGET, "sm_103a")
    return TARGETS


# The tensor maps whose loads unpack 4- and 6-bit values into byte containers (CUDA 12.8's 16U4_ALIGN8B,
# 16U4_ALIGN16B and 16U6_ALIGN16B), which the copy engine of compute capability 10.x has: the Python loads a 6-bit
# tensor, or a 4-bit one asked for as Uint8, through the 16-byte forms, the ones kind::mxf8f6f4 reads.
TMA_UNPACKING = ("16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")
