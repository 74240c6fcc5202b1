"""cutlass.experimental.primitives of this backend's instructions (sm_80 on), with CuTe DSL's signatures.

Most names are the manifest's `primitives.*` entries as they are (barrier_cta_sync, barrier_cta_red, ...); the
functions here adapt the ones whose signature is not an instruction's operand list: modes given as the
namespace's enumerations (Shfl, VoteSync, ReductionKind, ReductionOp/Type, MemOrder, MemScope), results that
depend on an argument (shfl_sync's validity, vote_sync's ballot), the entry chosen by the pointer's memory space
and the value's width (red), and names of instructions the manifest already has under cute.arch / cpasync.
Float warp reductions (redux.sync .f32) are a later generation's instruction: redux_sync selects it by name, and
a target without it gets an error naming the targets that have it.
"""
from __future__ import annotations

import builtins

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext

FULL_MASK = 0xFFFFFFFF


def _number(value, what: str):
    if isinstance(value, cutlass.Numeric):
        return value
    if isinstance(value, bool):
        return cutlass.Boolean(value)
    if isinstance(value, int):
        return cutlass.Int32(value)
    if isinstance(value, float):
        return cutlass.Float32(value)
    raise ext.user_error(f"{what} must be a DSL number, got {type(value).__name__}", ext.DSLTypeError)


def _bits(value, width: int) -> int:
    """The IR integer of `width` bits holding value (a DSL number of that width) bit for bit."""
    ty = f"i{width}"
    v = value.ir()
    return v if type(value).ir_type == ty else ext.builder().op1("arith.bitcast", [v], ty)


def _i32(x) -> int:
    return cutlass.Int32(x).ir()


# --- warp collectives ------------------------------------------------------------------------------------------

def shfl_sync(mask, value, offset, mask_and_clamp, mode, return_value_and_is_valid=False):
    """shfl.sync: `value` of the source lane that `mode` (Shfl.IDX, UP, DOWN, BFLY) and `offset` name; with
    return_value_and_is_valid, also whether that lane was in range (its own value is returned where not)."""
    m = ext.qualifier(mode, "shfl_sync: mode", ("idx", "up", "down", "bfly"))
    value = _number(value, "shfl_sync: value")
    t = type(value)
    if t.width != 32 or t.is_boolean:
        if return_value_and_is_valid:
            raise ext.user_error(f"shfl_sync: return_value_and_is_valid needs a 32-bit value, got {t.__name__}",
                                 ext.DSLTypeError)
        # other widths move through 32-bit shuffles (cute.arch's)
        fn = {"idx": cute.arch.shuffle_sync, "up": cute.arch.shuffle_sync_up, "down": cute.arch.shuffle_sync_down,
              "bfly": cute.arch.shuffle_sync_bfly}[m]
        return fn(value, offset, mask=mask, mask_and_clamp=mask_and_clamp)
    b = ext.builder()
    backend, entry = ext.select_instruction("primitives.shfl_sync", {}, {"value", "offset", "mask_and_clamp", "mask"})
    out = ext.emit_instruction(b, backend, entry, {"value": [_bits(value, 32)], "offset": [_i32(offset)],
                                                   "mask_and_clamp": [_i32(mask_and_clamp)], "mask": [_i32(mask)]},
                               {"mode": m})
    r = out["result"][0]
    result = t.from_ir(r if t.ir_type == "i32" else b.op1("arith.bitcast", [r], t.ir_type))
    if return_value_and_is_valid:
        return result, cutlass.Boolean.from_ir(out["valid"][0])
    return result


def vote_sync(mask, pred, mode):
    """vote.sync over the lanes of mask: VoteSync.ALL, ANY, UNI give a Boolean, BALLOT the 32-bit lane mask."""
    m = ext.qualifier(mode, "vote_sync: mode", ("all", "any", "uni", "ballot"))
    fn = {"all": cute.arch.vote_all_sync, "any": cute.arch.vote_any_sync, "uni": cute.arch.vote_uni_sync,
          "ballot": cute.arch.vote_ballot_sync}[m]
    return fn(pred, mask)


_REDUX_KINDS = ("add", "min", "max", "and", "or", "xor", "umin", "umax", "fmin", "fmax")


def redux_sync(value, kind, mask=FULL_MASK, abs=False, nan=False):  # noqa: A002 - CuTe DSL's keyword
    """redux.sync: the reduction of value over the lanes of mask, in each of them. ReductionKind ADD, MIN, MAX,
    AND, OR, XOR, UMIN, UMAX on 32-bit integers (MIN/MAX signed, UMIN/UMAX unsigned, whatever the type's
    signedness); FMIN, FMAX on Float32, with abs (magnitudes) and nan (a NaN wins)."""
    k = ext.qualifier(getattr(kind, "name", kind), "redux_sync: kind", _REDUX_KINDS)
    value = _number(value, "redux_sync: value")
    t = type(value)
    if k in ("fmin", "fmax"):
        if t.ir_type != "f32":
            raise ext.user_error(f"redux_sync: {k.upper()} needs a Float32 value, got {t.__name__}", ext.DSLTypeError)
        params = {"type": "f32", "abs": str(int(bool(abs))), "nan": str(int(bool(nan)))}
        backend, entry = ext.select_instruction("primitives.redux_sync", params, {"value", "mask"})
        out = ext.emit_instruction(ext.builder(), backend, entry, {"value": [value.ir()], "mask": [_i32(mask)]},
                                   {"op": k[1:]})
        return cutlass.Float32.from_ir(out["result"][0])
    if abs or nan:
        raise ext.user_error("redux_sync: abs and nan apply to FMIN and FMAX only", ext.DSLValueError)
    if not t.is_integer or t.width != 32:
        raise ext.user_error(f"redux_sync: {k.upper()} needs a 32-bit integer, got {t.__name__}", ext.DSLTypeError)
    signed = k in ("min", "max")
    unsigned = k in ("umin", "umax")
    as_t = cutlass.Int32 if signed else cutlass.Uint32 if unsigned else t
    r = cute.arch.warp_redux_sync(as_t.from_ir(value.ir()), k.lstrip("u") if unsigned else k, mask)
    return t.from_ir(r.ir())


def bar_warp_sync(mask):
    """bar.warp.sync: the lanes of mask wait for each other and order their memory accesses (__syncwarp)."""
    return cute.arch.sync_warp(mask)


# --- cp.async ----------------------------------------------------------------------------------------------------

def cp_async_shared_global(dst, src, size, modifier="ca", src_size=None):
    """cp.async from global src to shared dst: size bytes (4, 8 or 16; "cg", which bypasses L1, only 16); with
    src_size, only that many are read and the rest zero-filled."""
    size = ext.static_int(size, "cp_async_shared_global: size")
    if size not in (4, 8, 16):
        raise ext.user_error(f"cp_async_shared_global: size must be 4, 8 or 16 bytes known while tracing, got "
                             f"{size!r}", ext.DSLValueError)
    mod = ext.qualifier(modifier, "cp_async_shared_global: modifier", ("ca", "cg"))
    if mod == "cg" and size != 16:
        raise ext.user_error(f"cp_async_shared_global: the cg modifier copies 16 bytes, not {size}",
                             ext.DSLValueError)
    for p, space, what in ((dst, "smem", "dst"), (src, "gmem", "src")):
        ptr = ext.address_of(p, f"cp_async_shared_global: {what}")
        if ptr.memspace != space:
            raise ext.user_error(f"cp_async_shared_global: {what} must be a pointer to "
                                 f"{'shared' if space == 'smem' else 'global'} memory, got {p!r}", ext.DSLTypeError)
    f = ext.manifest_class("primitives.cp_async_shared_global")
    if src_size is None:
        return f(dst, src, size=size, modifier=mod)
    return f(dst, src, src_size, size=size, modifier=mod)


def cp_async_mbarrier_arrive(mbar, noinc=False):
    """cp.async.mbarrier.arrive: an arrival on mbar once this thread's earlier cp.async have completed; noinc:
    without counting it as a pending arrival (the barrier's count must then include it)."""
    if noinc:
        return ext.manifest_class("cpasync.mbarrier_arrive_noinc")(mbar)
    return ext.manifest_class("primitives.cp_async_mbarrier_arrive")(mbar)


def cp_async_commit_group():
    """cp.async.commit_group: closes a group of this thread's cp.async issued so far."""
    return ext.manifest_class("cpasync.commit_group")()


def cp_async_wait_group(n=0):
    """cp.async.wait_group n: waits until at most n of this thread's cp.async groups are pending."""
    return ext.manifest_class("cpasync.wait_group")(n=n)


# --- red ---------------------------------------------------------------------------------------------------------

_RED_TYPES = {"f16": (16, cutlass.Float16), "bf16": (16, cutlass.BFloat16), "f32": (32, cutlass.Float32),
              "f64": (64, cutlass.Float64), "s32": (32, cutlass.Int32), "u32": (32, cutlass.Uint32),
              "b32": (32, cutlass.Int32), "s64": (64, cutlass.Int64), "u64": (64, cutlass.Uint64),
              "b64": (64, cutlass.Int64)}
# PTX's red: the types each operation takes
_RED_OPS = {"add": ("u32", "s32", "u64", "f32", "f64", "f16", "bf16"), "min": ("u32", "s32", "u64", "s64"),
            "max": ("u32", "s32", "u64", "s64"), "and": ("b32", "b64"), "or": ("b32", "b64"),
            "xor": ("b32", "b64"), "inc": ("u32",), "dec": ("u32",)}
RED_TYPES = _RED_TYPES  # the types red takes, for cute.arch.red's IR values
_RED_SPACES = {"gmem": ("global", "i64"), "smem": ("shared::cta", "i32"), "dsmem": ("shared::cluster", "i32")}


def red(op, type, ptr, value, mem_order=None, mem_scope=None):  # noqa: A002 - CuTe DSL's keyword
    """red: atomically combines value into the word at ptr (global, this CTA's shared memory, or another CTA's
    from mapa: the pointer's memory space picks the instruction), without a result. op is a ReductionOp, type a
    ReductionType; mem_order RELAXED (default) or RELEASE, mem_scope CTA, CLUSTER, GPU (default) or SYS."""
    o = ext.qualifier(op, "red: op", tuple(_RED_OPS))
    t = ext.qualifier(type, "red: type", tuple(_RED_TYPES))
    if t not in _RED_OPS[o]:
        raise ext.user_error(f"red: {o} takes {', '.join(_RED_OPS[o])}, not {t}", ext.DSLValueError)
    sem = ext.qualifier(mem_order if mem_order is not None else "relaxed", "red: mem_order", ("relaxed", "release"))
    scope = ext.qualifier(mem_scope if mem_scope is not None else "gpu", "red: mem_scope",
                          ("cta", "cluster", "gpu", "sys"))
    p = ext.address_of(ptr, "red: ptr")
    if p.memspace not in _RED_SPACES:
        raise ext.user_error(f"red: ptr must point to global or shared memory (this CTA's or, from mapa, another "
                             f"CTA's), got {ptr!r}", ext.DSLTypeError)
    space, addr_ty = _RED_SPACES[p.memspace]
    bits, dsl_t = _RED_TYPES[t]
    v = _number(value, "red: value")
    if builtins.type(v) is not dsl_t:
        v = dsl_t(v)
    b = ext.builder()
    backend, entry = ext.select_instruction("primitives.red", {"space": space, "bits": str(bits)}, {"addr", "value"})
    allowed = next(a.get("allowed", []) for a in entry.get("attributes", []) if a["name"] == "scope")
    if scope not in allowed:
        raise ext.user_error(f"red: mem_scope {scope} is not offered on {space} ({entry['id']} takes "
                             f"{', '.join(allowed)})", ext.DSLValueError)
    addr = b.op1("llvm.ptrtoint", [p.address(0)], addr_ty)
    ext.emit_instruction(b, backend, entry, {"addr": [addr], "value": [_bits(v, bits)]},
                         {"op": o, "type": t, "sem": sem, "scope": scope})


# --- byte permutes and saturating packs of 32-bit integers -----------------------------------------------------

def _word(x, what: str) -> int:
    """An i32 IR value of x: a Python int (taken as its low 32 bits) or a 32-bit DSL integer, bit for bit."""
    if isinstance(x, int) and not isinstance(x, bool):
        return cutlass.Int32(_bits_of_int(x)).ir()
    v = _number(x, what)
    t = builtins.type(v)
    if not t.is_integer or t.width != 32:
        raise ext.user_error(f"{what} must be a 32-bit integer (Int32, Uint32 or int), got {t.__name__}",
                             ext.DSLTypeError)
    return _bits(v, 32)


def _bits_of_int(x: int) -> int:
    x &= FULL_MASK
    return x - (1 << 32) if x >> 31 else x


def _asm(asm: str, constraints: str, operands: list) -> int:
    return ext.builder().op1("llvm.inline_asm", operands, "i32", f'asm_string = "{asm}", constraints = "{constraints}"')


_WORD_TYPES = (cutlass.Int32, cutlass.Uint32, cutlass.Float32)


def mov_b32(a, *, target_type=cutlass.Int32, loc=None, ip=None):
    """The 32 bits of `a` (an Int32, Uint32, Float32, or a Python int or float of those) as a target_type, bit for
    bit: float bits as an integer, for compares that NaN cannot upset, and back."""
    if target_type not in _WORD_TYPES:
        raise ext.user_error(f"mov_b32: target_type is Int32, Uint32 or Float32, got {target_type!r}",
                             ext.DSLTypeError)
    if isinstance(a, int) and not isinstance(a, bool):
        v = cutlass.Int32(_bits_of_int(a))
    else:
        v = _number(a, "mov_b32: a")
    if builtins.type(v) not in _WORD_TYPES:
        raise ext.user_error(f"mov_b32: a is a 32-bit Int32, Uint32 or Float32, got {builtins.type(v).__name__}",
                             ext.DSLTypeError)
    word = _bits(v, 32)
    if target_type.ir_type != "i32":
        word = ext.builder().op1("arith.bitcast", [word], target_type.ir_type)
    return target_type.from_ir(word)


_PERMUTE_MODES = ("default", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16")


def prmt(lo, selector, mode, *, hi=None, loc=None, ip=None):
    """prmt.b32: bytes picked from the 8 bytes of (hi, lo) (hi 0 when not given) as `selector` and `mode` (a
    PermuteMode) say, as an Int32."""
    m = ext.qualifier(mode, "prmt: mode", _PERMUTE_MODES)
    suffix = "" if m == "default" else f".{m}"
    ops = [_word(lo, "prmt: lo"), _word(0 if hi is None else hi, "prmt: hi"), _word(selector, "prmt: selector")]
    return cutlass.Int32.from_ir(_asm(f"prmt.b32{suffix} $0, $1, $2, $3;", "=r,r,r,r", ops))


def barrier(barrier_id=0, number_of_threads=None):
    """bar.sync on named barrier barrier_id, of number_of_threads threads (the whole CTA without)."""
    if number_of_threads is None:
        return ext.manifest_class("arch.barrier")(barrier_id)
    return ext.manifest_class("arch.barrier")(barrier_id, number_of_threads)


NAMES = {"barrier": barrier, "shfl_sync": shfl_sync, "vote_sync": vote_sync, "redux_sync": redux_sync,
         "bar_warp_sync": bar_warp_sync,
         "cp_async_shared_global": cp_async_shared_global, "cp_async_mbarrier_arrive": cp_async_mbarrier_arrive,
         "cp_async_commit_group": cp_async_commit_group, "cp_async_wait_group": cp_async_wait_group, "red": red,
         "prmt": prmt, "mov_b32": mov_b32}
