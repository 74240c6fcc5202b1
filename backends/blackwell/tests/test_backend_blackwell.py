"""The Blackwell backend's own unit test (CPU only).

The generic conformance suite checks every backend alike; this file pins down what is specific to this one: the
manifest is what its generator writes, the set of tcgen05.mma shapes against the PTX ISA's table, the tcgen05.ld/st
thread-value layouts recomputed from the fragment rules, the two descriptor hooks' bits against a Python
statement of the formulas, their refusals, and a probe kernel through the real compiler, ptxas and nvdisasm for a
representative subset of the ~1500 MMA atoms (every kind and type pair, both CTA groups, both A sources) and for
every other entry.
"""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

from warpweave import _core
from warpweave._dsl.atoms.instructions import emit_instruction, is_result, value_type
from warpweave._dsl.registry.plugins import registry

HERE = os.path.dirname(os.path.abspath(__file__))
BACKEND_DIR = os.path.join(HERE, "..")


@pytest.fixture(scope="module")
def blackwell():
    registry.load()
    refused = [r for r in _core.plugin_refusals() if "blackwell" in str(r)]
    assert not refused, f"the Blackwell plugin was refused: {refused}"
    assert "blackwell" in registry.backends, "ww_backend_blackwell was not found; build the ww_backend_blackwell target"
    return registry.backends["blackwell"]


def _entry(ident):
    found = registry.instruction(ident)
    assert found is not None, f"{ident} is not registered"
    backend, ins = found
    assert backend.name == "blackwell"
    return ins


def _ops(ins):
    return {o["name"]: o for o in ins.get("operands", [])}


# ------------------------------------------------------------------------------------------------------------
# Manifest content
# ------------------------------------------------------------------------------------------------------------

def test_committed_manifest_is_the_generators_output(blackwell):
    spec = importlib.util.spec_from_file_location("bw_gen", os.path.join(BACKEND_DIR, "generate_manifest.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(BACKEND_DIR, "blackwell.textproto")) as f:
        text = f.read()
    assert text == gen.manifest_text(), "blackwell.textproto is stale: run backends/blackwell/generate_manifest.py"
    assert _core.validate_manifest(text) == []


def test_targets_are_sm_100a_sm_103a_and_sm_110a(blackwell):
    assert [(t.name, t.compute_capability, t.arch_specific) for t in blackwell.targets] == [
        ("sm_100a", 100, True), ("sm_103a", 103, True), ("sm_110a", 110, True)]
    assert registry.primary_target(103).name == "sm_103a" and registry.primary_target(100).name == "sm_100a"
    assert registry.primary_target(110).name == "sm_110a"
    # what ptxas 13.0 refuses for sm_110a (redux.f32, scale-input-d) or assembles into scalar instructions (f32x2)
    not_sm110 = re.compile(r"^blackwell\.(redux\.sync\.f32|prim\.tcgen05\.mma\..*\.s1\.|"
                           r"(add|sub|mul|fma)\.rnd?\.f32x2$)")
    for ins in blackwell.atoms + blackwell.primitives + blackwell.all_instances():
        # sm_103a has no kind::i8 tensor-core MMA, sm_100a no K = 96 4-bit MMA (nor its next-buffer descriptor);
        # everything else is the same PTX on both
        sm103 = ".k96." in re.sub(r"m\d+n\d+k", ".k", ins["id"]) or ".sm103." in ins["id"]
        want = ["sm_100a", "sm_110a"] if ".i8." in ins["id"] else ["sm_103a"] if sm103 else \
            ["sm_100a", "sm_103a"] if not_sm110.match(ins["id"]) else ["sm_100a", "sm_103a", "sm_110a"]
        assert ins["targets"] == want, ins["id"]


@pytest.mark.parametrize("python_name, params", [
    ("tcgen05.MmaI8Op", {"ab_dtype": "Int8", "shape_mnk": "(128,128,32)", "cta_group": "1", "a_src": "SMEM"}),
])
def test_integer_mma_is_refused_on_sm_103a(blackwell, python_name, params):
    from warpweave._dsl.atoms import atoms
    from warpweave._dsl.base import trace
    from warpweave._dsl.base.errors import DSLValueError

    with trace.tracing(trace.TraceState(target={"name": "sm_100a"})):
        assert ".i8." in atoms.select(python_name, params)[1]["id"]
    with trace.tracing(trace.TraceState(target={"name": "sm_103a"})):
        with pytest.raises(DSLValueError, match="not for the current target sm_103a"):
            atoms.select(python_name, params)


def test_every_sm_103a_entry_compiles_into_its_sass(blackwell):
    from warpweave_conformance import compile_tier

    entries = [e for e in blackwell.atoms + blackwell.primitives + blackwell.all_instances()
               if "sm_103a" in e["targets"] and not e["id"].startswith("blackwell.tcgen05.mma.")]
    # the tcgen05.mma instances (most of the ~1500) are covered by the conformance compile tier; here the rest
    t = [x for x in blackwell.targets if x.name == "sm_103a"][0].as_dict()
    results = compile_tier.compile_batch((t, [(i, f"probe_{i}", "blackwell", e, True) for i, e in enumerate(entries)]))
    bad = [(entries[i]["id"], reason) for i, status, reason, _ in results if status == "fail"]
    assert len(entries) > 100 and not bad, bad[:10]


_TCGEN05_PRIMITIVES = [
    "blackwell.tcgen05.make_instr_desc", "blackwell.tcgen05.make_smem_desc",
    "blackwell.sm103.tcgen05.make_smem_desc_next", "blackwell.tcgen05.alloc",
    "blackwell.tcgen05.dealloc", "blackwell.tcgen05.relinquish_alloc_permit", "blackwell.tcgen05.commit",
    "blackwell.tcgen05.commit.multicast", "blackwell.tcgen05.shift", "blackwell.tcgen05.wait_ld",
    "blackwell.tcgen05.wait_st", "blackwell.tcgen05.fence.before_thread_sync",
    "blackwell.tcgen05.fence.after_thread_sync",
]
_OTHER_PRIMITIVES = [
    # cutlass.experimental.primitives' sm_100a forms: float redux.sync, 8-bit ldmatrix/stmatrix
    "blackwell.redux.sync.f32", "blackwell.redux.sync.f32.abs", "blackwell.redux.sync.f32.nan",
    "blackwell.redux.sync.f32.abs.nan", "blackwell.ldmatrix.m16n16.x1.trans.b8", "blackwell.ldmatrix.m16n16.x2.trans.b8",
    "blackwell.stmatrix.m16n8.x1.trans.b8", "blackwell.stmatrix.m16n8.x2.trans.b8",
    "blackwell.stmatrix.m16n8.x4.trans.b8",
    "blackwell.tma.commit_group", "blackwell.tma.wait_group.read", "blackwell.tma.wait_group",
    "blackwell.fence.proxy_async.shared_cta", "blackwell.mbarrier.init", "blackwell.mbarrier.init_fence",
    "blackwell.mbarrier.arrive", "blackwell.mbarrier.arrive_expect_tx", "blackwell.mbarrier.try_wait.parity",
    "blackwell.mbarrier.wait.parity", "blackwell.add.rn.f32x2", "blackwell.sub.rn.f32x2", "blackwell.mul.rn.f32x2",
    "blackwell.fma.rn.f32x2", "blackwell.add.rnd.f32x2", "blackwell.sub.rnd.f32x2", "blackwell.mul.rnd.f32x2",
    "blackwell.fma.rnd.f32x2", "blackwell.griddepcontrol.wait", "blackwell.griddepcontrol.launch_dependents",
    # clusters, elect, descriptor prefetch and proxy fences of sm_100a (2-CTA MMAs, multicast TMA)
    "blackwell.cluster.arrive", "blackwell.cluster.arrive.relaxed", "blackwell.cluster.wait",
    "blackwell.cluster.ctaid", "blackwell.cluster.nctaid", "blackwell.cluster.ctarank", "blackwell.cluster.nctarank",
    "blackwell.cluster.clusterid", "blackwell.cluster.nclusterid", "blackwell.cluster.mapa",
    "blackwell.mbarrier.arrive.cluster", "blackwell.elect.sync", "blackwell.tma.prefetch_descriptor",
    "blackwell.fence.proxy_async", "blackwell.fence.proxy_async.shared_cluster", "blackwell.fence.proxy_async.global",
    # cluster launch control (the dynamic persistent tile scheduler) and the remote arrive with expect_tx
    "blackwell.clc.try_cancel", "blackwell.clc.try_cancel.multicast", "blackwell.clc.query_cancel",
    "blackwell.mbarrier.arrive_expect_tx.cluster",
    # the transaction count without an arrival (the TMA tutorial), and the L2 prefetch of TMA boxes (cute.prefetch)
    "blackwell.mbarrier.expect_tx",
] + [f"blackwell.tma.prefetch.{r}d" for r in range(1, 6)] + ["blackwell.setmaxnreg.inc", "blackwell.setmaxnreg.dec"]
_TMEM_NUMS = {"32x32b": 128, "16x64b": 128, "16x128b": 64, "16x256b": 32}
_LD_ST = [f"blackwell.tcgen05.{op}.{shape}.x{1 << i}" for op in ("ld", "st") for shape, top in _TMEM_NUMS.items()
          for i in range(top.bit_length())]
_CP = [f"blackwell.tcgen05.cp.cta{g}.{s}" for g in (1, 2) for s in
       ("128x256b", "4x256b", "128x128b", "64x128b.warpx2_02_13", "64x128b.warpx2_01_23", "32x128b.warpx4")]
_TMA = ([f"blackwell.tma.load{mc}{cta}.{r}d" for r in range(1, 6) for mc in ("", ".multicast") for cta in ("", ".cta2")]
        + [f"blackwell.tma.store.{r}d" for r in range(1, 6)]
        + ["blackwell.bulk_copy.g2s.multicast"])  # the unicast bulk copies are Hopper's portable entries
# the block-scaled kinds (mxf8f6f4, mxf4, mxf4nvf4)
_BLOCKSCALED_MMA_RE = re.compile(r"blackwell\.tcgen05\.mma\.cta[12]\.mx\w+\.")
# CuTe DSL's byte matrix loads and stores: LdMatrix8x16x8bOp's unpacking forms, LdMatrix16x16x8bOp and
# StMatrix16x8x8bOp (their layouts: tests/python/test_ldmatrix_bytes.py)
_LDSM = [f"blackwell.warp.ldmatrix.m8n16.x{x}.u{u}" for u in (4, 6) for x in (1, 2, 4)] + \
    [f"blackwell.warp.ldmatrix.m16n16.x{x}.trans.{f}" for f in ("b8", "u4", "u6") for x in (1, 2)] + \
    [f"blackwell.warp.stmatrix.m16n8.x{x}.trans.b8" for x in (1, 2, 4)]
_MMA_RE = re.compile(r"blackwell\.tcgen05\.mma\.cta([12])\.(f16|tf32|f8f6f4|i8)\.m(\d+)n(\d+)k(\d+)\.(\w+)\.(\w+)\.(ss|ts)$")


def test_non_mma_ids_are_exactly_the_published_set(blackwell):
    # the block-scaled MMAs' set: test_blockscaled_mma.py
    atoms = sorted(a["id"] for a in blackwell.atoms + blackwell.all_instances()
                   if not _MMA_RE.match(a["id"]) and not _BLOCKSCALED_MMA_RE.match(a["id"])
                   and not a["id"].startswith("blackwell.prim."))
    assert atoms == sorted(_LD_ST + _CP + _TMA + _LDSM)
    assert sorted(p["id"] for p in blackwell.primitives) == sorted(_TCGEN05_PRIMITIVES + _OTHER_PRIMITIVES)


def _isa_n_values(kind, cta, a_src, m):
    """Dense tcgen05.mma N values. The PTX ISA's shape table for A in shared memory, and for A in tensor memory with
    one CTA (N in steps of 8 for M 64 and 128, as CuTe's SM100 TS traits and CuTe DSL's attention decode take);
    for a pair's A in tensor memory and for kind::i8 the narrower sets of CuTe's SM100 MMA traits (see
    MMA_N_RULES in backends/blackwell/manifest/mma.py for why)."""
    if kind == "i8":
        return {8, *range(16, 257, 16)} if cta == 1 else set(range(32, 257, 32))
    if cta == 1:
        return set(range(8, 257, 8))
    return set(range(32, 257, 32)) if a_src == "ts" else set(range(16, 257, 16))


_KINDS = {"f16": (16, {("f16", "f16"), ("f16", "f32"), ("bf16", "f32")}), "tf32": (8, {("tf32", "f32")}),
          "f8f6f4": (32, {("e4m3", "f16"), ("e4m3", "f32"), ("e5m2", "f16"), ("e5m2", "f32")}),
          "i8": (32, {("s8", "s32"), ("u8", "s32")})}


def test_mma_shapes_cover_the_isa_table(blackwell):
    got = {}
    for a in blackwell.atoms + blackwell.all_instances():
        m = _MMA_RE.match(a["id"])
        if m:
            cta, kind, mm, n, k, ab, acc, src = m.groups()
            assert int(k) == _KINDS[kind][0], a["id"]
            got.setdefault((int(cta), kind, ab, acc, src, int(mm)), set()).add(int(n))
    want = {}
    for kind, (_, types) in _KINDS.items():
        for ab, acc in types:
            for cta in (1, 2):
                for src in ("ss", "ts"):
                    for mm in ((64, 128) if cta == 1 else (128, 256)):
                        want[(cta, kind, ab, acc, src, mm)] = _isa_n_values(kind, cta, src, mm)
    assert got == want


_PY_DTYPE = {"f16": "Float16", "bf16": "BFloat16", "tf32": "TFloat32", "f32": "Float32", "e4m3": "Float8E4M3FN",
             "e5m2": "Float8E5M2", "s8": "Int8", "u8": "Uint8", "s32": "Int32"}
_PY_CLASS = {"f16": "tcgen05.MmaF16BF16Op", "tf32": "tcgen05.MmaTF32Op", "f8f6f4": "tcgen05.MmaF8F6F4Op",
             "i8": "tcgen05.MmaI8Op"}


def test_mma_atoms_describe_their_operands(blackwell):
    n = 0
    for ins in blackwell.atoms + blackwell.all_instances():
        m = _MMA_RE.match(ins["id"])
        if not m:
            continue
        n += 1
        cta, kind, mm, nn, k, ab, acc, src = m.groups()
        assert ins["kind"] == "MMA" and ins["python_name"] == _PY_CLASS[kind]
        assert ins["python_params"] == {"ab_dtype": _PY_DTYPE[ab], "acc_dtype": _PY_DTYPE[acc],
                                        "shape_mnk": f"({mm},{nn},{k})", "cta_group": cta,
                                        "a_src": "SMEM" if src == "ss" else "TMEM"}
        # CuTe DSL's positional order; tf32 and i8 imply the types the constructor does not take.
        sig, defaults = {"tf32": (["shape_mnk", "cta_group", "a_src"], {"ab_dtype": "TFloat32", "acc_dtype": "Float32"}),
                         "i8": (["ab_dtype", "shape_mnk", "cta_group", "a_src"], {"acc_dtype": "Int32"})}.get(
            kind, (["ab_dtype", "acc_dtype", "shape_mnk", "cta_group", "a_src"], {}))
        assert ins["python_signature"] == sig and ins.get("python_defaults", {}) == defaults, ins["id"]
        assert ins["shape_mnk"] == f"({mm},{nn},{k})" and ins["thr_id"] == f"{cta}:1"
        roles = [(o["name"], o["role"], o["direction"]) for o in ins["operands"]]
        a_role = "SMEM_DESCRIPTOR" if src == "ss" else "TMEM_ADDRESS"
        assert roles == [("d", "TMEM_ADDRESS", "IN"), ("a", a_role, "IN"), ("b", "SMEM_DESCRIPTOR", "IN"),
                         ("idesc", "INSTRUCTION_DESCRIPTOR", "IN"), ("enable_input_d", "PREDICATE", "IN")]
        a_text = "[$1]" if src == "ts" else "$1"
        assert ins["ptx_template"] == f"tcgen05.mma.cta_group::{cta}.kind::{kind} [$0], {a_text}, $2, $3, $4;"
        assert ins["constraints"] == ("r,r,l,r,b" if src == "ts" else "r,l,l,r,b")
        sass = {"f16": "UTCHMMA", "tf32": "UTCHMMA", "f8f6f4": "UTCQMMA", "i8": "UTCIMMA"}[kind]
        assert ins["sass_opcodes"] == [sass + (".2CTA" if cta == "2" else "")]
    # every shape of _isa_n_values, each type pair and A source once
    assert n == sum(len(_isa_n_values(kind, cta, src, mm)) for kind, (_, types) in _KINDS.items() for _ in types
                    for cta in (1, 2) for src in ("ss", "ts") for mm in ((64, 128) if cta == 1 else (128, 256)))


def test_python_names_are_unambiguous(blackwell):
    seen = {}
    for ins in blackwell.atoms + blackwell.primitives + blackwell.all_instances():
        key = (ins.get("python_name", ""), tuple(sorted(ins.get("python_params", {}).items())))
        assert key not in seen, f"{ins['id']} and {seen[key]} share {key}"
        seen[key] = ins["id"]
        # Names are CuTe DSL's, with no backend prefix: Hopper's TMA and mbarrier names are shared, and the
        # frontend picks by target (test_shared_python_names_select_by_target).
        assert not ins.get("python_name", "").startswith("blackwell."), ins["id"]


def _select_for(arch, python_name, params, operands=None):
    from warpweave._dsl.atoms import atoms
    from warpweave._dsl.base import trace

    with trace.tracing(trace.TraceState(target={"name": arch})):
        return atoms.select(python_name, params, operands)[1]["id"]


def test_shared_python_names_select_by_target(blackwell):
    from warpweave._dsl.base.errors import DSLValueError

    load = "cpasync.CopyBulkTensorTileG2SOp"
    assert _select_for("sm_90a", load, {"rank": "2"}) == "hopper.tma.load.2d"
    assert _select_for("sm_100a", load, {"rank": "2"}) == "blackwell.tma.load.2d"        # cta_group defaults to 1
    assert _select_for("sm_100a", load, {"rank": "2", "cta_group": "2"}) == "blackwell.tma.load.cta2.2d"
    assert _select_for("sm_90a", load, {"rank": "2", "cta_group": "1"}) == "hopper.tma.load.2d"
    with pytest.raises(DSLValueError, match="not for the current target"):
        _select_for("sm_90a", load, {"rank": "2", "cta_group": "2"})
    assert _select_for("sm_90a", "cpasync.CopyBulkTensorTileS2GOp", {"rank": "3"}) == "hopper.tma.store.3d"
    assert _select_for("sm_100a", "cpasync.CopyBulkTensorTileS2GOp", {"rank": "3"}) == "blackwell.tma.store.3d"
    init = {"mbar", "count"}
    assert _select_for("sm_90a", "arch.mbarrier_init", {}, init).startswith("hopper.")
    assert _select_for("sm_100a", "arch.mbarrier_init", {}, init).startswith("blackwell.")


# ------------------------------------------------------------------------------------------------------------
# tcgen05.ld / st thread-value layouts. Units are 32-bit columns; tile element = column + C * lane, C the columns
# per lane of the whole access. The references restate the fragment rules of each shape (PTX ISA "Matrix
# fragments for tcgen05.ld/st", as CuTe's SM100_TMEM_LOAD traits have them) per register.
# ------------------------------------------------------------------------------------------------------------

def _tmem_ref(shape, t, r):
    """(lane, column) of register r of thread t."""
    if shape == "32x32b":
        return t, r
    if shape == "16x64b":
        return t // 4 + 8 * (t % 2), (t // 2) % 2 + 2 * r
    if shape == "16x128b":
        rep, half = divmod(r, 2)
        return t // 4 + 8 * half, t % 4 + 4 * rep
    rep, rest = divmod(r, 4)
    half, j = divmod(rest, 2)
    return t // 4 + 8 * half, 2 * (t % 4) + j + 8 * rep


@pytest.mark.parametrize("ident", _LD_ST)
def test_tmem_copy_layouts(blackwell, ident):
    ins = _entry(ident)
    shape, num = re.search(r"\.(\d+x\d+b)\.x(\d+)$", ident).groups()
    num = int(num)
    lanes, bits = (int(x) for x in shape[:-1].split("x"))
    cols = bits // 32 * num
    regs = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4}[shape] * num
    ops = _ops(ins)
    reg_op, tmem_op = (ops["dst"], ops["src"]) if ".ld." in ident else (ops["src"], ops["dst"])
    assert ins["layout_unit_bits"] == 32 and ins["thr_id"] == "32:1"
    assert reg_op["role"] == "REGISTERS" and tmem_op["role"] == "TMEM_ADDRESS"
    assert int(reg_op["values"]) == int(reg_op["registers"]) == regs
    layout = _core.parse_layout(reg_op["layout_tv"])
    seen = set()
    for t in range(32):
        for r in range(regs):
            lane, col = _tmem_ref(shape, t, r)
            assert layout((t, r)) == col + cols * lane, f"{ident}: thread {t} register {r}"
            seen.add((lane, col))
    assert seen == {(ln, c) for ln in range(lanes) for c in range(cols)}
    addr = _core.parse_layout(tmem_op["layout_tv"])
    assert [addr((t, 0)) for t in range(32)] == [0] * 32 and addr.size() == 32 * lanes * cols
    reg_list = ", ".join(f"${i + (0 if '.ld.' in ident else 1)}" for i in range(regs))
    if ".ld." in ident:
        want = f"tcgen05.ld.sync.aligned.{shape}.x{num}.b32 {{{reg_list}}}, [${regs}];"
    else:
        want = f"tcgen05.st.sync.aligned.{shape}.x{num}.b32 [$0], {{{reg_list}}};"
    assert ins["ptx_template"] == want


# ------------------------------------------------------------------------------------------------------------
# Descriptor hooks against the formulas (PTX ISA tcgen05 "Instruction descriptor" and "Shared memory descriptor")
# ------------------------------------------------------------------------------------------------------------

_AB_FORMAT = {"f16": 0, "bf16": 1, "tf32": 2, "e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5, "u8": 0, "s8": 1}
_D_FORMAT = {"f16": 0, "f32": 1, "s32": 2}


def _idesc_ref(a, b, d, m, n, a_major=0, b_major=0, negate_a=0, negate_b=0, saturate=0):
    return (saturate << 3 | _D_FORMAT[d] << 4 | _AB_FORMAT[a] << 7 | _AB_FORMAT[b] << 10 | negate_a << 13
            | negate_b << 14 | a_major << 15 | b_major << 16 | (n >> 3) << 17 | (m >> 4) << 24)


_SWIZZLE_CODE = {"NONE": 0, "128B_BASE32B": 1, "128B": 2, "64B": 4, "32B": 6}


def _smem_desc_ref(addr, lbo, sbo, swizzle="NONE", base_offset=0, lbo_mode=0):
    return (((addr >> 4) & 0x3FFF) | (lbo >> 4) << 16 | (sbo >> 4) << 32 | 1 << 46 | base_offset << 49
            | lbo_mode << 52 | _SWIZZLE_CODE[swizzle] << 61)


def _emit_hook(ident, inputs, attrs, then=None):
    """A kernel that emits the hook's primitive (inputs: {operand: [f(builder, i32 kernel parameter)]}) and then
    `then(builder, out pointer, results)`."""
    b = _core.IRBuilder()
    out, param = b.begin_function("probe", ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    vals = {k: [v(b, param) for v in vs] for k, vs in inputs.items()}
    res = emit_instruction(b, "blackwell", _entry(ident), vals, attrs)
    if then:
        then(b, out, res)
    b.end_function()
    return b, res


def _instr_desc(attrs):
    b, res = _emit_hook("blackwell.tcgen05.make_instr_desc", {}, attrs)
    (v,) = res["idesc"]
    m = re.search(rf'%{v} = "arith.constant"\(\) <{{value = (-?\d+) : i32}}>', str(b))
    assert m, str(b)
    return int(m.group(1)) & 0xFFFFFFFF


_IDESC_CASES = [
    dict(a_type="f16", b_type="f16", d_type="f16", m=64, n=8),
    dict(a_type="f16", b_type="f16", d_type="f32", m=128, n=256, a_major="MN", b_major="MN"),
    dict(a_type="bf16", b_type="bf16", d_type="f32", m=256, n=144, negate_a=1),
    dict(a_type="tf32", b_type="tf32", d_type="f32", m=128, n=24, b_major="MN", negate_b=1),
    dict(a_type="e4m3", b_type="e5m2", d_type="f16", m=64, n=200),
    dict(a_type="e2m1", b_type="e3m2", d_type="f32", m=128, n=64),
    dict(a_type="e2m1", b_type="e4m3", d_type="f32", m=128, n=64, a_major="MN"),  # kind::f8f6f4 transposes all
    dict(a_type="e4m3", b_type="e2m3", d_type="f32", m=128, n=64, b_major="MN"),
    dict(a_type="e2m3", b_type="e4m3", d_type="f32", m=256, n=256, negate_a=1, negate_b=1),
    dict(a_type="s8", b_type="u8", d_type="s32", m=128, n=16, saturate=1, a_major="MN"),
    dict(a_type="u8", b_type="u8", d_type="s32", m=64, n=8, b_major=1),
]


@pytest.mark.parametrize("case", _IDESC_CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_instr_desc_bits(blackwell, case):
    ref = dict(case)
    ref = {"a": ref.pop("a_type"), "b": ref.pop("b_type"), "d": ref.pop("d_type"), **ref}
    for k in ("a_major", "b_major"):
        if k in ref:
            ref[k] = {"K": 0, "MN": 1, 0: 0, 1: 1}[ref[k]]
    assert _instr_desc(case) == _idesc_ref(**ref)


def test_instr_desc_from_atoms(blackwell):
    # Every kind and type pair, both CTA groups and A sources: the atom supplies types and shape.
    n = 0
    for ins in blackwell.atoms + blackwell.all_instances():
        m = _MMA_RE.match(ins["id"])
        if not m or int(m.group(4)) != 64:
            continue
        cta, kind, mm, nn, k, ab, acc, src = m.groups()
        want = _idesc_ref(ab, ab, acc, int(mm), int(nn), b_major=1)
        assert _instr_desc({"atom": ins["id"], "b_major": "MN"}) == want, ins["id"]
        n += 1
    assert n == 10 * 2 * 2 * 2  # kind and type pairs x CTA groups x their two Ms x A sources


def test_instr_desc_mixed_types_within_the_atoms_kind(blackwell):
    atom = "blackwell.tcgen05.mma.cta1.f8f6f4.m128n64k32.e4m3.f32.ss"
    assert _instr_desc({"atom": atom, "b_type": "e5m2"}) == _idesc_ref("e4m3", "e5m2", "f32", 128, 64)
    assert _instr_desc({"atom": "blackwell.tcgen05.mma.cta2.i8.m256n32k32.u8.s32.ts", "b_type": "s8"}) == \
        _idesc_ref("u8", "s8", "s32", 256, 32)


@pytest.mark.parametrize("attrs, message", [
    ({"a_type": "f16", "b_type": "bf16", "d_type": "f32", "m": 128, "n": 64}, "one type"),
    ({"a_type": "bf16", "b_type": "bf16", "d_type": "f16", "m": 128, "n": 64}, "cannot accumulate"),
    ({"a_type": "s8", "b_type": "s8", "d_type": "f32", "m": 128, "n": 64}, "cannot accumulate"),
    ({"a_type": "e4m3", "b_type": "s8", "d_type": "f32", "m": 128, "n": 64}, "different kinds"),
    ({"a_type": "f16", "b_type": "f16", "d_type": "f32", "m": 96, "n": 64}, "m must be"),
    ({"a_type": "f16", "b_type": "f16", "d_type": "f32", "m": 128, "n": 12}, "n must be"),
    ({"a_type": "e4m3", "b_type": "e4m3", "d_type": "f32", "m": 128, "n": 72, "b_major": "MN"}, "n % 16"),
    ({"a_type": "s8", "b_type": "s8", "d_type": "s32", "m": 128, "n": 64, "negate_a": 1}, "negate"),
    ({"a_type": "f16", "b_type": "f16", "d_type": "f32", "m": 128, "n": 64, "saturate": 1}, "saturate"),
    ({"a_type": "f16", "d_type": "f32", "m": 128, "n": 64}, "b_type"),
    ({"atom": "blackwell.tcgen05.mma.cta1.f16.m128n64k16.f16.f32.ts", "a_major": "MN"}, "tensor memory"),
    ({"atom": "blackwell.tcgen05.mma.cta1.f16.m128n64k16.f16.f32.ss", "a_type": "e4m3", "b_type": "e4m3"},
     "kind::f16"),
    ({"atom": "blackwell.tcgen05.mma.cta1.f16.m128n64k16.f16.f32.ss", "n": 128}, "match the atom"),
    ({"atom": "blackwell.tcgen05.ld.32x32b.x1"}, "not a tcgen05.mma atom"),
])
def test_instr_desc_refusals(blackwell, attrs, message):
    with pytest.raises(RuntimeError, match=message):
        _instr_desc(attrs)


def _smem_desc_value(addr, attrs):
    """The descriptor of a constant address, folded by the compiler into the stored 64-bit immediate."""
    b, _ = _emit_hook("blackwell.tcgen05.make_smem_desc", {"addr": [lambda b, p: b.constant_int(addr, "i32")]},
                      attrs, lambda b, out, res: b.op0("llvm.store", [res["desc"][0], out], "alignment = 8 : i64"))
    ptx = _core.compile(str(b), registry.target_named("sm_100a").as_dict(), want_cubin=False)["ptx"]
    m = re.search(r"st\.global\.(?:b|u)64\s+\[%rd\d+\],\s*(-?\d+);", ptx)
    assert m, ptx
    return int(m.group(1)) & (2 ** 64 - 1)


_SMEM_CASES = [
    (0x0, dict(stride_byte_offset=1024)),
    (0x12340, dict(leading_byte_offset=16, stride_byte_offset=1024, swizzle="128B")),
    (0x3FFF0, dict(leading_byte_offset=0x3FFF0, stride_byte_offset=0x3FFF0, swizzle="32B", base_offset=7, lbo_mode=1)),
    (0x45670, dict(leading_byte_offset=256, stride_byte_offset=512, swizzle="64B", base_offset=3)),
    (0xC80, dict(leading_byte_offset=4096, stride_byte_offset=128, swizzle="128B_BASE32B")),
]


@pytest.mark.parametrize("addr, attrs", _SMEM_CASES)
def test_smem_desc_bits(blackwell, addr, attrs):
    ref = {"lbo": attrs.get("leading_byte_offset", 16), "sbo": attrs["stride_byte_offset"],
           **{k: v for k, v in attrs.items() if k in ("swizzle", "base_offset", "lbo_mode")}}
    assert _smem_desc_value(addr, attrs) == _smem_desc_ref(addr, **ref)


def test_smem_desc_swizzle_in_bytes(blackwell):
    for span, name in ((0, "NONE"), (32, "32B"), (64, "64B"), (128, "128B")):
        assert _smem_desc_value(0x400, {"stride_byte_offset": 1024, "swizzle": span}) == \
            _smem_desc_ref(0x400, 16, 1024, name)


def test_smem_desc_of_a_run_time_address(blackwell):
    # The address stays a value: a shift, a mask, a widening and an or with the constant fields.
    b, _ = _emit_hook("blackwell.tcgen05.make_smem_desc", {"addr": [lambda b, p: p]},
                      {"stride_byte_offset": 1024, "swizzle": "128B"})
    text = str(b)
    for op in ("arith.shrui", "arith.andi", "arith.extui", "arith.ori"):
        assert op in text
    assert f"value = {_smem_desc_ref(0, 16, 1024, '128B')} : i64" in text
    assert value_type(_ops(_entry("blackwell.tcgen05.make_smem_desc"))["desc"]) == "i64"


@pytest.mark.parametrize("attrs, message", [
    ({}, "stride_byte_offset"),
    ({"stride_byte_offset": 1000}, "multiple of 16"),
    ({"stride_byte_offset": 1 << 18}, "below 2"),
    ({"stride_byte_offset": 1024, "swizzle": "16B"}, "swizzle"),
    ({"stride_byte_offset": 1024, "swizzle": 48}, "swizzle"),
    ({"stride_byte_offset": 1024, "base_offset": 8}, "base_offset"),
])
def test_smem_desc_refusals(blackwell, attrs, message):
    with pytest.raises(RuntimeError, match=message):
        _emit_hook("blackwell.tcgen05.make_smem_desc", {"addr": [lambda b, p: p]}, attrs)


def test_tma_host_hook_checks_its_arguments(blackwell):
    def call(attrs):
        return _core.plugin_host_call("blackwell", "encode_tma_descriptor", attrs, 128)
    base = {"data_type": "f16", "rank": 2, "address": 1 << 20, "dim0": 64, "dim1": 64, "stride1": 128,
            "box0": 64, "box1": 64}
    with pytest.raises(RuntimeError, match="data_type"):
        call({**base, "data_type": "f8"})
    with pytest.raises(RuntimeError, match="rank"):
        call({**base, "rank": 6})
    with pytest.raises(RuntimeError, match="box1"):
        call({k: v for k, v in base.items() if k != "box1"})
    with pytest.raises(RuntimeError, match="stride0"):
        call({**base, "stride0": 4})
    with pytest.raises(RuntimeError, match="swizzle"):
        call({**base, "swizzle": "256B"})
    with pytest.raises(RuntimeError, match="128 bytes"):
        _core.plugin_host_call("blackwell", "encode_tma_descriptor", base, 64)


# ------------------------------------------------------------------------------------------------------------
# Compile tier: a probe kernel per instruction through the real compiler, ptxas and nvdisasm.
# ------------------------------------------------------------------------------------------------------------

def _make_value(b, ty, tid):
    # Values derived from the thread index so that nothing folds away before the instruction.
    if ty in ("f16", "bf16", "f32", "f64"):
        return b.op1("arith.sitofp", [tid], ty)
    if ty == "i32":
        return tid
    if ty == "i1":
        return b.op1("arith.cmpi", [tid, b.constant_int(5, "i32")], "i1", "predicate = 2 : i64")
    if ty in ("i8", "i16"):
        return b.op1("arith.trunci", [tid], ty)
    if ty == "i64":
        return b.op1("arith.extui", [tid], ty)
    raise AssertionError(f"no probe value of type {ty}")


def _probe(ident, attrs, target="sm_100a"):
    ins = _entry(ident)
    b = _core.IRBuilder()
    # ptxas emits setmaxnreg only in a kernel whose register count at entry it knows (launch bounds)
    kernel = "nvvm.kernel" if ins["kind"] != "REGISTER_CONTROL" else \
        "nvvm.kernel, nvvm.reqntid = array<i32: 128, 1, 1>, nvvm.minctasm = 1 : i32"
    out, scalar = b.begin_function("probe", ["!llvm.ptr<1>", "i32"], kernel)
    tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
    inputs = {}
    for o in ins.get("operands", []):
        if is_result(o):   # a store's OUT address is an input of the instruction
            continue
        if o["role"] == "TMA_DESCRIPTOR":
            inputs[o["name"]] = [b.op1("llvm.ptrtoint", [out], "i64")]
        elif o["role"] == "SCALAR":
            inputs[o["name"]] = [scalar]
        elif o["role"] == "INSTRUCTION_DESCRIPTOR":
            # The probe goes through both hooks, as a kernel would.
            inputs[o["name"]] = emit_instruction(b, "blackwell", _entry("blackwell.tcgen05.make_instr_desc"), {},
                                                 {"atom": ident})["idesc"]
        elif o["role"] == "SMEM_DESCRIPTOR":
            inputs[o["name"]] = emit_instruction(b, "blackwell", _entry("blackwell.tcgen05.make_smem_desc"),
                                                 {"addr": [tid]}, {"stride_byte_offset": 1024, "swizzle": "128B"})["desc"]
        else:
            n = int(o["values"]) if o["role"] == "REGISTERS" else int(o.get("count") or 1)
            inputs[o["name"]] = [_make_value(b, value_type(o), tid) for _ in range(n)]
    results = emit_instruction(b, "blackwell", ins, inputs, attrs)
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
    return ins, _core.compile(str(b), registry.target_named(target).as_dict())


def _ptx_pattern(ins, attrs):
    text = ins["ptx_template"]
    given = {a["name"]: a["default_value"] for a in ins.get("attributes", []) if a.get("default_value")}
    given.update(attrs)  # the probe's attributes, the others at their defaults as the emitter fills them
    for name, value in given.items():
        text = text.replace("{" + name + "}", str(value))
    pattern = re.escape(text)
    return re.compile(re.sub(r"\\\$\d+", r"%?[\\w.]+", pattern))


def _sass_opcodes(sass):
    return set(re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Za-z0-9_.]*)", sass))


# Every kind and type pair at N=64 (a valid N for every CTA group, M and A source), both CTA groups, both A
# sources; plus the extreme shapes of one type pair.
_MMA_SUBSET = sorted({f"blackwell.tcgen05.mma.cta{cta}.{kind}.m128n64k{k}.{ab}.{acc}.{src}"
                      for kind, (k, types) in _KINDS.items() for ab, acc in types
                      for cta in (1, 2) for src in ("ss", "ts")}
                     | {f"blackwell.tcgen05.mma.cta1.f16.m64n8k16.bf16.f32.{s}" for s in ("ss", "ts")}
                     | {f"blackwell.tcgen05.mma.cta2.f16.m256n256k16.bf16.f32.{s}" for s in ("ss", "ts")}
                     | {"blackwell.tcgen05.mma.cta1.i8.m64n8k32.s8.s32.ss",
                        "blackwell.tcgen05.mma.cta2.f8f6f4.m256n16k32.e5m2.f16.ss"})


_CLUSTER_XYZ = ("blackwell.cluster.ctaid", "blackwell.cluster.nctaid", "blackwell.cluster.clusterid",
                "blackwell.cluster.nclusterid")


def _cases():
    out = []
    for ident in _MMA_SUBSET + _LD_ST + _CP + _TMA + _LDSM + _TCGEN05_PRIMITIVES + _OTHER_PRIMITIVES:
        if ident.endswith(("make_instr_desc", "make_smem_desc", "make_smem_desc_next")):
            continue  # constants and integer ops, checked bit by bit above
        if ident in ("blackwell.tcgen05.alloc", "blackwell.tcgen05.dealloc", "blackwell.tcgen05.relinquish_alloc_permit",
                     "blackwell.tcgen05.commit", "blackwell.tcgen05.commit.multicast", "blackwell.tcgen05.shift"):
            out += [pytest.param(ident, {"cta_group": g}, id=f"{ident}-cta{g}") for g in (1, 2)]
        elif ident.startswith(("blackwell.tma.wait_group")):
            out.append(pytest.param(ident, {"n": 1}, id=ident))
        elif ident.startswith("blackwell.setmaxnreg"):
            out.append(pytest.param(ident, {"n": 232 if ident.endswith("inc") else 96}, id=ident))
        elif ident == "blackwell.elect.sync":
            out.append(pytest.param(ident, {"membermask": "0xffffffff"}, id=ident))
        elif ident in _CLUSTER_XYZ:
            out.append(pytest.param(ident, {"dim": "y"}, id=ident))
        else:
            out.append(pytest.param(ident, {}, id=ident))
    return out


# Entries whose instruction leaves no opcode of its own in SASS (ptxas folds them into its scheduling); the test
# records that, so that a new toolchain which starts emitting one is noticed.
_NO_SASS = {"blackwell.tcgen05.wait_ld", "blackwell.tcgen05.fence.before_thread_sync",
            "blackwell.tcgen05.fence.after_thread_sync", "blackwell.mbarrier.init_fence",
            # ptxas reads these special registers from the launch's constants or derives them from %ctaid
            "blackwell.cluster.ctaid", "blackwell.cluster.nctaid", "blackwell.cluster.nctarank",
            "blackwell.cluster.clusterid", "blackwell.cluster.nclusterid", "blackwell.cluster.mapa"}


@pytest.mark.parametrize("ident, attrs", _cases())
def test_compiles_with_expected_ptx_and_sass(blackwell, ident, attrs):
    ins, result = _probe(ident, attrs)
    assert _ptx_pattern(ins, attrs).search(result["ptx"]), f"{ident}: the template's instruction is not in the PTX"
    assert bool(ins.get("sass_opcodes")) == (ident not in _NO_SASS), ident
    if not _core.sass_tool_available():
        pytest.skip("PTX and ptxas checked; no SASS disassembler (nvdisasm) to check the opcodes")
    ops = _sass_opcodes(_core.disassemble_sass(result["cubin"]))
    for want in ins.get("sass_opcodes", []):
        assert any(op == want or op.startswith(want + ".") for op in ops), f"{ident}: no {want} in {sorted(ops)}"
    if ident.startswith("blackwell.tcgen05.") and attrs.get("cta_group") == 2:
        assert any(".2CTA" in op for op in ops) or ident.endswith(("dealloc", "relinquish_alloc_permit")), sorted(ops)


def test_tcgen05_assembles_for_sm_100a_only(blackwell):
    # Why the target is arch-specific: ptxas refuses tcgen05 for the family-portable sm_100.
    ins = _entry("blackwell.tcgen05.commit")
    b = _core.IRBuilder()
    b.begin_function("probe", ["i32"], "nvvm.kernel")
    emit_instruction(b, "blackwell", ins, {"mbar": [b.constant_int(0, "i32")]}, {"cta_group": 1})
    b.end_function()
    with pytest.raises(_core.CompileError, match="not supported on .target 'sm_100'"):
        _core.compile(str(b), {"name": "sm_100", "llvm_cpu": "sm_100", "ptx_features": "+ptx88", "jit_arch": "sm_100"})


def test_the_backend_package_registers_tensor_memory(blackwell):
    # Tensor memory is Blackwell's: the frontend knows the space only once this backend's package is mounted.
    from warpweave._dsl.values import tensor
    from warpweave._dsl.registry.backend_python import mount_backend

    assert mount_backend("blackwell") is not None
    assert tensor.ptr_type("tmem") == "!llvm.ptr<6>"


def test_experimental_primitive_families(blackwell):
    """cutlass.experimental.primitives' tcgen05 instructions with run-time operands: one family each, their
    instances the legal combinations (kind::i8 for sm_100a and sm_110a, scale-input-d for sm_100a and sm_103a,
    .ashift only with A in tensor memory and without a collector use, scale-input-d for the f16 and tf32 kinds)."""
    fams = {f["id"]: f for f in blackwell.families if f["id"].startswith("blackwell.prim.")}
    shapes = ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")
    cps = ("128x256b", "4x256b", "128x128b", "64x128b.warpx2_02_13", "64x128b.warpx2_01_23", "32x128b.warpx4")
    assert sorted(fams) == sorted(
        ["blackwell.prim.tcgen05.mma.float", "blackwell.prim.tcgen05.mma.scale_input_d", "blackwell.prim.tcgen05.mma.i8",
         "blackwell.prim.tcgen05.mma.block_scale",
         "blackwell.prim.tensormap.replace"] + [f"blackwell.prim.tcgen05.{d}.{s}" for d in ("ld", "st") for s in shapes]
        + [f"blackwell.prim.tcgen05.cp.{c}" for c in cps])
    ids = {a["id"] for a in blackwell.all_instances() if a["id"].startswith("blackwell.prim.tcgen05.mma.")}
    assert "blackwell.prim.tcgen05.mma.cta2.f16.ts.none.l1.s1.a1" in ids
    assert "blackwell.prim.tcgen05.mma.cta1.f16.ts.fill.l0.s0.a1" not in ids      # .ashift with a collector use
    assert "blackwell.prim.tcgen05.mma.cta1.f8f6f4.ss.none.l0.s1.a0" not in ids   # scale-input-d of kind::f8f6f4
    assert "blackwell.prim.tcgen05.mma.cta1.f16.ss.none.l0.s0.a1" not in ids      # .ashift of A in shared memory
    assert fams["blackwell.prim.tcgen05.mma.i8"]["template"]["targets"] == ["sm_100a", "sm_110a"]
    assert fams["blackwell.prim.tcgen05.mma.scale_input_d"]["template"]["targets"] == ["sm_100a", "sm_103a"]
