"""Atom families (manifest.proto, message Family) as the DSL sees them: the set of atoms did not shrink when the
generated instance lists became families, selection expands instances by Python parameters and by id, and a
wrong parameter raises one sentence quoting the broken rule at the user's line."""
from __future__ import annotations

import hashlib
import json
import os

import pytest

import warpweave as cutlass
from warpweave import _core
from warpweave._dsl.base.errors import DSLValueError
from warpweave._dsl.registry.manifest_view import instruction_dict
from warpweave._dsl.registry.plugins import registry

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "manifest_entries_before_families.json")

# The fields an entry had before families existed: the digest covers exactly these, so that a field added to the
# schema later (printed at its default) does not change it.
_FIELDS = ["id", "kind", "targets", "description", "python_name", "python_params", "shape_mnk", "thr_id", "operands",
           "attributes", "ptx_template", "constraints", "has_side_effects", "lowering_hook", "sass_opcodes",
           "host_hook", "conformance", "layout_unit_bits", "python_signature", "python_defaults", "cubin_tool"]
_OPERAND = ["name", "role", "direction", "element_type", "values", "registers", "register_type", "layout_tv", "count"]
_ATTRIBUTE = ["name", "type", "allowed", "default_value"]


# Targets a backend gained after families existed (Hopper's portable sm_90, Blackwell's sm_103a and sm_110a): a new target
# is a capability added, not a field of an old entry changed, so the digest reads each entry's original targets.
_LATER_TARGETS = {"sm_90", "sm_103a", "sm_110a"}
# Fields changed on purpose since: (field, what it was, what it is now) of the part that changed; the digest reads
# what it was, once the field is checked to hold what it is now. Hopper's TMA tile load names its destination as
# this CTA's shared memory (the sm_120a code of a shared::cluster one checks the address and calls out).
_CHANGED = {f"hopper.tma.load.{r}d": ("ptx_template", ".shared::cluster.global.", ".shared::cta.global.")
            for r in range(1, 6)}
# Hopper's TMA reduction store names the element types each op takes, which make_tiled_tma_atom now checks.
_CHANGED.update({f"hopper.tma.reduce.{r}d": (
    "description", "xor where the tensor map's type allows). ",
    "xor), per the tensor map's type: add f16, bf16, f32, s32, u32, u64; min and max f16, bf16, s32, u32, s64, u64; "
    "inc and dec u32; and, or, xor s32, u32, s64, u64. ") for r in range(1, 6)})
# Hopper's and Blackwell's mbarrier wait loops suspend the warp between tries (a suspend-time hint) instead of
# spinning, and their back-edge is a uniform branch, which asks the lanes of a warp to wait on one barrier and phase
# (the description says so).
for _wait in ("hopper.mbarrier.wait.parity", "blackwell.mbarrier.wait.parity"):
    _CHANGED[_wait] = [("ptx_template", "$1; @!ww_done bra ww_wait", "$1, 10000000; @!ww_done bra.uni ww_wait"),
                       ("description", "has completed", "has completed; the lanes of a warp that run it together "
                        "wait on the same barrier and phase (the loop exits for the whole warp at once); lanes with "
                        "barriers of their own loop on mbarrier_try_wait")]
# Blackwell's instruction descriptor says the block-scaled kinds added since (MXFP4, MXFP8) beside NVFP4's.
_CHANGED["blackwell.tcgen05.make_instr_desc"] = (
    "description", "(kind::mxf4nvf4; a_type e2m1, code 1)",
    "(kind::mxf4nvf4 and mxf4: e2m1, code 1; kind::mxf8f6f4: e4m3 0, e5m2 1, either major)")


def _project(e):
    out = {k: e.get(k) for k in _FIELDS}
    if out["targets"]:
        out["targets"] = [t for t in out["targets"] if t not in _LATER_TARGETS]
    changes = _CHANGED.get(e["id"], [])
    for field, was, now in [changes] if isinstance(changes, tuple) else changes:
        assert now in e[field] and (was not in e[field] or was in now), (e["id"], e[field])
        out[field] = out[field].replace(now, was)
    out["operands"] = [{k: o.get(k) for k in _OPERAND} for o in e.get("operands", [])]
    out["attributes"] = [{k: a.get(k) for k in _ATTRIBUTE} for a in e.get("attributes", [])]
    return out


def _digest(entries):
    h = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e["id"]):
        h.update(json.dumps(_project(e), sort_keys=True).encode() + b"\n")
    return h.hexdigest()


def _backend(name):
    registry.load()
    if name not in registry.backends:
        pytest.fail(f"the {name} plugin is not loaded (refusals: {registry.refusals()})")
    return registry.backends[name]


@pytest.mark.parametrize("name", ["ampere", "hopper", "blackwell"])
def test_every_entry_of_before_families_expands_with_the_same_fields(name):
    before = json.load(open(_DATA))[name]
    b = _backend(name)
    now = {e["id"]: e for e in b.atoms + b.primitives}
    for e in b.all_instances():
        assert e["id"] not in now, f"{e['id']} is both a plain entry and a family instance"
        now[e["id"]] = e
    missing = sorted(set(before["ids"]) - set(now))
    assert not missing, f"{len(missing)} entries are gone, e.g. {missing[:5]}"
    assert _digest(now[i] for i in before["ids"]) == before["digest"], \
        "an entry that existed before families changed one of its fields"


def test_instances_expand_on_request_by_id_and_by_python_parameters():
    b = _backend("hopper")
    fams = {f["id"]: f for f in b.families}
    assert {"hopper.wgmma.f16bf16", "hopper.wgmma.tf32", "hopper.wgmma.f8", "hopper.wgmma.i8"} <= set(fams)
    for fid in fams:
        sample = b.instances(fid, seed=3, sample=6)
        assert sample, fid
        for e in sample:
            plugin, family, data = _core.expand_atom_id(e["id"])
            assert (plugin, family) == ("hopper", fid)
            assert instruction_dict(data) == e
            found, problems = _core.expand_atom(e["python_name"], e["python_params"])
            assert [instruction_dict(x[2]) for x in found] == [e] and problems == []


def test_corners_and_seeded_samples_are_deterministic():
    b = _backend("hopper")
    one = [e["id"] for e in b.instances("hopper.wgmma.f8", seed=11, sample=20)]
    assert one == [e["id"] for e in b.instances("hopper.wgmma.f8", seed=11, sample=20)]
    assert one != [e["id"] for e in b.instances("hopper.wgmma.f8", seed=12, sample=20)]
    assert len(set(one)) == len(one)
    # The corners come first: every parameter at an end of its domain, e.g. N = 8 and N = 256.
    ns = {int(i.split("m64n")[1].split("k")[0]) for i in one[:8]}
    assert ns <= {8, 256}


def _select(cls_name, *args):
    from warpweave.cute.nvgpu import warpgroup

    # The A source as the Hopper backend's Python spells it (warpgroup.OperandSource).
    args = tuple(warpgroup.OperandSource[a] if a in ("SMEM", "RMEM") else a for a in args)
    return getattr(warpgroup, cls_name)(*args).entry()


@pytest.mark.parametrize("cls,args,rule", [
    ("MmaF16BF16Op", (cutlass.Float16, cutlass.Float32, (64, 12, 16), "SMEM"),
     'warpgroup.MmaF16BF16Op: shape_mnk (64,12,16) breaks "N is a multiple of 8 from 8 to 256"'),
    ("MmaF16BF16Op", (cutlass.BFloat16, cutlass.Float16, (64, 64, 16), "SMEM"),
     'ab_dtype BFloat16, acc_dtype Float16 breaks "bf16 inputs accumulate in f32"'),
    ("MmaF16BF16Op", (cutlass.Float16, cutlass.Float32, (128, 64, 16), "RMEM"),
     'shape_mnk (128,64,16) breaks "M is 64'),
    ("MmaTF32Op", (cutlass.TFloat32, cutlass.Float32, (64, 64, 16), "SMEM"),
     'shape_mnk (64,64,16) breaks "K is 8: 256 bits of the 32-bit input type"'),
    ("MmaI8Op", (cutlass.Int8, cutlass.Uint8, cutlass.Int32, (64, 40, 32), "SMEM"),
     'breaks "N is 8, 16, 24 or a multiple of 16 from 32 to 256"'),
])
def test_a_wrong_parameter_quotes_the_rule_in_one_sentence_at_the_users_line(cls, args, rule):
    _backend("hopper")
    with pytest.raises(DSLValueError) as info:
        _select(cls, *args)  # the line the error names
    msg = str(info.value)
    assert rule in msg
    assert len(msg) < 300, msg  # before families: a 15,308-character list of every alternative
    assert "test_atom_families.py" in msg


def test_good_parameters_select_the_instance_and_mixed_types_keep_their_names():
    _backend("hopper")
    assert _select("MmaF16BF16Op", cutlass.Float16, cutlass.Float32, (64, 256, 16), "RMEM")[1]["id"] == \
        "hopper.wgmma.m64n256k16.f32.f16.f16.rs"
    assert _select("MmaF8Op", cutlass.Float8E4M3FN, cutlass.Float8E5M2, cutlass.Float16, (64, 8, 32), "SMEM")[1]["id"] \
        == "hopper.wgmma.m64n8k32.f16.e4m3.e5m2.ss"
    from warpweave._dsl.atoms.atoms import select

    # Same-type fp8 atoms are selectable by ab_dtype alone, as before families.
    e = select("warpgroup.MmaF8Op", {"ab_dtype": "Float8E5M2", "acc_dtype": "Float32", "shape_mnk": "(64,128,32)",
                                     "a_src": "SMEM"})[1]
    assert e["id"] == "hopper.wgmma.m64n128k32.f32.e5m2.e5m2.ss"


def test_the_text_manifest_is_a_fraction_of_the_instances_it_stands_for():
    here = os.path.dirname(os.path.abspath(__file__))
    # A bound, not a target: each family adds tens of lines where its instances would add thousands (the mixed
    # mxf8f6f4 family took Blackwell from 2977 to 3032 lines; a third target, sm_110a, the bulk multicast copies and
    # the packed-f32x2 rounding forms to 3312); a manifest written instance by instance is far above.
    for name, most in (("hopper", 3000), ("blackwell", 3500)):
        path = os.path.join(here, "..", "..", "backends", name, f"{name}.textproto")
        with open(path) as f:
            lines = f.read().count("\n")
        assert lines < most, f"{name}.textproto has {lines} lines"


def test_blackwell_families_quote_their_rules_and_expand_ids_that_split_two_ways():
    _backend("blackwell")
    from warpweave.cute.nvgpu import tcgen05

    op = tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (64, 128, 16), 2, "SMEM")
    with pytest.raises(DSLValueError, match='cta_group 1 takes M 64 or 128, cta_group 2 M 128 or 256'):
        op.entry()
    op = tcgen05.MmaI8Op(cutlass.Int8, (128, 48, 32), 2, "SMEM")
    with pytest.raises(DSLValueError, match='with cta_group 2, kind::i8 takes N a multiple of 32'):
        op.entry()
    assert tcgen05.MmaI8Op(cutlass.Int8, (128, 64, 32), 2, "TMEM").entry()[1]["id"] == \
        "blackwell.tcgen05.mma.cta2.i8.m128n64k32.s8.s32.ts"
    # "load{cta == 2 ? '.cta2' : ''}.{rank}d" reads "load.cta2.3d" as cta 2, rank 3 (not as rank "cta2.3").
    for ident in ("blackwell.tma.load.cta2.3d", "blackwell.tma.load.3d", "blackwell.tma.load.multicast.cta2.5d",
                  "blackwell.tcgen05.ld.16x256b.x32", "blackwell.tcgen05.st.32x32b.x128"):
        found = registry.instruction(ident)
        assert found is not None and found[1]["id"] == ident
    assert registry.instruction("blackwell.tcgen05.ld.16x256b.x64") is None  # .16x256b goes up to x32


def test_the_typed_view_reads_what_the_core_validated():
    """Python's manifests come from the typed view (protobuf binary parsed with classes made from manifest.proto);
    its dict form is protobuf's JSON mapping, the same as the core's JSON writer and as json_format's."""
    from warpweave._dsl.registry import manifest_view

    for name in ("ampere", "hopper", "blackwell"):
        b = _backend(name)
        assert b.typed is not None and b.typed.name == name
        assert manifest_view.as_dict(b.typed) == manifest_view.as_dict_reference(b.typed) == b.manifest
        text = _core.plugin_manifest_text(name)
        parsed, problems = _core.manifest_to_json(text)
        assert problems == [] and json.loads(parsed) == b.manifest
        for e in b.instances(b.families[0]["id"], seed=5, sample=3) if b.families else []:
            typed = manifest_view.parse_instruction(_core.expand_atom_id(e["id"])[2])
            assert manifest_view.as_dict_reference(typed) == e
        # One element type table, declared by the manifests: every operand's type is in it, with its width.
        from warpweave._dsl.registry.element_types import ELEMENT_TYPES

        declared = {e.name: e.bits for e in b.typed.element_types}
        for ins in b.atoms + b.primitives + b.all_instances():
            for o in ins.get("operands", []):
                if o.get("element_type"):
                    assert o["element_type"] in declared, (ins["id"], o["element_type"])
                    assert ELEMENT_TYPES[o["element_type"]][1] == declared[o["element_type"]]
    with pytest.raises(KeyError, match="declared by no manifest"):
        ELEMENT_TYPES["q7"]


def test_conformance_takes_every_family_s_corners_and_a_seeded_sample(monkeypatch):
    from warpweave_conformance import sources

    b = _backend("blackwell")
    monkeypatch.setattr(sources, "FAMILY_SAMPLE", 4)
    monkeypatch.setattr(sources, "FAMILY_SEED", 9)
    src = sources.loaded_sources(["blackwell"])[0]
    ids = [e["id"] for e, _ in src.entries()]
    expected = [e["id"] for e in b.atoms + b.primitives]
    for f in b.families:
        corners_and_sample = [e["id"] for e in b.instances(f["id"], seed=9, sample=4)]
        assert len(corners_and_sample) >= 5, f["id"]  # at least one corner, then four drawn
        expected += corners_and_sample
    assert ids == expected
    # The default covers every instance of the in-tree families: as many records as the lists they replaced.
    monkeypatch.setattr(sources, "FAMILY_SAMPLE", 2048)
    full = sources.loaded_sources(["blackwell"])[0]
    assert len(list(full.entries())) == len(b.atoms) + len(b.primitives) + len(b.all_instances())
