"""benchmarks/python/cutedsl_examples.py's SASS check (what the Hopper rows of the CuTe DSL example table require)
on kept SASS written here: every required opcode (a prefix up to a dot), and no local memory."""
import argparse
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "python"))
import cutedsl_examples as table  # noqa: E402

SASS = """
        /*0100*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0110*/                   UTMALDG.3D.MULTICAST [UR8], [UR10], UR12, desc[UR14] ;
        /*0120*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x8], R3 ;
"""


def write(tmp_path, text):
    (tmp_path / "kernel.sass").write_text(text)
    return str(tmp_path)


def test_required_opcodes_match_by_prefix(tmp_path):
    d = write(tmp_path, SASS)
    assert table.sass_check(d, ("HGMMA", "UTMALDG", "UTMALDG.3D.MULTICAST", "SYNCS"))[0]
    ok, why = table.sass_check(d, ("HGMMA", "USETMAXREG", "UTMALDG.3D.MULTI"))
    assert not ok and "USETMAXREG" in why and "UTMALDG.3D.MULTI" in why   # a prefix ends at a dot


def test_local_memory_fails(tmp_path):
    d = write(tmp_path, SASS + "        /*0130*/                   STL.128 [R1+0x10], R4 ;\n")
    ok, why = table.sass_check(d, ("HGMMA",))
    assert not ok and "local memory: STL.128" in why


def test_no_sass_fails(tmp_path):
    assert not table.sass_check(write(tmp_path, "// no SASS: no nvdisasm or cuobjdump found"), ("HGMMA",))[0]
    assert not table.sass_check(str(tmp_path / "absent"), ("HGMMA",))[0]


@pytest.mark.parametrize("row", [p for p in table.PROGRAMS if "hopper" in p[1]], ids=lambda p: p[0])
def test_hopper_rows_are_for_sm_90a_with_sass_requirements(row):
    name, path, args, targets, sass = row
    assert targets == ("sm_90a",) and sass and os.path.basename(path).endswith(".py") and "/hopper/kernel/" in path


@pytest.mark.parametrize("row", [p for p in table.PROGRAMS if "/blackwell/" in p[1]], ids=lambda p: p[0])
def test_blackwell_rows_are_for_sm_100a_and_require_tensor_core_tma_and_tensor_memory_sass(row):
    name, path, args, targets, sass = row
    assert targets == ("sm_100a",) and os.path.basename(path).endswith(".py")
    assert any(s.startswith("UTC") and s.endswith("MMA") for s in sass) and "UTMALDG" in sass and "LDTM" in sass


def test_real_runs_take_their_targets_and_the_folders_asked_for(tmp_path):
    base = tmp_path / table.ALL_ROOT
    progs = {"cute/ampere/a.py": "", "cute/hopper/h.py": "", "cute/blackwell/b.py": "",
             "experimental/primitives/p.py": "", "experimental/task_scheduling/t.py": ""}
    for rel, text in progs.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text + "\nif __name__ == '__main__':\n    pass\n")
    found = table.all_programs(str(tmp_path))
    assert found == sorted(progs)
    assert table.real_programs(str(tmp_path), found, "sm_80,sm_90a") == ["cute/ampere/a.py", "cute/hopper/h.py"]
    assert table.real_programs(str(tmp_path), found, "sm_90a", "experimental/primitives") == \
        ["cute/hopper/h.py", "experimental/primitives/p.py"]


def test_programs_run_with_their_pythons_virtual_environment_activated(tmp_path):
    """A program that calls a tool of its environment (the FFI tutorial's CMake looking for nanobind through
    Python) finds it as in an activated environment; an interpreter outside one leaves the environment as it is."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    env = table.program_env(str(venv / "bin" / "python"))
    assert env["VIRTUAL_ENV"] == str(venv)
    assert env["PATH"].split(os.pathsep)[0] == str(venv / "bin")
    plain = table.program_env(str(tmp_path / "python"))
    assert plain.get("VIRTUAL_ENV") == os.environ.get("VIRTUAL_ENV") and plain["PATH"] == os.environ["PATH"]


def test_programs_with_arguments_get_them_compiled_and_run_for_real(tmp_path, monkeypatch):
    """A program of ALL_ARGS is given its arguments by --all, compile-only and for real under both
    implementations; the others none."""
    rel = next(iter(table.ALL_ARGS))
    base = tmp_path / table.ALL_ROOT
    for p in (rel, "cute/blackwell/other.py"):
        (base / p).parent.mkdir(parents=True, exist_ok=True)
        (base / p).write_text("if __name__ == '__main__':\n    pass\n")
    seen = {}

    def run_one(python, path, args, arch, timeout):
        seen[("compile", os.path.relpath(path, base))] = list(args)
        return True, "", 0.0

    def run_real(python, path, timeout, pythonpath=None, args=()):
        seen[("real", pythonpath, os.path.relpath(path, base))] = list(args)
        return True, "", 0.0

    monkeypatch.setattr(table, "run_one", run_one)
    monkeypatch.setattr(table, "run_real", run_real)
    ns = argparse.Namespace(only=None, under="", real="", real_also="", jobs=1,
                            python="py", timeout=1, reference_pythonpath="ref")
    table.run_all(str(tmp_path), ns)
    ns.real = "sm_100a"
    table.run_all(str(tmp_path), ns)
    for key in (("compile", rel), ("real", None, rel), ("real", "ref", rel)):
        assert seen[key] == table.ALL_ARGS[rel]
    assert seen[("compile", "cute/blackwell/other.py")] == [] == seen[("real", "ref", "cute/blackwell/other.py")]


_CUTLASS = os.environ.get("WARPWEAVE_CUTLASS_DIR", "")


@pytest.mark.skipif(not os.path.isdir(os.path.join(_CUTLASS, table.ALL_ROOT)),
                    reason="WARPWEAVE_CUTLASS_DIR names no checkout of NVIDIA/cutlass (CuTe DSL's programs are "
                           "fetched, never committed)")
def test_the_arguments_given_are_those_the_programs_own_commands_pass():
    for rel, args in table.ALL_ARGS.items():
        text = open(os.path.join(_CUTLASS, table.ALL_ROOT, rel)).read()
        commands = text.split('"""')[1].split("python3 -m")[1:]   # those of its docstring
        assert commands and all(a in c for c in commands for a in args), rel
