"""Compile-only runs answer the PyTorch operations that have no CPU kernel (host_ops_on_meta.py) from their meta
kernels: results of the real operation's shapes, strides and dtypes, NaN-filled so that no check of them passes,
noted at the program's line and counted in the run's summary; operations it cannot answer honestly (integer
results, shapes the meta kernel cannot tell) keep PyTorch's error. Run with a Python that has torch (a subprocess:
the test environment may have none)."""
import json
import os
import subprocess

import pytest

from torch_interpreter import torch_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_SCRIPT = r"""
import json, math, sys
import torch
from warpweave._dsl.registry import compile_only, host_ops_on_meta

facts = {}
with compile_only.compile_only(on_launch="skip") as session:
    # a grouped GEMM of fp8 operands with row-wise scales, which PyTorch computes on CUDA only
    a = torch.randn(64, 32, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(2, 48, 32, device="cuda").to(torch.float8_e4m3fn).transpose(1, 2)
    scale_a, scale_b = torch.ones(64, device="cuda"), torch.ones(2, 48, device="cuda")
    offs = torch.tensor([16, 64], dtype=torch.int32, device="cuda")
    out = torch._scaled_grouped_mm(a, b, scale_a, scale_b, offs=offs, out_dtype=torch.bfloat16)  # LINE-GROUPED
    facts["shape"], facts["dtype"] = list(out.shape), str(out.dtype)
    facts["all_nan"] = bool(out.float().isnan().all())
    facts["aligned"] = out.data_ptr() % compile_only.CUDA_ALLOCATION_ALIGNMENT == 0
    facts["equal_to_itself"] = torch.equal(out, out)    # NaN: no comparison passes
    facts["close_to_zero"] = bool(torch.allclose(out.float(), torch.zeros(64, 48)))
    facts["noted"] = [[op, where] for op, _, where in session.not_computed]
    facts["summary"] = session.summary().splitlines()[0]
    try:
        torch.ones(2).view(3)
    except RuntimeError as e:
        facts["other_errors"] = "view" in str(e) or "shape" in str(e)

class Notes:
    def __init__(self):
        self.seen = []
    def note_not_computed(self, op, results, loc):
        self.seen.append((op, results))

def cuda_only(make):
    def f(x, *args, **kwargs):
        if x.device.type == "cpu":
            raise NotImplementedError("Could not run 'x' with arguments from the 'CPU' backend")
        return make(x, *args, **kwargs)
    return f

exc = NotImplementedError("Could not run 'x' with arguments from the 'CPU' backend")
keep = lambda torch_, t: t
notes = Notes()
ints = cuda_only(lambda x: torch.zeros(3, dtype=torch.int32, device=x.device))
try:
    host_ops_on_meta.answer_on_meta(torch, ints, (torch.ones(2),), {}, exc, notes, keep)
except NotImplementedError as e:
    facts["ints_refused"] = e is exc
def no_meta(x):
    raise RuntimeError("data-dependent shape")
try:
    host_ops_on_meta.answer_on_meta(torch, no_meta, (torch.ones(2),), {}, exc, notes, keep)
except NotImplementedError as e:
    facts["no_meta_refused"] = e is exc
o = torch.zeros(2)
resized = cuda_only(lambda x, out: out.resize_(5))
r = host_ops_on_meta.answer_on_meta(torch, resized, (torch.ones(2),), {"out": o}, exc, notes, keep)
facts["out_is_argument"] = r is o and list(o.shape) == [5] and bool(o.isnan().all())
pair = cuda_only(lambda x: (x.new_empty(2, 3), [x.new_empty(4, dtype=torch.float16)]))
r = host_ops_on_meta.answer_on_meta(torch, pair, (torch.ones(2),), {}, exc, notes, keep)
facts["nested"] = [list(r[0].shape), list(r[1][0].shape), str(r[1][0].dtype), r[0].device.type]
facts["notes"] = len(notes.seen)
facts["not_cpu"] = host_ops_on_meta.lacks_cpu_kernel(NotImplementedError("other")) or \
    host_ops_on_meta.lacks_cpu_kernel(RuntimeError("from the 'CPU' backend"))
print("FACTS" + json.dumps(facts))
"""


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    script = tmp_path_factory.mktemp("meta") / "program.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, WARPWEAVE_ARCH="sm_100a", PYTHONPATH=os.path.join(ROOT, "frontend_python"))
    p = subprocess.run([torch_python(), str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    (line,) = [l for l in p.stdout.splitlines() if l.startswith("FACTS")]
    out = json.loads(line[5:])
    out["stdout"], out["script"] = p.stdout, str(script)
    return out


def test_a_cuda_only_operation_gives_nan_of_the_right_shape(facts):
    assert facts["shape"] == [64, 48] and facts["dtype"] == "torch.bfloat16"
    assert facts["all_nan"] and facts["aligned"]
    # no check can pass on values that were not computed
    assert not facts["equal_to_itself"] and not facts["close_to_zero"]


def test_the_run_says_where_and_counts_it(facts):
    line = next(i for i, l in enumerate(_SCRIPT.splitlines(), 1) if "LINE-GROUPED" in l)
    ((op, where),) = facts["noted"]
    assert op == "torch._scaled_grouped_mm" and where == f"{facts['script']}:{line}"
    assert facts["summary"].endswith("1 host result(s) not computed (NaN)")
    assert f"torch._scaled_grouped_mm at {where} has no CPU kernel" in facts["stdout"]
    assert facts["other_errors"]


def test_only_float_results_of_known_shape_are_answered(facts):
    assert facts["ints_refused"] and facts["no_meta_refused"]
    assert facts["out_is_argument"]
    assert facts["nested"] == [[2, 3], [4], "torch.float16", "cpu"] and facts["notes"] == 2
    assert not facts["not_cpu"]
