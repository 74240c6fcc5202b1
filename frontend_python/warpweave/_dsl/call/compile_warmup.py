"""Warming the compiler up while the first kernel of a process is traced.

A process's first compile pays once for what every later one reuses: the MLIR context and its dialects, the
pass pipelines and their frozen pattern sets, LLVM's NVPTX TargetMachine, nvJitLink's ~100 MB library and its own
start-up, and the first touch of the compiler's code pages. On the Blackwell GEMM example that is ~50 ms of its
~150 ms compile. Tracing is Python and holds the GIL; the core compiles without it. So when a compile misses the
function cache, a thread compiles a small kernel for the same target and options through the whole pipeline while
the trace runs, and the real compile finds everything made. Once per (target, options) and process; a failure
there is ignored (the real compile reports its own).

The thread is the core's own (_core.start_background_compile), not a Python thread: a Python thread's join returns
before the thread has ended, while its thread_local destructors still run, and MLIR's per-thread caches lock their
MLIR context's mutex there. A fork in that window (most forks made right after such a join land in it) hands the
child that mutex held by a thread it does not have, and the child hangs at its first compile. The core's join
waits for the thread's very end.
"""
from __future__ import annotations

import atexit
import os
import threading

from ... import _core

# A kernel with what most kernels hold: special registers, integer arithmetic, a branch with a load and a store
# through a global pointer, a barrier (each dialect and conversion on the way runs once).
WARM_UP_MODULE = """module {
  llvm.func @__ww_warm_up(%0: !llvm.ptr<1> {llvm.align = 16 : i64}, %1: i32) attributes {nvvm.kernel} {
    %2 = "nvvm.read.ptx.sreg.tid.x"() : () -> (i32)
    %3 = "arith.cmpi"(%2, %1) <{predicate = 6 : i64}> : (i32, i32) -> (i1)
    "scf.if"(%3) ({
      %4 = "arith.muli"(%2, %1) : (i32, i32) -> (i32)
      %5 = "llvm.getelementptr"(%0, %4) <{elem_type = f32, rawConstantIndices = array<i32: -2147483648>}> : (!llvm.ptr<1>, i32) -> (!llvm.ptr<1>)
      %6 = "llvm.load"(%5) <{alignment = 4 : i64}> : (!llvm.ptr<1>) -> (f32)
      %7 = "arith.addf"(%6, %6) : (f32, f32) -> (f32)
      "llvm.store"(%7, %5) <{alignment = 4 : i64}> : (f32, !llvm.ptr<1>) -> ()
      "scf.yield"() : () -> ()
    }, {
    }) : (i1) -> ()
    "nvvm.barrier0"() : () -> ()
    llvm.return
  }
}
"""

_started: set = set()
_lock = threading.Lock()
threads: list = []   # the warm-ups started, _core.BackgroundCompile (tests join them)


def _join_all() -> None:  # with _lock held
    for t in threads:
        t.join()


def _before_fork() -> None:
    # A process forked while the warm-up holds the compiler's locks (MLIR's pipeline, nvJitLink's loader, the MLIR
    # context's per-thread caches while the thread ends) would inherit them held and hang at its first compile: a
    # fork waits for the warm-up to end (tens of ms, and only while one runs). _lock stays held across the fork:
    # a warm-up that another Python thread starts is then either listed and joined or not started, and the child
    # never inherits _lock held by a thread it does not have.
    _lock.acquire()
    _join_all()


def _at_exit() -> None:  # no compile runs on while the process tears its statics down
    with _lock:
        _join_all()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_lock.release, after_in_child=_lock.release)
atexit.register(_at_exit)


def enabled() -> bool:
    return os.environ.get("WARPWEAVE_COMPILER_WARMUP", "1") not in ("0", "off", "no", "false")


def start(target, opts) -> bool:
    """Starts warming the compiler for (target, opts) in a thread, unless done before; True when it started."""
    if not enabled():
        return False
    key = (target.name, target.llvm_cpu, target.ptx_features, target.jit_arch, opts.opt_level, opts.line_info)
    with _lock:
        if key in _started:
            return False
        _started.add(key)
    try:
        spawn(target, opts)
    except Exception:  # noqa: BLE001 - a warm-up only saves time; the kernel's own compile reports any problem
        return False
    return True


def spawn(target, opts):
    """Starts one warm-up for (target, opts) on a thread of the core's, whether or not one ran before; returns it."""
    # A ptxas subprocess as the cubin tool would only be started and thrown away: warm up MLIR and LLVM alone.
    want_cubin = os.environ.get("WARPWEAVE_CUBIN_TOOL", "").strip().lower() != "ptxas"
    target_dict = target.as_dict()
    with _lock:
        t = _core.start_background_compile(WARM_UP_MODULE, target_dict, opt_level=opts.opt_level,
                                           line_info=opts.line_info, want_cubin=want_cubin)
        threads.append(t)
    return t
