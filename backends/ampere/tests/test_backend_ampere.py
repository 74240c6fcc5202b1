"""The Ampere backend's own unit test (CPU only).

The generic conformance suite checks every backend the same way; this file pins down what is specific to this
one: the exact set of atoms and primitives it publishes, their targets, thread-value layouts recomputed
independently from the PTX ISA's fragment tables (the manifest validator only proves they are bijections), and
that each instruction goes through the real compiler for each of its targets, plus sm_90a for the sm_80 ones,
since Hopper kernels use them too.
"""
from __future__ import annotations

import json
import os
import re

import pytest

from warpweave import _core
from warpweave._dsl.atoms.instructions import emit_instruction, is_result, value_type
from warpweave._dsl.registry.plugins import registry

_F16_MMAS = [
    "ampere.mma.m16n8k16.f32.f16.f16.f32",
    "ampere.mma.m16n8k16.f32.bf16.bf16.f32",
    "ampere.mma.m16n8k16.f16.f16.f16.f16",
    "ampere.mma.m16n8k8.f32.f16.f16.f32",
    "ampere.mma.m16n8k8.f32.bf16.bf16.f32",
    "ampere.mma.m16n8k8.f16.f16.f16.f16",
]
_TF32_MMAS = ["ampere.mma.m16n8k8.f32.tf32.tf32.f32", "ampere.mma.m16n8k4.f32.tf32.tf32.f32"]
_I8_MMAS = [f"ampere.mma.m16n8k{k}.s32.{a}.{b}.s32{sat}"
            for k in (32, 16) for a, b in (("s8", "s8"), ("s8", "u8"), ("u8", "s8"), ("u8", "u8"))
            for sat in ("", ".satfinite")]
_F64_MMAS = ["ampere.mma.m8n8k4.f64.f64.f64.f64"]
_F8_MMAS = [f"ampere.mma.m16n8k32.f32.{a}.{b}.f32" for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
_LDMATRIX = [f"ampere.ldmatrix.x{x}{t}.b16" for t in ("", ".trans") for x in (1, 2, 4)] + \
    [f"ampere.ldmatrix.m8n16.x{x}.b8" for x in (1, 2, 4)]   # CuTe DSL's LdMatrix8x16x8bOp: the b16 instruction
_CP_ASYNC = ["ampere.cp_async.ca.32", "ampere.cp_async.ca.64", "ampere.cp_async.ca.128", "ampere.cp_async.cg.128"]
# cute.nvgpu.CopyG2ROp / CopyR2GOp with a memory order and scope (python/ordered_copy.py)
_ORDERED = [f"ampere.{op}.global.ordered.b{bits}" for op in ("ld", "st") for bits in (32, 64, 128)]
ATOMS = _F16_MMAS + _TF32_MMAS + _I8_MMAS + _F64_MMAS + _F8_MMAS + _LDMATRIX + _CP_ASYNC + _ORDERED
PRIMITIVES = [
    "ampere.cp_async.commit_group", "ampere.cp_async.wait_group", "ampere.cp_async.wait_all",
    "ampere.bar.sync", "ampere.bar.sync.all", "ampere.bar.arrive", "ampere.bar.warp.sync",
    "ampere.shfl.sync.idx.b32", "ampere.shfl.sync.up.b32", "ampere.shfl.sync.down.b32", "ampere.shfl.sync.bfly.b32",
    "ampere.mbarrier.init", "ampere.mbarrier.arrive", "ampere.mbarrier.wait.parity", "ampere.mbarrier.test_wait.parity",
    "ampere.cp_async.mbarrier.arrive.noinc",
    # cutlass.experimental.primitives' own forms (the backend's python/primitives.py adapts their signatures)
    "ampere.barrier.cta.sync", "ampere.barrier.cta.sync.count", "ampere.barrier.cta.sync.aligned",
    "ampere.barrier.cta.sync.aligned.count", "ampere.barrier.cta.arrive", "ampere.barrier.cta.red",
    "ampere.barrier.cta.red.count", "ampere.shfl.sync.valid", "ampere.cp_async.shared.global",
    "ampere.cp_async.shared.global.src_size", "ampere.cp_async.mbarrier.arrive", "ampere.exit",
    "ampere.lop3.b32",   # cute.arch.lop3 (python/arch_ops.py)
    "ampere.cvt.pack.sat.16", "ampere.cvt.pack.sat.narrow",   # primitives.convert_and_pack_integer
] + [f"ampere.red.{space}.b{bits}" for space in ("global", "shared_cta") for bits in (32, 64, 16)] + \
    [f"ampere.ldmatrix.m8n8.x{n}{t}.words" for n in (1, 2, 4) for t in ("", ".trans")]
_MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "ampere.textproto")


@pytest.fixture(scope="module")
def ampere():
    registry.load()
    refused = [r for r in _core.plugin_refusals() if "ampere" in str(r)]
    assert not refused, f"the Ampere plugin was refused: {refused}"
    assert "ampere" in registry.backends, "ww_backend_ampere was not found; build the ww_backend_ampere target"
    return registry.backends["ampere"]


def _entry(ampere, ident):
    found = registry.instruction(ident)
    assert found is not None, f"{ident} is not registered"
    backend, ins = found
    assert backend.name == "ampere"
    return ins


# ------------------------------------------------------------------------------------------------------------
# Manifest content
# ------------------------------------------------------------------------------------------------------------

def test_ids_are_exactly_the_published_set(ampere):
    assert sorted(a["id"] for a in ampere.atoms) == sorted(ATOMS)
    assert sorted(p["id"] for p in ampere.primitives) == sorted(PRIMITIVES)
    assert len(ampere.atoms) == 48 and len(ampere.primitives) == len(PRIMITIVES)


def test_source_manifest_validates_and_is_the_embedded_one(ampere):
    with open(_MANIFEST) as f:
        text = f.read()
    assert _core.validate_manifest(text) == []
    parsed, problems = _core.manifest_to_json(text)
    assert problems == []
    # A stale plugin build would test an older manifest than the one in the tree.
    assert json.loads(parsed) == ampere.manifest, "rebuild ww_backend_ampere: its embedded manifest is stale"


def test_targets(ampere):
    targets = {t.name: t for t in ampere.targets}
    assert set(targets) == {"sm_80", "sm_89"}
    assert targets["sm_80"].compute_capability == 80 and set(targets["sm_80"].also_serves) == {86, 87}
    assert targets["sm_89"].compute_capability == 89 and not targets["sm_89"].arch_specific
    # An Ada device must generate sm_89 code, or the fp8 atoms would not assemble.
    assert registry.primary_target(89).name == "sm_89"
    assert registry.primary_target(86).name == "sm_80"
    for ins in ampere.atoms + ampere.primitives:
        want = ["sm_89"] if ins["id"] in _F8_MMAS else ["sm_80"]
        assert ins["targets"] == want, ins["id"]


def test_conformance_kinds(ampere):
    for ins in ampere.atoms:
        kind = ("mma" if ".mma." in ins["id"] else "ldmatrix" if ".ldmatrix." in ins["id"] else
                "" if ".ordered." in ins["id"] else "cp_async")   # an ordered copy is a plain access's bits
        assert ins.get("conformance", "") == kind, ins["id"]
        assert ins["sass_opcodes"], ins["id"]
    for ins in ampere.primitives:
        want = ("shuffle" if ".shfl." in ins["id"] and ins["id"].endswith(".b32") else
                "barrier" if ins["id"] in ("ampere.bar.sync", "ampere.bar.sync.all", "ampere.bar.arrive") else "")
        assert ins.get("conformance", "") == want, ins["id"]


def test_python_names_are_unambiguous(ampere):
    # Classes pick an atom by its python_params; primitives of one name differ in the operands they take.
    seen = {}
    for ins in ampere.atoms + ampere.primitives:
        key = (ins.get("python_name", ""), tuple(sorted(ins.get("python_params", {}).items())),
               tuple(o["name"] for o in ins.get("operands", [])))
        assert key not in seen, f"{ins['id']} and {seen[key]} share {key}"
        seen[key] = ins["id"]


# ------------------------------------------------------------------------------------------------------------
# Thread-value layouts against the PTX ISA's fragment tables. lane = 4 * group + tig.
# Each reference maps (lane, value index) to (row, col) of the operand's tile: (m,k) for A, (n,k) for B,
# (m,n) for C/D; the manifest's layouts hold the column-major index row + rows * col.
# ------------------------------------------------------------------------------------------------------------

def _c16x8(g, t, i):
    return g + 8 * (i >> 1), 2 * t + (i & 1)


_FRAGMENTS = {
    # (element bits, M, N, K): (A, B, C)
    (16, 16, 8, 16): (lambda g, t, i: (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)),
                      lambda g, t, i: (g, 2 * t + (i & 1) + 8 * (i >> 1)), _c16x8),
    (16, 16, 8, 8): (lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1)),
                     lambda g, t, i: (g, 2 * t + i), _c16x8),
    (32, 16, 8, 8): (lambda g, t, i: (g + 8 * (i & 1), t + 4 * (i >> 1)),
                     lambda g, t, i: (g, t + 4 * i), _c16x8),
    (32, 16, 8, 4): (lambda g, t, i: (g + 8 * i, t), lambda g, t, i: (g, t), _c16x8),
    (8, 16, 8, 32): (lambda g, t, i: (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)),
                     lambda g, t, i: (g, 4 * t + (i & 3) + 16 * (i >> 2)), _c16x8),
    (8, 16, 8, 16): (lambda g, t, i: (g + 8 * (i >> 2), 4 * t + (i & 3)),
                     lambda g, t, i: (g, 4 * t + i), _c16x8),
    (64, 8, 8, 4): (lambda g, t, i: (g, t), lambda g, t, i: (g, t), lambda g, t, i: (g, 2 * t + i)),
}
_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8, "e4m3": 8, "e5m2": 8, "f64": 64}


@pytest.mark.parametrize("ident", _F16_MMAS + _TF32_MMAS + _I8_MMAS + _F64_MMAS + _F8_MMAS)
def test_mma_layouts_match_the_isa(ampere, ident):
    ins = _entry(ampere, ident)
    m, n, k = (int(x) for x in ins["shape_mnk"].strip("()").split(","))
    ops = {o["name"]: o for o in ins["operands"]}
    ref_a, ref_b, ref_c = _FRAGMENTS[(_BITS[ops["a"]["element_type"]], m, n, k)]
    for name, ref, rows in (("a", ref_a, m), ("b", ref_b, n), ("c", ref_c, m), ("d", ref_c, m)):
        op = ops[name]
        layout = _core.parse_layout(op["layout_tv"])
        for lane in range(32):
            for i in range(int(op["values"])):
                r, c = ref(lane // 4, lane % 4, i)
                assert layout((lane, i)) == r + rows * c, f"{ident} {name}: lane {lane} value {i}"


@pytest.mark.parametrize("ident", _LDMATRIX)
def test_ldmatrix_layouts_match_the_isa(ampere, ident):
    ins = _entry(ampere, ident)
    x = int(re.search(r"\.x(\d)", ident).group(1))
    trans = ".trans" in ident
    ops = {o["name"]: o for o in ins["operands"]}
    dst, src = _core.parse_layout(ops["dst"]["layout_tv"]), _core.parse_layout(ops["src"]["layout_tv"])
    assert int(ops["dst"]["values"]) * 16 == 32 * x and int(ops["dst"]["registers"]) == x
    # Bits of the tile: matrix j at 1024 j, row r at 128 r, column c at 16 c.
    for lane in range(32):
        for v in range(32 * x):
            j, w = divmod(v, 32)
            if trans:
                want = 1024 * j + 128 * (2 * (lane % 4) + w // 16) + 16 * (lane // 4) + w % 16
            else:
                want = 1024 * j + 128 * (lane // 4) + 32 * (lane % 4) + w
            assert dst((lane, v)) == want, f"{ident} dst: lane {lane} bit {v}"
        # Lanes 0..8x-1 give the row addresses; the others' addresses are ignored (a stride-0 mode).
        for bit in (0, 127):
            assert src((lane, bit)) == 128 * (lane % (8 * x)) + bit, f"{ident} src: lane {lane}"


@pytest.mark.parametrize("ident", _CP_ASYNC)
def test_cp_async_operands(ampere, ident):
    ins = _entry(ampere, ident)
    bits = int(ident.rsplit(".", 1)[1])
    ops = {o["name"]: o for o in ins["operands"]}
    assert [(o["name"], o["direction"]) for o in ins["operands"]] == [("dst", "OUT"), ("src", "IN"), ("src_size", "IN")]
    # The copy writes through dst, but the instruction reads the address: no operand is a result.
    assert not any(is_result(o) for o in ins["operands"])
    for name in ("dst", "src"):
        layout = _core.parse_layout(ops[name]["layout_tv"])
        assert layout.size() == bits and [layout((0, b)) for b in (0, bits - 1)] == [0, bits - 1]
    assert ins["python_params"]["num_bits_per_copy"] == str(bits)


# ------------------------------------------------------------------------------------------------------------
# Compile tier: a probe kernel per instruction and target, through the real compiler, ptxas and nvdisasm.
# ------------------------------------------------------------------------------------------------------------

def _make_value(b, ty, tid):
    # Values derived from the thread index so that nothing folds away before the instruction.
    if ty in ("f16", "bf16", "f32", "f64"):
        return b.op1("arith.sitofp", [tid], ty)
    if ty == "i32":
        return tid
    if ty in ("i8", "i16", "i1"):
        return b.op1("arith.trunci", [tid], ty)
    if ty == "i64":
        return b.op1("arith.extui", [tid], ty)
    raise AssertionError(f"no probe value of type {ty}")


def _probe_attribute(a):
    """A probe's value of an attribute: its first allowed value, else its default, else 1 (a count, a depth)."""
    allowed = a.get("allowed") or []
    v = allowed[0] if allowed else a.get("default_value")
    if a.get("type") == "string":
        return v or ""
    return int(v) if v not in (None, "") else 1


def _emit_probe(b, name, ins):
    """Adds kernel `name`: instruction `ins` fed from the thread index and a parameter, its results stored."""
    out, scalar = b.begin_function(name, ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
    inputs = {}
    for o in ins.get("operands", []):
        if is_result(o):
            continue
        if o["role"] == "GMEM_ADDRESS":
            inputs[o["name"]] = [b.op1("llvm.ptrtoint", [out], "i64")]
        elif o["role"] == "SCALAR":
            # A kernel parameter: run-time values keep e.g. cp.async's zero-fill path alive.
            inputs[o["name"]] = [scalar]
        else:
            n = int(o["values"]) if o["role"] == "REGISTERS" else int(o.get("count") or 1)
            inputs[o["name"]] = [_make_value(b, value_type(o), tid) for _ in range(n)]
    attrs = {a["name"]: _probe_attribute(a) for a in ins.get("attributes", [])}
    results = emit_instruction(b, "ampere", ins, inputs, attrs)
    slot = 0
    for o in ins.get("operands", []):
        if not is_result(o):
            continue
        for v in results[o["name"]]:
            p = b.op1("llvm.getelementptr", [out, b.constant_int(slot, "i32")], "!llvm.ptr<1>",
                      f"elem_type = {value_type(o)}, rawConstantIndices = array<i32: -2147483648>")
            b.op0("llvm.store", [v, p], "")
            slot += 1
    b.end_function()
    return attrs


def _kernel_name(ident):
    return "probe_" + re.sub(r"\W", "_", ident)


def _probe(ins, target):
    b = _core.IRBuilder()
    attrs = _emit_probe(b, _kernel_name(ins["id"]), ins)
    return _core.compile(str(b), target), attrs


def _ptx_pattern(ins, attrs):
    text = ins["ptx_template"]
    for name, value in attrs.items():
        text = text.replace("{" + name + "}", str(value))
    pattern = re.escape(text)
    return re.compile(re.sub(r"\\\$\d+", r"%?[\\w.]+", pattern))


def _sass_opcodes(sass):
    return {m for m in re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass)}


def _sass_by_kernel(sass):
    """nvdisasm's listing split by kernel: {kernel name: opcodes}."""
    sections, name = {}, None
    for line in sass.splitlines():
        m = re.match(r"//-+ \.text\.(\S+)", line)
        if m:
            name = m.group(1)
            sections[name] = []
        elif name:
            sections[name].append(line)
    return {k: _sass_opcodes("\n".join(v)) for k, v in sections.items()}


@pytest.fixture(scope="module")
def batched_sass(ampere):
    """The SASS opcodes of every probe for a target, from one module and one disassembly per target: running the
    disassembler costs ~0.3-0.6 s a call, the compile ~10 ms. None if that module does not compile, so that each
    test then compiles alone and names its own failure."""
    cache = {}

    def get(target):
        name = target["name"]
        if name not in cache:
            b = _core.IRBuilder()
            for ins in ampere.atoms + ampere.primitives:
                if any(t["name"] == name for t in _targets_of(ampere, ins)):
                    _emit_probe(b, _kernel_name(ins["id"]), ins)
            try:
                cache[name] = _sass_by_kernel(_core.disassemble_sass(_core.compile(str(b), target)["cubin"]))
            except _core.CompileError:
                cache[name] = None
        return cache[name]

    return get


def _targets_of(ampere, ins):
    named = {t.name: t.as_dict() for t in ampere.targets}
    targets = [named[t] for t in ins["targets"]]
    if ins["targets"] == ["sm_80"]:
        targets.append({"name": "sm_90a"})
    return targets


@pytest.mark.parametrize("ident", ATOMS + PRIMITIVES)
def test_compiles_with_expected_ptx_and_sass(ampere, batched_sass, ident):
    ins = _entry(ampere, ident)
    sass_tool = _core.sass_tool_available()
    for target in _targets_of(ampere, ins):
        result, attrs = _probe(ins, target)
        assert _ptx_pattern(ins, attrs).search(result["ptx"]), \
            f"{ident} for {target['name']}: the template's instruction is not in the PTX"
        if not sass_tool or target["name"] not in ins["targets"]:
            continue  # a later generation (sm_90a) assembles it too, with its own opcodes (RED there is REDG)
        batch = batched_sass(target)
        if batch is not None:
            ops = batch[_kernel_name(ident)]
        else:
            ops = _sass_opcodes(_core.disassemble_sass(result["cubin"]))
        # The opcode must be a whole SASS opcode or one with further modifiers (e.g. .ZFILL, .DEFER_BLOCKING).
        for want in ins.get("sass_opcodes", []):
            assert any(op == want or op.startswith(want + ".") for op in ops), \
                f"{ident} for {target['name']}: no {want} in {sorted(ops)}"
    if not sass_tool:
        pytest.skip("PTX and ptxas checked; no SASS disassembler (nvdisasm) to check the opcodes")


def test_fp8_mma_needs_sm_89(ampere):
    # Why the fp8 atoms have their own target: ptxas refuses them for sm_80/86.
    ins = _entry(ampere, _F8_MMAS[0])
    with pytest.raises(_core.CompileError, match="sm_89"):
        _probe(ins, next(t.as_dict() for t in ampere.targets if t.name == "sm_80"))
