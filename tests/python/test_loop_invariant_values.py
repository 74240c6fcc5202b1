"""A per-thread shared-memory address that only a persistent kernel's epilogue uses is computed in the tile loop, after
the main loop, not once before the tile loop (compiler/loop_invariant_values.cpp). LICM hoists it out of the tile
loop, so that it lives across every tile's main loop, where registers are scarcest; the assembler does not compute it
again, and CuTe DSL's sm_120 pingpong GEMM spilled 32 such stmatrix addresses. A value used inside an innermost loop
stays out of that loop (a copy there would run once per iteration of the hot loop). Nor does a thread's base that
each tile offsets by its stage's buffer before the main loop: only the offset address lives across the main loop, not
the base as well (CuTe DSL's mamba2_ssd spilled two such bases in its epilogue role, at 88 registers).

The kernels are written as MLIR (scf loops, inline assembly taking the address as a register, as the backends' atoms
do), so that the loops and the address are exactly as the property needs."""
import re

import pytest

from warpweave import _core
from warpweave._dsl.registry.target import target_named

# %tiles tiles, each a main loop of %ksteps global loads summed, then an epilogue that stores the sum at a swizzled
# per-thread shared-memory address (the thread's index xor'ed with its own bits, as CuTe's swizzles do).
_TILE_LOOP = """
module {
  llvm.mlir.global external @__ww_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
  llvm.func @kern(%out: !llvm.ptr<1>, %tiles: i32, %ksteps: i32) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %c16 = arith.constant 16 : i32
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %smem = llvm.mlir.addressof @__ww_dynamic_smem : !llvm.ptr<3>
    scf.for %t = %c0 to %tiles step %c1 : i32 {
      %acc = scf.for %k = %c0 to %ksteps step %c1 iter_args(%a = %c0) -> (i32) : i32 {
        %i = arith.addi %k, %t : i32
        %p = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
        %v = llvm.load %p : !llvm.ptr<1> -> i32
        %s = arith.addi %a, %v : i32
        scf.yield %s : i32
      }
      %hi = arith.shrui %tid, %c3 : i32
      %sw = arith.xori %tid, %hi : i32
      %off = arith.muli %sw, %c16 : i32
      %q = llvm.getelementptr %smem[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
      %qi = llvm.ptrtoint %q : !llvm.ptr<3> to i32
      llvm.inline_asm has_side_effects "st.shared.b32 [$0], $1;", "r,r" %qi, %acc : (i32, i32) -> ()
    }
    llvm.return
  }
}
"""

# The same address used inside the main loop (each step stores there): it stays out of the tile loop's main loop
# and out of the tile loop (nothing after the main loop uses it).
_USED_IN_MAIN_LOOP = _TILE_LOOP.replace(
    """        %s = arith.addi %a, %v : i32
        scf.yield %s : i32""",
    """        %s = arith.addi %a, %v : i32
        %hi2 = arith.shrui %tid, %c3 : i32
        %sw2 = arith.xori %tid, %hi2 : i32
        %off2 = arith.muli %sw2, %c16 : i32
        %q2 = llvm.getelementptr %smem[%off2] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
        %qi2 = llvm.ptrtoint %q2 : !llvm.ptr<3> to i32
        llvm.inline_asm has_side_effects "st.shared.b32 [$0], $1;", "r,r" %qi2, %s : (i32, i32) -> ()
        scf.yield %s : i32""")

# Each tile's main loop stores every step at the thread's swizzled address in the tile's stage buffer (two stages,
# 4 KiB apart): the address is the swizzled base plus the stage's offset, made in the tile loop before the main loop.
_STAGED_BASE = """
module {
  llvm.mlir.global external @__ww_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
  llvm.func @kern(%out: !llvm.ptr<1>, %tiles: i32, %ksteps: i32) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = arith.constant 3 : i32
    %c16 = arith.constant 16 : i32
    %c4096 = arith.constant 4096 : i32
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %smem = llvm.mlir.addressof @__ww_dynamic_smem : !llvm.ptr<3>
    scf.for %t = %c0 to %tiles step %c1 : i32 {
      %stage = arith.andi %t, %c1 : i32
      %soff = arith.muli %stage, %c4096 : i32
      %hi = arith.shrui %tid, %c3 : i32
      %sw = arith.xori %tid, %hi : i32
      %off = arith.muli %sw, %c16 : i32
      %base = llvm.getelementptr %smem[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
      %staged = llvm.getelementptr %base[%soff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
      %qi = llvm.ptrtoint %staged : !llvm.ptr<3> to i32
      scf.for %k = %c0 to %ksteps step %c1 : i32 {
        %i = arith.addi %k, %t : i32
        %p = llvm.getelementptr %out[%i] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
        %v = llvm.load %p : !llvm.ptr<1> -> i32
        llvm.inline_asm has_side_effects "st.shared.b32 [$0], $1;", "r,r" %qi, %v : (i32, i32) -> ()
      }
    }
    llvm.return
  }
}
"""


def _ptx(text, arch="sm_90a"):
    return _core.compile(text, target_named(arch).as_dict(), want_cubin=False)["ptx"]


def _blocks(ptx):
    """The kernel's basic blocks (lists of lines) and each one's successors: a block ends at a label or after a
    branch; it falls through to the next unless it ends with an unconditional branch or a return."""
    blocks, current = [], []
    for line in ptx[ptx.index(".entry"):].splitlines():
        if re.match(r"^\$L__BB\d+_\d+:", line) and current:
            blocks.append(current)
            current = []
        current.append(line)
        if re.search(r"\bbra(\.uni)?\s|\bret;", line):
            blocks.append(current)
            current = []
    blocks.append(current)
    index = {m.group(1): i for i, b in enumerate(blocks) if (m := re.match(r"^(\$L__BB\d+_\d+):", b[0]))}
    successors = []
    for i, b in enumerate(blocks):
        last = b[-1].strip()
        m = re.search(r"\bbra(?:\.uni)?\s+(\$L__BB\d+_\d+);", last)
        out = {index[m.group(1)]} if m else set()
        if not ((m and not last.startswith("@")) or last == "ret;") and i + 1 < len(blocks):
            out.add(i + 1)
        successors.append(out)
    return blocks, successors


def _on_a_cycle(start, successors):
    seen, work = set(), list(successors[start])
    while work:
        b = work.pop()
        if b == start:
            return True
        if b not in seen:
            seen.add(b)
            work.extend(successors[b])
    return False


def _swizzle_blocks(ptx):
    """The blocks computing the swizzle (an xor), each as (on a cycle, holds a main-loop load)."""
    blocks, successors = _blocks(ptx)
    return [(_on_a_cycle(i, successors), any("ld.global" in line for line in b))
            for i, b in enumerate(blocks) if any(re.match(r"\s*xor\.b32\b", line) for line in b)]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_120a"])
def test_the_epilogue_computes_its_address_after_the_main_loop(arch):
    ptx = _ptx(_TILE_LOOP, arch)
    # Computed in the tile loop (a block on a cycle) and not in the main loop (whose blocks load from global memory).
    assert _swizzle_blocks(ptx) == [(True, False)], ptx


def test_a_value_used_in_the_main_loop_stays_outside_both_loops():
    ptx = _ptx(_USED_IN_MAIN_LOOP)
    # One swizzle (the two uses share it), computed before the loops: the main loop stores through it every step,
    # so it lives across the main loop anyway, and a copy in the tile loop would gain nothing.
    assert _swizzle_blocks(ptx) == [(False, False)], ptx


def _llvm_swizzle_blocks(text, arch="sm_90a"):
    """As _swizzle_blocks, in the LLVM IR handed to the code generator (after the compiler's last pass)."""
    ir = _core.compile(text, target_named(arch).as_dict(), want_cubin=False, want_llvm_ir=True)["llvm_ir"]
    body = ir[ir.index("define "):]
    body = body[body.index("{") + 1:body.index("\n}")]
    blocks, names = [[]], {}
    for line in filter(str.strip, body.splitlines()):
        m = re.match(r"^([\w.]+):", line)
        if m:
            names[m.group(1)] = len(blocks)
            blocks.append([])
        blocks[-1].append(line)
    successors = [{names[n] for n in re.findall(r"label %([\w.]+)", b[-1])} if b else set() for b in blocks]
    return ir, [(_on_a_cycle(i, successors), any("load i32, ptr addrspace(1)" in line for line in b))
                for i, b in enumerate(blocks) if any(re.match(r"\s*%\S+ = xor i32\b", line) for line in b)]


def test_a_base_offset_per_tile_before_the_main_loop_is_computed_in_the_tile_loop():
    # The code generator may hoist the copy out of the tile loop again where it estimates registers to be plentiful
    # (as in this small kernel); mamba2_ssd's epilogue role is not so (backends/blackwell/tests/test_mamba2_ssd_spills.py).
    # So the property is of what the code generator is handed.
    ir, blocks = _llvm_swizzle_blocks(_STAGED_BASE)
    # The base (the swizzle) is computed in the tile loop, before the main loop and not in it: the main loop reads the
    # staged address, which the base is dead after, where a base made before the tile loop lived across all of it.
    assert blocks == [(True, False)], ir
