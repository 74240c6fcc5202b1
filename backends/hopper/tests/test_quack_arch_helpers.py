"""What QuACK's sm_90 kernels use of the Hopper backend beyond CuTe DSL's examples, for sm_90a and (Blackwell
extending Hopper) sm_100a: cutlass.experimental.primitives.griddepcontrol(action) for programmatic dependent launch
(an action other than WAIT or LAUNCH_DEPENDENTS is an error at the user's line), and `with cute.arch.elect_one():`
(its pipelines' elected releases), a block that runs in one lane of the warp."""
import re

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.cute.runtime import from_dlpack
from warpweave.experimental import primitives as prims

from dsl_helpers import target


def _ptx(body, arch):
    @cute.kernel
    def k(g: cute.Tensor):
        body(g)

    @cute.jit
    def h(a):
        k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(4, np.int32))).info["ptx"]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_griddepcontrol_waits_then_lets_dependents_launch(arch):
    def body(g):
        prims.griddepcontrol(prims.GridDepAction.WAIT)
        g[0] = 1
        prims.griddepcontrol(prims.GridDepAction.LAUNCH_DEPENDENTS)

    ptx = _ptx(body, arch)
    wait, launch = ptx.find("griddepcontrol.wait;"), ptx.find("griddepcontrol.launch_dependents;")
    store = ptx.find("st.global")
    assert 0 <= wait < store < launch


def test_griddepcontrol_refuses_other_actions_at_the_users_line():
    def body(g):
        prims.griddepcontrol("sleep")  # the user's line

    line = body.__code__.co_firstlineno + 1
    with pytest.raises(Exception, match="GridDepAction.WAIT or LAUNCH_DEPENDENTS") as info:
        _ptx(body, "sm_90a")
    assert f"test_quack_arch_helpers.py:{line}" in str(info.value)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_elect_one_as_a_block(arch):
    def body(g):
        with cute.arch.elect_one():
            g[0] = cutlass.Int32(7)
        assert isinstance(cute.arch.elect_one(), cutlass.Boolean)   # still a Boolean for `if` and library code
        g[1] = cutlass.Int32(8)

    ptx = _ptx(body, arch)
    assert ptx.count("elect.sync") == 2
    lines = ptx.splitlines()
    seven = next(i for i, l in enumerate(lines) if re.search(r"st\.global\.[bsu]32\s+\[[^]]+\],\s*7;", l) or
                 ("mov.b32" in l and ", 7;" in l))
    # the block's store is branched around (or predicated on) the election
    assert any(re.search(r"@%p\d+ bra|@!%p\d+ bra|@%p\d+ st", l) for l in lines[:seven + 2]), ptx
