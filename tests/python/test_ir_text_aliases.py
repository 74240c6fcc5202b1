"""The IR builder's text names each distinct location and each long type once, in aliases, and its ops refer to
them (a GEMM's text is a third the size, and MLIR parses and uniques each location and type once). Properties: the
aliased text is the same module as the text with every alias written out (same PTX, line info included: the lines
of the ops the text gives no location of their own stay where they were); short types stay written out; the
builder still answers each value's full type."""
import re

from warpweave import _core
from warpweave._dsl.registry.target import target_named

STRUCT = "!llvm.struct<(" + ", ".join(["f32"] * 24) + ")>"


def _module():
    b = _core.IRBuilder()
    (p, n) = b.begin_function("aliases", ["!llvm.ptr<1>", "i32"], "nvvm.kernel")
    b.set_location("/user/prog.py", 10, 1)
    tid = b.op1("nvvm.read.ptx.sreg.tid.x", [], "i32")
    b.set_location("/user/prog.py", 11, 1)
    s = b.inline_asm("mov.b32 $0, $24;", "=f," * 24 + "r", [tid], [STRUCT])[0]
    b.set_location("/user/prog.py", 10, 1)   # a location again: the same alias
    x = b.op1("llvm.extractvalue", [s], "f32", "position = array<i64: 3>")
    for k in range(2):
        b.set_location("/user/other.py", 20 + k, 1)
        y = b.op1("llvm.extractvalue", [s], "f32", f"position = array<i64: {k}>")
        x = b.op1("arith.addf", [x, y], "f32")
    q = b.op1("llvm.getelementptr", [p, n], "!llvm.ptr<1>",
              "elem_type = f32, rawConstantIndices = array<i32: -2147483648>")
    b.op0("llvm.store", [x, q], "alignment = 4 : i64")
    b.end_function()
    return b, s


def _written_out(text):
    locs = dict(re.findall(r"^(#loc\d+) = (loc\(.*\))$", text, re.M))
    text = re.sub(r"^#loc\d+ = loc\(.*\)\n", "", text, flags=re.M)
    head, body = text.split("module ", 1)
    types = dict(re.findall(r"(!ww_t\d+) = (.*?) (?=!ww_t\d+ = |$)", head))
    body = re.sub(r"loc\((#loc\d+)\)", lambda m: locs[m.group(1)], "module " + body)
    return re.sub(r"!ww_t\d+\b", lambda m: types[m.group(0)], body)


def test_locations_and_long_types_are_named_once():
    b, s = _module()
    text = str(b)
    assert text.count('loc("/user/prog.py":10:1)') == 1 and text.count('loc("/user/other.py":21:1)') == 1
    assert len(re.findall(r"^#loc\d+ = loc\(", text, re.M)) == 4          # four distinct locations
    assert text.count(STRUCT) == 1 and text.count("!ww_t0") == 5         # defined once, used by 4 ops
    ops = [line for line in text.splitlines() if '= "' in line or line.strip().startswith('"')]
    assert ops and all(re.search(r"loc\(#loc\d+\)$", line) for line in ops)
    assert "(f32, f32) -> (f32)" in text                                  # short types written out
    assert b.type_of(s) == STRUCT


def test_aliased_text_is_the_module_written_out():
    text = str(_module()[0])
    target = target_named("sm_80").as_dict()
    ptx = [_core.compile(t, target, line_info=True, want_cubin=False)["ptx"] for t in (text, _written_out(text))]
    assert ptx[0] == ptx[1]
    assert ".loc\t2 11 1" in ptx[0]                                    # the user's locations reach the PTX
