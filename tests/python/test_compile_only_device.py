"""utils.HardwareInfo in a compile-only run without a GPU: a stand-in device of the target (its manifest's shared
memory and clusters, a documented multiprocessor count that WARPWEAVE_COMPILE_ONLY_SMS overrides), so that
programs that size persistent grids by it compile; outside a compile-only run it still needs a device."""
import os

import pytest

import warpweave as cutlass
from warpweave import _core
from warpweave._dsl.registry import compile_only

from dsl_helpers import has_gpu, target
from torch_interpreter import torch_python

pytestmark = pytest.mark.skipif(has_gpu(), reason="checks the stand-in used where no GPU is present")


def test_stand_in_follows_the_target(monkeypatch):
    monkeypatch.delenv("WARPWEAVE_COMPILE_ONLY_SMS", raising=False)
    from warpweave.utils.hardware_info import smem_capacity_of_capability

    for arch, cc in (("sm_90a", (9, 0)), ("sm_80", (8, 0))):
        with target(arch), compile_only.compile_only():
            hw = cutlass.utils.HardwareInfo()
            assert hw.get_compute_capability() == cc
            assert hw.get_device_multiprocessor_count() == compile_only.STAND_IN_SMS
            assert hw.get_smem_capacity_in_bytes() == smem_capacity_of_capability(cc[0] * 10 + cc[1]) > 0
            assert hw.get_l2_cache_size_in_bytes() == compile_only.STAND_IN_L2_BYTES
    with target("sm_90a"), compile_only.compile_only():
        assert cutlass.utils.HardwareInfo().get_max_active_clusters(2) == compile_only.STAND_IN_SMS // 2
    with target("sm_80"), compile_only.compile_only():
        with pytest.raises(RuntimeError, match="clusters"):
            cutlass.utils.HardwareInfo().get_max_active_clusters(2)   # sm_80 has no clusters


def test_multiprocessor_count_override(monkeypatch):
    monkeypatch.setenv("WARPWEAVE_COMPILE_ONLY_SMS", "114")
    with target("sm_90a"), compile_only.compile_only():
        hw = cutlass.utils.HardwareInfo()
        assert hw.get_device_multiprocessor_count() == 114 and hw.get_max_active_clusters(4) == 28
    monkeypatch.setenv("WARPWEAVE_COMPILE_ONLY_SMS", "many")
    with target("sm_90a"), compile_only.compile_only(), pytest.raises(ValueError, match="positive integer"):
        cutlass.utils.HardwareInfo()


def test_outside_a_compile_only_run_a_device_is_needed():
    assert not (_core.driver_available() and _core.device_count() > 0)
    with target("sm_90a"), pytest.raises(RuntimeError, match="needs a CUDA device"):
        cutlass.utils.HardwareInfo()


_TORCH_SCRIPT = r"""
import torch
from warpweave._dsl.registry import compile_only
with compile_only.compile_only():
    p = torch.cuda.get_device_properties(0)
    print(torch.cuda.get_device_capability(), torch.cuda.get_device_capability("cuda:0"), (p.major, p.minor),
          p.multi_processor_count, torch.cuda.current_device())
print(torch.cuda.get_device_capability is not None)
"""


def test_torch_sees_the_stand_in_device_of_the_target():
    """Programs that choose their kernels by torch's device capability (QuACK's configs) choose the target's."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    py = torch_python()
    env = dict(os.environ, WARPWEAVE_ARCH="sm_90a", PYTHONPATH=os.path.join(root, "frontend_python"))
    p = subprocess.run([py, "-c", _TORCH_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.splitlines()[0] == f"(9, 0) (9, 0) (9, 0) {compile_only.STAND_IN_SMS} 0", p.stdout


def test_cuda_tensors_of_a_compile_only_run_are_cuda_aligned():
    # Programs promise cudaMalloc's alignment of their tensors (from_dlpack(t, assumed_align=128)): the host tensors
    # standing in for CUDA ones have it, whatever torch's CPU allocator gives, with their values (and bytes) kept.
    torch = pytest.importorskip("torch")
    from warpweave.cute.runtime import from_dlpack

    with target("sm_100a"), compile_only.compile_only():
        made = [torch.arange(37, dtype=torch.float32, device="cuda"),
                torch.empty(3, 5, dtype=torch.float16, device="cuda").fill_(2.5),
                torch.arange(24).reshape(4, 6).t().to("cuda"),
                torch.ones(7).cuda(),
                torch.zeros(9, dtype=torch.uint8).view(torch.float4_e2m1fn_x2).to(device="cuda")]
        for t in made:
            base = t.data_ptr() - t.storage_offset() * t.element_size()
            assert t.device.type == "cpu" and base % compile_only.CUDA_ALLOCATION_ALIGNMENT == 0
        assert torch.equal(made[0], torch.arange(37, dtype=torch.float32)) and float(made[1][2, 4]) == 2.5
        assert made[2].stride() == (1, 6) and torch.equal(made[2], torch.arange(24).reshape(4, 6).t())
        assert from_dlpack(made[0], assumed_align=128).assumed_align == 128
    cpu = torch.arange(37, dtype=torch.float32)[1:]          # host tensors outside the run: as torch makes them
    assert cpu.data_ptr() % 16 == 4


def test_pinned_host_memory_is_host_memory_in_a_compile_only_run():
    # programs pin a host staging buffer next to their CUDA workspace (torch would ask the driver for it)
    torch = pytest.importorskip("torch")
    with target("sm_90a"), compile_only.compile_only():
        staged = torch.empty((64,), dtype=torch.uint8, pin_memory=True, device="cpu")
        again = torch.arange(8).pin_memory()
        assert staged.shape == (64,) and staged.device.type == "cpu" and torch.equal(again, torch.arange(8))


@pytest.mark.parametrize("arch, cc", [("sm_100a", (10, 0)), ("sm_120a", (12, 0)), ("sm_90a", (9, 0))])
def test_torch_device_queries_answer_for_the_target(arch, cc):
    # programs pick their code path by torch.cuda.get_device_properties(...).major / get_device_capability()
    torch = pytest.importorskip("torch")
    with target(arch), compile_only.compile_only():
        props = torch.cuda.get_device_properties(0)
        assert (props.major, props.minor) == cc == torch.cuda.get_device_capability()
        assert props.multi_processor_count == compile_only.STAND_IN_SMS and torch.cuda.current_device() == 0
        assert arch in torch.cuda.get_device_name()


def test_a_block_run_on_a_side_stream_runs_in_a_compile_only_run():
    # programs warm up on a stream of their own: `with torch.cuda.stream(s):` (torch would ask the driver)
    torch = pytest.importorskip("torch")
    ran = []
    with target("sm_90a"), compile_only.compile_only():
        s = torch.cuda.Stream()
        with torch.cuda.stream(s) as entered:
            ran.append(entered is s)
        torch.cuda.set_stream(s)
    assert ran == [True]


def test_a_program_profiling_its_kernels_with_torch_profiler_runs_in_a_compile_only_run():
    # `with profile(activities=[ProfilerActivity.CUDA]):` around kernels whose launches are not made: the profiler
    # records the host's activity instead of asking for a CUDA one; outside the run the class is torch's again
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity

    original = torch.profiler.profile
    with target("sm_100a"), compile_only.compile_only():
        with torch.profiler.profile(activities=[ProfilerActivity.CUDA], record_shapes=True) as prof:
            torch.ones(4, device="cuda").sum()
        assert prof.key_averages() is not None
    assert torch.profiler.profile is original
