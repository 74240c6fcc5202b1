"""benchmarks/python/cutedsl_examples.py's SASS check (what the Hopper rows of the CuTe DSL example table require)
on kept SASS written here: every required opcode (a prefix up to a dot), and no local memory."""
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
