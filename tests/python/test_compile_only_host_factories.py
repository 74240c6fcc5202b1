"""Compile-only runs make a program's CUDA tensors on the host (host_factories.py): torch.empty / zeros / ones / full /
rand / randn with a CUDA device give a tensor in CUDA-aligned storage, made there (not copied into it), and a large
random one costs a block of draws, not one per element: a compile-only run of a GEMM test file spent minutes drawing
hundreds of millions of values nothing compiled depends on. Small random tensors are torch's own stream, and the
factories keep torch's meaning (dtypes, requires_grad, memory formats, out=, errors). Run with a Python that has
torch (a subprocess: the test environment may have none)."""
import json
import os
import subprocess

import pytest

from torch_interpreter import torch_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SCRIPT = r"""
import json
import torch
from torch.overrides import TorchFunctionMode
from warpweave._dsl.registry import compile_only
from warpweave._dsl.registry.host_factories import EXACT_RANDOM, RANDOM_BLOCK

A = compile_only.CUDA_ALLOCATION_ALIGNMENT
facts = {"exact": EXACT_RANDOM, "block": RANDOM_BLOCK}


class CountDraws(TorchFunctionMode):
    # entered before the run, so that it sees what the run's own mode asks of torch: the values drawn
    drawn = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (torch.randn, torch.rand) and isinstance(out, torch.Tensor) and out.device.type != "meta":
            CountDraws.drawn += out.numel()
        return out


def aligned(t):
    return (t.data_ptr() - t.storage_offset() * t.element_size()) % A == 0


big = (3000, 4096)  # 12.3 M elements, past EXACT_RANDOM
with CountDraws(), compile_only.compile_only(on_launch="skip"):
    g = torch.Generator(device="cpu").manual_seed(11)
    x = torch.randn(big, generator=g, dtype=torch.bfloat16, device="cuda")
    after = torch.randn(8, generator=g)  # the generator's next values: it was asked for one block only
    facts["big_drawn"] = CountDraws.drawn - 8
    facts["big"] = [list(x.shape), str(x.dtype), x.is_contiguous(), aligned(x), x.requires_grad]
    ref = torch.Generator(device="cpu").manual_seed(11)
    block = torch.randn(RANDOM_BLOCK, generator=ref, dtype=torch.bfloat16)
    flat = x.view(-1)
    facts["first_block_drawn"] = torch.equal(flat[:RANDOM_BLOCK], block)
    facts["repeats"] = torch.equal(flat[RANDOM_BLOCK:2 * RANDOM_BLOCK], block) and \
        torch.equal(flat[-(flat.numel() % RANDOM_BLOCK):], block[:flat.numel() % RANDOM_BLOCK])
    facts["generator_next"] = torch.equal(after, torch.randn(8, generator=ref))
    u = torch.rand(EXACT_RANDOM + 3, device="cuda")
    facts["rand_range"] = [float(u.min()) >= 0.0, float(u.max()) < 1.0, float(u.std()) > 0.2]

    before = CountDraws.drawn
    s = torch.randn(100, 7, generator=torch.Generator().manual_seed(5), device="cuda")
    facts["small_drawn"] = CountDraws.drawn - before
    facts["small_exact"] = torch.equal(s, torch.randn(100, 7, generator=torch.Generator().manual_seed(5)))
    facts["small_aligned"] = aligned(s)

    z, o = torch.zeros(5, 3, device="cuda"), torch.ones(4, dtype=torch.int8, device="cuda")
    f, b = torch.full((2, 2), 7, device="cuda"), torch.full((3,), True, device="cuda")
    e = torch.empty((2, 3, 4, 5), device="cuda:0", memory_format=torch.channels_last)
    facts["fills"] = [str(z.dtype), z.tolist() == [[0.0] * 3] * 5, str(o.dtype), o.tolist(), str(f.dtype),
                      f.tolist(), str(b.dtype), b.tolist(), list(e.stride()),
                      all(aligned(t) for t in (z, o, f, b, e))]
    r = torch.randn(3, device="cuda", requires_grad=True)
    w = torch.tensor([1.0, 2.0], device="cuda", requires_grad=True)  # moved into aligned storage: still a leaf
    facts["grad"] = [r.requires_grad, r.is_leaf, w.requires_grad, w.is_leaf, aligned(w)]
    buf = torch.zeros(4)
    torch.randn(4, out=buf, device="cuda")  # out=: torch's own call
    facts["out"] = bool((buf != 0).any())
    try:
        torch.randn(3, dtype=torch.int32, device="cuda")
        facts["int_randn"] = "no error"
    except (RuntimeError, NotImplementedError) as exc:
        facts["int_randn"] = type(exc).__name__
print("FACTS" + json.dumps(facts))
"""


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    script = tmp_path_factory.mktemp("factories") / "program.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, WARPWEAVE_ARCH="sm_90a", PYTHONPATH=os.path.join(ROOT, "frontend_python"))
    p = subprocess.run([torch_python(), str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    (line,) = [l for l in p.stdout.splitlines() if l.startswith("FACTS")]
    return json.loads(line[5:])


def test_a_large_random_cuda_tensor_costs_one_block_of_draws(facts):
    # one draw per element is what made a file of varlen GEMM tests take minutes without compiling anything
    assert facts["big_drawn"] == facts["block"] < facts["exact"]
    assert facts["big"] == [[3000, 4096], "torch.bfloat16", True, True, False]
    assert facts["generator_next"]


def test_a_large_random_tensor_holds_its_generators_block_repeated(facts):
    assert facts["first_block_drawn"] and facts["repeats"]
    assert facts["rand_range"] == [True, True, True]


def test_a_small_random_tensor_is_torchs_own_stream(facts):
    assert facts["small_drawn"] == 700 and facts["small_exact"] and facts["small_aligned"]


def test_the_factories_keep_torchs_meaning(facts):
    assert facts["fills"] == ["torch.float32", True, "torch.int8", [1, 1, 1, 1], "torch.int64", [[7, 7], [7, 7]],
                              "torch.bool", [True, True, True], [60, 1, 15, 3], True]
    assert facts["grad"] == [True, True, True, True, True]
    assert facts["out"] and facts["int_randn"] in ("RuntimeError", "NotImplementedError")
