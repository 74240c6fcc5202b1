"""The compiler warm-up that overlaps a process's first trace (compile_warmup.py): it runs once per target and
options, compiles through the whole pipeline for that target, never changes what the kernel compiles to, and can be
turned off. Also the lazy per-atom coordinates cute.gemm hands the operand kinds."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = r"""
import json, sys
sys.path.insert(0, {examples!r})
import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import make_fake_tensor
from warpweave._dsl.call import compile_warmup
import elementwise_add as ew
ts = [make_fake_tensor(cutlass.Float16, (512, 256)).mark_layout_dynamic() for _ in range(3)]
c = cute.compile(ew.elementwise_add, *ts)
for t in compile_warmup.threads:
    t.join()
print(json.dumps({{"cubin": c.cubin.hex(), "warm_ups": len(compile_warmup.threads)}}))
"""


def _child(warmup: str):
    env = dict(os.environ, WARPWEAVE_DISABLE_CACHE="1", WARPWEAVE_ARCH="sm_90a", WARPWEAVE_COMPILER_WARMUP=warmup)
    code = _CHILD.format(examples=os.path.join(ROOT, "frontend_python", "examples"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_warm_up_runs_once_and_leaves_the_kernel_as_it_was():
    on, off = _child("1"), _child("0")
    assert on["warm_ups"] == 1 and off["warm_ups"] == 0
    assert on["cubin"] == off["cubin"]


def test_warm_up_starts_once_per_target_and_options():
    from warpweave._dsl.call import compile_warmup
    from warpweave._dsl.base.compile_options import CompileOptions
    from warpweave._dsl.registry.target import target_named

    t80 = target_named("sm_80")
    opts = CompileOptions()
    first = compile_warmup.start(t80, opts)
    again = compile_warmup.start(t80, opts)
    assert again is False                     # the same target and options: never twice
    assert first in (True, False)             # False when an earlier test of this process compiled for sm_80
    other = CompileOptions(opt_level=1)
    assert compile_warmup.start(t80, other) is True
    for t in compile_warmup.threads:
        t.join()
        assert t.done


def test_warm_up_module_compiles_for_every_target():
    from warpweave import _core
    from warpweave._dsl.call import compile_warmup
    from warpweave._dsl.registry.target import target_named

    for arch in ("sm_80", "sm_90a", "sm_100a"):
        r = _core.compile(compile_warmup.WARM_UP_MODULE, target_named(arch).as_dict(), want_cubin=False)
        assert ".entry __ww_warm_up" in r["ptx"] and "bar.sync" in r["ptx"]


def test_atom_coordinates_are_the_list_they_stand_for():
    from warpweave._dsl.atoms.mma import _AtomCoords

    for count, rest in ((0, (1,)), (1, (0, 3)), (7, (2,)), (33, (1, 4))):
        c = _AtomCoords(count, *rest)
        want = [(v, *rest) for v in range(count)]
        assert len(c) == count and list(c) == want and [c[i] for i in range(count)] == want
        assert c[1:4] == want[1:4] and list(reversed(c)) == want[::-1]
        if count:
            assert c[-1] == want[-1] and want[0] in c
        for bad in (count, -count - 1):
            try:
                c[bad]
            except IndexError:
                pass
            else:
                raise AssertionError(f"index {bad} of {count} coordinates")


_FORK_CHILD = r"""
import os, sys
from warpweave import _core
from warpweave._dsl.call import compile_warmup
from warpweave._dsl.base.compile_options import CompileOptions
from warpweave._dsl.registry.target import target_named
t = target_named("sm_90a")
assert compile_warmup.start(t, CompileOptions())
pid = os.fork()   # at once, while the warm-up compiles: the fork waits for it
if pid == 0:
    r = _core.compile(compile_warmup.WARM_UP_MODULE, t.as_dict(), want_cubin=False)
    os._exit(0 if ".entry __ww_warm_up" in r["ptx"] else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
"""


def test_a_fork_during_the_warm_up_can_compile():
    env = dict(os.environ, WARPWEAVE_DISABLE_CACHE="1")
    env.pop("WARPWEAVE_COMPILER_WARMUP", None)
    r = subprocess.run([sys.executable, "-c", _FORK_CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-1] == "child 0"


# Warm-ups and forks in a row, each fork at once after its warm-up started. The property: when a fork happens, the
# warm-up's thread has ended, not only its compile (a thread that is ending still runs its thread_local destructors,
# and MLIR's lock the MLIR context's mutex there: a child forked then hung at its first compile). At each fork the
# child counts the other threads still running their own code: a thread the kernel lists a little longer, already in
# its exit (PF_EXITING, 0x4 in /proc's stat flags), counts as ended. A join that returns early shows in most forks;
# the children's compiles (under an alarm, so that a hang fails fast) check what the count is for.
_FORKS_CHILD = r"""
import json, os, signal, threading, warnings
warnings.simplefilter("ignore", DeprecationWarning)   # Python's warning of a fork with threads: counted below

def running_threads():
    n = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == threading.get_native_id():
            continue
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:   # gone since the listing
            continue
        n += not int(stat[stat.rindex(")") + 2:].split()[6]) & 0x4
    return n

threads_at_fork = []
# Registered before compile_warmup's own hook: before-fork hooks run last registered first, so this runs after its join.
os.register_at_fork(before=lambda: threads_at_fork.append(running_threads()))
from warpweave import _core
from warpweave._dsl.call import compile_warmup
from warpweave._dsl.base.compile_options import CompileOptions
from warpweave._dsl.registry.target import target_named
t = target_named("sm_90a")
codes = []
for _ in range(20):
    compile_warmup.spawn(t, CompileOptions())
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)
        r = _core.compile(compile_warmup.WARM_UP_MODULE, t.as_dict(), want_cubin=False)
        os._exit(0 if ".entry __ww_warm_up" in r["ptx"] else 3)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps({"codes": codes, "threads_at_fork": threads_at_fork}))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads a process's threads from /proc")
def test_forks_right_after_warm_ups_find_them_ended():
    env = dict(os.environ, WARPWEAVE_DISABLE_CACHE="1")
    env.pop("WARPWEAVE_COMPILER_WARMUP", None)
    r = subprocess.run([sys.executable, "-c", _FORKS_CHILD], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["threads_at_fork"] == [0] * 20   # no other thread runs at any fork
    assert out["codes"] == [0] * 20
