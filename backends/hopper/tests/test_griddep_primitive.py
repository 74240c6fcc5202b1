"""cutlass.experimental.primitives.griddepcontrol(action), as QuACK's GEMMs call it for programmatic dependent
launch: the Hopper backend serves it from its griddepcontrol primitives, for sm_90a and (Blackwell extending
Hopper) sm_100a; an action other than WAIT or LAUNCH_DEPENDENTS is an error at the user's line."""
import numpy as np
import pytest

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
    assert f"test_griddep_primitive.py:{line}" in str(info.value)
