"""The world of ranks of a compile-only run (compile_only_world.py): a torchrun-style multi-GPU program compiles its
kernels in one process without a GPU, as one rank of an emulated world whose symmetric memory (peer buffers and
the multicast address) is host memory with real addresses."""
import os
import subprocess

import pytest

from warpweave._dsl.registry import compile_only_world as world

from torch_interpreter import torch_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_world_shape_follows_the_launcher_environment(monkeypatch):
    for k in ("WORLD_SIZE", "RANK", "WARPWEAVE_COMPILE_ONLY_WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    assert world.world_shape() == (world.DEFAULT_WORLD_SIZE, 0)
    monkeypatch.setenv("WARPWEAVE_COMPILE_ONLY_WORLD_SIZE", "8")
    assert world.world_shape() == (8, 0)
    monkeypatch.setenv("WORLD_SIZE", "4")     # a launcher's own environment wins
    monkeypatch.setenv("RANK", "3")
    assert world.world_shape() == (4, 3)
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(ValueError, match=r"RANK must be an integer in \[0, 4\)"):
        world.world_shape()
    monkeypatch.setenv("WORLD_SIZE", "zero")
    with pytest.raises(ValueError, match="WORLD_SIZE must be a positive integer"):
        world.world_shape()


# A torchrun program: its rank from LOCAL_RANK, an NCCL process group, symmetric memory with its multicast address,
# and a kernel that all-reduces through that address, then raises and waits for a flag of every rank.
PROGRAM = r'''
import os
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem
import cutlass
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
import cutlass.utils as utils
from cutlass.cute.runtime import from_dlpack

N = 4096


@cute.kernel
def all_reduce_kernel(inp_mc: cute.Tensor, out_mc: cute.Tensor, flag_mc: cute.Tensor, flag: cute.Tensor,
                      world_size: cutlass.Constexpr):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = (bidx * 128 + tidx) * 4
    words = utils.distributed.multimem_ld_reduce(inp_mc.iterator + i, dtype=cutlass.Float32, num_elements=4)
    utils.distributed.multimem_st(out_mc.iterator + i, *words)
    cute.arch.sync_threads()
    if tidx == 0:
        utils.distributed.multimem_red_add1(flag_mc.iterator + bidx, order="release", scope="sys")
        utils.distributed.spin_lock_atom_cas_acquire_wait(flag.iterator + bidx, expected_val=world_size, reset_val=0,
                                                          scope="sys")


@cute.jit
def all_reduce(inp_mc: cute.Tensor, out_mc: cute.Tensor, flag_mc: cute.Tensor, flag: cute.Tensor,
               world_size: cutlass.Constexpr):
    all_reduce_kernel(inp_mc, out_mc, flag_mc, flag, world_size).launch(grid=[N // 512, 1, 1], block=[128, 1, 1])


local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local_rank))
rank, world_size = dist.get_rank(), dist.get_world_size()
print("WORLD", rank, world_size, torch.cuda.device_count(), os.environ["WORLD_SIZE"])


def symmetric(dtype):
    t = symm_mem.empty(N, device="cuda", dtype=dtype)
    h = symm_mem.rendezvous(t, group=dist.group.WORLD)
    mc = cutlass_torch.as_tensor(h.multicast_ptr, (N,), dtype)
    return t, h, mc


inp, inp_h, inp_mc = symmetric(torch.float32)
out, out_h, out_mc = symmetric(torch.float32)
flag, flag_h, flag_mc = symmetric(torch.int32)
peers = [inp_h.get_buffer(r, (N,), torch.float32) for r in range(world_size)]
addresses = {p.data_ptr() for p in peers} | {inp_h.multicast_ptr}
print("BUFFERS", peers[rank].data_ptr() == inp.data_ptr(), len(addresses), inp_h.multicast_ptr % 256)
for r, p in enumerate(peers):
    p.fill_(r + 1)
torch.ops.symm_mem.multimem_all_reduce_(inp, "sum", dist.group.WORLD.group_name)
print("SUM", float(inp[0]), float(peers[-1][N - 1]))
compiled = cute.compile(all_reduce, from_dlpack(inp_mc, assumed_align=16), from_dlpack(out_mc, assumed_align=16),
                        from_dlpack(flag_mc), from_dlpack(flag), world_size)
compiled(from_dlpack(inp_mc, assumed_align=16), from_dlpack(out_mc, assumed_align=16), from_dlpack(flag_mc),
         from_dlpack(flag))
print("NOT REACHED")
'''


def _run(tmp_path, program, env_extra=None, args=()):
    prog = tmp_path / "prog.py"
    prog.write_text(program)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    ours = [os.path.join(ROOT, d) for d in ("frontend_python", "conformance", "pipelines")]
    env.update(PYTHONPATH=os.pathsep.join(ours + [p for p in [os.environ.get("PYTHONPATH")] if p]),
               WARPWEAVE_KEEP="ptx", WARPWEAVE_DUMP_DIR=str(tmp_path / "dump"), WARPWEAVE_DISABLE_CACHE="1",
               **(env_extra or {}))
    return subprocess.run([torch_python(), "-m", "warpweave", "run", "--compile-only", "--arch", "sm_100a",
                           str(prog), *args], capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)


def test_a_torchrun_program_compiles_its_multimem_kernel_as_one_rank(tmp_path):
    p = _run(tmp_path, PROGRAM)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    lines = p.stdout.splitlines()
    size = world.DEFAULT_WORLD_SIZE
    assert f"WORLD 0 {size} {size} {size}" in lines, out[-3000:]
    # this rank's buffer is the tensor itself; every peer's and the multicast one are apart, CUDA-aligned
    assert f"BUFFERS True {size + 1} 0" in lines, out[-3000:]
    total = float(sum(range(1, size + 1)))
    assert f"SUM {total} {total}" in lines, out[-3000:]   # the world's buffers added up, in every one
    assert "NOT REACHED" not in p.stdout
    assert "1 compiled function(s), 1 launching call(s) not made" in p.stdout, out[-3000:]
    ptx = "".join(f.read_text() for f in (tmp_path / "dump").glob("*.ptx"))
    for form in ("multimem.ld_reduce.relaxed.sys.global.add.v4.f32", "multimem.st.relaxed.sys.global.v4.f32",
                 "multimem.red.release.sys.global.add.u32", "atom.acquire.sys.global.cas.b32"):
        assert form in ptx, form


def test_the_world_size_is_the_launchers(tmp_path):
    p = _run(tmp_path, PROGRAM, {"WORLD_SIZE": "4", "RANK": "1", "LOCAL_RANK": "1"})
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    assert "WORLD 1 4 4 4" in p.stdout.splitlines() and "BUFFERS True 5 0" in p.stdout.splitlines()


NVSHMEM_PROGRAM = r'''
import os
import numpy as np
import torch
import torch.distributed as dist
try:
    from cuda.core import Device
except ImportError:
    from cuda.core.experimental import Device
import nvshmem.core

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dev = Device(local_rank)
dev.set_current()
stream = dev.create_stream()
dist.init_process_group(backend="cpu:gloo,cuda:nccl")
uid = nvshmem.core.get_unique_id(empty=(local_rank != 0))
uid_tensor = torch.from_numpy(uid._data.view(np.uint8).copy()).cuda()
dist.broadcast(uid_tensor, src=0)
nvshmem.core.init(device=dev, uid=uid, rank=local_rank, nranks=dist.get_world_size(), initializer_method="uid")
t = nvshmem.core.tensor((64, 32), dtype=torch.float32)
peers = [nvshmem.core.get_peer_tensor(t, r) for r in range(dist.get_world_size())]
mc = nvshmem.core.get_multicast_tensor(nvshmem.core.Teams.TEAM_NODE, t)
print("NVSHMEM", peers[local_rank].data_ptr() == t.data_ptr(), len({p.data_ptr() for p in peers} | {mc.data_ptr()}),
      tuple(mc.shape), stream.__cuda_stream__()[1])
for x in peers + [mc]:
    nvshmem.core.free_tensor(x)
nvshmem.core.finalize()
dist.destroy_process_group()
'''


def test_nvshmem_programs_get_the_worlds_symmetric_memory(tmp_path):
    if subprocess.run([torch_python(), "-c", "import nvshmem.core, cuda.core"]).returncode != 0:
        pytest.skip("nvshmem4py and cuda-core are not installed with torch (requirements-examples.txt has them)")
    p = _run(tmp_path, NVSHMEM_PROGRAM)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    size = world.DEFAULT_WORLD_SIZE
    assert f"NVSHMEM True {size + 1} (64, 32) 0" in p.stdout.splitlines(), (p.stdout + p.stderr)[-3000:]
