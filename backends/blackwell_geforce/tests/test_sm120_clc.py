"""Cluster launch control on consumer Blackwell: ptxas 13.0 assembles clusterlaunchcontrol.try_cancel (the multicast
form included) and query_cancel for sm_120a and sm_121a, so CuTe DSL's cute.arch.issue_clc_query / clc_response
(QuACK's tile scheduler on sm_120) compile there as on sm_100a."""
import re
import shutil
import subprocess

import numpy as np
import pytest
from dsl_helpers import target

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import utils
from warpweave.cute.runtime import from_dlpack


def _ptx(arch, multicast):
    @cute.kernel
    def kern(g: cute.Tensor):
        smem = utils.SmemAllocator()
        resp = smem.allocate_array(cutlass.Int32, 4, byte_alignment=16)
        mbar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
        with cute.arch.elect_one():
            cute.arch.mbarrier_init(mbar, 1)
        cute.arch.mbarrier_init_fence()
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(mbar, 16)
            cute.arch.issue_clc_query(mbar, resp, multicast=multicast)
        cute.arch.mbarrier_wait(mbar, 0)
        x, y, z, valid = cute.arch.clc_response(resp)
        g[0] = x + y + z + valid

    @cute.jit
    def host(g: cute.Tensor):
        kern(g).launch(grid=[2, 1, 1], block=[32, 1, 1], cluster=[2 if multicast else 1, 1, 1])

    with target(arch):
        return cute.compile(host, from_dlpack(np.zeros(4, np.int32))).ptx


@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
@pytest.mark.parametrize("multicast", [True, False])
def test_clc_query_and_response_compile_for_consumer_blackwell(tmp_path, arch, multicast):
    ptx = _ptx(arch, multicast)
    request = re.findall(r"clusterlaunchcontrol\.try_cancel\S*", ptx)
    assert len(request) == 1 and ("multicast::cluster::all" in request[0]) == multicast, request
    assert "clusterlaunchcontrol.query_cancel.is_canceled" in ptx
    assert "clusterlaunchcontrol.query_cancel.get_first_ctaid" in ptx
    if shutil.which("ptxas"):
        src = tmp_path / "k.ptx"
        src.write_text(ptx)
        subprocess.run(["ptxas", f"-arch={arch}", str(src), "-o", str(tmp_path / "k.cubin")], check=True)
