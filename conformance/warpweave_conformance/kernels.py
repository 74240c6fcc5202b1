"""Probe kernels: one instruction of a manifest wrapped in a kernel built with the IR builder.

Every probe kernel has the signature (in: !llvm.ptr<1>, out: !llvm.ptr<1>) and reads its operands from `in`,
laid out per case (block index) and thread:

    in  = [case 0: [thread 0 record][thread 1 record]...[block-1 record][case data] ][case 1: ...]...
    out = [case 0: [thread 0 record]...[block-1 record]][case 1: ...]...

A record holds one field per operand the instruction takes: the values of register and scalar operands, and
the byte offsets of address operands (added to the kernel's shared-memory array or to the case data). Host
code fills the same records with `Record.put`, so that what a kernel reads and what the host wrote agree by
construction; every thread-value layout is applied on the host, where it is plain Python.

Operands are emitted through warpweave's own `emit_instruction`, the path the DSL takes, so a probe exercises
the same packing and template substitution as user code.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from warpweave._dsl.atoms import instructions as _ins

MEM_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}
ADDRESS_ROLES = ("SMEM_ADDRESS", "MBARRIER", "GMEM_ADDRESS")


def is_result(op: dict) -> bool:
    """Whether the instruction produces this operand (same rule as warpweave._dsl.atoms.instructions)."""
    f = getattr(_ins, "is_result", None)
    if f is not None:
        return f(op)
    return op["direction"] == "OUT"


def value_type(op: dict) -> str:
    return _ins.value_type(op)


def values_of(op: dict) -> int:
    return _ins.values_of(op)


def held_type(t: str) -> str:
    """The type a value of MLIR type t is kept in in a record: an integer narrower than a byte (an i1 predicate,
    an i4 fp4 value) takes a whole i8, as memory cannot address less."""
    return "i8" if t.startswith("i") and t[1:].isdigit() and int(t[1:]) < 8 else t


@dataclass
class Field:
    name: str
    mlir_type: str
    count: int
    offset: int

    @property
    def elem_bytes(self) -> int:
        return MEM_BYTES[self.mlir_type]

    @property
    def size(self) -> int:
        return self.count * self.elem_bytes


@dataclass
class Record:
    """The bytes of one thread's operands: named fields, each aligned to its element size."""
    fields: dict = field(default_factory=dict)
    end: int = 0

    def add(self, name: str, mlir_type: str, count: int) -> Field:
        if name in self.fields:
            raise ValueError(f"record field {name} declared twice")
        eb = MEM_BYTES[mlir_type]
        off = -(-self.end // eb) * eb
        f = Field(name, mlir_type, count, off)
        self.fields[name] = f
        self.end = off + f.size
        return f

    @property
    def size(self) -> int:
        return -(-self.end // 16) * 16

    def put(self, buf: np.ndarray, name: str, raw: np.ndarray) -> None:
        """Writes field `name` of every (case, thread) record: buf is (cases, block, size) uint8, raw is
        (cases, block, field bytes) uint8, broadcast as numpy does."""
        f = self.fields[name]
        buf[..., f.offset:f.offset + f.size] = raw

    def get(self, buf: np.ndarray, name: str) -> np.ndarray:
        f = self.fields[name]
        return buf[..., f.offset:f.offset + f.size]


def plan_inputs(entry: dict, rec: Record, skip=()) -> None:
    """Declares a record field for every operand the instruction reads (address operands: their offsets)."""
    for op in entry.get("operands", []):
        if is_result(op) or op["name"] in skip:
            continue
        n = values_of(op)
        if op["role"] in ("SMEM_ADDRESS", "MBARRIER"):
            rec.add(op["name"] + "@off", "i32", n)
        elif op["role"] == "GMEM_ADDRESS":
            rec.add(op["name"] + "@off", "i64", n)
        elif op["role"] == "PREDICATE" or value_type(op) == "i1":
            rec.add(op["name"], "i8", n)
        else:
            rec.add(op["name"], value_type(op), n)


def plan_outputs(entry: dict, rec: Record) -> None:
    for op in entry.get("operands", []):
        if is_result(op):
            t = value_type(op)
            rec.add(op["name"], "i8" if t == "i1" else t, values_of(op))


def default_attrs(entry: dict) -> tuple[dict, str]:
    """Attribute values for a probe: the default, else the first allowed value, else 0 for integers. Returns
    (attrs, problem); problem names an attribute no value can be chosen for."""
    out = {}
    for a in entry.get("attributes", []):
        v = a.get("default_value") or (a.get("allowed") or [None])[0]
        if v is None or v == "":
            if a.get("type") == "int":
                v = "0"
            else:
                return {}, f"attribute {a['name']} has no default or allowed value to probe with"
        out[a["name"]] = int(v) if a.get("type") == "int" and re.fullmatch(r"-?\d+", str(v)) else v
    return out, ""


class ProbeKernel:
    """Builds one probe kernel; see the module docstring for its buffers."""

    def __init__(self, b, name: str, block: int, in_rec: Record, out_rec: Record, *, data_bytes: int = 0,
                 smem_bytes: int = 0, smem_align: int = 128, attributes: str = "nvvm.kernel"):
        self.b = b
        self.name = name
        self.block = block
        self.in_rec = in_rec
        self.out_rec = out_rec
        self.data_bytes = -(-data_bytes // 16) * 16
        self.smem_bytes = smem_bytes
        self._smem = f"{name}_smem" if smem_bytes else None
        if self._smem:
            b.add_module_text(f"llvm.mlir.global internal @{self._smem}() {{addr_space = 3 : i32, alignment = "
                              f"{smem_align} : i64}} : !llvm.array<{smem_bytes} x i8>")
        self.args = b.begin_function(name, ["!llvm.ptr<1>", "!llvm.ptr<1>"], attributes)
        self.tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
        self.bid = b.op1("nvvm.read.ptx.sreg.ctaid.x", [], "i32")
        case_in = block * in_rec.size + self.data_bytes
        case_out = block * out_rec.size
        self.case_in_bytes, self.case_out_bytes = case_in, case_out
        self._in = self._thread_base(self.args[0], case_in, in_rec.size)
        self._out = self._thread_base(self.args[1], case_out, out_rec.size)
        self._data = None
        if self.data_bytes:
            off = self.i32(block * in_rec.size)
            case = self.mul(self.bid, self.i32(case_in))
            self._data = self.gep_value(self.args[0], self.add(case, off))

    # --- arithmetic ------------------------------------------------------------------------------------------
    def i32(self, v: int) -> int:
        return self.b.constant_int(int(v), "i32")

    def i64(self, v: int) -> int:
        return self.b.constant_int(int(v), "i64")

    def add(self, x: int, y: int) -> int:
        return self.b.op1("arith.addi", [x, y], self.b.type_of(x))

    def mul(self, x: int, y: int) -> int:
        return self.b.op1("arith.muli", [x, y], self.b.type_of(x))

    def gep(self, ptr: int, byte_offset: int, space: int = 1) -> int:
        """ptr + a constant number of bytes."""
        return self.b.op1("llvm.getelementptr", [ptr], f"!llvm.ptr<{space}>",
                          f"elem_type = i8, rawConstantIndices = array<i32: {int(byte_offset)}>")

    def gep_value(self, ptr: int, offset_value: int, space: int = 1) -> int:
        """ptr + an IR value (i32 or i64) of bytes. IR values are Python ints too, hence two methods."""
        return self.b.op1("llvm.getelementptr", [ptr, offset_value], f"!llvm.ptr<{space}>",
                          "elem_type = i8, rawConstantIndices = array<i32: -2147483648>")

    def _thread_base(self, ptr: int, case_bytes: int, rec_bytes: int) -> int:
        if case_bytes == 0:
            return ptr
        off = self.add(self.mul(self.bid, self.i32(case_bytes)), self.mul(self.tid, self.i32(rec_bytes)))
        return self.gep_value(ptr, off)

    def load(self, ptr: int, mlir_type: str, align: int | None = None) -> int:
        a = align or MEM_BYTES[mlir_type]
        return self.b.op1("llvm.load", [ptr], mlir_type, f"alignment = {a} : i64")

    def store(self, value: int, ptr: int, align: int | None = None) -> None:
        a = align or MEM_BYTES.get(self.b.type_of(value), 1)
        self.b.op0("llvm.store", [value, ptr], f"alignment = {a} : i64")

    # --- records ---------------------------------------------------------------------------------------------
    def read(self, name: str) -> list[int]:
        f = self.in_rec.fields[name]
        return [self.load(self.gep(self._in, f.offset + i * f.elem_bytes), f.mlir_type) for i in range(f.count)]

    def write(self, name: str, values: list[int]) -> None:
        f = self.out_rec.fields[name]
        if len(values) != f.count:
            raise ValueError(f"output field {name} takes {f.count} values, got {len(values)}")
        for i, v in enumerate(values):
            if self.b.type_of(v) == "i1":
                v = self.b.op1("arith.extui", [v], "i8")
            self.store(v, self.gep(self._out, f.offset + i * f.elem_bytes))

    # --- memories --------------------------------------------------------------------------------------------
    def smem_ptr(self) -> int:
        if not self._smem:
            raise ValueError("this probe kernel has no shared memory")
        return self.b.op1("llvm.mlir.addressof", [], "!llvm.ptr<3>", f"global_name = @{self._smem}")

    def smem_address(self) -> int:
        """The shared-memory array's address as instructions take it (32 bits, shared window)."""
        return self.b.op1("llvm.ptrtoint", [self.smem_ptr()], "i32")

    def smem_at(self, byte_offset: int) -> int:
        return self.gep(self.smem_ptr(), byte_offset, space=3)

    def smem_at_value(self, offset_value: int) -> int:
        return self.gep_value(self.smem_ptr(), offset_value, space=3)

    def data_ptr(self) -> int:
        if self._data is None:
            raise ValueError("this probe kernel has no case data")
        return self._data

    def barrier(self) -> None:
        self.b.op0("nvvm.barrier0", [])

    # --- the instruction -------------------------------------------------------------------------------------
    def operand_values(self, entry: dict, overrides: dict | None = None) -> dict:
        """IR values for every operand the instruction reads, by role (see plan_inputs)."""
        overrides = overrides or {}
        out = {}
        for op in entry.get("operands", []):
            name = op["name"]
            if is_result(op):
                continue
            if name in overrides:
                out[name] = list(overrides[name])
                continue
            if op["role"] in ("SMEM_ADDRESS", "MBARRIER"):
                base = self.smem_address()
                out[name] = [self.add(base, off) for off in self.read(name + "@off")]
            elif op["role"] == "GMEM_ADDRESS":
                if self._data is not None and not op["direction"] == "OUT":
                    base_ptr = self._data
                else:
                    base_ptr = self._out
                base = self.b.op1("llvm.ptrtoint", [base_ptr], "i64")
                out[name] = [self.add(base, off) for off in self.read(name + "@off")]
            elif op["role"] == "PREDICATE" or value_type(op) == "i1":
                out[name] = [self.b.op1("arith.trunci", [v], "i1") for v in self.read(name)]
            else:
                out[name] = self.read(name)
        return out

    def emit(self, backend: str, entry: dict, attrs: dict | None = None, overrides: dict | None = None) -> dict:
        return _ins.emit_instruction(self.b, backend, entry, self.operand_values(entry, overrides), attrs or {})

    def end(self) -> None:
        self.b.end_function()


def host_buffers(cases: int, block: int, in_rec: Record, out_rec: Record, data_bytes: int = 0):
    """Zeroed host images of a probe's buffers: (records (cases, block, in size), data (cases, data bytes)),
    and the number of bytes `out` needs."""
    data_bytes = -(-data_bytes // 16) * 16
    recs = np.zeros((cases, block, in_rec.size), dtype=np.uint8)
    data = np.zeros((cases, data_bytes), dtype=np.uint8)
    return recs, data, cases * block * out_rec.size


def in_image(recs: np.ndarray, data: np.ndarray) -> np.ndarray:
    """The bytes of `in`: per case, the thread records then the case data."""
    cases = recs.shape[0]
    return np.concatenate([recs.reshape(cases, -1), data.reshape(cases, -1)], axis=1).reshape(-1)


def out_records(out: np.ndarray, cases: int, block: int, out_rec: Record) -> np.ndarray:
    return np.asarray(out, dtype=np.uint8)[: cases * block * out_rec.size].reshape(cases, block, out_rec.size)
