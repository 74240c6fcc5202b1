"""`cutlass.experimental`: `primitives`, CuTe DSL's thin layer over single PTX instructions (prmt, redux.sync,
griddepcontrol, mbarrier and bulk-copy operations, ...).

Which operations exist, and for which GPUs, is the backends' to say: the module's functions come from the loaded
backends (their manifests and Python packages, as `primitives.<name>`), like cute.nvgpu's names; one that
none offers is an AttributeError naming it. The enumerations of PTX qualifiers those operations take (memory
orders and scopes, reduction and permute kinds) are PTX's vocabulary, the same on every GPU, and are here.
"""
import enum
import sys

from .._dsl.atoms.atoms import namespace


def _qualifiers(name, members):
    # The member's name is the qualifier in capitals, with what Python cannot spell as an underscore.
    return enum.Enum(name, [(m.upper().replace(".", "_").replace("::", "_"), m) for m in members])


_ENUMS = {
    "CpReduceOp": _qualifiers("CpReduceOp", ["add", "min", "max", "inc", "dec", "and", "or", "xor"]),
    "CpReduceType": _qualifiers("CpReduceType", ["f16", "bf16", "b32", "b64", "u32", "u64", "s32", "s64", "f32",
                                                 "f64"]),
    "ReductionKind": enum.Enum("ReductionKind", ["ADD", "AND", "MAX", "MIN", "OR", "UMAX", "UMIN", "XOR", "FMIN",
                                                 "FMAX"]),
    "PermuteMode": _qualifiers("PermuteMode", ["default", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"]),
    "GridDepAction": _qualifiers("GridDepAction", ["wait", "launch_dependents"]),
    "MemOrder": _qualifiers("MemOrder", ["weak", "relaxed", "acquire", "release", "acq_rel", "sc", "mmio",
                                         "volatile", "constant"]),
    "MemScope": _qualifiers("MemScope", ["cta", "cluster", "gpu", "sys"]),
    "AtomicOp": _qualifiers("AtomicOp", ["and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max"]),
    "MBarrierScope": _qualifiers("MBarrierScope", ["cta", "cluster"]),
    "MBarrierWait": _qualifiers("MBarrierWait", ["test", "try"]),
    # red: the operation and the operand type (PTX's qualifiers of red/atom)
    "ReductionOp": _qualifiers("ReductionOp", ["add", "min", "max", "and", "or", "xor", "inc", "dec"]),
    "ReductionType": _qualifiers("ReductionType", ["f16", "bf16", "f32", "f64", "s32", "u32", "s64", "u64", "b32",
                                                   "b64"]),
    # shfl.sync's modes and vote.sync's
    "Shfl": _qualifiers("Shfl", ["idx", "up", "down", "bfly"]),
    "VoteSync": _qualifiers("VoteSync", ["all", "any", "uni", "ballot"]),
    # ldmatrix / stmatrix: the fragment order (.trans is COL), the matrix shape and the source element format
    "MMALayout": enum.Enum("MMALayout", [("ROW", "row"), ("COL", "col")]),
    "LoadShape": _qualifiers("LoadShape", ["m8n8", "m16n16", "m8n16"]),
    "StoreShape": _qualifiers("StoreShape", ["m8n8", "m16n8"]),
    "LoadSrcFormat": _qualifiers("LoadSrcFormat", ["b16", "b8", "b8x16.b6x16_p32", "b8x16.b4x16_p64"]),
    "Proxy": _qualifiers("Proxy", ["generic", "async", "async.global", "async.shared::cta", "async.shared::cluster",
                                   "tensormap"]),
}
for _e in _ENUMS.values():
    _e.__module__ = __name__ + ".primitives"

primitives = namespace(__name__ + ".primitives", "primitives", _ENUMS)
sys.modules[primitives.__name__] = primitives

__all__ = ["primitives"]
