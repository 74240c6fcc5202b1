"""The generation's targets, sm_100a and sm_103a, and which of them each entry is for."""
from __future__ import annotations

TARGET = "sm_100a"
# sm_103a (B300) runs the same tcgen05, tensor-memory, TMA and cluster PTX as sm_100a: each entry names both, and
# the SASS is the same (the conformance compile tier checks each entry on each target).
TARGETS = (TARGET, "sm_103a")


# Entries of sm_103a alone: its 4-bit MMAs with K = 96 and the shared-memory descriptor whose leading field is the
# address of the next buffer (the "byte address absolute" mode, which only those MMAs read).
SM103_ONLY = ("blackwell.sm103.tcgen05.mma.mxf4nvf4", "blackwell.sm103.tcgen05.mma.mxf4",
              "blackwell.sm103.tcgen05.make_smem_desc_next")


def targets_of(fields: dict):
    """sm_103a has no integer tensor-core MMA (ptxas: "Feature '.kind::i8' not supported on .target 'sm_103a'"):
    the kind::i8 family is sm_100a's alone; SM103_ONLY's entries are sm_103a's alone."""
    if fields.get("id") in SM103_ONLY:
        return ("sm_103a",)
    return (TARGET,) if fields.get("id") in ("blackwell.tcgen05.mma.i8", "blackwell.prim.tcgen05.mma.i8") else TARGETS


# The tensor maps whose loads unpack 4- and 6-bit values into byte containers (CUDA 12.8's 16U4_ALIGN8B,
# 16U4_ALIGN16B and 16U6_ALIGN16B), which the copy engine of compute capability 10.x has: the Python loads a 6-bit
# tensor, or a 4-bit one asked for as Uint8, through the 16-byte forms, the ones kind::mxf8f6f4 reads.
TMA_UNPACKING = ("16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")
