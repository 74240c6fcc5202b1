"""cute.arch.mbarrier_conditional_try_wait: a try-wait on an mbarrier phase that only the threads where a
condition holds make (the others answer True without touching the barrier), as CuTe DSL's kernels peek at a stage
only where they will consume it."""
from __future__ import annotations

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import ext


def mbarrier_conditional_try_wait(cond, mbar_ptr, phase, *, loc=None, ip=None):
    """Where cond holds, one try_wait on mbar_ptr's phase of parity `phase` (whether it has completed); True
    elsewhere. The wait is in a branch, so threads without cond never issue it."""
    if not isinstance(cond, (bool, cutlass.Boolean)):
        raise ext.user_error(f"mbarrier_conditional_try_wait: cond is a Boolean, got {type(cond).__name__}",
                             ext.DSLTypeError)
    if isinstance(cond, bool) or cond.is_static:
        return cute.arch.mbarrier_try_wait(mbar_ptr, phase) if bool(cond) else cutlass.Boolean(True)
    # the branch's answer lives in a register the branch writes (the compiler makes it a value of the join)
    done = cute.make_rmem_tensor((1,), cutlass.Int32)
    done[0] = cutlass.Int32(1)

    def wait():
        done[0] = cutlass.Int32(cute.arch.mbarrier_try_wait(mbar_ptr, phase))

    ext.when(cond, wait)
    return done[0] != cutlass.Int32(0)
