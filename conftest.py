import os
import random
import sys

import pytest

# The tests of tests/python and of each backend (backends/<arch>/tests) share the helpers of tests/python.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests", "python"))


def pytest_configure(config):
    config.addinivalue_line("markers", "stand_in_driver: runs a program against the stand-in CUDA driver "
                                       "(tests/python/data/mock_libcuda.c) in a child process")
    config.addinivalue_line("markers", "timing: asserts on measured kernel times")


@pytest.fixture
def rng():
    """A seeded random generator; WARPWEAVE_TEST_SEED reproduces a run."""
    seed = int(os.environ.get("WARPWEAVE_TEST_SEED", random.randrange(1 << 30)))
    print(f"WARPWEAVE_TEST_SEED={seed}")
    return random.Random(seed)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test compiles into its own JIT cache, so that tests neither share nor pollute entries."""
    monkeypatch.setenv("WARPWEAVE_CACHE_DIR", str(tmp_path / "jit-cache"))
    from warpweave._dsl.call import compile_module
    monkeypatch.setattr(compile_module, "_cache", None)
