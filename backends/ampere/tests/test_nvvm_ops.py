"""NVVM ops of every generation from sm_80 (nvvm.atomicrmw, nvvm.fmax / fmin) as CuTe DSL code writes them in
@dsl_user_op functions, compiled on the CPU for sm_80, sm_90a and sm_100a, and run on a GPU where there is one.

- Each atomicrmw is one atomic instruction of the pointer's state space (global, shared), with the memory order
  and scope asked for written on it (the default: relaxed at GPU scope, the instruction's own default); its old
  value is a result the program uses. SUB adds the negated operand, CAS takes the new value as b.
- Two-input fmax is one instruction everywhere; the three-input one is one instruction where the target has it
  (sm_100a) and an error naming the user's line elsewhere (sm_90a), never two instructions in disguise; nan= and
  ftz= are the instruction's qualifiers, abs= (the |x| form) from sm_86 on and refused on sm_80.
- Misuse (an integer operation on a float, a float add on an integer, cluster scope before clusters, a CAS without
  its new value) is an error at the user's line.
- The names are the Ampere backend's: a process whose first trace is for sm_100a or sm_90a finds them.
- On the GPU: counts made by atomic adds from many threads of many CTAs equal numpy's bincount, each thread's old
  value is a distinct earlier count (the atomics do not lose or repeat updates), shared-memory counts equal the CTA
  size, the float sum matches numpy's, and fmax of random triples (with NaNs) equals numpy's fmax.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import Float32, Int32, ext
from warpweave._mlir.dialects import nvvm
from warpweave.cute.runtime import from_dlpack
from warpweave.cutlass_dsl import dsl_user_op

from dsl_helpers import compile_in_fresh_process, fresh_compilations, line_in, requires_gpu, target  # noqa: F401

pytestmark = pytest.mark.usefixtures("fresh_compilations")
THIS = os.path.abspath(__file__)
PTXAS = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas")
                                  else None)

NBINS, THREADS, CTAS = 16, 128, 4
N = THREADS * CTAS


# --- the user ops, as CuTe DSL code writes them -------------------------------------------------------------------

@dsl_user_op
def atomic_add_i32(a, ptr, *, loc=None, ip=None) -> Int32:
    return Int32(nvvm.atomicrmw(op=nvvm.AtomicOpKind.ADD, ptr=ptr.llvm_ptr, a=Int32(a).ir_value(loc=loc, ip=ip),
                                loc=loc, ip=ip))


@dsl_user_op
def atomic_add_f32(a, gmem_ptr, *, loc=None, ip=None) -> None:
    nvvm.atomicrmw(op=nvvm.AtomicOpKind.FADD, ptr=gmem_ptr.llvm_ptr, a=Float32(a).ir_value())


@dsl_user_op
def fmax(a, b, c=None, *, loc=None, ip=None) -> Float32:
    return Float32(nvvm.fmax(Float32(a).ir_value(loc=loc, ip=ip), Float32(b).ir_value(loc=loc, ip=ip),
                             c=Float32(c).ir_value(loc=loc, ip=ip) if c is not None else None, loc=loc, ip=ip))


def _program(three: bool):
    @cute.kernel
    def k(bins: cute.Tensor, counts: cute.Tensor, olds: cute.Tensor, cta_counts: cute.Tensor, x: cute.Tensor,
          acc: cute.Tensor, out: cute.Tensor):
        tidx, _, _ = cute.arch.thread_idx()
        bidx, _, _ = cute.arch.block_idx()
        t = bidx * THREADS + tidx
        smem = cutlass.utils.SmemAllocator()
        here = smem.allocate_array(Int32, 1)
        if tidx == 0:
            here[0] = Int32(0)
        cute.arch.sync_threads()
        atomic_add_i32(Int32(1), here)   # a shared-memory counter of this CTA's threads
        olds[t] = atomic_add_i32(Int32(1), counts.iterator + bins[t])
        atomic_add_f32(x[3 * t], acc.iterator)
        if cutlass.const_expr(three):
            out[t] = fmax(x[3 * t], x[3 * t + 1], x[3 * t + 2])
        else:
            out[t] = fmax(fmax(x[3 * t], x[3 * t + 1]), x[3 * t + 2])
        cute.arch.sync_threads()
        if tidx == 0:
            cta_counts[bidx] = here[0]

    @cute.jit
    def host(bins, counts, olds, cta_counts, x, acc, out):
        k(bins, counts, olds, cta_counts, x, acc, out).launch(grid=[CTAS, 1, 1], block=[THREADS, 1, 1])

    return host


def _arrays():
    return (np.zeros(N, np.int32), np.zeros(NBINS, np.int32), np.zeros(N, np.int32), np.zeros(CTAS, np.int32),
            np.zeros(3 * N, np.float32), np.zeros(1, np.float32), np.zeros(N, np.float32))


def _compile(three: bool, arch: str):
    with target(arch):
        return cute.compile(_program(three), *[from_dlpack(a, assumed_align=16) for a in _arrays()])


def _assembles(ptx: str, arch: str, tmp_path):
    """ptxas accepts the module for arch (where ptxas is installed: the PTX checks above stand without it)."""
    if PTXAS is None:
        return
    src = tmp_path / f"k_{arch}.ptx"
    src.write_text(ptx)
    r = subprocess.run([PTXAS, f"-arch={arch}", str(src), "-o", os.devnull], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


_R = r"%r\d+"
_RD = r"%rd\d+"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_atomics_and_two_input_fmax(arch, tmp_path):
    ptx = _compile(False, arch).ptx
    # the global counter: one relaxed, GPU-scope atomic add whose old value is a register the program stores
    adds = re.findall(rf"atom\.global\.add\.u32 ({_R}), \[{_RD}\], {_R};", ptx)
    assert len(adds) == 1, ptx
    assert re.search(rf"st\.global\.b32\s+\[{_RD}(?:\+\d+)?\], {adds[0]};", ptx), ptx
    assert len(re.findall(rf"atom\.shared\.add\.u32 {_R}, \[{_R}\], {_R};", ptx)) == 1, ptx
    assert len(re.findall(rf"atom\.global\.add\.f32 {_R}, \[{_RD}\], {_R};", ptx)) == 1, ptx
    assert len(re.findall(r"\batom\.", ptx)) == 3 and "fence" not in ptx and "membar" not in ptx, ptx
    assert len(re.findall(rf"\bmax\.f32 {_R}, {_R}, {_R};", ptx)) == 2, ptx
    _assembles(ptx, arch, tmp_path)


def test_three_input_fmax_where_the_target_has_it(tmp_path):
    ptx = _compile(True, "sm_100a").ptx
    assert len(re.findall(rf"\bmax\.f32 {_R}, {_R}, {_R}, {_R};", ptx)) == 1, ptx
    assert not re.search(rf"\bmax\.f32 {_R}, {_R}, {_R};", ptx), ptx
    _assembles(ptx, "sm_100a", tmp_path)


def test_three_input_fmax_elsewhere_names_the_users_line():
    with pytest.raises(ext.DSLValueError) as e:
        _compile(True, "sm_90a")
    msg = str(e.value)
    assert f"{THIS}:{line_in(THIS, 'Float32(nvvm.fmax(')}:" in msg, msg
    assert "sm_90a" in msg and "10.0" in msg, msg


def _extrema(abs_: bool, arch: str):
    @cute.kernel
    def k(f: cute.Tensor):
        a, b = f[0].ir_value(), f[1].ir_value()
        f[2] = Float32(nvvm.fmax(a, b, nan=True))
        f[3] = Float32(nvvm.fmin(a, b, ftz=True))
        if cutlass.const_expr(abs_):
            f[4] = Float32(nvvm.fmax(a, b, abs=True))  # the |x| form

    @cute.jit
    def h(f: cute.Tensor):
        k(f).launch(grid=[1, 1, 1], block=[1, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(8, np.float32))).ptx


def test_fmax_fmin_qualifiers(tmp_path):
    ptx = _extrema(False, "sm_80")
    assert len(re.findall(rf"\bmax\.NaN\.f32 {_R}, {_R}, {_R};", ptx)) == 1, ptx
    assert len(re.findall(rf"\bmin\.ftz\.f32 {_R}, {_R}, {_R};", ptx)) == 1, ptx
    _assembles(ptx, "sm_80", tmp_path)
    ptx = _extrema(True, "sm_90a")
    assert len(re.findall(rf"\bmax\.xorsign\.abs\.f32 {_R}, {_R}, {_R};", ptx)) == 1, ptx
    _assembles(ptx, "sm_90a", tmp_path)
    with pytest.raises(ext.DSLValueError) as e:   # sm_80 lacks the |x| form (8.6 and later have it)
        _extrema(True, "sm_80")
    assert f"{THIS}:{line_in(THIS, '# the |x| form')}:" in str(e.value) and "8.6" in str(e.value), str(e.value)


# --- orders, scopes, operations --------------------------------------------------------------------------------

@cute.kernel
def _orders_kernel(g: cute.Tensor, f: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    smem = cutlass.utils.SmemAllocator()
    s = smem.allocate_array(Int32, 1)
    v = Int32(tidx).ir_value()
    o1 = nvvm.atomicrmw(op=nvvm.AtomicOpKind.ADD, ptr=s.llvm_ptr, a=v, mem_order=nvvm.MemOrderKind.ACQ_REL,
                        syncscope=nvvm.MemScopeKind.CTA)
    o2 = nvvm.atomicrmw(op=nvvm.AtomicOpKind.UMAX, ptr=g.iterator.llvm_ptr, a=v, mem_order=nvvm.MemOrderKind.RELEASE,
                        syncscope=nvvm.MemScopeKind.SYS)
    o3 = nvvm.atomicrmw(op=nvvm.AtomicOpKind.CAS, ptr=(g.iterator + 1).llvm_ptr, a=v, b=Int32(7).ir_value())
    o4 = nvvm.atomicrmw(op=nvvm.AtomicOpKind.SUB, ptr=(g.iterator + 2).llvm_ptr, a=v,
                        mem_order=nvvm.MemOrderKind.ACQUIRE)
    o5 = nvvm.atomicrmw(op=nvvm.AtomicOpKind.INC, ptr=(g.iterator + 3).llvm_ptr, a=Int32(100).ir_value())
    o6 = nvvm.atomicrmw(op=nvvm.AtomicOpKind.MIN, ptr=(g.iterator + 4).llvm_ptr, a=v)
    nvvm.atomicrmw(op=nvvm.AtomicOpKind.FADD, ptr=f.iterator.llvm_ptr, a=Float32(1.5).ir_value(),
                   syncscope=nvvm.MemScopeKind.CTA)
    g[tidx + 8] = Int32(o1) + Int32(o2) + Int32(o3) + Int32(o4) + Int32(o5) + Int32(o6)


@cute.jit
def _orders_host(g: cute.Tensor, f: cute.Tensor):
    _orders_kernel(g, f).launch(grid=[1, 1, 1], block=[32, 1, 1])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_orders_scopes_and_operations_are_the_instructions_own(arch, tmp_path):
    with target(arch):
        ptx = cute.compile(_orders_host, from_dlpack(np.zeros(64, np.int32)),
                           from_dlpack(np.zeros(4, np.float32))).ptx
    expected = [rf"atom\.acq_rel\.cta\.shared\.add\.u32 {_R}, \[{_R}\], {_R};",
                rf"atom\.release\.sys\.global\.max\.u32 {_R}, \[{_RD}\], {_R};",
                rf"atom\.global\.cas\.b32 {_R}, \[{_RD}\], {_R}, {_R};",
                rf"atom\.acquire\.global\.add\.u32 {_R}, \[{_RD}\], {_R};",
                rf"atom\.global\.inc\.u32 {_R}, \[{_RD}\], {_R};",
                rf"atom\.global\.min\.s32 {_R}, \[{_RD}\], {_R};",
                rf"atom\.cta\.global\.add\.f32 {_R}, \[{_RD}\], {_R};"]
    for pattern in expected:
        assert len(re.findall(pattern, ptx)) == 1, (pattern, ptx)
    assert len(re.findall(r"\batom\.", ptx)) == len(expected), ptx
    sub = re.search(rf"neg\.s32\s+({_R}), {_R};", ptx)   # SUB adds the negated operand
    assert sub and re.search(rf"atom\.acquire\.global\.add\.u32 {_R}, \[{_RD}\], {sub.group(1)};", ptx), ptx
    _assembles(ptx, arch, tmp_path)


# --- misuse ------------------------------------------------------------------------------------------------------

def _misuse(which: str, arch: str = "sm_80"):
    @cute.kernel
    def k(g: cute.Tensor, f: cute.Tensor):
        i, x = Int32(1).ir_value(), Float32(1.0).ir_value()
        cluster = nvvm.MemScopeKind.CLUSTER
        if cutlass.const_expr(which == "fadd_int"):
            nvvm.atomicrmw(op=nvvm.AtomicOpKind.FADD, ptr=g.iterator.llvm_ptr, a=i)  # misuse: fadd_int
        elif cutlass.const_expr(which == "add_float"):
            nvvm.atomicrmw(op=nvvm.AtomicOpKind.ADD, ptr=f.iterator.llvm_ptr, a=x)  # misuse: add_float
        elif cutlass.const_expr(which == "cluster"):
            nvvm.atomicrmw(op=nvvm.AtomicOpKind.ADD, ptr=g.iterator.llvm_ptr, a=i, syncscope=cluster)  # misuse: cluster
        elif cutlass.const_expr(which == "cas"):
            nvvm.atomicrmw(op=nvvm.AtomicOpKind.CAS, ptr=g.iterator.llvm_ptr, a=i)  # misuse: cas
        elif cutlass.const_expr(which == "not_a_pointer"):
            nvvm.atomicrmw(op=nvvm.AtomicOpKind.ADD, ptr=i, a=i)  # misuse: not_a_pointer

    @cute.jit
    def h(g: cute.Tensor, f: cute.Tensor):
        k(g, f).launch(grid=[1, 1, 1], block=[32, 1, 1])

    with target(arch):
        return cute.compile(h, from_dlpack(np.zeros(4, np.int32)), from_dlpack(np.zeros(4, np.float32)))


@pytest.mark.parametrize("which, words", [("fadd_int", ["works on floats", "i32"]),
                                          ("add_float", ["works on integers", "FADD"]),
                                          ("cluster", ["clusters", "sm_80"]),
                                          ("cas", ["b="]),
                                          ("not_a_pointer", ["LLVM pointer", "i32"])])
def test_misuse_is_an_error_at_the_users_line(which, words):
    with pytest.raises(Exception) as e:
        _misuse(which)
    msg = str(e.value)
    tag = f"# misuse: {which}"
    assert f"{THIS}:{line_in(THIS, tag)}:" in msg, msg
    assert all(w in msg for w in words), msg


def test_cluster_scope_from_hopper_on(tmp_path):
    ptx = _misuse("cluster", "sm_90a").ptx   # refused on sm_80 (above), the cluster-scope atomic here
    assert len(re.findall(rf"atom\.cluster\.global\.add\.u32 {_R}, \[{_RD}\], {_R};", ptx)) == 1, ptx
    _assembles(ptx, "sm_90a", tmp_path)


# --- the names come from the Ampere backend, whatever the target --------------------------------------------------

FRESH = """
import numpy as np
import warpweave.cute as cute
from warpweave import Float32, Int32
from warpweave._mlir.dialects import nvvm
from warpweave.cute.runtime import from_dlpack


@cute.kernel
def k(g: cute.Tensor, f: cute.Tensor):
    old = nvvm.atomicrmw(op=nvvm.AtomicOpKind.ADD, ptr=g.iterator.llvm_ptr, a=Int32(1).ir_value())
    f[0] = Float32(nvvm.fmax(f[1].ir_value(), f[2].ir_value()))
    g[1] = Int32(old)


@cute.jit
def h(g: cute.Tensor, f: cute.Tensor):
    k(g, f).launch(grid=[1, 1, 1], block=[32, 1, 1])


def compile_program():
    cute.compile(h, from_dlpack(np.zeros(4, np.int32)), from_dlpack(np.zeros(4, np.float32)))
"""


@pytest.mark.parametrize("first", ["sm_100a", "sm_90a"])
def test_later_generations_see_the_names(first, tmp_path):
    # a process of its own whose first trace is for a later generation: only its backends (and those they build on)
    # are mounted
    _, out = compile_in_fresh_process(tmp_path, f"fresh_{first}.py", FRESH, first, "sm_80")
    assert out == {first: "compiled", "sm_80": "compiled"}, out


# --- on the GPU --------------------------------------------------------------------------------------------------

@requires_gpu
def test_values_on_the_gpu():
    import torch

    rng = np.random.default_rng()
    bins = rng.integers(0, NBINS, N).astype(np.int32)
    x = rng.standard_normal(3 * N).astype(np.float32)
    x[rng.integers(0, 3 * N, 16)] = np.nan   # fmax ignores a NaN operand (the larger of the others)
    x_sum = np.where(np.isnan(x[0::3]), 0, x[0::3])
    x[0::3] = x_sum                          # the summed ones stay numbers
    cap = torch.cuda.get_device_capability()
    three = cap[0] >= 10
    d = {name: torch.from_numpy(a).cuda() for name, a in
         zip(["bins", "counts", "olds", "cta", "x", "acc", "out"], _arrays())}
    d["bins"].copy_(torch.from_numpy(bins))
    d["x"].copy_(torch.from_numpy(x))
    d["olds"].fill_(-1)
    _program(three)(*[from_dlpack(d[k]) for k in ["bins", "counts", "olds", "cta", "x", "acc", "out"]])
    torch.cuda.synchronize()
    counts, olds = d["counts"].cpu().numpy(), d["olds"].cpu().numpy()
    np.testing.assert_array_equal(counts, np.bincount(bins, minlength=NBINS))
    for b in range(NBINS):   # every update seen once: the old values of a bin are 0 .. count - 1
        np.testing.assert_array_equal(np.sort(olds[bins == b]), np.arange(counts[b]))
    np.testing.assert_array_equal(d["cta"].cpu().numpy(), np.full(CTAS, THREADS))
    np.testing.assert_allclose(d["acc"].cpu().numpy()[0], x_sum.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
    want = np.fmax(np.fmax(x[0::3], x[1::3]), x[2::3])
    np.testing.assert_array_equal(d["out"].cpu().numpy(), want)
