"""The conformance suite (conformance/warpweave_conformance): its manifest and compile tiers over the in-tree
backends, its JSON and exit code, and the host side of the execute-tier probes.

The execute tier needs a GPU. Here its probes run against stand-ins for the hardware written from the PTX ISA
(ldmatrix, shuffles, cp.async zero-fill) or from the manifest's own layouts (mma), which checks everything but
the launch: the bytes a probe kernel reads and writes, the references, and that a wrong layout is caught.
"""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from dsl_helpers import has_gpu, has_torch_cuda

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "conformance"))

from warpweave import _core  # noqa: E402
import warpweave_conformance as wc  # noqa: E402
from warpweave_conformance import numerics as nx  # noqa: E402
from warpweave_conformance import sources  # noqa: E402
from warpweave_conformance.compile_tier import split_sass  # noqa: E402
from warpweave_conformance.kernels import out_records  # noqa: E402
from warpweave_conformance.probes import barrier, cp_async, layout_table, ldmatrix, mma, parse_shape, shuffle  # noqa: E402
from warpweave_conformance.probes import thread_ids  # noqa: E402

EXAMPLE_MANIFEST = os.path.join(ROOT, "plugins_api", "examples", "b1_mma", "example_b1.textproto")
# The same atoms written out as instances: the validator tests edit one atom's text.
EXAMPLE_INSTANCES = os.path.join(ROOT, "tests", "python", "data", "example_b1_instances.textproto")
RECORD_KEYS = {"backend", "atom", "tier", "target", "status", "reason"}


def cli(*args, env=None, timeout=900):
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "frontend_python"), os.path.join(ROOT, "conformance")])
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "warpweave", *args], capture_output=True, text=True, env=e,
                          timeout=timeout, cwd=ROOT)


# --- the in-tree backends ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def in_tree():
    """Manifest and compile tiers over every loaded in-tree backend, run once for the module."""
    names = [b for b in ("ampere", "hopper", "blackwell", "blackwell_geforce") if b in {s.name for s in sources.loaded_sources()}]
    if not names:
        pytest.skip("no in-tree backend plugin is built")
    result = wc.run(("manifest", "compile"), backends=names)
    print(f"compile tier: {result.compile_seconds:.1f} s wall")
    return names, result


def test_in_tree_manifest_and_compile_tiers_pass(in_tree):
    names, result = in_tree
    fails = [r for r in result.records if r.status == wc.FAIL]
    assert not fails, "\n".join(f"{r.backend} {r.atom} [{r.tier} {r.target}]: {r.reason}" for r in fails[:40])
    skips = [r for r in result.records if r.status == wc.SKIP]
    assert all(r.reason.strip() for r in skips), "every skip says why"
    tested = {r.backend for r in result.records}
    assert set(names) <= tested
    # every instruction of every backend has a manifest record and a compile record per target
    for src in sources.loaded_sources(names):
        for entry, _ in src.entries():
            got = {(r.tier, r.target) for r in result.records if r.backend == src.name and r.atom == entry["id"]}
            assert ("manifest", "") in got, entry["id"]
            for t in entry["targets"]:
                assert ("compile", t) in got, (entry["id"], t)


def test_compile_tier_checks_sass_per_kernel(in_tree):
    """A pass names the opcodes found, and the listing was split per probe kernel."""
    _, result = in_tree
    passed = [r for r in result.records if r.tier == "compile" and r.status == wc.PASS]
    assert passed
    with_sass = [r for r in passed if "SASS has" in r.reason]
    if "SASS not checked" in passed[0].reason:
        pytest.skip("no nvdisasm/cuobjdump here")
    assert with_sass


def test_split_sass_by_function():
    listing = """
        .section .text.ww_probe_1,"ax",@progbits
        /*0000*/  HMMA.16816.F32 R4, R4, R8, R12 ;
        .section .text.ww_probe_12,"ax",@progbits
        /*0000*/  LDSM.16.M88.4 R4, [R2] ;
    """
    s = split_sass(listing)
    assert set(s) == {"ww_probe_1", "ww_probe_12"}
    assert "HMMA" in s["ww_probe_1"] and "HMMA" not in s["ww_probe_12"]
    cuobjdump = "\t\tFunction : ww_probe_3\n        /*0000*/  BMMA.168256.AND.POPC R4, R4.ROW, R8.COL, R12 ;\n"
    assert "BMMA" in split_sass(cuobjdump)["ww_probe_3"]


# --- the command line, the JSON, the exit code ------------------------------------------------------------------

def test_manifest_file_passes_and_json_schema(tmp_path):
    out = tmp_path / "r.json"
    r = cli("conformance", "--manifest", EXAMPLE_MANIFEST, "--tier", "all", "--json", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    records = json.loads(out.read_text())
    assert isinstance(records, list) and records
    for rec in records:
        assert RECORD_KEYS <= set(rec), rec
        assert rec["status"] in ("pass", "fail", "skip")
        assert rec["tier"] in ("manifest", "compile", "execute")
        if rec["status"] == "skip":
            assert rec["reason"]
    atoms = {rec["atom"] for rec in records}
    assert "example_b1.mma.m16n8k256.s32.b1.b1.s32.and.popc" in atoms
    assert {(rec["tier"], rec["target"]) for rec in records if rec["status"] == "pass"} >= {("manifest", ""),
                                                                                             ("compile", "sm_80")}
    assert "example_b1" in r.stdout and "compile sm_80" in r.stdout  # the table: instructions x tiers


def test_broken_manifest_fails_with_exit_code(tmp_path):
    text = open(EXAMPLE_INSTANCES).read()
    # drop one register of b from the first atom: the template then uses more operands than the manifest gives
    broken = text.replace('values: 2 registers: 2 register_type: "b32"', 'values: 1 registers: 1 register_type: "b32"', 1)
    assert broken != text
    path = tmp_path / "broken.textproto"
    path.write_text(broken)
    out = tmp_path / "r.json"
    r = cli("conformance", "--manifest", str(path), "--tier", "manifest", "--json", str(out))
    assert r.returncode == 1, r.stdout + r.stderr
    records = json.loads(out.read_text())
    bad = [x for x in records if x["status"] == "fail"]
    assert [x["atom"] for x in bad] == ["example_b1.mma.m16n8k256.s32.b1.b1.s32.and.popc"]
    assert "template uses 14 operands but the operands provide 13" in bad[0]["reason"]
    assert "FAIL" in r.stdout


def test_an_instruction_can_ask_only_for_ptxas():
    text = open(EXAMPLE_INSTANCES).read()
    first = text.index("atoms {") + len("atoms {")
    assert _core.validate_manifest(text[:first] + '\n  cubin_tool: "ptxas"' + text[first:]) == []
    problems = _core.validate_manifest(text[:first] + '\n  cubin_tool: "nvcc"' + text[first:])
    assert len(problems) == 1 and 'cubin_tool "nvcc" is not "ptxas"' in problems[0], problems


def test_a_template_names_only_declared_attributes():
    # {name} in a template is an attribute; PTX's own braces ({ .reg ...; }, {$1, $2}) are not.
    text = open(EXAMPLE_INSTANCES).read()
    at = text.index('ptx_template: "') + len('ptx_template: "')
    assert _core.validate_manifest(text[:at] + "{ .reg .b32 x; } {$0} " + text[at:]) == []
    problems = _core.validate_manifest(text[:at] + "{nope} {also_1} " + text[at:])
    assert [p.split(": ", 1)[1] for p in problems] == ["the template uses the undeclared attribute {nope}",
                                                       "the template uses the undeclared attribute {also_1}"], problems


def test_a_targets_unpacking_tensor_maps_are_known_formats_named_once(tmp_path):
    # Target.tma_unpacking is data the core checks: each value one of the tensor-map element formats that unpack,
    # once; anything else refuses the manifest (validation, so loading it fails) with the target and the value named
    text = open(EXAMPLE_INSTANCES).read()
    at = text.index('jit_arch: "sm_80"')

    def with_unpacking(*values):
        return text[:at] + "".join(f'tma_unpacking: "{v}"\n  ' for v in values) + text[at:]

    assert _core.validate_manifest(with_unpacking("16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")) == []
    problems = _core.validate_manifest(with_unpacking("16U6_ALIGN16B", "16U5_ALIGN16B", "16U6_ALIGN16B"))
    assert [p.split(": ", 1)[1] for p in problems] == [
        'tma_unpacking "16U5_ALIGN16B" is not a tensor-map element format that unpacks (16U4_ALIGN8B 16U4_ALIGN16B '
        '16U6_ALIGN16B)', 'tma_unpacking "16U6_ALIGN16B" is repeated'], problems
    assert all(p.startswith("target sm_80") for p in problems)
    path = tmp_path / "bad_unpacking.textproto"
    path.write_text(with_unpacking("u6"))
    r = cli("conformance", "--manifest", str(path), "--tier", "manifest")
    assert r.returncode == 1 and 'tma_unpacking "u6" is not a tensor-map element format' in r.stdout + r.stderr, \
        r.stdout + r.stderr


def test_unparsable_manifest_fails(tmp_path):
    path = tmp_path / "junk.textproto"
    path.write_text('name: "junk"\nthis is not a manifest\n')
    r = cli("conformance", "--manifest", str(path), "--tier", "manifest")
    assert r.returncode == 1
    assert re.search(r"\d+:\d+: ", r.stdout), r.stdout


def test_unknown_backend_is_a_usage_error():
    r = cli("conformance", "--backend", "no_such_backend", "--tier", "manifest")
    assert r.returncode == 2
    assert "no_such_backend" in r.stderr


# --- numerics ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(nx.TYPES))
def test_random_values_are_nonzero_and_exact(name):
    t = nx.TYPES[name]
    rng = np.random.default_rng(1)
    codes = nx.random_codes(t, 4096, rng)
    vals = nx.decode(t, codes)
    assert (vals != 0).all()
    assert (nx.from_bytes(t, nx.to_bytes(t, codes)) == codes).all()
    if t.kind == "float":
        assert np.isfinite(vals).all()
        assert (np.abs(vals) >= 2.0 ** -3).all() and (np.abs(vals) < 4).all()


def test_fp8_decoding():
    e4m3, e5m2 = nx.TYPES["e4m3"], nx.TYPES["e5m2"]
    assert list(nx.decode(e4m3, np.array([0x38, 0xB8, 0x3C, 0x01, 0x7E]))) == [1.0, -1.0, 1.5, 2.0 ** -9, 448.0]
    assert list(nx.decode(e5m2, np.array([0x3C, 0x3E, 0xC0]))) == [1.0, 1.5, -2.0]


# --- the execute tier's host side, against stand-ins for the hardware --------------------------------------------

def _recs(p):
    return p.in_bytes.reshape(p.grid, -1)[:, : p.block * p.in_rec.size].reshape(p.grid, p.block, p.in_rec.size)


def _data(p):
    return p.in_bytes.reshape(p.grid, -1)[:, p.block * p.in_rec.size:]


def _fresh_out(p):
    out = np.full(p.out_size, 0xFF, dtype=np.uint8)
    return out, out_records(out, p.grid, p.block, p.out_rec)


def _u32(a):
    return np.ascontiguousarray(a).view("<u4")[..., 0].astype(np.int64)


def device_mma(entry, p, swap_a=False):
    """An MMA computed from the fragments the kernel would read, placed by the manifest's layouts."""
    ops = {o["name"]: o for o in entry["operands"]}
    thr = thread_ids(entry)
    T = len(thr)
    M, N, K = parse_shape(entry["shape_mnk"])
    recs = _recs(p)
    mats = {}
    for name, size in (("a", M * K), ("b", N * K), ("c", M * N)):
        t = nx.element_type(ops[name]["element_type"])
        idx = layout_table(ops[name]["layout_tv"], T)
        if swap_a and name == "a":  # the hardware's A layout differs in one place
            idx = idx.copy()
            idx[0, 0], idx[5, 1] = idx[5, 1], idx[0, 0]
        mat = np.zeros((p.grid, size), dtype=np.uint64)
        mat[:, idx] = nx.from_bytes(t, p.in_rec.get(recs, name)[:, thr, :])
        mats[name] = (t, mat)
    (ta, A), (tb, B), (tc, C) = mats["a"], mats["b"], mats["c"]
    td = nx.element_type(ops["d"]["element_type"])
    n = p.grid
    Am, Bm = A.reshape(n, K, M).transpose(0, 2, 1), B.reshape(n, K, N).transpose(0, 2, 1)
    Cm = nx.decode(tc, C).reshape(n, N, M).transpose(0, 2, 1)
    if ta.kind == "bits":
        x, y = Am[:, :, None, :], Bm[:, None, :, :]
        D = Cm + nx.popcount(x & y if ".and.popc" in entry["ptx_template"] else x ^ y).sum(axis=3)
    else:
        D = np.einsum("cmk,cnk->cmn", nx.decode(ta, Am), nx.decode(tb, Bm)) + Cm
    frag = D.transpose(0, 2, 1).reshape(n, M * N)[:, layout_table(ops["d"]["layout_tv"], T)]
    if td.kind == "float":
        np_t = {"f32": (np.float32, np.uint32), "f16": (np.float16, np.uint16), "f64": (np.float64, np.uint64)}[td.name]
        codes = frag.astype(np_t[0]).view(np_t[1]).astype(np.uint64)
    else:
        codes = (frag.astype(np.int64) % (1 << td.bits)).astype(np.uint64)
    out, orecs = _fresh_out(p)
    p.out_rec.get(orecs, "d")[:, thr, :] = nx.to_bytes(td, codes)
    return out


def device_ldmatrix(entry, p, swap=False):
    """ldmatrix as the PTX ISA defines it: matrix i's row r comes from the address of thread 8i + r; without
    .trans thread t gets row t/4, columns 2(t%4) and 2(t%4)+1; with .trans the transposed pair."""
    num, trans = int(re.search(r"\.x(\d)", entry["ptx_template"]).group(1)), ".trans" in entry["ptx_template"]
    src = [o for o in entry["operands"] if o["role"] == "SMEM_ADDRESS"][0]["name"]
    addr = _u32(p.in_rec.get(_recs(p), src + "@off")[0])
    mem = np.ascontiguousarray(_data(p)[0]).view("<u2")
    regs = np.zeros((32, num, 2), dtype=np.uint16)
    for t in range(32):
        for i in range(num):
            if trans:
                col = t // 4
                regs[t, i] = [mem[addr[8 * i + 2 * (t % 4) + j] // 2 + col] for j in (0, 1)]
            else:
                base = addr[8 * i + t // 4] // 2
                regs[t, i] = [mem[base + 2 * (t % 4) + j] for j in (0, 1)]
    if swap:
        regs[[3, 17]] = regs[[17, 3]]
    out, orecs = _fresh_out(p)
    dst = [o for o in entry["operands"] if o["role"] == "REGISTERS"][0]["name"]
    p.out_rec.get(orecs, dst)[0, :32, : 4 * num] = regs.reshape(32, -1).view(np.uint8)
    return out


def device_cp_async(entry, p, no_zero_fill=False):
    recs, data = _recs(p), _data(p)
    ops = entry["operands"]
    src = [o for o in ops if o["role"] == "GMEM_ADDRESS"][0]["name"]
    size_op = [o["name"] for o in ops if o["role"] == "SCALAR"]
    nbytes = p.out_rec.fields["got"].size
    out, orecs = _fresh_out(p)
    for c in range(p.grid):
        for t in range(p.block):
            so = int(np.ascontiguousarray(p.in_rec.get(recs, src + "@off")[c, t]).view("<u8")[0])
            sz = int(_u32(p.in_rec.get(recs, size_op[0])[c, t][None])[0]) if size_op else nbytes
            chunk = np.full(nbytes, 0xA5, np.uint8) if no_zero_fill else np.zeros(nbytes, np.uint8)
            chunk[:sz] = data[c, so:so + sz]
            p.out_rec.get(orecs, "got")[c, t] = chunk
    return out


def device_shuffle(entry, p):
    """shfl.sync with CUDA's width semantics (segments of 32 - c[12:8] lanes)."""
    mode = re.search(r"shfl\.sync\.(\w+)\.b32", entry["ptx_template"]).group(1)
    recs = _recs(p)
    a, b, c = [_u32(p.in_rec.get(recs, o["name"])) for o in entry["operands"] if o["direction"] != "OUT"][:3]
    res = np.zeros_like(a)
    for i in range(p.grid):
        for lane in range(32):
            w = 32 - ((int(c[i, lane]) >> 8) & 0x1F)
            bv, start = int(b[i, lane]) & 0x1F, lane & ~(w - 1)
            end = start + w - 1
            j = {"idx": start + (bv & (w - 1)), "up": lane - bv if lane - bv >= start else lane,
                 "down": lane + bv if lane + bv <= end else lane, "bfly": lane ^ bv if (lane ^ bv) <= end else lane}[mode]
            res[i, lane] = a[i, j]
    out, orecs = _fresh_out(p)
    name = [o["name"] for o in entry["operands"] if o["direction"] == "OUT"][0]
    p.out_rec.get(orecs, name)[:, :, :4] = np.ascontiguousarray(res.astype("<u4")).view(np.uint8).reshape(p.grid, 32, 4)
    return out


def device_barrier(entry, p, broken=False):
    recs = _recs(p)
    val, nb = _u32(p.in_rec.get(recs, "val")), _u32(p.in_rec.get(recs, "nb"))
    got = val.copy() if broken else val[:, nb[0]]
    if entry["kind"] == "ARRIVE":
        got[:, :32] = val[:, :32]
    out, orecs = _fresh_out(p)
    p.out_rec.get(orecs, "got")[:, :, :4] = np.ascontiguousarray(got.astype("<u4")).view(np.uint8).reshape(
        p.grid, p.block, 4)
    return out


DEVICES = {"mma": device_mma, "ldmatrix": device_ldmatrix, "cp_async": device_cp_async, "shuffle": device_shuffle,
           "barrier": device_barrier}
PROBES = {"mma": mma, "ldmatrix": ldmatrix, "cp_async": cp_async, "shuffle": shuffle, "barrier": barrier}


def probe_entries():
    """(backend, entry) of every instruction with a built-in probe: ampere's and the example plugin's."""
    out = [(src_backend(s), e) for s in [sources.file_source(EXAMPLE_MANIFEST)] for e, _ in s.entries()]
    try:
        amp = sources.loaded_sources(["ampere"])
    except Exception:  # noqa: BLE001
        amp = []
    for s in amp:
        out += [(src_backend(s), e) for e, _ in s.entries() if e.get("conformance") in PROBES]
    return out


def src_backend(src):
    from warpweave._dsl.registry.plugins import Backend
    b = Backend(src.name, "", src.path, "", src.manifest)
    b.targets = list(src.targets.values())
    return b


@pytest.fixture(scope="module")
def entries():
    return probe_entries()


def test_probes_pass_against_model_hardware(entries):
    from warpweave import _core

    seen = set()
    for backend, entry in entries:
        kind = entry["conformance"]
        p = PROBES[kind].prepare(backend, entry, seed=7)
        assert not isinstance(p, tuple), (entry["id"], p)
        status, reason = p.check(DEVICES[kind](entry, p))
        assert status == "pass", (entry["id"], reason)
        # the kernel itself compiles for the first target (what the GPU would run)
        target = {t.name: t for t in backend.targets}[entry["targets"][0]]
        _core.compile(p.mlir, target.as_dict())
        seen.add((backend.name, kind))
    assert ("example_b1", "mma") in seen


def test_probes_catch_wrong_layouts_and_semantics(entries):
    by_kind = {}
    for backend, entry in entries:
        by_kind.setdefault(entry["conformance"], []).append((backend, entry))
    for backend, entry in by_kind.get("mma", [])[:3] + [e for e in by_kind.get("mma", []) if "b1" in e[1]["id"]]:
        p = mma.prepare(backend, entry, seed=3)
        status, reason = p.check(device_mma(entry, p, swap_a=True))
        assert status == "fail" and "one-hot A" in reason, (entry["id"], reason)
    if "ldmatrix" in by_kind:
        backend, entry = by_kind["ldmatrix"][-1]
        p = ldmatrix.prepare(backend, entry, seed=3)
        status, reason = p.check(device_ldmatrix(entry, p, swap=True))
        assert status == "fail" and "thread 3" in reason, reason
    if "cp_async" in by_kind:
        backend, entry = by_kind["cp_async"][0]
        p = cp_async.prepare(backend, entry, seed=3)
        status, reason = p.check(device_cp_async(entry, p, no_zero_fill=True))
        assert status == "fail" and "poison" in reason, reason
    if "barrier" in by_kind:
        backend, entry = by_kind["barrier"][0]
        p = barrier.prepare(backend, entry, seed=3)
        assert p.check(device_barrier(entry, p, broken=True))[0] == "fail"


def test_mma_reference_bit_ops():
    # one word each: 0b1011 & 0b0110 -> popcount 1; ^ -> popcount 3
    a = np.array([[0b1011]], dtype=np.uint64)
    b = np.array([[0b0110]], dtype=np.uint64)
    c = np.array([[5]])
    s32 = nx.TYPES["s32"]
    assert mma.reference(a, b, c, 1, 1, 1, nx.TYPES["b32"], s32, "and_popc")[0][0, 0] == 6
    assert mma.reference(a, b, c, 1, 1, 1, nx.TYPES["b32"], s32, "xor_popc")[0][0, 0] == 8


def test_execute_tier_skips_cleanly_without_gpu_or_torch():
    if has_gpu() and has_torch_cuda():
        pytest.skip("a GPU is here: test_execute_tier_on_gpu runs the tier")
    r = wc.run(("execute",), manifests=[EXAMPLE_MANIFEST])
    assert r.records and all(x.status == "skip" and x.reason for x in r.records)


def test_execute_plan_names_the_probes_a_primitive_runs_in():
    # Planning needs no GPU: which entries run where, and why the others do not, for an sm_90 device.
    from warpweave_conformance import execute_tier

    srcs = [s for s in sources.loaded_sources() if s.name in ("ampere", "hopper")]
    if len(srcs) < 2:
        pytest.skip("the ampere and hopper plugins are not built")
    jobs, records = execute_tier.plan(srcs, 90)
    reason = {r.atom: r.reason for r in records}
    assert "runs inside the hopper_tma probes" in reason["hopper.mbarrier.init"]
    assert "runs inside the hopper_wgmma probes" in reason["hopper.wgmma.commit_group"]
    assert "hopper_tma" in reason["hopper.fence.proxy.async.shared_cta"]
    assert "hopper_wgmma" in reason["hopper.fence.proxy.async.shared_cta"]
    assert "runs inside the cp_async probes" in reason["ampere.cp_async.commit_group"]
    assert reason["hopper.cluster.clusterid"] == "no probe of its own (the manifest names no conformance kind)"
    planned = {entry["id"] for _, entry, _, _ in jobs}
    assert {"hopper.tma.load.multicast.5d", "hopper.wgmma.m64n256k16.f32.bf16.bf16.ss",
            "ampere.mma.m16n8k16.f32.bf16.bf16.f32"} <= planned
    assert not planned & set(reason)


@pytest.mark.skipif(not (has_gpu() and has_torch_cuda()), reason="needs a CUDA GPU and PyTorch with CUDA")
def test_execute_tier_on_gpu():
    """The execute tier on the machine's GPU: the in-tree backends (their probes' kinds) and the example manifest."""
    names = [s.name for s in sources.loaded_sources() if s.name in ("ampere", "hopper", "blackwell", "blackwell_geforce")]
    result = wc.run(("execute",), backends=names)
    result.records += wc.run(("execute",), manifests=[EXAMPLE_MANIFEST]).records
    fails = [r for r in result.records if r.status == wc.FAIL]
    print("\n".join(f"{r.backend} {r.atom} [{r.target}] {r.status}: {r.reason}" for r in result.records
                    if r.status != wc.SKIP or "no execute probe" not in r.reason))
    assert not fails, "\n".join(f"{r.backend} {r.atom}: {r.reason}" for r in fails[:40])
    assert any(r.status == wc.PASS for r in result.records)
