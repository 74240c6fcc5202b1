"""cute.arch's reads of the per-thread and per-SM special registers beyond the indices (arch.py): lane masks, the
SM's and the warp slot's identity, the grid's identifier, the shared memory sizes, and the mask of the warp's
active lanes. Each is one NVVM intrinsic, which every target of warpweave has (aggr_smem_size: compute
capability 9.0 and later), so they are emitted here and not by a backend.

The result types are CuTe DSL's: the lane masks and the active mask are Uint32, the rest Int32."""
from __future__ import annotations

from ..atoms.atoms import current_cc
from ..base import trace
from ..base.errors import DSLTypeError, DSLValueError, user_location
from ..base.markers import accept_locations
from ..values.numeric import Int32, Uint32


def _intrinsic(name: str, ty: str = "i32"):
    if not trace.in_kernel():
        raise DSLTypeError(f"cute.arch.{name.rsplit('.', 1)[-1]}() is read inside a @cute.kernel function",
                           user_location(4))
    return trace.builder().op1("llvm.call_intrinsic", [], ty,
                               f'intrin = "{name}", op_bundle_sizes = array<i32>, '
                               "operandSegmentSizes = array<i32: 0, 0>")


def _sreg(reg: str, t=Int32, ty: str = "i32"):
    return t.from_ir(_intrinsic(f"llvm.nvvm.read.ptx.sreg.{reg}", ty))


def lanemask_lt(*, loc=None, ip=None):
    """The lanes below this one: bit n is set for n < lane_idx()."""
    return _sreg("lanemask.lt", Uint32)


def lanemask_le(*, loc=None, ip=None):
    """The lanes up to this one: bit n is set for n <= lane_idx()."""
    return _sreg("lanemask.le", Uint32)


def lanemask_eq(*, loc=None, ip=None):
    """This lane alone: 1 << lane_idx()."""
    return _sreg("lanemask.eq", Uint32)


def lanemask_ge(*, loc=None, ip=None):
    """The lanes from this one up: bit n is set for n >= lane_idx()."""
    return _sreg("lanemask.ge", Uint32)


def lanemask_gt(*, loc=None, ip=None):
    """The lanes above this one: bit n is set for n > lane_idx()."""
    return _sreg("lanemask.gt", Uint32)


def smid(*, loc=None, ip=None):
    """The SM this thread runs on, in [0, nsmid()). It may change while the thread runs (preemption): a hint."""
    return _sreg("smid")


def nsmid(*, loc=None, ip=None):
    """The bound of smid()'s range (SM identifiers need not be contiguous, so it may exceed the SM count)."""
    return _sreg("nsmid")


def gridid(*, loc=None, ip=None):
    """The launch's grid identifier (the low 32 bits of the register, as LLVM's intrinsic reads it)."""
    return _sreg("gridid")


def warpsize(*, loc=None, ip=None):
    """The warp's width in threads, read at run time (32; WARP_SIZE is the same number known while tracing)."""
    return _sreg("warpsize")


def nwarpid(*, loc=None, ip=None):
    """The number of warp slots of an SM: physical_warp_id()'s bound."""
    return _sreg("nwarpid")


def physical_warp_id(*, loc=None, ip=None):
    """The warp slot this warp occupies on its SM. It may change while the warp runs; warp_idx() is the stable
    index of the warp in its block."""
    return _sreg("warpid")


def total_smem_size(*, loc=None, ip=None):
    """The block's shared memory, static and dynamic, in the target's allocation units."""
    return _sreg("total_smem_size")


def aggr_smem_size(*, loc=None, ip=None):
    """The block's shared memory with the region the system reserves in it, in bytes (compute capability 9.0 and
    later)."""
    cc = current_cc()
    if cc is not None and cc < 90:
        raise DSLValueError(f"cute.arch.aggr_smem_size needs compute capability 9.0 or later; compiling for "
                            f"{trace.current().target['name']}", user_location(2))
    return _sreg("aggr_smem_size")


def get_dyn_smem_size(*, loc=None, ip=None):
    """The bytes of dynamic shared memory the kernel was launched with (as dynamic_smem_size)."""
    return _sreg("dynamic_smem_size")


def activemask(*, loc=None, ip=None):
    """The lanes of the warp executing this instruction together with this one (not exited, not diverged)."""
    return Uint32.from_ir(_intrinsic("llvm.nvvm.activemask"))


__all__ = ["lanemask_lt", "lanemask_le", "lanemask_eq", "lanemask_ge", "lanemask_gt", "smid", "nsmid", "gridid",
           "warpsize", "nwarpid", "physical_warp_id", "total_smem_size", "aggr_smem_size", "get_dyn_smem_size",
           "activemask"]

accept_locations(globals(), __all__)
