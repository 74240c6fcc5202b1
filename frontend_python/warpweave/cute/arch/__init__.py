"""cute.arch: thread and block indices, barriers, printf, warp collectives (shuffles, votes, reductions), atomics,
float min/max, clocks, and the backends' primitives (cp.async groups, mbarriers, fences, packed f32x2 arithmetic,
grid dependency control, ...): a name the loaded backends publish as "arch.<name>" is found here."""
import importlib as _importlib

from ..._dsl.atoms.atoms import (
    backend_python_name as _backend_python_name, mount_every_backend as _mount_every_backend,
    on_python_name_registered as _on_python_name_registered, primitive as _primitive,
)
from ..._dsl.base.errors import DSLTypeError as _DSLTypeError, user_location as _user_location
from ..._dsl.registry.arch_enum import arch_enum as _arch_enum
from ..._dsl.registry.backend_python import public_attribute as _public_attribute
from ..._dsl.device.arch import (  # noqa: F401
    add_packed_f32x2, barrier, block_dim, block_idx, clock, clock64, cp_async_commit_group, cp_async_wait_all,
    cp_async_wait_group, fma_packed_f32x2, fmax, fmin, globaltimer, globaltimer_lo, grid_dim,
    griddepcontrol_launch_dependents, griddepcontrol_wait, lane_idx, mul_hi, mul_packed_f32x2, mul_wide,
    sub_packed_f32x2, sync_threads, thread_idx, warp_idx,
)
from ..._dsl.device.atomics import (  # noqa: F401
    atomic_add, atomic_and, atomic_cas, atomic_exch, atomic_fmax, atomic_fmin, atomic_max, atomic_min, atomic_or,
    atomic_sub, atomic_xor,
)
from ..._dsl.device.fences import (
    fence_acq_rel_cluster, fence_acq_rel_cta, fence_acq_rel_gpu, fence_acq_rel_sys,
)  # noqa: F401
from ..._dsl.device.inline_ptx import inline_ptx  # noqa: F401
from ..._dsl.device.packed_f32x2_op import calc_packed_f32x2_op  # noqa: F401
from ..._dsl.device.math import rcp as _rcp
from ..._dsl.device.ordered_memory import load, store  # noqa: F401
from ..._dsl.device.thread_sleep import nanosleep  # noqa: F401
from ..._dsl.device.arch_exp import exp, exp2, exp_packed_f32x2  # noqa: F401 - the approximate exponentials
from ..._dsl.device.conversions import (  # noqa: F401
    cvt_f32_bf16, cvt_f32_tf32, cvt_f32x2_bf16x2, cvt_i4_bf16, cvt_i4_bf16_intrinsic, cvt_i4x2_to_bf16x2,
    cvt_i4x4_to_bf16x4, cvt_i4x8_to_bf16x8, cvt_i8_bf16, cvt_i8_bf16_intrinsic, cvt_i8x2_to_f32x2, cvt_i8x4_to_f32x4,
    sext_unpacked_i4_i8_intrinsic, sext_unpacked_i4x4_to_i8x4,
)
from ..._dsl.device.integer_bits import (  # noqa: F401
    brev, clz, log2_of_pow2_int, match_sync, shf,
)
from ..._dsl.device.smem_size import alloc_smem, dynamic_smem_size, get_dyn_smem  # noqa: F401
from ..._dsl.device.special_registers import (  # noqa: F401
    activemask, aggr_smem_size, get_dyn_smem_size, gridid, lanemask_eq, lanemask_ge, lanemask_gt, lanemask_le,
    lanemask_lt, nsmid, nwarpid, physical_warp_id, smid, total_smem_size, warpsize,
)
from ..._dsl.device.warp import (  # noqa: F401
    FULL_MASK, WARP_SIZE, make_warp_uniform, popc, shuffle_sync, shuffle_sync_bfly, shuffle_sync_down,
    shuffle_sync_op, shuffle_sync_up, sync_warp, vote_all_sync, vote_any_sync, vote_ballot_sync, vote_sync_op,
    vote_uni_sync, warp_reduction,
    warp_reduction_max, warp_reduction_min, warp_reduction_sum, warp_redux_sync,
)


# cute.arch's submodules are its own folder's (nvvm_wrappers) and the backends' modules (cute.arch.smem, ...: their
# manifests' module maps), which the backends' finder gives.


def rcp_approx(a, *, loc=None, ip=None):
    """1/a with the hardware's approximate reciprocal (rcp.approx.ftz)."""
    return _rcp(a, approx=True, ftz=True)


def atomic_max_float32(ptr, value, *, positive_only=True, loc=None, ip=None):
    """CuTe DSL's older name of atomic_fmax: positive_only=True promises that every value stored at ptr is
    non-negative (atomic_fmax's sign_bit=False)."""
    return atomic_fmax(ptr, value, sign_bit=False if positive_only else None)


def mbarrier_arrive(mbar_ptr, peer_cta_rank_in_cluster=None, *, loc=None, ip=None):
    """One arrival on the mbarrier at mbar_ptr, or with peer_cta_rank_in_cluster on the one at the same offset in
    that CTA of the cluster: the loaded backends' arch.mbarrier_arrive / arch.mbarrier_arrive_cluster."""
    name = "arch.mbarrier_arrive" if peer_cta_rank_in_cluster is None else "arch.mbarrier_arrive_cluster"
    f = _primitive(name)
    if f is None:
        raise _DSLTypeError(f"cute.arch.mbarrier_arrive: no loaded backend offers {name}", _user_location(2))
    return f(mbar_ptr) if peer_cta_rank_in_cluster is None else f(mbar_ptr, peer_cta_rank_in_cluster)


def mbarrier_arrive_and_expect_tx(mbar_ptr, bytes, peer_cta_rank_in_cluster=None, *, loc=None, ip=None):
    """An arrival that also expects `bytes` more transaction bytes on the mbarrier at mbar_ptr, or with
    peer_cta_rank_in_cluster on the one at the same offset in that CTA of the cluster: the loaded backends'
    arch.mbarrier_arrive_and_expect_tx / arch.mbarrier_arrive_and_expect_tx_cluster."""
    name = "arch.mbarrier_arrive_and_expect_tx" + ("" if peer_cta_rank_in_cluster is None else "_cluster")
    f = _primitive(name)
    if f is None:
        raise _DSLTypeError(f"cute.arch.mbarrier_arrive_and_expect_tx: no loaded backend offers {name}",
                            _user_location(2))
    if peer_cta_rank_in_cluster is None:
        return f(mbar_ptr, bytes)
    return f(mbar_ptr, bytes, peer_cta_rank_in_cluster)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    if name == "Arch":  # CuTe DSL names the architectures here too; made of the backends' targets when first named
        return _arch_enum()
    if name == "target_version":  # CuTe DSL names it here too; it needs ctypes, which importing cute does not load
        return _importlib.import_module("warpweave._dsl.base.cuda_version").target_version
    # A backend's Python may define arch.<name> itself (warpweave.ext.register_python_name), e.g. a helper
    # composed of several of its primitives; otherwise the manifests' primitive of that name.
    f = _backend_python_name("arch." + name) or _primitive("arch." + name)
    if f is None and _mount_every_backend():
        # A trace loads only its target's backends: a name of another generation (Hopper's cluster_arrive while
        # compiling for sm_80) is found once every backend is, and selecting it then names the targets that have it.
        f = _backend_python_name("arch." + name) or _primitive("arch." + name)
    if f is None:
        f = _public_attribute(__name__, name)   # a backend's submodule (cute.arch.smem)
    if f is None:
        raise AttributeError(f"cute.arch has no {name}, and no loaded backend offers arch.{name}")
    globals()[name] = f
    _resolved.add(name)
    return f


_resolved: set = set()  # the names __getattr__ found and kept as attributes


def _forget(qualified: str) -> None:
    # A backend mounted after a name was found here may register its own object for it (a helper over the
    # manifest's primitive): the name is looked up again.
    if qualified.startswith("arch.") and qualified[5:] in _resolved:
        _resolved.discard(qualified[5:])
        globals().pop(qualified[5:], None)


_on_python_name_registered(_forget)
