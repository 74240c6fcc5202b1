"""A trace mounts the Python packages of its target's backends only, and a name looked up in one trace means, in a
later trace of another target, what that target's backends register for it.

A Hopper trace does not mount Blackwell's package (it is another generation's, and mounting it cost every Hopper
compile ~12 ms); a name Blackwell's package registers (a helper over the manifest's primitive of the same name) is
then found as the manifest's primitive. A later Blackwell trace in the same process must get Blackwell's registered
object, not what the Hopper trace found and kept."""
from dsl_helpers import compile_in_fresh_process

PROGRAM = r"""
import os
import numpy as np
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave._dsl.atoms import atoms
from warpweave._dsl.registry.backend_python import packages
from warpweave._dsl.registry.plugins import registry

registry.load()  # every plugin loaded before the first trace, as a program's look-ups outside a trace do
seen = {}


@cute.kernel
def k(gA: cute.Tensor):
    seen["clc_query_cancel"] = cute.arch.clc_query_cancel   # Blackwell's package registers this name
    seen["mounted"] = sorted(packages.mounted)


@cute.jit
def h(a: cute.Tensor):
    k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])


def compile_program():
    cute.compile(h, from_dlpack(np.zeros(32, np.float32)))
    arch = os.environ["WARPWEAVE_ARCH"]
    blackwell = arch.startswith("sm_10")
    if ("blackwell" in seen["mounted"]) != blackwell:
        raise AssertionError(f"{arch}: packages mounted while tracing: {seen['mounted']}")
    registered = atoms._python_names.get("arch.clc_query_cancel")
    if blackwell and (registered is None or seen["clc_query_cancel"] is not registered):
        raise AssertionError(f"{arch}: cute.arch.clc_query_cancel is {seen['clc_query_cancel']!r}, Blackwell's "
                             f"package registers {registered!r}")
    if not blackwell and registered is not None:
        raise AssertionError(f"{arch}: Blackwell's names were registered during a Hopper trace")
"""


def test_a_hopper_trace_then_a_blackwell_trace_get_each_generations_names(tmp_path):
    _, out = compile_in_fresh_process(tmp_path, "names_per_target.py", PROGRAM, "sm_90a", "sm_100a")
    assert out == {"sm_90a": "compiled", "sm_100a": "compiled"}, out
