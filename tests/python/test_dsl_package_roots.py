"""cutlass._mlir_helpers.op's view of which files are the DSL's own: `_DSL_PACKAGE_ROOT` (the package's folder) and
`_DSL_PACKAGE_ROOTS` (every folder of DSL code), worked out at the first `_is_framework_frame` question and again
after a program resets them, as CuTe DSL libraries do (QuACK's cache-key test)."""
import os

import warpweave
import warpweave._mlir_helpers.op as op
from warpweave._dsl.registry.backend_python import ensure_loaded

THIS = os.path.abspath(__file__)
PACKAGE = os.path.dirname(os.path.abspath(warpweave.__file__))


def _fresh():
    op._DSL_PACKAGE_ROOT, op._DSL_PACKAGE_ROOTS = "", None
    op._is_framework_frame.cache_clear()


def test_roots_are_made_at_the_first_question_and_again_after_a_reset():
    saved = (op._DSL_PACKAGE_ROOT, op._DSL_PACKAGE_ROOTS)
    try:
        _fresh()
        assert op._DSL_PACKAGE_ROOTS is None
        assert op._is_framework_frame(os.path.join(PACKAGE, "cute", "__init__.py"))
        assert op._DSL_PACKAGE_ROOT == PACKAGE and op._DSL_PACKAGE_ROOTS[0] == PACKAGE
        _fresh()
        assert not op._is_framework_frame(THIS)
        assert op._DSL_PACKAGE_ROOTS is not None
    finally:
        op._DSL_PACKAGE_ROOT, op._DSL_PACKAGE_ROOTS = saved
        op._is_framework_frame.cache_clear()


def test_only_dsl_code_is_framework_code():
    mounted = list(ensure_loaded().mounted.values())
    assert mounted, "no backend's Python package is mounted"
    _fresh()
    assert op._is_framework_frame(warpweave.__file__)
    assert not op._is_framework_frame(THIS)
    assert not op._is_framework_frame(PACKAGE + "_lookalike/x.py")  # a sibling folder sharing the prefix
    assert not op._is_framework_frame("")
    for module in mounted:  # each backend's Python package is the DSL's code too
        assert op._is_framework_frame(module.__file__), module.__name__
