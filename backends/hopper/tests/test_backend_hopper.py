"""The Hopper backend's own unit test (CPU only).

The generic conformance suite checks every backend the same way; this file pins down what is specific to this
one: that the committed manifest is what its generator writes and what the plugin embeds, the set of ids, the
wgmma and stmatrix thread-value layouts recomputed independently from the PTX ISA's fragment figures (the
validator only proves that they are bijections), every non-wgmma instruction and a cross-section of the wgmma
atoms through the real compiler and ptxas with their SASS, and the two hooks: the shared-memory descriptor's
arithmetic against a Python model of its bit fields, and the TMA host hook's argument checks and its failure
without a driver.

WARPWEAVE_TEST_ALL_WGMMA=1 compiles all 912 wgmma atoms instead of the cross-section (~40 s more).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil

import pytest

from warpweave import _core
from warpweave._dsl.atoms.instructions import InstructionError, emit_instruction, is_result, value_type, values_of
from warpweave._dsl.registry.plugins import registry

_BACKEND_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
_MANIFEST = os.path.join(_BACKEND_DIR, "hopper.textproto")

_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
_N_ALL = list(range(8, 257, 8))
_N_INT = [8, 16, 24] + list(range(32, 257, 16))
# (A, B, accumulator): the type combinations the PTX ISA allows for dense wgmma.
_WGMMA_TYPES = ([("f16", "f16", "f16"), ("f16", "f16", "f32"), ("bf16", "bf16", "f32"), ("tf32", "tf32", "f32")] +
                [(a, b, acc) for acc in ("f32", "f16") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")] +
                [(a, b, "s32") for a in ("s8", "u8") for b in ("s8", "u8")])


def _wgmma_id(a, b, acc, n, src):
    return f"hopper.wgmma.m64n{n}k{256 // _BITS[a]}.{acc}.{a}.{b}.{src}"


WGMMA_ALL = [_wgmma_id(a, b, acc, n, src) for a, b, acc in _WGMMA_TYPES for src in ("ss", "rs")
             for n in (_N_INT if acc == "s32" else _N_ALL)]
WGMMA_SUBSET = [_wgmma_id(a, b, acc, n, src) for a, b, acc in _WGMMA_TYPES for src in ("ss", "rs")
                for n in (8, 24, 64, 256)]
STMATRIX = [f"hopper.stmatrix.x{x}{t}.b16" for t in ("", ".trans") for x in (1, 2, 4)]
TMA_ATOMS = [f"hopper.tma.{k}.{r}d" for r in range(1, 6) for k in ("load", "load.multicast", "store", "reduce")]
BULK_COPY_ATOMS = ["hopper.bulk_copy.g2s", "hopper.bulk_copy.g2s.multicast", "hopper.bulk_copy.s2g"]
# cutlass.experimental.primitives' tensor-map edits: a field of the map, in a state space
TENSORMAP_REPLACE = [f"hopper.tensormap.replace.{f}.{s}" for f in ("global_address", "rank", "box_dim", "global_dim",
                                                                    "global_stride", "element_stride")
                     for s in ("generic", "global", "shared_cta")]
PRIMITIVES = (
    TENSORMAP_REPLACE +
    [f"hopper.tma.prefetch.{r}d" for r in range(1, 6)] +
    ["hopper.st_async.b32", "hopper.st_async.b64"] +
    ["hopper.red.global.add.v2.f32", "hopper.red.global.add.v4.f32"] +   # cute.arch.red's vector form
    # utils.distributed (python/distributed.py): multicast memory's reducing load, store and reduction
    [f"hopper.multimem.{op}{v}.{t}" for t in ("f32", "f16x2", "bf16x2") for v in ("", ".v2", ".v4")
     for op in ("ld_reduce.add", "st")] +
    [f"hopper.multimem.{op}.{t}" for t in ("u32", "s32") for op in ("ld_reduce.add", "st")] +
    ["hopper.multimem.red.add.u32"] +
    # cutlass.experimental.primitives' own forms (python/primitives.py adapts their signatures)
    ["hopper.bulk.global.shared_cta", "hopper.bulk.prefetch", "hopper.bulk.shared_cluster.global",
     "hopper.bulk.shared_cluster.shared_cta", "hopper.fence.proxy.tensormap.acquire",
     "hopper.fence.proxy.tensormap.release", "hopper.mbarrier.arrive.shared_cluster", "hopper.mbarrier.arrive.state",
     "hopper.mbarrier.arrive.shared_cluster.count", "hopper.mbarrier.arrive.state.count",
     "hopper.mbarrier.try_wait.parity.hint", "hopper.mbarrier.try_wait.parity.plain",
     "hopper.mbarrier.try_wait.state.hint", "hopper.red.global.b16", "hopper.red.shared_cta.b16"] +
    [f"hopper.red.shared_cluster.b{bits}" for bits in (16, 32, 64)] +
    # cp.reduce.async.bulk to global memory: a group of (operation, type) pairs each, with and without a cache hint
    [f"hopper.bulk_reduce.global.shared_cta.{g}{h}" for g in ("bitwise", "counter", "add", "add_noftz", "minmax")
     for h in ("", ".hint")] +
    ["hopper.fence.sync_restrict.release", "hopper.fence.sync_restrict.acquire"] +
    [f"hopper.stmatrix.m8n8.x{n}{t}.words" for n in (1, 2, 4) for t in ("", ".trans")] +
    ["hopper.tma.prefetch_descriptor", "hopper.tma.commit_group", "hopper.tma.wait_group.read", "hopper.tma.wait_group",
     "hopper.wgmma.make_smem_desc", "hopper.wgmma.fence", "hopper.wgmma.commit_group", "hopper.wgmma.wait_group",
     "hopper.wgmma.fence_operand.f32", "hopper.wgmma.fence_operand.b32",
     "hopper.mbarrier.init", "hopper.mbarrier.init_fence", "hopper.mbarrier.arrive", "hopper.mbarrier.arrive.cluster",
     "hopper.mbarrier.arrive_expect_tx", "hopper.mbarrier.arrive_expect_tx.cluster", "hopper.mbarrier.expect_tx", "hopper.mbarrier.try_wait.parity",
     "hopper.mbarrier.wait.parity", "hopper.mbarrier.inval",
     "hopper.fence.proxy.async", "hopper.fence.proxy.async.shared_cta", "hopper.fence.proxy.async.shared_cluster",
     "hopper.fence.proxy.async.global",
     "hopper.cluster.arrive", "hopper.cluster.arrive.relaxed", "hopper.cluster.wait", "hopper.cluster.ctaid",
     "hopper.cluster.nctaid", "hopper.cluster.ctarank", "hopper.cluster.nctarank", "hopper.cluster.clusterid",
     "hopper.cluster.nclusterid", "hopper.cluster.is_explicit", "hopper.cluster.mapa",
     "hopper.elect.sync", "hopper.setmaxnreg.inc", "hopper.setmaxnreg.dec",
     "hopper.griddepcontrol.wait", "hopper.griddepcontrol.launch_dependents"])
NON_WGMMA = STMATRIX + TMA_ATOMS + PRIMITIVES


@pytest.fixture(scope="module")
def hopper():
    registry.load()
    refused = [r for r in _core.plugin_refusals() if "hopper" in str(r)]
    assert not refused, f"the Hopper plugin was refused: {refused}"
    assert "hopper" in registry.backends, "ww_backend_hopper was not found; build the ww_backend_hopper target"
    return registry.backends["hopper"]


def _entry(ident):
    found = registry.instruction(ident)
    assert found is not None, f"{ident} is not registered"
    assert found[0].name == "hopper"
    return found[1]


def _load_generator():
    spec = importlib.util.spec_from_file_location("hopper_generate_manifest",
                                                  os.path.join(_BACKEND_DIR, "generate_manifest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------------------------------
# Manifest content
# ------------------------------------------------------------------------------------------------------------

def test_committed_manifest_is_what_the_generator_writes():
    with open(_MANIFEST) as f:
        assert f.read() == _load_generator().render(), \
            "hopper.textproto is stale: run python3 backends/hopper/generate_manifest.py"


def test_source_manifest_validates_and_is_the_embedded_one(hopper):
    text = open(_MANIFEST).read()
    parsed, problems = _core.manifest_to_json(text)
    assert problems == []
    # A stale plugin build would test an older manifest than the one in the tree.
    assert json.loads(parsed) == hopper.manifest, "rebuild ww_backend_hopper: its embedded manifest is stale"


def test_ids_are_exactly_the_published_set(hopper):
    assert len(WGMMA_ALL) == 912
    assert sorted(a["id"] for a in hopper.atoms + hopper.all_instances()) == \
        sorted(WGMMA_ALL + STMATRIX + TMA_ATOMS + BULK_COPY_ATOMS)
    assert sorted(p["id"] for p in hopper.primitives) == sorted(PRIMITIVES)


def test_targets(hopper):
    assert [(t.name, t.compute_capability, t.arch_specific) for t in hopper.targets] == [("sm_90a", 90, True),
                                                                                         ("sm_90", 90, False)]
    assert registry.primary_target(90).name == "sm_90a"     # the arch-specific target drives code generation
    # Arch-specific PTX (wgmma, setmaxnreg, tensormap.replace) and hardware multicast (TMA, bulk) are sm_90a's alone; the rest is sm_90 PTX,
    # offered for the portable target too, which devices of later generations can use.
    # tensormap.replace is arch-specific PTX too (ptxas refuses it for sm_90)
    sm_90a_only = ("hopper.wgmma.", "hopper.setmaxnreg.", "hopper.tma.load.multicast.", "hopper.tensormap.",
                   "hopper.bulk_copy.g2s.multicast")
    for ins in hopper.atoms + hopper.primitives + hopper.all_instances():
        want = ["sm_90a"] if ins["id"].startswith(sm_90a_only) else ["sm_90a", "sm_90"]
        assert ins["targets"] == want, ins["id"]


def test_python_names_are_unambiguous(hopper):
    # An instruction is selected by its python name, its Python parameters and (a primitive) its operands
    # (warpweave.ext.select_instruction): no two entries share all three.
    seen = {}
    # one name, several entries: told apart by their python_params, or (primitives) by the operands they take
    for ins in hopper.atoms + hopper.primitives + hopper.all_instances():
        key = (ins.get("python_name", ""), tuple(sorted(ins.get("python_params", {}).items())),
               tuple(o["name"] for o in ins.get("operands", [])))
        assert key not in seen, f"{ins['id']} and {seen[key]} share {key}"
        seen[key] = ins["id"]


@pytest.mark.parametrize("a,b,acc", _WGMMA_TYPES)
def test_wgmma_python_params_and_attributes(hopper, a, b, acc):
    dsl = {"f16": "Float16", "bf16": "BFloat16", "tf32": "TFloat32", "e4m3": "Float8E4M3FN", "e5m2": "Float8E5M2",
           "s8": "Int8", "u8": "Uint8", "f32": "Float32", "s32": "Int32"}
    family = {16: "warpgroup.MmaF16BF16Op", 32: "warpgroup.MmaTF32Op"}.get(_BITS[a]) or \
        ("warpgroup.MmaI8Op" if acc == "s32" else "warpgroup.MmaF8Op")
    k = 256 // _BITS[a]
    for src, a_src in (("ss", "SMEM"), ("rs", "RMEM")):
        ins = _entry(_wgmma_id(a, b, acc, 64, src))
        assert ins["python_name"] == family
        p = ins["python_params"]
        assert (p["acc_dtype"], p["shape_mnk"], p["a_src"]) == (dsl[acc], f"(64,64,{k})", a_src)
        if a == b:
            assert p["ab_dtype"] == dsl[a]
        if family in ("warpgroup.MmaF8Op", "warpgroup.MmaI8Op"):
            assert (p["a_dtype"], p["b_dtype"]) == (dsl[a], dsl[b])
        attrs = {x["name"]: x for x in ins.get("attributes", [])}
        # Transposes exist for 16-bit inputs only, and never for A in registers; integers have no negation.
        want = set()
        if acc != "s32":
            want |= {"scale_a", "scale_b"}
        if _BITS[a] == 16:
            want |= {"tnsp_b"} | ({"tnsp_a"} if src == "ss" else set())
        assert set(attrs) == want, ins["id"]
        for name, x in attrs.items():
            assert x["default_value"] == ("1" if name.startswith("scale") else "0")
        ops = [(o["name"], o["role"], o["direction"]) for o in ins["operands"]]
        a_role = "SMEM_DESCRIPTOR" if src == "ss" else "REGISTERS"
        assert ops == [("d", "REGISTERS", "OUT"), ("a", a_role, "IN"), ("b", "SMEM_DESCRIPTOR", "IN"),
                       ("c", "REGISTERS", "IN"), ("scale_d", "PREDICATE", "IN")]
        assert ins["conformance"] == "hopper_wgmma" and ins["thr_id"] == "128:1"


def test_int_wgmma_n_values(hopper):
    ns = sorted(int(re.match(r"hopper\.wgmma\.m64n(\d+)k32\.s32\.s8\.s8\.ss$", a["id"]).group(1))
                for a in hopper.atoms + hopper.all_instances() if re.match(r"hopper\.wgmma\.m64n\d+k32\.s32\.s8\.s8\.ss$", a["id"]))
    assert ns == _N_INT


# ------------------------------------------------------------------------------------------------------------
# Thread-value layouts against the PTX ISA's wgmma fragment figures. Thread t = 32 * warp + lane; each warp
# owns 16 rows of the 64-row tile, and within a warp the pattern is mma.sync's (group = lane / 4, tig = lane % 4).
# The manifest's layouts give the column-major index row + rows * col.
# ------------------------------------------------------------------------------------------------------------

def _d_frag(t, i):
    w, lane = divmod(t, 32)
    return 16 * w + lane // 4 + 8 * ((i >> 1) & 1), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)


_A_FRAG = {
    16: _d_frag,
    32: lambda t, i: (16 * (t // 32) + (t % 32) // 4 + 8 * (i & 1), (t % 4) + 4 * (i >> 1)),
    8: lambda t, i: (16 * (t // 32) + (t % 32) // 4 + 8 * ((i >> 2) & 1), 4 * (t % 4) + (i & 3) + 16 * (i >> 3)),
}


@pytest.mark.parametrize("ident", [_wgmma_id(a, b, acc, n, "rs") for a, b, acc in
                                   (("f16", "f16", "f32"), ("f16", "f16", "f16"), ("tf32", "tf32", "f32"),
                                    ("e4m3", "e5m2", "f16"), ("u8", "s8", "s32"))
                                   for n in (8, 24, 256)])
def test_wgmma_register_layouts_match_the_isa(hopper, ident):
    ins = _entry(ident)
    ops = {o["name"]: o for o in ins["operands"]}
    n = int(re.search(r"m64n(\d+)", ident).group(1))
    for name in ("d", "c"):
        op = ops[name]
        assert int(op["values"]) == n // 2
        layout = _core.parse_layout(op["layout_tv"])
        for t in range(128):
            for i in range(n // 2):
                r, c = _d_frag(t, i)
                assert layout((t, i)) == r + 64 * c, f"{ident} {name}: thread {t} value {i}"
    a = ops["a"]
    bits = _BITS[a["element_type"]]
    k = 256 // bits
    assert int(a["values"]) == 64 * k // 128 and int(a["registers"]) == 4
    layout = _core.parse_layout(a["layout_tv"])
    for t in range(128):
        for i in range(int(a["values"])):
            r, c = _A_FRAG[bits](t, i)
            assert layout((t, i)) == r + 64 * c, f"{ident} a: thread {t} value {i}"


@pytest.mark.parametrize("ident", [_wgmma_id("bf16", "bf16", "f32", 136, "ss"), _wgmma_id("s8", "u8", "s32", 48, "ss")])
def test_wgmma_shared_memory_operands_cover_the_tile(hopper, ident):
    ins = _entry(ident)
    n = int(re.search(r"m64n(\d+)k(\d+)", ident).group(1))
    k = int(re.search(r"m64n(\d+)k(\d+)", ident).group(2))
    ops = {o["name"]: o for o in ins["operands"]}
    # Every thread passes the same descriptor: the layout is the whole tile, with a stride-0 thread mode.
    for name, mn in (("a", 64), ("b", n)):
        layout = _core.parse_layout(ops[name]["layout_tv"])
        for t in (0, 77, 127):
            for v in (0, 1, mn, mn * k - 1):
                assert layout((t, v)) == v


@pytest.mark.parametrize("ident", STMATRIX)
def test_stmatrix_layouts_match_the_isa(hopper, ident):
    ins = _entry(ident)
    x = int(re.search(r"\.x(\d)", ident).group(1))
    trans = ".trans" in ident
    ops = {o["name"]: o for o in ins["operands"]}
    assert [(o["name"], o["role"], o["direction"]) for o in ins["operands"]] == \
        [("dst", "SMEM_ADDRESS", "OUT"), ("src", "REGISTERS", "IN")]
    assert not any(is_result(o) for o in ins["operands"])
    src, dst = _core.parse_layout(ops["src"]["layout_tv"]), _core.parse_layout(ops["dst"]["layout_tv"])
    assert int(ops["src"]["registers"]) == x and int(ops["src"]["values"]) == 2 * x
    # Bits of the stored tile: matrix j at 1024 j, row at 128 row, column at 16 col. Lane l's register j holds
    # row l/4, columns 2(l%4) and 2(l%4)+1 of matrix j; .trans stores that fragment transposed.
    for lane in range(32):
        for u in range(32 * x):
            j, w = divmod(u, 32)
            e, bit = divmod(w, 16)
            row, col = (2 * (lane % 4) + e, lane // 4) if trans else (lane // 4, 2 * (lane % 4) + e)
            assert src((lane, u)) == 1024 * j + 128 * row + 16 * col + bit, f"{ident} src: lane {lane} bit {u}"
        # Lanes 0..8x-1 give the row addresses; the others' are ignored (a stride-0 mode).
        for bit in (0, 127):
            assert dst((lane, bit)) == 128 * (lane % (8 * x)) + bit, f"{ident} dst: lane {lane}"


# ------------------------------------------------------------------------------------------------------------
# Compile tier: probe kernels through the real compiler, ptxas (nvJitLink) and nvdisasm. Probes are batched, one
# module and one disassembly per batch (the disassembler costs ~0.3 s a call, a compile ~10 ms a kernel); a batch
# that fails is compiled kernel by kernel so that each test names its own failure.
# ------------------------------------------------------------------------------------------------------------

# Launch bounds of a warp-specialized kernel: without them ptxas ignores setmaxnreg.
_LAUNCH_BOUNDS = "nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32"
_REQUIRED_ATTRS = {"n": 0, "stride_byte_offset": 1024}


def _probe_value(b, ty, tid):
    # Derived from the thread index so that nothing folds away before the instruction.
    if ty == "i32":
        return tid
    if ty == "i64":
        return b.op1("arith.extui", [tid], "i64")
    if ty == "i1":
        return b.op1("arith.cmpi", [tid, b.constant_int(0, "i32")], "i1", "predicate = 0 : i64")
    if ty in ("i8", "i16"):
        return b.op1("arith.trunci", [tid], ty)
    return b.op1("arith.uitofp", [tid], ty)


def _probe_attrs(ins, overrides=None):
    attrs = {}
    for a in ins.get("attributes", []):
        if a.get("default_value"):
            continue
        attrs[a["name"]] = a["allowed"][0] if a.get("allowed") else _REQUIRED_ATTRS[a["name"]]
    attrs.update(overrides or {})
    return attrs


def _emit_probe(b, kname, ins, attrs):
    """Kernel `kname`: the instruction fed from the thread index, its results stored to the parameter; wgmma
    atoms inside the fence / commit / wait they need."""
    (out,) = b.begin_function(kname, ["!llvm.ptr<1>"], _LAUNCH_BOUNDS)
    tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
    inputs = {o["name"]: [_probe_value(b, value_type(o), tid) for _ in range(values_of(o))]
              for o in ins.get("operands", []) if not is_result(o)}
    wgmma = ins["kind"] == "MMA"
    if wgmma:
        emit_instruction(b, "hopper", _entry("hopper.wgmma.fence"), {})
    results = emit_instruction(b, "hopper", ins, inputs, attrs)
    if wgmma:
        emit_instruction(b, "hopper", _entry("hopper.wgmma.commit_group"), {})
        emit_instruction(b, "hopper", _entry("hopper.wgmma.wait_group"), {}, {"n": 0})
    slot = 0
    for vals in results.values():
        for v in vals:
            if b.type_of(v) == "i1":
                v = b.op1("arith.extui", [v], "i32")
            p = b.op1("llvm.getelementptr", [out, b.constant_int(slot, "i32")], "!llvm.ptr<1>",
                      f"elem_type = {b.type_of(v)}, rawConstantIndices = array<i32: -2147483648>")
            b.op0("llvm.store", [v, p], "")
            slot += 1
    b.end_function()


def _kernel_name(ident):
    return "probe_" + re.sub(r"\W", "_", ident)


def _split(text, head):
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(head, line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def _compile(idents, attrs=None):
    """{ident: (ptx of its kernel, SASS of its kernel or None without a disassembler)} from one module."""
    b = _core.IRBuilder()
    for ident in idents:
        ins = _entry(ident)
        _emit_probe(b, _kernel_name(ident), ins, _probe_attrs(ins, attrs))
    res = _core.compile(str(b), {"name": "sm_90a"})
    ptx = _split(res["ptx"], r"^\.visible \.entry (\w+)\(")
    sass = None
    if _core.sass_tool_available():
        sass = _split(_core.disassemble_sass(res["cubin"]), r"^\s*\.text\.(\w+):")
    return {i: (ptx[_kernel_name(i)], sass[_kernel_name(i)] if sass is not None else None) for i in idents}


@pytest.fixture(scope="module")
def compiled(hopper):
    """ident -> (ptx, sass) for the instructions compiled here, in batches of 32."""
    cache = {}

    def get(ident):
        if ident not in cache:
            pending = [i for i in (WGMMA_ALL if os.environ.get("WARPWEAVE_TEST_ALL_WGMMA") else WGMMA_SUBSET) +
                       NON_WGMMA if i not in cache]
            batch = pending[pending.index(ident):][:32] if ident in pending else [ident]
            try:
                cache.update(_compile(batch))
            except _core.CompileError:
                cache[ident] = _compile([ident])[ident]  # raises this instruction's own error
        return cache[ident]

    return get


def _ptx_pattern(ins, attrs):
    text = ins["ptx_template"]
    for a in ins.get("attributes", []):
        text = text.replace("{" + a["name"] + "}", str(attrs.get(a["name"], a.get("default_value"))))
    return re.compile(re.sub(r"\\\$\d+", r"%?[\\w.]+", re.escape(text)))


def _check(ident, ptx, sass):
    ins = _entry(ident)
    if ins.get("ptx_template"):
        assert _ptx_pattern(ins, _probe_attrs(ins)).search(ptx), f"{ident}: the template's PTX is not in the kernel"
    if sass is None:
        pytest.skip("PTX and ptxas checked; no SASS disassembler (nvdisasm) to check the opcodes")
    for want in ins.get("sass_opcodes", []):
        assert want in sass, f"{ident}: no {want} in the SASS:\n{sass}"


WGMMA_TESTED = WGMMA_ALL if os.environ.get("WARPWEAVE_TEST_ALL_WGMMA") else WGMMA_SUBSET


@pytest.mark.parametrize("ident", WGMMA_TESTED)
def test_wgmma_compiles_with_expected_sass(compiled, ident):
    ptx, sass = compiled(ident)
    _check(ident, ptx, sass)
    if sass is not None:
        assert "WARPGROUP.ARRIVE" in sass and "WARPGROUP.DEPBAR.LE" in sass


@pytest.mark.parametrize("ident", NON_WGMMA)
def test_instruction_compiles_with_expected_sass(compiled, ident):
    ptx, sass = compiled(ident)
    _check(ident, ptx, sass)


@pytest.mark.parametrize("ident,attrs,ptx_tail", [
    (_wgmma_id("f16", "f16", "f32", 64, "ss"), {"tnsp_a": 1, "tnsp_b": 1, "scale_a": -1}, ", -1, 1, 1, 1;"),
    (_wgmma_id("bf16", "bf16", "f32", 128, "rs"), {"tnsp_b": 1, "scale_b": -1}, ", 1, -1, 1;"),
    (_wgmma_id("e5m2", "e4m3", "f16", 32, "ss"), {"scale_a": -1, "scale_b": -1}, ", -1, -1;"),
])
def test_wgmma_immediates(hopper, ident, attrs, ptx_tail):
    ptx, sass = _compile([ident], attrs)[ident]
    line = next(x for x in ptx.splitlines() if "wgmma.mma_async" in x)
    assert line.rstrip().endswith(ptx_tail), line
    if sass is not None:
        assert _entry(ident)["sass_opcodes"][0] in sass


def test_wgmma_rejects_what_the_isa_does_not_have(hopper):
    b = _core.IRBuilder()
    b.begin_function("k", [], "nvvm.kernel")
    ins = _entry(_wgmma_id("f16", "f16", "f32", 8, "ss"))
    zero = b.constant_int(0, "i64")
    inputs = {"a": [zero], "b": [zero], "c": [b.constant_float(0.0, "f32")] * 4,
              "scale_d": [b.constant_int(1, "i1")]}
    with pytest.raises(InstructionError, match="tnsp_a=2"):
        emit_instruction(b, "hopper", ins, inputs, {"tnsp_a": 2})
    with pytest.raises(InstructionError, match="scale_b=0"):
        emit_instruction(b, "hopper", ins, inputs, {"scale_b": 0})


@pytest.mark.parametrize("ident,n", [("hopper.setmaxnreg.inc", 232), ("hopper.setmaxnreg.dec", 40)])
def test_setmaxnreg_through_ptxas(hopper, monkeypatch, ident, n):
    if not (shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas") or os.environ.get("WARPWEAVE_PTXAS")):
        pytest.skip("no ptxas: nvJitLink drops setmaxnreg, so only ptxas shows its SASS")
    monkeypatch.setenv("WARPWEAVE_CUBIN_TOOL", "ptxas")
    ptx, sass = _compile([ident], {"n": n})[ident]
    assert f"setmaxnreg.{ident[-3:]}.sync.aligned.u32 {n};" in ptx
    if sass is None:
        pytest.skip("no SASS disassembler")
    assert "USETMAXREG" in sass


def test_setmaxnreg_survives_the_default_cubin_path(hopper, monkeypatch):
    # nvJitLink drops setmaxnreg (C7504); the core's automatic choice assembles as a whole program (nvPTXCompiler in
    # process, else the ptxas program), which keeps it.
    library = os.path.join(os.path.dirname(_core.__file__), "libww_nvptxcompiler.so")
    if not (os.path.exists(library) or shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas")
            or os.environ.get("WARPWEAVE_PTXAS")):
        pytest.skip("neither nvPTXCompiler nor ptxas, the whole-program assemblers that keep setmaxnreg")
    monkeypatch.delenv("WARPWEAVE_CUBIN_TOOL", raising=False)
    ptx, sass = _compile(["hopper.setmaxnreg.dec"], {"n": 40})["hopper.setmaxnreg.dec"]
    if sass is None:
        pytest.skip("no SASS disassembler")
    assert "USETMAXREG.DEALLOC" in sass


def test_mbarrier_wait_loop_can_be_used_twice(hopper):
    # Its PTX label must not clash when a kernel waits more than once (it lives in its own { } scope).
    b = _core.IRBuilder()
    b.begin_function("k", [], "nvvm.kernel")
    ins = _entry("hopper.mbarrier.wait.parity")
    tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
    for phase in (0, 1):
        emit_instruction(b, "hopper", ins, {"mbar": [tid], "phase": [b.constant_int(phase, "i32")]})
    b.end_function()
    res = _core.compile(str(b), {"name": "sm_90a"})
    assert res["ptx"].count("mbarrier.try_wait.parity") == 2


# ------------------------------------------------------------------------------------------------------------
# The shared-memory descriptor hook
# ------------------------------------------------------------------------------------------------------------

def _desc_reference(addr, lbo, sbo, swizzle, base):
    """PTX ISA, wgmma matrix descriptor: start address >> 4 in bits 0-13 (the address modulo 2^18), leading
    byte offset >> 4 in 16-29, stride byte offset >> 4 in 32-45, base offset in 49-51, swizzle in 62-63
    (0 none, 1 128B, 2 64B, 3 32B)."""
    mode = {0: 0, 128: 1, 64: 2, 32: 3}[swizzle]
    return (((addr & 0x3FFFF) >> 4) | ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (base << 49) | (mode << 62))


def _desc_attrs(lbo, sbo, swizzle, base):
    return {"leading_byte_offset": lbo, "stride_byte_offset": sbo, "swizzle": swizzle, "base_offset": base}


_DESC_CASES = [(0x0, 16, 1024, 128, 0), (0x12340, 16, 1024, 32, 3), (0x3FFF0, 0x3FFF0, 0x3FFF0, 64, 7),
               (0x400, 128, 256, 0, 0), (0x7fff8010, 4096, 512, 128, 1)]


def _eval_emitted(text, args):
    """Evaluates the integer ops a hook emitted (the builder's generic MLIR) for argument values `args`."""
    env = {f"%{i + 1}": v for i, v in enumerate(args)}
    result = None
    for line in text.splitlines():
        m = re.match(r'\s*(%\d+) = "([\w.]+)"\(([^)]*)\)(?: <\{(.*?)\}>)? : \(.*\) -> \((\w+)\)', line)
        if not m:
            continue
        res, op, operands, props, ty = m.groups()
        bits = int(ty[1:])
        vals = [env[x.strip()] for x in operands.split(",") if x.strip()]
        if op == "arith.constant" or op == "llvm.mlir.constant":
            v = int(re.search(r"value = (-?\d+)", props).group(1))
        elif op in ("llvm.and", "arith.andi"):
            v = vals[0] & vals[1]
        elif op in ("llvm.or", "arith.ori"):
            v = vals[0] | vals[1]
        elif op in ("llvm.lshr", "arith.shrui"):
            v = vals[0] >> vals[1]
        elif op in ("llvm.shl", "arith.shli"):
            v = vals[0] << vals[1]
        elif op in ("llvm.zext", "arith.extui"):
            v = vals[0]
        else:
            raise AssertionError(f"the descriptor hook emitted {op}, which this model does not know")
        env[res] = v & ((1 << bits) - 1)
        result = res
    return env[result]


@pytest.mark.parametrize("addr,lbo,sbo,swizzle,base", _DESC_CASES)
def test_smem_descriptor_arithmetic_matches_the_bit_layout(hopper, rng, addr, lbo, sbo, swizzle, base):
    ins = _entry("hopper.wgmma.make_smem_desc")
    assert [(o["name"], o["role"], o["direction"], value_type(o)) for o in ins["operands"]] == \
        [("desc", "SCALAR", "OUT", "i64"), ("addr", "SMEM_ADDRESS", "IN", "i32")]
    attrs = _desc_attrs(lbo, sbo, swizzle, base)
    # 1. The emitted arithmetic, evaluated in Python for this address and random others.
    b = _core.IRBuilder()
    out, a = b.begin_function("k", ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    (desc,) = emit_instruction(b, "hopper", ins, {"addr": [a]}, attrs)["desc"]
    assert b.type_of(desc) == "i64"
    b.op0("llvm.store", [desc, out], "alignment = 8 : i64")
    b.end_function()
    text = str(b)
    for x in [addr] + [rng.randrange(1 << 32) for _ in range(20)]:
        assert _eval_emitted(text, [0, x]) == _desc_reference(x, lbo, sbo, swizzle, base), hex(x)
    assert _core.compile(text, {"name": "sm_90a"})["ptx"]
    # 2. With a constant address the compiler folds it all: the PTX stores the reference's constant.
    b = _core.IRBuilder()
    (out,) = b.begin_function("k", ["!llvm.ptr<1>"], "nvvm.kernel")
    (desc,) = emit_instruction(b, "hopper", ins, {"addr": [b.constant_int(addr - (1 << 32) if addr >= 1 << 31 else addr,
                                                                           "i32")]}, attrs)["desc"]
    b.op0("llvm.store", [desc, out], "alignment = 8 : i64")
    b.end_function()
    ptx = _core.compile(str(b), {"name": "sm_90a"})["ptx"]
    want = _desc_reference(addr, lbo, sbo, swizzle, base)
    stored = re.search(r"st\.global\.[bu]64\s+\[%rd\d+\],\s*(-?\w+);", ptx)
    assert stored, ptx
    assert int(stored.group(1), 0) & ((1 << 64) - 1) == want


def test_smem_descriptor_defaults(hopper):
    ins = _entry("hopper.wgmma.make_smem_desc")
    b = _core.IRBuilder()
    _, a = b.begin_function("k", ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    emit_instruction(b, "hopper", ins, {"addr": [a]}, {"stride_byte_offset": 512})
    b.end_function()
    assert _eval_emitted(str(b), [0, 0x1230]) == _desc_reference(0x1230, 16, 512, 0, 0)


@pytest.mark.parametrize("attrs,message", [
    ({}, "needs the attribute stride_byte_offset"),
    ({"stride_byte_offset": 1000}, "stride_byte_offset=1000 must be a multiple of 16"),
    ({"stride_byte_offset": 1 << 18}, "stride_byte_offset=262144 must be"),
    ({"stride_byte_offset": 1024, "leading_byte_offset": 8}, "leading_byte_offset=8"),
    ({"stride_byte_offset": 1024, "swizzle": 16}, "swizzle=16 must be 0, 32, 64 or 128"),
    ({"stride_byte_offset": 1024, "base_offset": 8}, "base_offset=8 must be 0..7"),
    ({"stride_byte_offset": 1024, "swizle": 128}, 'no attribute "swizle"'),
])
def test_smem_descriptor_rejects_bad_attributes(hopper, attrs, message):
    b = _core.IRBuilder()
    _, a = b.begin_function("k", ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        emit_instruction(b, "hopper", _entry("hopper.wgmma.make_smem_desc"), {"addr": [a]}, attrs)


def test_smem_descriptor_needs_a_32_bit_address(hopper):
    b = _core.IRBuilder()
    _, a = b.begin_function("k", ["!llvm.ptr<1>", "i64"], "nvvm.kernel")
    with pytest.raises(RuntimeError, match="i32 shared address"):
        emit_instruction(b, "hopper", _entry("hopper.wgmma.make_smem_desc"), {"addr": [a]}, {"stride_byte_offset": 64})


def test_unknown_lowering_hook(hopper):
    b = _core.IRBuilder()
    _, a = b.begin_function("k", ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    with pytest.raises(RuntimeError, match='no lowering hook "nope"'):
        _core.plugin_lower("hopper", "nope", "hopper.wgmma.make_smem_desc", b, [a], {}, 1)


# ------------------------------------------------------------------------------------------------------------
# The TMA host hook. These machines have no driver: argument mistakes must be reported before the driver is
# needed, and the missing driver as a Python exception, never a crash.
# ------------------------------------------------------------------------------------------------------------

_TMA_2D = dict(data_type="f16", rank=2, address=0x7F0000000000, dim0=128, dim1=64, stride1=256, box0=64, box1=32,
               swizzle="128B")


def _driver_present():
    return any(os.path.exists(os.path.join(d, "libcuda.so.1"))
               for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64")) or \
        bool(os.environ.get("WARPWEAVE_LIBCUDA"))


def test_tma_atoms_name_the_host_hook(hopper):
    for ident in TMA_ATOMS + [f"hopper.tma.prefetch.{r}d" for r in range(1, 6)] + ["hopper.tma.prefetch_descriptor"]:
        ins = _entry(ident)
        assert ins["host_hook"] == "encode_tma_descriptor", ident
        assert "encode_tma_descriptor" in ins["description"]


def test_encode_tma_descriptor_without_a_driver_raises(hopper):
    if _driver_present():
        pytest.skip("a CUDA driver is installed here")
    with pytest.raises(RuntimeError, match="encode_tma_descriptor: .*(libcuda|driver)"):
        _core.plugin_host_call("hopper", "encode_tma_descriptor", _TMA_2D, 128)


@pytest.mark.parametrize("change,message", [
    ({"box0": 300}, "box0=300 must be 1..256"),
    ({"box1": 0}, "box1=0 must be 1..256"),
    ({"dim2": 4}, "dim2 is given but rank is 2"),
    ({"stride0": 4}, "stride0=4: dimension 0 must be contiguous"),
    ({"stride1": None}, "needs the attribute stride1"),
    ({"dim0": None}, "needs the attribute dim0"),
    ({"rank": 6}, "rank=6 must be 1..5"),
    ({"data_type": "f8"}, 'data_type="f8" is not one of'),
    ({"swizzle": "96B"}, 'swizzle="96B" is not one of'),
    ({"elem_stride0": 9}, "elem_stride0=9 must be 1..8"),
    ({"bogus": 1}, 'no attribute "bogus"'),
    ({"data_type": None}, "needs data_type"),
])
def test_encode_tma_descriptor_checks_its_attributes(hopper, change, message):
    attrs = {k: v for k, v in {**_TMA_2D, **change}.items() if v is not None}
    with pytest.raises(RuntimeError, match=re.escape(message)):
        _core.plugin_host_call("hopper", "encode_tma_descriptor", attrs, 128)


def test_encode_tma_descriptor_needs_128_bytes(hopper):
    with pytest.raises(RuntimeError, match="128-byte output buffer, got 64"):
        _core.plugin_host_call("hopper", "encode_tma_descriptor", _TMA_2D, 64)


def test_unknown_host_hook(hopper):
    with pytest.raises(RuntimeError, match='no host hook "nope"'):
        _core.plugin_host_call("hopper", "nope", {}, 128)


def test_random_descriptor_attributes_never_crash(hopper, rng):
    # Whatever a caller passes, the hook answers with an exception or a map, never by taking the process down.
    keys = ["data_type", "rank", "address", "dim0", "dim1", "dim2", "stride0", "stride1", "stride2", "box0", "box1",
            "box2", "elem_stride0", "interleave", "swizzle", "l2_promotion", "oob_fill"]
    for _ in range(200):
        attrs = {k: rng.choice([0, 1, 2, 5, 16, 257, -1, 1 << 40, "x", "128B", "f16"])
                 for k in rng.sample(keys, rng.randrange(len(keys)))}
        try:
            _core.plugin_host_call("hopper", "encode_tma_descriptor", attrs, 128)
        except RuntimeError:
            pass


# ------------------------------------------------------------------------------------------------------------
# The execute-tier probes (conformance/warpweave_conformance/probes/hopper_*.py), host side: their kernels
# compile, and their checks accept what a correct device would write, computed here from the probes' input
# bytes by independent models of the instructions (the PTX ISA's descriptions), and reject a wrong one.
# ------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def conformance():
    import sys

    root = os.path.join(_BACKEND_DIR, "..", "..", "conformance")
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        import numpy  # noqa: F401
        from warpweave_conformance import kernels, numerics
        from warpweave.backends.hopper.conformance import stmatrix as hopper_stmatrix, tma as hopper_tma, \
            wgmma as hopper_wgmma
        from warpweave_conformance.probes import layout_table
    except ImportError as e:
        pytest.skip(f"the conformance package is not importable here: {e}")
    return dict(kernels=kernels, nx=numerics, wgmma=hopper_wgmma, tma=hopper_tma, stmatrix=hopper_stmatrix,
                layout_table=layout_table)


def _wgmma_device_model(cf, entry, p):
    """D = A B^T + scale_d C from the probe's input bytes: shared-memory tiles read as core matrices of 8 rows x
    16 bytes (LBO apart along K, SBO apart along M/N), register fragments through the manifest's layouts."""
    import numpy as np

    nx, hw, K_ = cf["nx"], cf["wgmma"], cf["kernels"]
    ops = {o["name"]: o for o in entry["operands"]}
    M, N, K = (int(x) for x in entry["shape_mnk"].strip("()").split(","))
    a_rs = ops["a"]["role"] == "REGISTERS"
    ta, tb, tc, td = (nx.element_type(ops[n]["element_type"]) for n in "abcd")
    rec = K_.Record()
    K_.plan_inputs(entry, rec, skip=("b",) if a_rs else ("a", "b"))
    out_rec = K_.Record()
    out_rec.add("d", K_.value_type(ops["d"]), int(ops["d"]["values"]))
    a_bytes = 0 if a_rs else (M // 8) * hw.SBO
    smem = -(-(a_bytes + (N // 8) * hw.SBO) // 512) * 512
    nc, block = p.grid, p.block
    img = p.in_bytes.reshape(nc, block * rec.size + smem)
    recs, data = img[:, :block * rec.size].reshape(nc, block, rec.size), img[:, block * rec.size:]

    def field(name, t):
        f = rec.fields[name]
        return nx.from_bytes(t, recs[:, :, f.offset:f.offset + f.size])

    def tile(t, rows, base):
        out = np.zeros((nc, rows * K), dtype=np.uint64)
        words = nx.from_bytes(t, data)
        for r in range(rows):
            for k in range(K):
                kb = k * t.bytes
                off = base + (r % 8) * 16 + kb % 16 + (r // 8) * hw.SBO + (kb // 16) * hw.LBO
                out[:, r + rows * k] = words[:, off // t.bytes]
        return out

    lt = cf["layout_table"]
    A = np.zeros((nc, M * K), dtype=np.uint64)
    if a_rs:
        A[:, lt(ops["a"]["layout_tv"], 128)] = field("a", ta)
    else:
        A = tile(ta, M, 0)
    B = tile(tb, N, a_bytes)
    C = np.zeros((nc, M * N), dtype=np.uint64)
    C[:, lt(ops["c"]["layout_tv"], 128)] = field("c", tc)
    scale = recs[:, 0, rec.fields["scale_d"].offset].astype(np.float64)
    Am = nx.decode(ta, A).reshape(nc, K, M).transpose(0, 2, 1)
    Bm = nx.decode(tb, B).reshape(nc, K, N).transpose(0, 2, 1)
    Cm = nx.decode(tc, C).reshape(nc, N, M).transpose(0, 2, 1) * scale[:, None, None]
    D = (np.einsum("cmk,cnk->cmn", Am, Bm) + Cm).transpose(0, 2, 1).reshape(nc, M * N)
    D = D[:, lt(ops["d"]["layout_tv"], 128)]
    codes = {"f32": lambda x: x.astype(np.float32).view(np.uint32), "f16": lambda x: x.astype(np.float16).view(
        np.uint16), "s32": lambda x: x.astype(np.int64).astype(np.uint32)}[td.name](D)
    out = np.zeros((nc, block, out_rec.size), dtype=np.uint8)
    f = out_rec.fields["d"]
    out[:, :, f.offset:f.offset + f.size] = nx.to_bytes(td, codes.astype(np.uint64))
    return out.reshape(-1)


@pytest.mark.parametrize("ident", [_wgmma_id("f16", "f16", "f32", 8, "ss"), _wgmma_id("bf16", "bf16", "f32", 256, "rs"),
                                   _wgmma_id("tf32", "tf32", "f32", 24, "ss"), _wgmma_id("f16", "f16", "f16", 16, "rs"),
                                   _wgmma_id("e4m3", "e5m2", "f16", 128, "rs"), _wgmma_id("u8", "s8", "s32", 48, "ss")])
def test_wgmma_probe_host_side(hopper, conformance, ident):
    entry = _entry(ident)
    p = conformance["wgmma"].prepare(hopper, entry, seed=3)
    sass = _core.disassemble_sass(_core.compile(p.mlir, {"name": "sm_90a"})["cubin"]) \
        if _core.sass_tool_available() else entry["sass_opcodes"][0]
    assert entry["sass_opcodes"][0] in sass
    good = _wgmma_device_model(conformance, entry, p)
    status, reason = p.check(good)
    assert status == "pass", reason
    # A C/D layout with two value modes swapped must be caught.
    wrong = json.loads(json.dumps(entry))
    for o in wrong["operands"]:
        if o["name"] == "d":
            o["layout_tv"] = o["layout_tv"].replace("(64,8,", "(8,64,")
    status, reason = conformance["wgmma"].prepare(hopper, wrong, seed=3).check(good)
    assert status == "fail" and "cases differ" in reason


@pytest.mark.parametrize("ident", [f"hopper.tma.{k}.{r}d" for r in (1, 2, 5)
                                   for k in ("load", "load.multicast", "store", "reduce")])
def test_tma_probe_host_side(hopper, conformance, ident):
    import numpy as np

    ht = conformance["tma"]
    entry = _entry(ident)
    plan = ht.prepare(hopper, entry, seed=2)
    if _core.sass_tool_available():
        cubin = _core.compile(plan["mlir"], {"name": "sm_90a"})["cubin"]
        assert entry["sass_opcodes"][0] in _core.disassemble_sass(cubin)
    rank, g0 = plan["rank"], plan["tensor"]
    box_shape = tuple(ht.BOX[:rank][::-1])
    # A model of tile mode: element box + coords (innermost first), zero (loads) / skipped (stores) out of bounds.
    grid = np.indices(box_shape)
    if plan["kind"].startswith("load"):
        copies = 2 if "multicast" in plan["kind"] else 1
        outs = []
        for c in plan["cases"]:
            v = np.zeros(box_shape, dtype=np.int32)
            for b in zip(*[g.reshape(-1) for g in grid]):
                pos = [b[rank - 1 - i] + c[i] for i in range(rank)]
                if all(0 <= pos[i] < ht.DIMS[i] for i in range(rank)):
                    v[b] = g0[tuple(pos[::-1])]
            outs += [v.astype("<i4").view(np.uint8).reshape(-1)] * copies
        good = np.concatenate(outs)
        assert ht.check(plan, g0, good)[0] == "pass"
        bad = good.copy()
        bad[0] ^= 1
        assert ht.check(plan, g0, bad)[0] == "fail"
    else:
        c = plan["cases"][0]
        box = plan["box_data"][0].reshape(box_shape)
        after = g0.copy()
        for b in zip(*[g.reshape(-1) for g in grid]):
            pos = [b[rank - 1 - i] + c[i] for i in range(rank)]
            if all(0 <= pos[i] < ht.DIMS[i] for i in range(rank)):
                after[tuple(pos[::-1])] = box[b] + (after[tuple(pos[::-1])] if plan["kind"] == "reduce" else 0)
        assert ht.check(plan, after, np.zeros(16, np.uint8))[0] == "pass"
        assert ht.check(plan, g0, np.zeros(16, np.uint8))[0] == "fail"
    if not _driver_present():
        # The probe's attributes pass the hook's own checks: what stops them here is the missing driver.
        with pytest.raises(RuntimeError, match="libcuda|driver"):
            _core.plugin_host_call("hopper", "encode_tma_descriptor", ht.tensor_map_attrs(rank, 0x7F0000000000), 128)


@pytest.mark.parametrize("ident", STMATRIX)
def test_stmatrix_probe_host_side(hopper, conformance, ident):
    import numpy as np

    entry = _entry(ident)
    p = conformance["stmatrix"].prepare(hopper, entry, seed=1)
    if _core.sass_tool_available():
        assert entry["sass_opcodes"][0] in _core.disassemble_sass(_core.compile(p.mlir, {"name": "sm_90a"})["cubin"])
    K_ = conformance["kernels"]
    rec = K_.Record()
    K_.plan_inputs(entry, rec)
    recs = p.in_bytes[:32 * rec.size].reshape(32, rec.size)
    words = recs[:, rec.fields["src"].offset:][:, :rec.fields["src"].size].copy().view("<u2")
    addrs = recs[:, rec.fields["dst@off"].offset:][:, :4].copy().view("<u4")[:, 0]
    x = int(re.search(r"\.x(\d)", ident).group(1))
    # The PTX ISA's stmatrix: lane l's register j holds row l/4, columns 2(l%4) and +1 of matrix j, whose rows
    # are stored at the addresses of lanes 8j..8j+7; .trans stores the matrix transposed.
    mem = np.zeros(4096, np.uint16)
    for lane in range(32):
        for j in range(x):
            for e in range(2):
                r, c = lane // 4, 2 * (lane % 4) + e
                if ".trans" in ident:
                    r, c = c, r
                mem[addrs[8 * j + r] // 2 + c] = words[lane, 2 * j + e]
    per = p.out_size // 32 // 4
    out = np.zeros((32, p.out_size // 32), np.uint8)
    out[:, :per * 4] = np.ascontiguousarray(mem[:per * 64].view("<u4").reshape(per, 32).T).view(np.uint8)
    status, reason = p.check(out.reshape(-1))
    assert status == "pass", reason
    out[0, 0] ^= 1
    assert p.check(out.reshape(-1))[0] == "fail"


def test_operand_major_mode_is_one_enum_also_in_nvgpu_common(hopper):
    # CuTe DSL's programs import it from cute.nvgpu.common and compare it with what wgmma's and tcgen05's helpers
    # take: one enum, not three equal-looking ones.
    from warpweave.cute.nvgpu import warpgroup
    from warpweave.cute.nvgpu.common import OperandMajorMode

    assert OperandMajorMode is warpgroup.OperandMajorMode
    assert [m.name for m in OperandMajorMode] == ["K", "MN"]
    if "blackwell" in registry.backends:
        from warpweave.cute.nvgpu import tcgen05

        assert OperandMajorMode is tcgen05.OperandMajorMode
