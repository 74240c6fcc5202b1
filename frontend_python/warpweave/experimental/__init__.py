"""`cutlass.experimental`: `primitives`, CuTe DSL's thin layer over single PTX instructions (barriers, warp
collectives, memory-barrier objects, atomic reductions, asynchronous and bulk copies, matrix loads and stores, ...).

Which operations exist, and for which GPUs, is the backends' to say: the module's functions come from the loaded
backends (their manifests and Python packages, as `primitives.<name>`), like cute.nvgpu's names; one that none
offers is an AttributeError naming it, and one of another generation's backend than the target's is found and,
called, refused with the targets that have its instruction. The enumerations of PTX qualifiers those operations
take (memory orders and scopes, reduction and permute kinds) are PTX's vocabulary, the same on every GPU, and are
here.
"""
import enum
import sys

from .._dsl.atoms.atoms import namespace
from .._dsl.device.arch import printf
from .._dsl.device.atomics import atomicrmw


def _qualifiers(name, members):
    # The member's name is the qualifier in capitals, with what Python cannot spell as an underscore.
    return enum.Enum(name, [(m.upper().replace(".", "_").replace("::", "_"), m) for m in members])


_STATIC = {
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
    # atomic reductions: the operation and the operand type
    "ReductionOp": _qualifiers("ReductionOp", ["add", "min", "max", "and", "or", "xor", "inc", "dec"]),
    "ReductionType": _qualifiers("ReductionType", ["f16", "bf16", "f32", "f64", "s32", "u32", "s64", "u64", "b32",
                                                   "b64"]),
    # the modes of warp shuffles and of warp votes
    "Shfl": _qualifiers("Shfl", ["idx", "up", "down", "bfly"]),
    "VoteSync": _qualifiers("VoteSync", ["all", "any", "uni", "ballot"]),
    # warp matrix loads and stores: the fragment order (COL transposes), the matrix shape, the element format
    "MMALayout": enum.Enum("MMALayout", [("ROW", "row"), ("COL", "col")]),
    "LoadShape": _qualifiers("LoadShape", ["m8n8", "m16n16", "m8n16"]),
    "StoreShape": _qualifiers("StoreShape", ["m8n8", "m16n8"]),
    "LoadSrcFormat": _qualifiers("LoadSrcFormat", ["b16", "b8", "b8x16.b6x16_p32", "b8x16.b4x16_p64"]),
    # memory proxies (fences between them), the shared-memory windows a fence covers, register budget moves
    "Proxy": _qualifiers("Proxy", ["generic", "tensormap", "async", "async.global", "async.shared"]),
    "SharedSpace": enum.Enum("SharedSpace", [("shared_cta", "shared::cta"), ("shared_cluster", "shared::cluster")]),
    "SetMaxRegisterAction": enum.Enum("SetMaxRegisterAction", [("INCREASE", "inc"), ("DECREASE", "dec")]),
    # formatted printing from a kernel or its host function ({} placeholders), the same on every GPU
    "print_runtime": printf,
    # atomic read-modify-write: LLVM's atomics, which every GPU has
    "atomicrmw": atomicrmw,
}
for _e in _STATIC.values():
    if isinstance(_e, enum.EnumMeta):
        _e.__module__ = __name__ + ".primitives"

primitives = namespace(__name__ + ".primitives", "primitives", _STATIC)
sys.modules[primitives.__name__] = primitives

__all__ = ["primitives"]
