"""cute.testing.assert_ and the EnableAssertions option: a condition known when compiling is checked then; one known
at run time becomes a check in the kernel (print where and why, then trap) only where assertions are enabled."""
import pytest

import warpweave as cutlass
import warpweave.cute as cute

from dsl_helpers import requires_gpu, target


def _host(body):
    @cute.kernel
    def k(x: cutlass.Int32):
        body(x)

    @cute.jit
    def h(x: cutlass.Int32):
        k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

    return h


def _ptx(body, options=None):
    with target("sm_90a"):
        return cute.compile(_host(body), 1, options=options).ptx


def _checked(x):
    cute.testing.assert_(x < 5, "x is small, 100% {}")


@pytest.mark.parametrize("options", [None, "", cute.EnableAssertions(False)])
def test_a_run_time_assertion_is_left_out_unless_enabled(options):
    ptx = _ptx(_checked, options)
    assert "trap;" not in ptx and "vprintf" not in ptx


@pytest.mark.parametrize("options", ["--enable-assertions", cute.EnableAssertions, cute.EnableAssertions(True)])
def test_an_enabled_run_time_assertion_prints_where_and_why_then_traps(options):
    ptx = _ptx(_checked, options)
    assert ptx.count("trap;") == 1 and "vprintf" in ptx
    # the message, with its % and {} as written, and the user's file and line, in the format string's bytes
    line = _checked.__code__.co_firstlineno + 1
    text = f"Location: test_device_assertions.py:{line}\nAssertion Error: x is small, 100% {{ }}"
    data = ", ".join(str(c) for c in text.replace("%", "%%").encode())
    assert data in ptx


def test_enabling_assertions_keys_the_compilation():
    # the option is part of the compiled function's cache key, so a cached compilation of either does not serve the
    # other
    from warpweave._dsl.base.compile_options import CompileOptions
    from warpweave._dsl.call.function_cache import stable

    on, off = CompileOptions.parse("--enable-assertions"), CompileOptions.parse("")
    assert on.assertions and not off.assertions and stable(on) != stable(off)
    assert CompileOptions.parse([cute.EnableAssertions]).assertions


def test_a_condition_known_when_compiling_is_checked_then_at_the_users_line():
    def body(x):
        cute.testing.assert_(cutlass.Int32(3) > 4, "three is not above four")  # the user's line

    with pytest.raises(AssertionError, match="three is not above four") as info:
        _ptx(body)
    assert f"test_device_assertions.py:{body.__code__.co_firstlineno + 1}" in str(info.value)
    assert "trap;" not in _ptx(lambda x: cute.testing.assert_(True))


def test_a_condition_that_is_no_boolean_is_refused():
    with pytest.raises(TypeError, match="the condition is a Boolean, got str"):
        _ptx(lambda x: cute.testing.assert_("yes"))


_FAILING_ASSERTION = """
import torch
import warpweave as cutlass
import warpweave.cute as cute

@cute.kernel
def k(x: cutlass.Int32):
    cute.testing.assert_(x < 5, "x is small")

@cute.jit
def h(x: cutlass.Int32):
    k(x).launch(grid=(1, 1, 1), block=(32, 1, 1))

f = cute.compile(h, 1, options="--enable-assertions")
f(1)
torch.cuda.synchronize()
print("held")
try:
    f(7)
    torch.cuda.synchronize()
    print("passed")
except Exception as e:
    print("failed:", type(e).__name__)
"""


@requires_gpu
def test_a_failing_enabled_assertion_fails_the_launch(tmp_path):
    # In a process of its own: the trap leaves the process's CUDA context unusable, so the GPU tests after it in
    # this process would fail too.
    import subprocess
    import sys
    script = tmp_path / "failing_assertion.py"
    script.write_text(_FAILING_ASSERTION)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    lines = r.stdout.split()
    assert "held" in lines and "failed:" in lines and "passed" not in lines, (r.stdout, r.stderr[-2000:])
