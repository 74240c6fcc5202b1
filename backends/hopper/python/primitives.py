"""cutlass.experimental.primitives of this backend's instructions (sm_90 on), with CuTe DSL's signatures.

The manifest's `primitives.*` entries serve as they are where their operands are the signature
(mbarrier_try_wait_parity with or without time_limit, mbarrier_try_wait_timelimit, the non-tensor bulk copies);
the functions here adapt the others: mbarrier_arrive (the entry chosen by the pointer's memory space: this CTA's
barrier returns its state, another CTA's, from mapa, does not), mapa (a pointer in, a pointer into the peer CTA's
shared memory out), elect_sync (a membermask), ldmatrix / stmatrix (their shapes and formats as parameters), and
the names of instructions the manifest has under cute.arch (mbarrier_init, barrier_cluster_*, fences, bulk
groups). A primitive on a target without its instruction is refused by the selection, naming the targets that
have it.
"""
from __future__ import annotations

import warpweave as cutlass
from warpweave import ext

from . import dsmem

FULL_MASK = 0xFFFFFFFF


def _shared_pointer(x, what: str, spaces=("smem", "dsmem")):
    p = ext.address_of(x, what)
    if p.memspace not in spaces:
        raise ext.user_error(f"{what} must be a pointer to shared memory ({' or '.join(spaces)}), got {x!r}",
                             ext.DSLTypeError)
    return p


def _address32(p) -> int:
    return ext.builder().op1("llvm.ptrtoint", [p.address(0)], "i32")


# --- elect, mbarrier -----------------------------------------------------------------------------------------

def elect_sync(membermask=FULL_MASK):
    """elect.sync: true in exactly one active lane of membermask (the lowest), false in the others."""
    mask = ext.static_int(membermask, "elect_sync: membermask") & FULL_MASK
    backend, entry = ext.select_instruction("arch.elect_one", {}, set())
    out = ext.emit_instruction(ext.builder(), backend, entry, {}, {"membermask": hex(mask)})
    return cutlass.Boolean.from_ir(out["elected"][0])


def mbarrier_arrive(mbar, scope=None, count=None, relaxed=None):
    """One arrival (count arrivals, with count) on mbar with release semantics at scope (MemScope.CTA by default,
    or CLUSTER), or with relaxed=True none (the program orders its writes with a fence of its own). On this CTA's
    barrier it returns the barrier's state before the arrival (an Int64 token for mbarrier_try_wait_timelimit); on
    another CTA's (a mapa pointer) it returns nothing."""
    s = ext.qualifier(scope if scope is not None else "cta", "mbarrier_arrive: scope", ("cta", "cluster"))
    if relaxed is not None and not isinstance(relaxed, bool):
        raise ext.user_error(f"mbarrier_arrive: relaxed is a Python bool, got {relaxed!r}", ext.DSLTypeError)
    p = _shared_pointer(mbar, "mbarrier_arrive: mbar")
    space = "shared::cta" if p.memspace == "smem" else "shared::cluster"
    inputs = {"mbar": [_address32(p)]}
    if count is not None:
        inputs["count"] = [cutlass.Int32(count).ir()]
    backend, entry = ext.select_instruction("primitives.mbarrier_arrive", {"space": space}, set(inputs))
    out = ext.emit_instruction(ext.builder(), backend, entry, inputs,
                               {"scope": s, "sem": "relaxed" if relaxed else "release"})
    if "state" in out:
        return cutlass.Int64.from_ir(out["state"][0])
    return None


def mbarrier_wait_parity(mbar, phase, kind=None, *, loc=None, ip=None):
    """Waits until the phase of parity `phase` of mbar has completed; with kind MBarrierWait.TRY, one
    try_wait (which may block for a while) and MBarrierWait.TEST, one test_wait (which does not): then it returns
    whether the phase has completed, and the program decides whether to wait (a peek at the next stage)."""
    if kind is None:
        return ext.manifest_class("arch.mbarrier_wait")(mbar, phase)
    k = ext.qualifier(kind, "mbarrier_wait_parity: kind", ("try", "test"))
    name = "primitives.mbarrier_try_wait_parity" if k == "try" else "arch.mbarrier_test_wait"
    return ext.manifest_class(name)(mbar, phase)


# --- clusters ------------------------------------------------------------------------------------------------

def mapa(ptr, cta_rank):
    """The pointer at the same offset as ptr (this CTA's shared memory) in the shared memory of the cluster's CTA
    of rank cta_rank: a pointer of the "dsmem" space (shared::cluster), for loads, stores, red and arrivals."""
    return dsmem.map_dsmem_ptr(_shared_pointer(ptr, "mapa: ptr", ("smem",)), cta_rank)


def cp_async_bulk_wait_group(n=0, read=False, *, loc=None, ip=None):
    """cp.async.bulk.wait_group n: waits until at most n of this thread's bulk groups are pending (read: until
    they have only finished reading their sources). Also cute.arch.cp_async_bulk_wait_group(n, read=...)."""
    if not isinstance(read, bool):
        raise ext.user_error(f"cp_async_bulk_wait_group: read is a Python bool, got {read!r}", ext.DSLTypeError)
    name = "arch.cp_async_bulk_wait_group_read" if read else "arch.cp_async_bulk_wait_group"
    return ext.manifest_class(name)(n=ext.static_int(n, "cp_async_bulk_wait_group: n"))


# --- bulk reductions --------------------------------------------------------------------------------------------

# (operation, type, noftz) -> the manifest's group of cp.reduce.async.bulk with a global destination
_BULK_REDUCE = {}
for _group, _ops, _types, _suffix in (
        ("bitwise", ("and", "or", "xor"), ("b32", "b64"), False), ("counter", ("inc", "dec"), ("u32",), False),
        ("add", ("add",), ("u32", "s32", "u64", "f32", "f64"), False), ("add_noftz", ("add",), ("f16", "bf16"), True),
        ("minmax", ("min", "max"), ("u32", "s32", "u64", "s64", "f16", "bf16"), False)):
    _BULK_REDUCE.update({(o, t, _suffix): _group for o in _ops for t in _types})
_REDUCE_OPS = ("add", "min", "max", "inc", "dec", "and", "or", "xor")
_REDUCE_TYPES = ("f16", "bf16", "b32", "b64", "u32", "u64", "s32", "s64", "f32", "f64")


def cp_reduce_async_bulk_global_shared_cta(dst, src, size, *, op="add", type="bf16", noftz=False, l2_cache_hint=None,
                                           loc=None, ip=None):
    """cp.reduce.async.bulk from this CTA's shared memory to global memory (no tensor map): the size bytes at src
    (a multiple of 16, both addresses 16-byte aligned) reduce element by element into dst with op (CpReduceOp) over
    type (CpReduceType), completing with this thread's bulk groups (commit, then wait). noftz: the f16/bf16 add
    keeps subnormals (the only form PTX has of that add). l2_cache_hint: a 64-bit L2 cache policy."""
    what = "cp_reduce_async_bulk_global_shared_cta"
    o = ext.qualifier(op, f"{what}: op", _REDUCE_OPS)
    t = ext.qualifier(type, f"{what}: type", _REDUCE_TYPES)
    if not isinstance(noftz, bool):
        raise ext.user_error(f"{what}: noftz is a Python bool, got {noftz!r}", ext.DSLTypeError)
    group = _BULK_REDUCE.get((o, t, noftz))
    if group is None:
        pairs = ", ".join(f"{a}{'.noftz' if n else ''}.{b}" for a, b, n in _BULK_REDUCE)
        hint = (" (the f16/bf16 add takes noftz=True)" if o == "add" and t in ("f16", "bf16") else
                " (noftz applies to the f16/bf16 add only)" if noftz else "")
        raise ext.user_error(f"{what}: PTX has no reduction {o}{'.noftz' if noftz else ''}.{t}{hint}; it has "
                             f"{pairs}", ext.DSLValueError)
    d = ext.address_of(dst, f"{what}: dst")
    if d.memspace != "gmem":
        raise ext.user_error(f"{what}: dst must be a pointer to global memory, got {dst!r}", ext.DSLTypeError)
    sp = _shared_pointer(src, f"{what}: src", ("smem",))
    b = ext.builder()
    inputs = {"dst": [b.op1("llvm.ptrtoint", [d.address(0)], "i64")], "src": [_address32(sp)],
              "size": [cutlass.Int32(size).ir()]}
    if l2_cache_hint is not None:
        inputs["hint"] = [cutlass.Int64(l2_cache_hint).ir()]
    backend, entry = ext.select_instruction("primitives.cp_reduce_async_bulk_global_shared_cta",
                                            {"group": group, "hint": str(l2_cache_hint is not None)}, set(inputs))
    ext.emit_instruction(b, backend, entry, inputs, {"op": o, "type": t})


# --- fences, registers ---------------------------------------------------------------------------------------

_ASYNC_FENCES = {("async", None): "arch.fence_proxy_async", ("async.global", None): "arch.fence_proxy_async_global",
                 ("async.shared", "shared::cta"): "arch.fence_proxy_async_shared_cta",
                 ("async.shared", "shared::cluster"): "arch.fence_proxy_async_shared_cluster"}


def fence_proxy(kind, space=None):
    """fence.proxy between the generic proxy and the async one (TMA, bulk copies, wgmma): kind Proxy.ASYNC (all
    state spaces), ASYNC_GLOBAL, or ASYNC_SHARED with space SharedSpace.shared_cta / shared_cluster (or the same
    as strings, "async_shared")."""
    k = ext.qualifier(kind.replace("_", ".") if isinstance(kind, str) else kind, "fence_proxy: kind",
                   ("async", "async.global", "async.shared"))
    sp = None
    if k == "async.shared":
        sp = ext.qualifier(space if space is not None else "shared::cta", "fence_proxy: space",
                        ("shared::cta", "shared::cluster"))
    elif space is not None:
        raise ext.user_error(f"fence_proxy: space applies to Proxy.ASYNC_SHARED, not to {kind!r}", ext.DSLValueError)
    return ext.manifest_class(_ASYNC_FENCES[(k, sp)])()


def _tensormap_proxies(what, from_proxy, to_proxy):
    src = ext.qualifier(from_proxy, f"{what}: from_proxy", ("generic",))
    dst = ext.qualifier(to_proxy, f"{what}: to_proxy", ("tensormap",))
    return src, dst


def fence_proxy_release(scope, from_proxy="generic", to_proxy="tensormap"):
    """A release fence from the generic proxy to the tensormap proxy at scope (MemScope): a tensor map written
    with generic stores is published to TMA."""
    _tensormap_proxies("fence_proxy_release", from_proxy, to_proxy)
    s = ext.qualifier(scope, "fence_proxy_release: scope", ("cta", "cluster", "gpu", "sys"))
    return ext.manifest_class("primitives.fence_proxy_release")(scope=s)


def fence_proxy_acquire(scope, ptr, size=128, from_proxy="generic", to_proxy="tensormap"):
    """The acquire side: the size (128) bytes of the tensor map at ptr, released by their writer, become visible to
    this thread's tensormap-proxy reads."""
    _tensormap_proxies("fence_proxy_acquire", from_proxy, to_proxy)
    s = ext.qualifier(scope, "fence_proxy_acquire: scope", ("cta", "cluster", "gpu", "sys"))
    if ext.static_int(size, "fence_proxy_acquire: size") != 128:
        raise ext.user_error(f"fence_proxy_acquire: a tensor map is 128 bytes, got size {size}", ext.DSLValueError)
    if isinstance(ptr, (int, cutlass.Numeric)):
        address = cutlass.Int64(ptr).ir()   # a generic address computed by the program
    else:
        address = ext.builder().op1("llvm.ptrtoint", [ext.address_of(ptr, "fence_proxy_acquire: ptr").address(0)],
                                    "i64")
    backend, entry = ext.select_instruction("primitives.fence_proxy_acquire", {}, {"addr"})
    ext.emit_instruction(ext.builder(), backend, entry, {"addr": [address]}, {"scope": s})


def fence_sync_restrict(order, *, loc=None, ip=None):
    """fence.sync_restrict at cluster scope: MemOrder.RELEASE orders this thread's writes to its CTA's shared memory
    (shared::cta) before what follows, e.g. a relaxed arrival on a peer CTA's mbarrier; MemOrder.ACQUIRE makes the
    cluster's shared-memory writes (shared::cluster) released to this thread visible to what follows."""
    o = ext.qualifier(order, "fence_sync_restrict: order", ("acquire", "release"))
    backend, entry = ext.select_instruction("primitives.fence_sync_restrict", {"order": o}, set())
    ext.emit_instruction(ext.builder(), backend, entry, {}, {})


def setmaxregister(n, action):
    """setmaxnreg: the warpgroup's threads raise (SetMaxRegisterAction.INCREASE) or lower (DECREASE) their register
    budget to n (24..256, a multiple of 8)."""
    a = ext.qualifier(action, "setmaxregister: action", ("inc", "dec"))
    name = "arch.setmaxregister_increase" if a == "inc" else "arch.setmaxregister_decrease"
    return ext.manifest_class(name)(n=ext.static_int(n, "setmaxregister: n"))


# --- ldmatrix / stmatrix -------------------------------------------------------------------------------------

def _matrix_params(what, num, layout, shape, fmt, shapes):
    sh = ext.qualifier(shape, f"{what}: shape", shapes)
    # the 16-row shapes exist for 8-bit elements only
    fmt = fmt if fmt is not None else "b16" if sh == "m8n8" else "b8"
    return {"shape": sh, "num": str(ext.static_int(num, f"{what}: num")),
            "layout": ext.qualifier(layout, f"{what}: layout", ("row", "col")),
            "format": ext.qualifier(fmt, f"{what}: format", ("b16", "b8", "b8x16.b6x16_p32", "b8x16.b4x16_p64"))}


def ldmatrix(ptr, num, layout, shape="m8n8", src_format=None):
    """ldmatrix: the warp loads matrices from shared memory (each lane giving one row's address); returns this
    lane's num 32-bit words (Int32), MMALayout.COL transposing. LoadShape.M8N8 with b16 (num 1, 2, 4 matrices);
    LoadShape.M16N16 with b8, transposed (num 2 or 4 words: one or two matrices) where the target has it."""
    params = _matrix_params("ldmatrix", num, layout, shape, src_format, ("m8n8", "m16n16", "m8n16"))
    p = _shared_pointer(ptr, "ldmatrix: ptr", ("smem",))
    backend, entry = ext.select_instruction("primitives.ldmatrix", params, {"addr"})
    out = ext.emit_instruction(ext.builder(), backend, entry, {"addr": [_address32(p)]})
    return [cutlass.Int32.from_ir(w) for w in out["words"]]


def stmatrix(ptr, words, layout, shape="m8n8", dst_format=None):
    """stmatrix: the warp stores matrices to shared memory from this lane's 32-bit words (a list or vector of
    them, one a matrix), MMALayout.COL transposing. StoreShape.M8N8 with b16 (1, 2, 4 matrices); StoreShape.M16N8
    with b8, transposed, where the target has it."""
    ws = list(words)
    params = _matrix_params("stmatrix", len(ws), layout, shape, dst_format, ("m8n8", "m16n8"))
    p = _shared_pointer(ptr, "stmatrix: ptr", ("smem",))
    vals = []
    for w in ws:
        w = w if isinstance(w, cutlass.Numeric) else cutlass.Int32(w)
        if type(w).width != 32:
            raise ext.user_error(f"stmatrix: words are 32-bit (packed) values, got {type(w).__name__}",
                                 ext.DSLTypeError)
        v = w.ir()
        vals.append(v if type(w).ir_type == "i32" else ext.builder().op1("arith.bitcast", [v], "i32"))
    backend, entry = ext.select_instruction("primitives.stmatrix", params, {"addr", "words"})
    ext.emit_instruction(ext.builder(), backend, entry, {"addr": [_address32(p)], "words": vals})


def alias(name):
    # the manifest's function of that name, made when first called (the manifest of the target being traced)
    def call(*args, **kwargs):
        return ext.manifest_class(name)(*args, **kwargs)

    call.__name__ = name.split(".")[-1]
    return call


NAMES = {"elect_sync": elect_sync, "mbarrier_arrive": mbarrier_arrive, "mbarrier_wait_parity": mbarrier_wait_parity,
         "mapa": mapa, "ldmatrix": ldmatrix, "stmatrix": stmatrix,
         "cp_async_bulk_wait_group": cp_async_bulk_wait_group, "fence_proxy": fence_proxy,
         "fence_proxy_release": fence_proxy_release, "fence_proxy_acquire": fence_proxy_acquire,
         "setmaxregister": setmaxregister, "fence_sync_restrict": fence_sync_restrict,
         "cp_reduce_async_bulk_global_shared_cta": cp_reduce_async_bulk_global_shared_cta}
ALIASES = {"mbarrier_init": "arch.mbarrier_init", "mbarrier_inval": "arch.mbarrier_inval",
           "mbarrier_arrive_expect_tx": "arch.mbarrier_arrive_and_expect_tx",
           "mbarrier_expect_tx": "arch.mbarrier_expect_tx",
           "fence_mbarrier_init": "arch.mbarrier_init_fence", "barrier_cluster_arrive": "arch.cluster_arrive",
           "barrier_cluster_arrive_relaxed": "arch.cluster_arrive_relaxed", "barrier_cluster_wait": "arch.cluster_wait",
           "cluster_ctarank": "arch.block_rank_in_cluster",
           "cp_async_bulk_commit_group": "arch.cp_async_bulk_commit_group"}
