"""The generated code of the elementwise kernels, read from SASS (nvdisasm, no GPU): no integer division where the
divisor is static or a power of two, one runtime division per dynamic divisor at most, index arithmetic computed
once rather than once per predicated element, and one vector path where the predicates of a vector's lanes are
provably equal (no scalar fallback); where they are not, the scalar fallback addresses a vector's elements from its
address, and 16-bit values loaded as vectors stay packed in registers."""
import collections
import os
import re
import sys

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave import _core
from warpweave.cute.runtime import make_fake_tensor

from dsl_helpers import target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "frontend_python", "examples"))
import elementwise_add as ew  # noqa: E402

SASS = pytest.mark.skipif(not _core.sass_tool_available(), reason="no SASS disassembler (nvdisasm) installed")

# A runtime-divisor integer division on NVIDIA GPUs: a reciprocal estimate in floating point, refined in integers.
DIVISION = "MUFU.RCP"


def sass_ops(cubin):
    sass = _core.disassemble_sass(cubin)
    return re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass, re.M)


def runtime_divisions(ops):
    """Integer divisions by runtime values (I2F.U32.RP feeding MUFU.RCP); float reciprocals have no I2F.RP."""
    return sum(1 for o in ops if o.startswith("I2F.U32.RP") or o.startswith("I2F.RP"))


def compile_add(tensors, arch="sm_80"):
    with target(arch):
        return cute.compile(ew.elementwise_add, *tensors)


def ptx_static_divisions(ptx):
    """div / rem instructions whose divisor is an immediate (LLVM turns those into shifts and multiplies)."""
    return re.findall(r"^\s*(?:@%p\d+\s+)?(?:div|rem)\.[us](?:16|32|64)\s+[^;]*,\s*-?\d+;", ptx, re.M)


@SASS
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_static_shapes_divide_nothing_at_run_time(arch):
    ts = [make_fake_tensor(cutlass.Float32, (1000, 1003), stride=(1003, 1)) for _ in range(3)]
    c = compile_add(ts, arch)
    ops = sass_ops(c.cubin)
    assert runtime_divisions(ops) == 0, collections.Counter(ops)
    assert not ptx_static_divisions(c.ptx or "")


@SASS
def test_dynamic_shapes_divide_once_per_dynamic_divisor():
    ts = [make_fake_tensor(cutlass.Float32, (1024, 1024), stride=(1024, 1)).mark_layout_dynamic() for _ in range(3)]
    c = compile_add(ts)
    ops = sass_ops(c.cubin)
    # Each tensor's tile grid along M is ceil(M / 16) of its own runtime extent: one division by it per tensor
    # (the block index split into tile coordinates), never one per element the thread moves.
    assert runtime_divisions(ops) <= 3, collections.Counter(ops)
    assert not ptx_static_divisions(c.ptx or "")
    # The budget of the whole kernel: 1.2x what CuTe DSL 4.8.1 makes of the same kernel and specialisation (344).
    assert len(ops) <= 413, (len(ops), collections.Counter(o.split(".")[0] for o in ops).most_common(12))


@SASS
def test_divisible_extent_keeps_only_the_vector_path():
    # N a multiple of 4 (the vector width for f32 and 128-bit accesses): the four lanes of a vector are in or out
    # of the tensor together, so each access is one predicated 128-bit access, with no scalar fallback.
    def fake():
        n = cute.sym_int(divisibility=4)
        return make_fake_tensor(cutlass.Float32, (cute.sym_int(), n), stride=(cute.sym_int(divisibility=4), 1),
                                assumed_align=16)

    c = compile_add([fake() for _ in range(3)])
    ops = sass_ops(c.cubin)
    memory = collections.Counter(o for o in ops if o.startswith(("LDG", "STG")))
    assert set(memory) == {"LDG.E.128", "STG.E.128"}, memory
    assert memory["LDG.E.128"] == 8 and memory["STG.E.128"] == 4  # 16 values of A and B, 16 of C per thread

    # Not divisible: a vector may stick out of the tensor, and the scalar path must stay.
    ts = [make_fake_tensor(cutlass.Float32, (1024, 1024), stride=(1024, 1)).mark_layout_dynamic() for _ in range(3)]
    ops = sass_ops(compile_add(ts).cubin)
    assert any(o == "LDG.E" for o in ops) and any(o == "LDG.E.128" for o in ops)


def test_lane_shared_bound_is_the_same_comparison():
    from warpweave._dsl.values.tensor import _lane_shared_bound

    S = _core.SymInt.symbol
    n = S(7, divisibility=8)
    base = S(1 << 48) * 64 + (S((1 << 48) + 1) % 32) * 8
    shared = [_lane_shared_bound(cutlass.Int32._wrap(base + k), n) for k in range(8)]
    assert all(a._v.same(shared[0][0]._v) and b.same(shared[0][1]) for a, b in shared)
    # Its meaning: for every value of the symbols, (base + k) < n exactly when the rewritten comparison holds.
    for bv in range(0, 9):
        for tv in range(0, 40, 3):
            for nv in range(0, 200, 8):
                env = {1 << 48: bv, (1 << 48) + 1: tv, 7: nv}
                for k in range(8):
                    a, b = _lane_shared_bound(cutlass.Int32._wrap(base + k), n)
                    lhs = (base + k).evaluate(env)
                    assert (lhs < nv) == (a._v.evaluate(env) < b.evaluate(env))
    # Nothing to share: a bound of unknown divisibility, or lanes not aligned to it, stay as they are.
    odd = S(9)
    a, b = _lane_shared_bound(cutlass.Int32._wrap(base + 1), odd)
    assert b is odd


@cute.kernel
def _sibling_branches_kernel(gA: cute.Tensor, gC: cute.Tensor, n: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    if tidx < 7:
        gC[tidx // n] = gA[tidx]
    if tidx > 9:
        gC[tidx // n + 1] = gA[tidx]


@cute.jit
def _sibling_branches(mA: cute.Tensor, mC: cute.Tensor, n: cutlass.Int32):
    _sibling_branches_kernel(mA, mC, n).launch(grid=[1, 1, 1], block=[32, 1, 1])


def test_a_runtime_division_is_emitted_once_for_sibling_branches():
    ts = [make_fake_tensor(cutlass.Float32, (64,)) for _ in range(2)]
    with target("sm_80"):
        c = cute.compile(_sibling_branches, *ts, 3)
    ir = c.ir
    assert ir.count("arith.divui") + ir.count("arith.divsi") == 1
    # Moved out of the branch that needed it, it never divides by 0 (n may be 0 where no branch runs): n is a signed
    # argument, so the divisor is picked (n == 0 ? 1 : n) rather than clamped as an unsigned one would be, and the
    # division floors as Python's does for a negative n.
    assert ir.count("arith.maxui") == 0 and ir.count("arith.divsi") == 1
    assert re.search(r'"arith.cmpi"\(%\d+, %\d+\) <\{predicate = 0 : i64\}>', ir)


def _registers(compiled):
    """The kernel's registers, from the cubin tool's report (compiled with --ptxas-options=-v)."""
    found = re.findall(r"Used (\d+) registers", compiled.info.get("jit_log", ""))
    return max(map(int, found)) if found else None


@SASS
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_half_precision_vector_path_keeps_values_packed_and_fallback_shares_addresses(arch):
    # What a GPU run of the example in Float16 compiles (torch's tensors: 16-byte aligned, the row stride a multiple
    # of 8 elements, every extent dynamic): each row of a thread's 4x8 tile is one 128-bit access, and a row that may
    # stick out of the tensor takes the scalar path. CuTe DSL 4.8.1 makes 32 predicated scalar loads a tensor of it
    # in 96 registers.
    def fake():
        return make_fake_tensor(cutlass.Float16, (cute.sym_int(), cute.sym_int()),
                                stride=(cute.sym_int(divisibility=8), 1), assumed_align=16)

    with target(arch):
        c = cute.compile(ew.elementwise_add, *[fake() for _ in range(3)], options="--ptxas-options=-v")
    ops = sass_ops(c.cubin)
    memory = collections.Counter(o for o in ops if o.startswith(("LDG", "STG", "LDL", "STL")))
    assert memory["LDG.E.128"] == 8 and memory["STG.E.128"] == 4, memory
    assert not any(o.startswith(("LDL", "STL")) for o in memory), memory
    # The loaded vectors stay vectors in registers (two 16-bit values to a register), not one register a value: the
    # kernel fits in fewer registers than CuTe DSL's (96), so more of its blocks are resident.
    regs = _registers(c)
    assert regs is not None and regs <= 80, regs
    # The scalar path addresses each element of a row from the row's address by an immediate offset: one 64-bit
    # address a row and tensor (4 rows of A and B loaded, of C stored), not one an element.
    ptx = c.ptx or ""
    loads = set(re.findall(r"ld\.global\.b16\s+%rs\d+, \[(%rd\d+)(?:\+\d+)?\]", ptx))
    stores = set(re.findall(r"st\.global\.b16\s+\[(%rd\d+)(?:\+\d+)?\]", ptx))
    assert loads and len(loads) <= 8, loads
    assert stores and len(stores) <= 4, stores
