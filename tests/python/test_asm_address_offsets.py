"""An address that inline assembly takes as a register and uses only as a whole memory operand (`[$n]`) loses its
constant offset to the template (`[$n+C]`), so that addresses differing by constants share one register
(compiler/asm_address_offsets.cpp): the code generator folds such offsets into the loads it selects itself, not into
assembly operands, and a fragment's matrix addresses (one base plus a constant each) took a register apiece (CuTe
DSL's 8-bit sm_120 GEMM held sixteen across its main loop). An operand the template uses otherwise keeps its value.

The kernels are MLIR with inline assembly, as the backends' atoms emit it; the PTX is also assembled (ptxas must
accept the rewritten operands)."""
import re

from warpweave import _core
from warpweave._dsl.registry.target import target_named

_HEAD = """
module {
  llvm.mlir.global external @__ww_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
  llvm.func @kern(%out: !llvm.ptr<1>) attributes {nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>} {
    %c16 = arith.constant 16 : i32
    %tid = nvvm.read.ptx.sreg.tid.x : i32
    %smem = llvm.mlir.addressof @__ww_dynamic_smem : !llvm.ptr<3>
    %off = arith.muli %tid, %c16 : i32
    %base = llvm.getelementptr %smem[%off] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
"""
_TAIL = """
    %o = llvm.getelementptr %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
    llvm.store %sum, %o : i32, !llvm.ptr<1>
    llvm.return
  }
}
"""


def _load(name, offset, template="ld.shared.b32 $0, [$1];"):
    """%name: a 32-bit value the template reads at %base + offset (a constant-index GEP, as CuTe's partitions
    give)."""
    return f"""
    %{name}_p = llvm.getelementptr %base[{offset}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
    %{name}_a = llvm.ptrtoint %{name}_p : !llvm.ptr<3> to i32
    %{name} = llvm.inline_asm has_side_effects "{template}", "=r,r" %{name}_a : (i32) -> i32
"""


def _compile(body):
    r = _core.compile(_HEAD + body + _TAIL, target_named("sm_90a").as_dict())
    assert r["cubin"], "the assembler took the PTX"
    return r["ptx"]


def _asm_lines(ptx):
    return [line.strip() for line in ptx.splitlines() if line.strip().startswith(("ld.shared", "mov.b32 %r"))]


def test_offsets_of_one_base_share_its_register():
    body = "".join(_load(f"v{k}", 512 * k) for k in range(1, 5)) + """
    %s1 = arith.addi %v1, %v2 : i32
    %s2 = arith.addi %v3, %v4 : i32
    %sum = arith.addi %s1, %s2 : i32
"""
    lines = _asm_lines(_compile(body))
    found = [re.fullmatch(r"ld\.shared\.b32 %r\d+, \[(%r\d+)\+(\d+)\];", line) for line in lines]
    assert all(found) and len(found) == 4, lines
    assert {m.group(1) for m in found} == {found[0].group(1)}, lines           # one base register
    assert sorted(int(m.group(2)) for m in found) == [512, 1024, 1536, 2048], lines


def test_an_operand_the_template_reads_otherwise_keeps_its_offset():
    # Read as a value (not an address), inside an address with an offset of its own, both as an address and as a
    # value, and an integer that only the template takes for an address (not a pointer's: tensor memory's addresses
    # are such integers): each keeps the whole sum in its register.
    body = (_load("v1", 64, "mov.b32 $0, $1;") + _load("v2", 32, "ld.shared.b32 $0, [$1+8];") +
            _load("v3", 96, "ld.shared.b32 $0, [$1]; add.s32 $0, $0, $1;") + """
    %c128 = arith.constant 128 : i32
    %v4_a = arith.addi %off, %c128 : i32
    %v4 = llvm.inline_asm has_side_effects "ld.shared.b32 $0, [$1];", "=r,r" %v4_a : (i32) -> i32
    %s1 = arith.addi %v1, %v2 : i32
    %s2 = arith.addi %s1, %v3 : i32
    %sum = arith.addi %s2, %v4 : i32
""")
    lines = _asm_lines(_compile(body))
    assert any(re.fullmatch(r"mov\.b32 %r\d+, %r\d+;", line) for line in lines), lines
    assert any(re.fullmatch(r"ld\.shared\.b32 %r\d+, \[%r\d+\+8\];", line) for line in lines), lines
    assert any(re.fullmatch(r"ld\.shared\.b32 %r\d+, \[%r\d+\]; add\.s32 .*", line) for line in lines), lines
    assert any(re.fullmatch(r"ld\.shared\.b32 %r\d+, \[%r\d+\];", line) for line in lines), lines
    assert not any(re.search(r"\+(64|32|96|128)\b", line) for line in lines), lines
