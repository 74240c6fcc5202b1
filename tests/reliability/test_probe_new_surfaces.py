"""The hostile-input probe over the surfaces the extension work added (issue 31): user IR and @dsl_user_op functions,
inline PTX, host programs with dynamic values, and the consumer Blackwell backend (sm_120a) with its manifest.

Each case is a small user program (written as CuTe DSL programs are, through the `cutlass` names) run in a child
process (probe_driver.py; a few cases a child, one after another) with a time limit per case, so that a crash (a
signal, an abort in LLVM) or a hang is counted against its case instead of taking the run down. A case that is a mistake must end in a DSL error (warpweave.DSLError) whose location is the line of the
program marked `# <-- the user's line`; a case that is valid must compile, or give the value stated. Whatever else
happens is a defect of one of these kinds, and the summary at the end of the module counts them:

  crash     the child died by a signal, or ended without reporting an outcome
  hang      the child overran its time limit
  wrong     a mistake was accepted (a silently wrong result), or a valid program gave another value
  unnamed   a mistake was refused, but not with a DSL error naming the user's line
  refused   a valid program was refused

The cases run a few at a time; the whole probe takes well under a minute (compile-only: no GPU is needed).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

import warpweave

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "probe_driver.py")
MARK = "# <-- the user's line"
TIME_LIMIT_S = 60

PRELUDE = '''\
import math
import numpy as np
import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import arith, llvm
from cutlass.cutlass_dsl import Boolean, Float32, Int32, Int64, T, Uint32, dsl_user_op
from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor
'''

# A kernel around user IR: BODY is indented into it (tidx is the thread's index, out an Int32 tensor of 32).
KERNEL = PRELUDE + '''
@cute.kernel
def k(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
{body}


@cute.jit
def host(out: cute.Tensor):
    k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])


def main():
    c = cute.compile(host, make_fake_compact_tensor(cutlass.Int32, (32,)))
    return {result}
'''


class Case:
    def __init__(self, name, source, expect="error", match=None, arch="sm_80", value="True"):
        self.name, self.source, self.expect, self.match, self.arch, self.value = \
            name, source, expect, match, arch, value

    def __repr__(self):
        return self.name


def kernel_case(name, body, expect="error", match=None, result="True", value="True", arch="sm_80"):
    src = KERNEL.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), "    "), result=result)
    return Case(name, src, expect, match, arch, value)


def program_case(name, body, expect="error", match=None, value="True", arch="sm_80"):
    return Case(name, PRELUDE + "\n" + textwrap.dedent(body).strip("\n") + "\n", expect, match, arch, value)


M = MARK  # written into the cases' sources
CASES = [
    # --- user IR: types, values, ops ------------------------------------------------------------------------------
    kernel_case("ir_type_text_that_is_no_type", f"""
        llvm.mlir_undef(ir.Type.parse("i32) -> ()"))  {M}
    """, match="not a type of the IR user ops write"),
    kernel_case("ir_type_unbalanced_struct", f"""
        llvm.mlir_undef(ir.Type.parse("!llvm.struct<(i32, i32>"))  {M}
    """, match="not a type"),
    kernel_case("ir_type_scalable_vector", f"""
        v = ir.Type.parse("vector<[4]xi32>")  {M}
    """, match="not a type"),
    kernel_case("ir_type_zero_width_integer", f"""
        ir.IntegerType.get_signless(0)  {M}
    """, match="width is 1..65536"),
    kernel_case("ir_value_of_another_type_as_a_number", f"""
        @dsl_user_op
        def wide(x, *, loc=None, ip=None):
            return arith.extsi(T.i64(), Int32(x).ir_value())
        out[tidx] = Int32(wide(tidx))  {M}
    """, match="Int32 is made from an IR value of type i32, this one is i64"),
    kernel_case("ir_ops_of_mixed_types", f"""
        arith.addi(Int32(tidx).ir_value(), arith.constant(T.i64(), 1))  {M}
    """, match="operands of one type"),
    kernel_case("ir_float_op_on_integers", f"""
        arith.addf(Int32(tidx).ir_value(), Int32(tidx).ir_value())  {M}
    """, match="works on floats"),
    kernel_case("ir_predicate_that_is_none", f"""
        arith.cmpi(42, Int32(tidx).ir_value(), Int32(tidx).ir_value())  {M}
    """, match="CmpIPredicate"),
    kernel_case("ir_boolean_constant_of_5", f"""
        arith.constant(T.bool(), 5)  {M}
    """, match="5 does not fit i1"),
    kernel_case("ir_f16_constant_beyond_its_range", f"""
        arith.constant(T.f16(), 1.0e10)  {M}
    """, match="does not fit f16"),
    kernel_case("ir_truth_value_of_an_ir_value_in_a_user_op", f"""
        @dsl_user_op
        def positive(x, *, loc=None, ip=None):
            return bool(arith.cmpi(arith.CmpIPredicate.sgt, Int32(x).ir_value(), arith.constant(T.i32(), 0)))  {M}
        out[tidx] = Int32(1 if positive(tidx) else 0)
    """, match="no Python truth value"),
    kernel_case("ir_extractvalue_of_a_missing_field", f"""
        s = llvm.mlir_undef(llvm.StructType.get_literal([T.i32(), T.f32()]))
        llvm.extractvalue(T.i32(), s, [2])  {M}
    """, match="not a field"),
    kernel_case("ir_bitcast_that_changes_the_width", f"""
        llvm.bitcast(T.i64(), Int32(tidx).ir_value())  {M}
    """, match="changes the width"),
    kernel_case("ir_unknown_op_of_a_dialect", f"""
        llvm.call_intrinsic(T.i32(), "llvm.nvvm.read.ptx.sreg.laneid", [])  {M}
    """, match="call_intrinsic"),
    kernel_case("ir_python_number_as_an_operand", f"""
        arith.addi(3, Int32(tidx).ir_value())  {M}
    """, match="must be an IR value"),
    program_case("ir_value_kept_past_its_kernel", f"""
        kept = []

        @cute.kernel
        def k(out: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            kept.append(Int32(tidx).ir_value())
            out[tidx] = tidx

        @cute.kernel
        def k2(out: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            out[tidx] = Int32(kept[0])  {M}

        @cute.jit
        def host(out: cute.Tensor):
            k(out).launch(grid=[1, 1, 1], block=[32, 1, 1])
            k2(out).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            return cute.compile(host, make_fake_compact_tensor(cutlass.Int32, (32,))) is not None
    """, match="another kernel or trace"),
    program_case("ir_value_made_in_host_code", f"""
        @cute.jit
        def host(out: cute.Tensor):
            v = Int32(3).ir_value()
            llvm.inline_asm(T.i32(), [v], "mov.b32 $0, $1;", "=r,r")  {M}

        def main():
            return cute.compile(host, make_fake_compact_tensor(cutlass.Int32, (32,))) is not None
    """, match="on a value of the host side"),
    # valid user IR: what must keep working
    kernel_case("ir_valid_branch_on_an_ir_value", """
        c = arith.cmpi(arith.CmpIPredicate.slt, Int32(tidx).ir_value(), arith.constant(T.i32(), 16))
        if c:
            out[tidx] = 1
        else:
            out[tidx] = 2
    """, expect="ok", result="'scf' in c.ir or 'cond_br' in c.ir or 'select' in c.ir"),
    kernel_case("ir_valid_small_and_large_float_constants", """
        a = arith.constant(T.f32(), 1e-30)
        b = arith.constant(T.f32(), 1e30)
        out[tidx] = Int32(arith.fptosi(T.i32(), arith.mulf(a, b)))
    """, expect="ok"),

    # --- inline PTX ---------------------------------------------------------------------------------------------------
    kernel_case("asm_unknown_instruction", f"""
        out[tidx] = Int32(llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "movv.u32 $0, $1;", "=r,r"))  {M}
    """, match="assembler refused this inline asm"),
    kernel_case("asm_scope_left_open", f"""
        out[tidx] = Int32(llvm.inline_asm(T.i32(), [], "{{ .reg .u32 t; mov.u32 $0, 1;", "=r"))  {M}
    """, match="left open"),
    kernel_case("asm_nul_inside_the_text", f"""
        out[tidx] = Int32(llvm.inline_asm(T.i32(), [], "mov.u32 $0, 5;\\x00 mov.u32 $0, 7;", "=r"))  {M}
    """, match="printable ASCII"),
    kernel_case("asm_non_ascii_comment", f"""
        out[tidx] = Int32(llvm.inline_asm(T.i32(), [], "mov.u32 $0, 5; // \\u00e9t\\u00e9", "=r"))  {M}
    """, match="printable ASCII"),
    kernel_case("asm_unknown_constraint", f"""
        llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "mov.u32 $0, $1;", "=r,x")  {M}
    """, match="not one NVPTX knows"),
    kernel_case("asm_fewer_operands_than_constraints", f"""
        llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "add.s32 $0, $1, $2;", "=r,r,r")  {M}
    """, match=r"2 input\(s\), 1 operand\(s\)"),
    kernel_case("asm_more_operands_than_constraints", f"""
        llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()] * 3, "add.s32 $0, $1, $2;", "=r,r,r")  {M}
    """, match=r"2 input\(s\), 3 operand\(s\)"),
    kernel_case("asm_placeholder_past_the_operands", f"""
        llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "add.s32 $0, $1, $5;", "=r,r")  {M}
    """, match=r"\$5 names no operand"),
    kernel_case("asm_two_outputs_one_result", f"""
        llvm.inline_asm(T.i32(), [], "mov.u32 $0, 1; mov.u32 $1, 2;", "=r,=r")  {M}
    """, match="2 output"),
    kernel_case("asm_result_struct_of_three_for_two_outputs", f"""
        three = llvm.StructType.get_literal([T.i32(), T.i32(), T.i32()])
        llvm.inline_asm(three, [], "mov.u32 $0, 1; mov.u32 $1, 2;", "=r,=r")  {M}
    """, match="gives 3"),
    kernel_case("asm_double_in_a_32_bit_register", f"""
        llvm.inline_asm(T.f64(), [], "mov.b64 $0, 0;", "=r")  {M}
    """, match="does not fit constraint"),
    kernel_case("asm_input_tied_to_no_output", f"""
        llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "mov.u32 $0, $1;", "=r,3")  {M}
    """, match="does not exist"),
    kernel_case("asm_read_write_constraint", f"""
        llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "add.s32 $0, $0, 1;", "+r")  {M}
    """, match="no read-write constraint"),
    kernel_case("asm_immediate_given_a_runtime_value", f"""
        out[tidx] = Int32(llvm.inline_asm(T.i32(), [Int32(tidx).ir_value()], "mov.u32 $0, $1;", "=r,n"))  {M}
    """, match="immediate constraint"),
    kernel_case("asm_valid_two_results_through_a_struct", """
        pair = llvm.StructType.get_literal([T.i32(), T.i32()])
        s = llvm.inline_asm(pair, [Int32(tidx).ir_value()], "{\\n\\tadd.s32 $0, $2, 1;\\n\\tadd.s32 $1, $2, 2;\\n\\t}",
                            "=r,=r,r")
        out[tidx] = Int32(llvm.extractvalue(T.i32(), s, [0])) + Int32(llvm.extractvalue(T.i32(), s, [1]))
    """, expect="ok", result="c.ptx.count('add.s32') >= 2"),

    # --- host programs with dynamic values ------------------------------------------------------------------------
    program_case("host_division_by_a_zero_argument_when_compiling", f"""
        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor, d: cutlass.Int32):
            k(a, 1024 // d).launch(grid=[1, 1, 1], block=[32, 1, 1])  {M}

        def main():
            cute.compile(host, from_dlpack(np.zeros(32, np.int32)), cutlass.Int32(0))
    """, match="integer division by zero: the divisor d is 0"),
    program_case("host_division_by_a_zero_argument_at_a_call", f"""
        COMPILE_ONLY = "skip"

        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor, d: cutlass.Int32):
            k(a, 1024 // d).launch(grid=[1, 1, 1], block=[32, 1, 1])  {M}

        def main():
            a = from_dlpack(np.zeros(32, np.int32))
            c = cute.compile(host, a, cutlass.Int32(4))
            c(a, cutlass.Int32(4))
            c(a, cutlass.Int32(0))
    """, match="integer division by zero"),
    program_case("host_division_by_zero_after_a_function_cache_hit", f"""
        import os
        COMPILE_ONLY = "skip"
        os.environ.pop("WARPWEAVE_DISABLE_CACHE", None)
        os.environ["WARPWEAVE_CACHE_DIR"] = os.path.join(os.getcwd(), "jit-cache")

        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor, d: cutlass.Int32):
            k(a, 1024 // d).launch(grid=[1, 1, 1], block=[32, 1, 1])  {M}

        def main():
            from warpweave._dsl.call import compile_module
            compile_module._cache = None  # this case's own cache (the process ran others without one)
            a = from_dlpack(np.zeros(32, np.int32))
            host(a, cutlass.Int32(4))  # compiled and stored, its divisor guard with it
            host._compiled.clear()     # the next call is served by the function cache
            host(a, cutlass.Int32(4))
            assert [c.info.get("level") for c in host._compiled.values()] == ["function"], "no function-cache hit"
            host(a, cutlass.Int32(0))  # the guard as the cache gave it back
    """, match="integer division by zero"),
    program_case("host_modulo_by_an_extent_that_is_zero_at_a_call", f"""
        COMPILE_ONLY = "skip"

        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor, b: cute.Tensor):
            r = cutlass.Int32(a.shape[0]) % (cutlass.Int32(b.shape[0]) - 4)  {M}
            k(a, r).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            dyn = lambda n: from_dlpack(np.zeros(n, np.int32)).mark_layout_dynamic()
            c = cute.compile(host, dyn(32), dyn(9))
            c(dyn(32), dyn(4))
    """, match="integer modulo by zero"),
    program_case("host_grid_divided_by_a_zero_extent_at_a_call", f"""
        COMPILE_ONLY = "skip"

        @cute.kernel
        def k(a: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = 1

        @cute.jit
        def host(a: cute.Tensor, b: cute.Tensor):
            k(a).launch(grid=[a.shape[0] // (b.shape[0] - 4), 1, 1], block=[32, 1, 1])  {M}

        def main():
            dyn = lambda n: from_dlpack(np.zeros(n, np.int32)).mark_layout_dynamic()
            c = cute.compile(host, dyn(32), dyn(8))
            c(dyn(32), dyn(8))
            c(dyn(32), dyn(4))
    """, match="has no grid for these arguments: division by zero"),
    program_case("host_grid_that_overflows_at_a_call", f"""
        COMPILE_ONLY = "skip"

        @cute.kernel
        def k(a: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = 1

        @cute.jit
        def host(a: cute.Tensor):
            k(a).launch(grid=[a.shape[0] * (1 << 62), 1, 1], block=[32, 1, 1])  {M}

        def main():
            c = cute.compile(host, from_dlpack(np.zeros(32, np.int32)).mark_layout_dynamic())
            c(from_dlpack(np.zeros(32, np.int32)).mark_layout_dynamic())
    """, match="has no grid for these arguments: integer overflow"),
    program_case("host_int32_arithmetic_beyond_32_bits", f"""
        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor):
            k(a, cutlass.Int32(a.shape[0]) * 10**12).launch(grid=[1, 1, 1], block=[32, 1, 1])  {M}

        def main():
            cute.compile(host, from_dlpack(np.zeros(32, np.int32)).mark_layout_dynamic())
    """, match="does not fit Int32"),
    program_case("host_device_value_used_on_the_host", f"""
        @cute.jit
        def host(a: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()  {M}

        def main():
            cute.compile(host, from_dlpack(np.zeros(32, np.int32)))
    """, match="kernel"),
    # valid host programs: a 64-bit extent expression passed as Int32 compiles (and wraps, as a conversion does); a
    # branch that launches nothing and an empty grid launch nothing, without an error.
    program_case("host_valid_wide_extent_expression_passed_as_int32", """
        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor):
            k(a, a.shape[0] * 1000000000000).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            c = cute.compile(host, from_dlpack(np.zeros(32, np.int32)).mark_layout_dynamic())
            return 'trunc' in c.ir
    """, expect="ok"),
    program_case("host_valid_branch_that_launches_nothing", """
        COMPILE_ONLY = "skip"

        @cute.kernel
        def k(a: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = 1

        @cute.jit
        def host(a: cute.Tensor, go: cutlass.Constexpr):
            if go:
                k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            a = from_dlpack(np.zeros(32, np.int32))
            c = cute.compile(host, a, False)
            return (len(c.launches), c(a))
    """, expect="ok", value="(0, None)"),
    program_case("host_valid_empty_grid_launches_nothing", """
        import warnings
        COMPILE_ONLY = "skip"

        @cute.kernel
        def k(a: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = 1

        @cute.jit
        def host(a: cute.Tensor):
            k(a).launch(grid=[a.shape[0] // 32, 1, 1], block=[32, 1, 1])

        def main():
            dyn = lambda n: from_dlpack(np.zeros(n, np.int32)).mark_layout_dynamic()
            c = cute.compile(host, dyn(64))
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                c(dyn(16))
            return any("nothing is launched" in str(x.message) for x in w)
    """, expect="ok"),
    program_case("host_valid_signed_floor_division_by_an_argument", """
        @cute.kernel
        def k(a: cute.Tensor, n: cutlass.Int32):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = n

        @cute.jit
        def host(a: cute.Tensor, d: cutlass.Int32):
            k(a, 1024 // d).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            c = cute.compile(host, from_dlpack(np.zeros(32, np.int32)), cutlass.Int32(-3))
            # A signed argument may be negative: never an unsigned division of it.
            return "div.u32" not in c.ptx and "div.s32" in c.ptx
    """, expect="ok"),

    # --- the consumer Blackwell backend (sm_120a) and its manifest --------------------------------------------------
    program_case("sm120_valid_kernel_compiles", """
        @cute.kernel
        def k(a: cute.Tensor):
            tidx, _, _ = cute.arch.thread_idx()
            a[tidx] = a[tidx] * 2.0

        @cute.jit
        def host(a: cute.Tensor):
            k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            c = cute.compile(host, from_dlpack(np.zeros(32, np.float32)))
            return c.target["name"] == "sm_120a" and c.cubin[:4] == b"\\x7fELF"
    """, expect="ok", arch="sm_120a"),
    program_case("sm120_datacenter_blackwell_instruction", f"""
        @cute.kernel
        def k(a: cute.Tensor):
            cute.arch.alloc_tmem(32, a.iterator)  {M}

        @cute.jit
        def host(a: cute.Tensor):
            k(a).launch(grid=[1, 1, 1], block=[32, 1, 1])

        def main():
            cute.compile(host, from_dlpack(np.zeros(32, np.int32)))
    """, match=r"tcgen05.alloc_tmem\(\) exists \(blackwell.* but not for the current target sm_120a", arch="sm_120a"),
    program_case("sm120_block_scaled_mma_of_a_pairing_it_lacks", f"""
        @cute.jit
        def host(a: cute.Tensor):
            # The op holds its parameters; the instance is chosen (and a pairing checked) where it is used.
            op = cute.nvgpu.warp.MmaMXF4Op(cutlass.Float4E2M1FN, cutlass.Float32, cutlass.Float8E4M3FN)
            cute.make_tiled_mma(op)  {M}

        def main():
            cute.compile(host, from_dlpack(np.zeros(32, np.int32)))
    """, match="MmaMXF4Op: sf_dtype Float8E4M3FN breaks", arch="sm_120a"),
    program_case("sm120_manifest_mutants", """
        # Seeded mutants of the committed manifest (bytes flipped, cut, numbers made huge, entries repeated): each
        # is a list of problems or a valid manifest, in this process (a crash or a hang fails the case).
        import os, random, re
        from warpweave import _core

        def main():
            root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(cutlass.__file__))))
            with open(os.path.join(root, "backends", "blackwell_geforce", "blackwell_geforce.textproto")) as f:
                text = f.read()
            rng = random.Random(31)
            numbers = [m.start() for m in re.finditer(r"\\b\\d+\\b", text)]
            outcomes = {"valid": 0, "refused": 0}
            for i in range(300):
                t = text
                kind = i % 6
                if kind == 0:
                    p = rng.randrange(len(t)); t = t[:p] + chr(rng.randrange(32, 127)) + t[p + 1:]
                elif kind == 1:
                    t = t[:rng.randrange(len(t))]
                elif kind == 2:
                    p = rng.choice(numbers); t = t[:p] + rng.choice(["889849906929769152928", "-1", "0",
                                                                     "4294967296", "9223372036854775807"]) + t[p:]
                elif kind == 3:
                    t = t.replace('extends: "ampere"', rng.choice(['extends: "nosuch"', 'extends: "blackwell_geforce"',
                                                                    'extends: ""', "extends: 7"]))
                elif kind == 4:
                    a = rng.randrange(len(t)); b = min(len(t), a + rng.randrange(1, 2000)); t = t + t[a:b]
                else:
                    t = t.replace("sm_120a", rng.choice(["sm_80", "sm_120a sm_120a", "", "sm_999z"]), rng.randrange(1, 4))
                problems = _core.validate_manifest(t)
                assert all(isinstance(p, str) and p for p in problems)
                outcomes["refused" if problems else "valid"] += 1
            return outcomes["refused"] > 0 and outcomes["valid"] + outcomes["refused"] == 300
    """, expect="ok", arch="sm_120a"),
]

def judge(case: Case, path: str, outcome: dict) -> dict:
    """The verdict on one case from the outcome its process reported."""
    marked = [i for i, line in enumerate(case.source.splitlines(), 1) if MARK in line]
    if case.expect == "ok":
        if outcome["outcome"] == "raised":
            return {"verdict": "refused", "detail": outcome["traceback"]}
        if outcome["result"] != case.value:
            return {"verdict": "wrong", "detail": f"gave {outcome['result']}, not {case.value}"}
        return {"verdict": "ok", "detail": ""}
    if outcome["outcome"] != "raised":
        return {"verdict": "wrong", "detail": f"the mistake was accepted (main gave {outcome['result']})"}
    if not outcome["is_dsl_error"] or outcome["location"] != [path, marked[0]]:
        return {"verdict": "unnamed", "detail": f"{outcome['type']} at {outcome['location']} (the user's line is "
                                                f"{marked}): {outcome['message']}"}
    if case.match and not re.search(case.match, outcome["message"]):
        return {"verdict": "unnamed", "detail": f"the message does not say /{case.match}/: {outcome['message']}"}
    if "Traceback" in outcome["message"]:
        return {"verdict": "unnamed", "detail": "the message holds a traceback: " + outcome["message"]}
    return {"verdict": "ok", "detail": ""}


def _child_env(arch: str) -> dict:
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(warpweave.__file__)))
    paths = [package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, WARPWEAVE_ARCH=arch, WARPWEAVE_DISABLE_CACHE="1", PYTHONUNBUFFERED="1",
                PYTHONPATH=os.pathsep.join(paths))


def run_batch(cases: list, arch: str, workdir) -> dict:
    """The verdicts of cases of one target, run one after another in a child process (one import of warpweave
    for all); a child that dies or overruns is counted against the case it was running, and the cases after
    that one run again in a fresh child."""
    workdir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for c in cases:
        p = workdir / f"{c.name}.py"
        p.write_text(c.source)
        paths[c.name] = str(p.resolve())
    verdicts, pending = {}, list(cases)
    while pending:
        cmd = [sys.executable, DRIVER, str(TIME_LIMIT_S)] + [paths[c.name] for c in pending]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(arch), cwd=str(workdir),
                               timeout=TIME_LIMIT_S * len(pending) + 60)
            stdout, stderr, status, overran = r.stdout, r.stderr, r.returncode, False
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
            status, overran = None, True
        started, outcomes = [], {}
        for line in stdout.splitlines():
            if line.startswith("PROBE-START "):
                started.append(line[len("PROBE-START "):])
            elif line.startswith("PROBE-OUTCOME "):
                o = json.loads(line[len("PROBE-OUTCOME "):])
                outcomes[o["path"]] = o
        for c in pending:
            if paths[c.name] in outcomes:
                verdicts[c.name] = judge(c, paths[c.name], outcomes[paths[c.name]])
        unfinished = [p for p in started if p not in outcomes]
        if unfinished:
            culprit = next(c for c in pending if paths[c.name] == unfinished[0])
            hang = overran or "Timeout (" in stderr
            verdicts[culprit.name] = {"verdict": "hang" if hang else "crash",
                                      "detail": f"exit status {status}\n{stderr[-3000:]}"}
        elif status != 0 or len(outcomes) < len(pending):
            for c in pending:  # the child failed outside any case: nothing can be said of them one by one
                verdicts.setdefault(c.name, {"verdict": "crash", "detail": f"exit status {status}\n{stderr[-3000:]}"})
        pending = [c for c in pending if c.name not in verdicts]
    return verdicts


def _workers() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


@pytest.fixture(scope="module")
def verdicts(request, tmp_path_factory):
    """The verdict of every case this session selected, run a few at a time (each in its own process)."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if getattr(item, "callspec", None) is not None and item.module is request.module
                and "case" in item.callspec.params]
    base = tmp_path_factory.mktemp("probe")
    n = _workers()
    batches = []
    for arch in sorted({c.arch for c in selected}):
        group = [c for c in selected if c.arch == arch]
        k = max(1, min(n, len(group) // 4))  # a few cases a child at least: each child pays one import
        batches += [(group[i::k], arch, base / f"{arch}_{i}") for i in range(k)]
    out = {}
    with ThreadPoolExecutor(n) as pool:
        for verdicts in pool.map(lambda b: run_batch(*b), batches):
            out.update(verdicts)
    counts = {k: 0 for k in ("ok", "crash", "hang", "wrong", "unnamed", "refused")}
    for v in out.values():
        counts[v["verdict"]] += 1
    line = f"new-surfaces probe: {len(out)} cases: " + ", ".join(f"{n} {k}" for k, n in counts.items())
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():  # the counts are the probe's report: shown, not captured
            reporter.write_line("")
            reporter.write_line(line)
    return out


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_case(case, verdicts):
    r = verdicts[case.name]
    assert r["verdict"] == "ok", f"{case.name}: {r['verdict']}: {r['detail']}"


def test_every_mistake_marks_one_line_and_names_are_unique():
    assert len({c.name for c in CASES}) == len(CASES)
    for c in CASES:
        n = c.source.count(MARK)
        assert n == (1 if c.expect == "error" else 0), c.name


def test_the_probe_counts_a_crash_and_a_hang_against_their_cases(tmp_path, monkeypatch):
    """The accounting itself: a case that dies by a signal is a crash, one that never returns (stuck outside
    Python too) is a hang, and the cases after each still get their own verdicts."""
    monkeypatch.setattr(sys.modules[__name__], "TIME_LIMIT_S", 5)
    fine = program_case("fine", "def main():\n    return True\n", expect="ok")
    crash = program_case("crash", "import os, signal\n\ndef main():\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
                         expect="ok")
    hang = program_case("hang", "import time\n\ndef main():\n    time.sleep(3600)\n", expect="ok")
    accepted = program_case("accepted", f"def main():\n    return 1  {MARK}\n")
    v = run_batch([fine, crash, fine_again := program_case("fine_again", fine.source, expect="ok"), hang, accepted],
                  "sm_80", tmp_path)
    assert {k: x["verdict"] for k, x in v.items()} == {"fine": "ok", "crash": "crash", "fine_again": "ok",
                                                        "hang": "hang", "accepted": "wrong"}, v
    assert fine_again.name == "fine_again"
