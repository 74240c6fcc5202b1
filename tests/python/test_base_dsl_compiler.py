"""cutlass.base_dsl.compiler: cute.compile's option types under CuTe DSL's module name (the same classes as cute's),
their `value`, CompileOptions(options) passed as options=, and KeepSASS / DumpDir writing what they say."""
import os

import pytest

import warpweave as cutlass
import warpweave.cute as cute
from warpweave.base_dsl import compiler
from warpweave.base_dsl.compiler import (BooleanCompileOption, CompileOptions, DumpDir, GPUArch, KeepPTX, KeepSASS,
                                         OptLevel, StringCompileOption)
from warpweave._dsl.base.compile_options import merge, CompileOptions as Settings

from dsl_helpers import line_in


def test_same_classes_as_cute():
    for name in ("KeepPTX", "KeepCUBIN", "KeepSASS", "OptLevel", "GenerateLineInfo", "PtxasOptions", "GPUArch",
                 "EnableTVMFFI", "EnableAssertions"):
        assert getattr(compiler, name) is getattr(cute, name)
    assert isinstance(KeepPTX(), BooleanCompileOption) and isinstance(GPUArch("sm_90a"), StringCompileOption)


def test_values_and_settings():
    assert OptLevel(2).value == 2 and OptLevel(val=1).value == 1 and KeepPTX().value is True
    assert KeepPTX(False).value is False and GPUArch("sm_90a").value == "sm_90a"
    s = merge(Settings(), [KeepSASS, DumpDir("d"), OptLevel(1)])
    assert s.keep == {"sass"} and s.dump_dir == "d" and s.opt_level == 1
    s = merge(Settings(), "--keep-sass --dump-dir out --opt-level 0")
    assert s.keep == {"sass"} and s.dump_dir == "out" and s.opt_level == 0


def test_compile_options_gathers_options():
    o = CompileOptions((KeepPTX(), OptLevel(2), GPUArch("sm_80")))
    assert o.opt_level == 2 and o.gpu_arch == "sm_80" and not o.generate_line_info
    assert merge(Settings(), o) == merge(Settings(), [KeepPTX(), OptLevel(2), GPUArch("sm_80")])
    assert "--opt-level 2" in o.to_str() and "--keep-ptx" in o.to_str()


def test_bad_option_refused_at_the_users_line():
    with pytest.raises(ValueError, match=r"OptLevel: the level is an integer in \[0, 3\]") as e:
        OptLevel(7)  # refused here
    assert e.value.location == (__file__, line_in(__file__, "OptLevel(7)  # refused here"))
    with pytest.raises(TypeError, match="not a compile option"):
        CompileOptions(("--keep-ptx", 5))


@cute.kernel
def _k(x: cutlass.Int32):
    cute.printf("{}", x)


@cute.jit
def _launch(x: cutlass.Int32):
    _k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))


def test_keep_sass_into_dump_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPWEAVE_ARCH", "sm_80")
    monkeypatch.setenv("WARPWEAVE_DISABLE_CACHE", "1")
    monkeypatch.delenv("WARPWEAVE_KEEP", raising=False)
    cute.compile(_launch, cutlass.Int32(1), options=CompileOptions((KeepSASS(), KeepPTX(), DumpDir(str(tmp_path)))))
    names = os.listdir(tmp_path)
    assert any(n.endswith(".sass") for n in names) and any(n.endswith(".ptx") for n in names), names
    assert "WARPWEAVE_DUMP_DIR" not in os.environ and "WARPWEAVE_KEEP" not in os.environ
