"""Atomic read-modify-write through CuTe DSL's two other doors: `cutlass.experimental.primitives.atomicrmw`
(QuACK's persistent tile scheduler takes its next tile with op=INC) and the IR ops `llvm.atomicrmw` / `llvm.cmpxchg`
of `cutlass._mlir.dialects.llvm`: the PTX each operation compiles to, and mistakes refused at the user's line."""
import os
import re

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave._dsl.base.errors import DSLTypeError, DSLValueError
from warpweave._mlir.dialects import llvm
from warpweave.experimental import primitives as prims

from test_arch_ops import compile_kernel, ptx_of

THIS = os.path.abspath(__file__)


def _ints(gB):
    return cute.make_tensor(cute.recast_ptr(gB.iterator, dtype=cutlass.Int32), cute.make_layout(64))


def _atoms(ptx):
    return [line.split()[0] for line in ptx.splitlines() if line.strip().startswith("atom.")]


# op, the element type the pointer is to, the PTX instruction (without its state space and ordering qualifiers)
_PRIMITIVE_CASES = [
    ("INC", cutlass.Int32, "inc.u32"),
    ("DEC", cutlass.Uint32, "dec.u32"),
    ("ADD", cutlass.Float32, "add.f32"),
    ("ADD", cutlass.Int32, "add.u32"),
    ("MIN", cutlass.Int32, "min.s32"),
    ("MIN", cutlass.Uint32, "min.u32"),
    ("MAX", cutlass.Int32, "max.s32"),
    ("AND", cutlass.Int32, "and.b32"),
    ("OR", cutlass.Uint32, "or.b32"),
    ("XOR", cutlass.Int32, "xor.b32"),
    ("EXCH", cutlass.Int32, "exch.b32"),
    ("EXCH", cutlass.Float32, "exch.b32"),
]


@pytest.mark.parametrize("op,dtype,instr", _PRIMITIVE_CASES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_primitive_atomicrmw_is_one_atom_of_the_pointers_type(op, dtype, instr):
    def body(gA, gB, tidx):
        p = cute.recast_ptr(gB.iterator, dtype=dtype)
        old = prims.atomicrmw(getattr(prims.AtomicOp, op), p.llvm_ptr, dtype(3))
        assert type(old) is dtype  # the old value comes back as the pointer's type
        gB[tidx] = cutlass.Float32(old)

    atoms = _atoms(ptx_of(body))
    assert len(atoms) == 1 and atoms[0].startswith("atom.") and atoms[0].endswith(instr), atoms


def test_primitive_atomicrmw_cas_orders_and_scopes():
    def body(gA, gB, tidx):
        gI = _ints(gB)
        a = prims.atomicrmw(prims.AtomicOp.CAS, gI.iterator, 0, b=tidx, mem_order=prims.MemOrder.ACQUIRE,
                            syncscope=prims.MemScope.CTA)
        c = prims.atomicrmw(prims.AtomicOp.INC, gI.iterator + 1, 9, mem_order=prims.MemOrder.RELEASE)
        gB[tidx] = cutlass.Float32(a + c)

    ptx = ptx_of(body)
    assert re.search(r"atom\.acquire\.cta\.global\.cas\.b32\s+%r\d+, \[%rd\d+\], 0, %r\d+;", ptx), ptx
    # a release before the increment: the fence, then the atom (LLVM's NVPTX atom carries no ordering itself)
    fence, inc = ptx.index("fence.release.gpu"), ptx.index("atom.global.inc.u32")
    assert fence < inc, ptx


def test_primitive_atomicrmw_takes_an_array():
    def body(gA, gB, tidx):
        arr = cutlass.Array(cute.recast_ptr(gB.iterator, dtype=cutlass.Int32), shape=8)
        gB[tidx] = cutlass.Float32(prims.atomicrmw(prims.AtomicOp.ADD, arr, tidx))

    assert _atoms(ptx_of(body)) == ["atom.global.add.u32"]


def refused_at_the_eval_line(call, err, needle, names=None, **kw):
    """The kernel whose body evaluates `call` (a string; the eval's frame is not user code, so the error names the
    body's line) is refused with err, its message holding needle, at that line; names: more names the string uses."""
    def body(gA, gB, tidx):
        eval(call, {**globals(), **(names or {})}, {"gA": gA, "gB": gB, "tidx": tidx})  # the refused call's own line

    with pytest.raises(err) as e:
        compile_kernel(body, **kw)
    assert needle in str(e.value), str(e.value)
    with open(THIS) as f:
        line = next(i for i, text in enumerate(f, 1) if "# the refused call's own line" in text and "eval" in text)
    assert f"{THIS}:{line}" in str(e.value), str(e.value)


@pytest.mark.parametrize("call,err,needle", [
    ("prims.atomicrmw(prims.AtomicOp.CAS, _ints(gB).iterator, 0)", DSLValueError, "needs the new value as b="),
    ("prims.atomicrmw(prims.AtomicOp.ADD, _ints(gB).iterator, 1, b=2)", DSLValueError, "takes only a"),
    ("prims.atomicrmw(prims.AtomicOp.INC, gA.iterator, 1.0)", DSLTypeError, "counts in integers"),
    ("prims.atomicrmw(prims.AtomicOp.AND, gA.iterator, 1.0)", DSLTypeError, "needs integers"),
    ("prims.atomicrmw(prims.AtomicOp.ADD, _ints(gB).iterator, 1, space=prims.SharedSpace.shared_cta)",
     DSLTypeError, "space=shared_cta"),
    ("prims.atomicrmw(prims.AtomicOp.ADD, 3, 1)", DSLTypeError, "expected a pointer"),
])
def test_primitive_atomicrmw_mistakes_at_the_users_line(call, err, needle):
    refused_at_the_eval_line(call, err, needle)


def test_llvm_atomicrmw_and_cmpxchg_through_the_ir():
    def body(gA, gB, tidx):
        gI = _ints(gB)
        r = llvm.atomicrmw(llvm.AtomicBinOp.umax, gI.iterator.ir_value(), tidx.ir_value(),
                           llvm.AtomicOrdering.monotonic, syncscope="block")
        f = llvm.atomicrmw(llvm.AtomicBinOp.fadd, gA.iterator.ir_value(), cutlass.Float32(0.5).ir_value(),
                           llvm.AtomicOrdering.monotonic)
        pair = llvm.cmpxchg(gI.iterator + 1, cutlass.Int32(0).ir_value(), tidx.ir_value(),
                            llvm.AtomicOrdering.acq_rel, llvm.AtomicOrdering.acquire, syncscope="device")
        old = llvm.extractvalue(cutlass.Int32.ir_type, pair, [0])
        gB[tidx] = cutlass.Float32(cutlass.Int32(r) + cutlass.Int32(old)) + cutlass.Float32(f)

    atoms = _atoms(ptx_of(body))
    assert atoms[0] == "atom.global.max.u32" and atoms[1] == "atom.global.add.f32", atoms
    assert atoms[2] == "atom.acq_rel.gpu.global.cas.b32", atoms


def test_llvm_atomicrmw_enumerations_have_the_dialects_numbers():
    # the generic syntax spells them as integers: a member out of place would compile another operation
    assert [llvm.AtomicBinOp[n] for n in ("xchg", "add", "fadd", "uinc_wrap")] == [0, 1, 11, 15]
    assert [llvm.AtomicOrdering[n] for n in ("monotonic", "acquire", "release", "seq_cst")] == [2, 4, 5, 7]


@pytest.mark.parametrize("call,err,needle", [
    ("llvm.atomicrmw(llvm.AtomicBinOp.fadd, _ints(gB).iterator, cutlass.Int32(1).ir_value(), "
     "llvm.AtomicOrdering.monotonic)", DSLTypeError, "works on floats"),
    ("llvm.atomicrmw(llvm.AtomicBinOp.add, gA.iterator, cutlass.Float32(1).ir_value(), "
     "llvm.AtomicOrdering.monotonic)", DSLTypeError, "works on integers"),
    ("llvm.atomicrmw(llvm.AtomicBinOp.add, tidx.ir_value(), tidx.ir_value(), llvm.AtomicOrdering.monotonic)",
     DSLTypeError, "LLVM pointer"),
    ("llvm.atomicrmw(llvm.AtomicBinOp.add, _ints(gB).iterator, tidx.ir_value(), llvm.AtomicOrdering.unordered)",
     DSLValueError, "at least monotonic"),
    ("llvm.atomicrmw(llvm.AtomicBinOp.add, _ints(gB).iterator, tidx.ir_value(), llvm.AtomicOrdering.monotonic, "
     "alignment=2)", DSLValueError, "alignment=2"),
    ("llvm.cmpxchg(_ints(gB).iterator, tidx.ir_value(), tidx.ir_value(), llvm.AtomicOrdering.acquire, "
     "llvm.AtomicOrdering.release)", DSLValueError, "cannot be release"),
    ("llvm.cmpxchg(_ints(gB).iterator, tidx.ir_value(), tidx.ir_value(), llvm.AtomicOrdering.monotonic, "
     "llvm.AtomicOrdering.seq_cst)", DSLValueError, "stronger than"),
    ("llvm.cmpxchg(gA.iterator, cutlass.Float32(0).ir_value(), cutlass.Float32(1).ir_value(), "
     "llvm.AtomicOrdering.monotonic, llvm.AtomicOrdering.monotonic)", DSLTypeError, "integers or pointers"),
])
def test_llvm_atomic_mistakes_at_the_users_line(call, err, needle):
    refused_at_the_eval_line(call, err, needle)
