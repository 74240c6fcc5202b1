"""A stand-in for the CUDA driver in host-code tests: a compiled function's launches are recorded, not made, so
what each call would launch is checked without a GPU."""
import pytest

from warpweave import _core
from warpweave._dsl.base.entry_name import function_name


@pytest.fixture
def stand_in(monkeypatch):
    """Launches recorded as (kernel function's name, grid, parameter bytes, path) instead of made."""
    launched, clusters = [], []

    class Launcher:
        def __init__(self, fn, block, cluster, smem, offsets):
            self.name = function_name(fn.name)

        def __call__(self, gx, gy, gz, stream, params):
            launched.append((self.name, (gx, gy, gz), params, "native"))

    class Function:
        def __init__(self, name):
            self.name = name

        def set_max_dynamic_shared_memory(self, n):
            pass

    def launch(f, grid, block, cluster, smem, stream, params, offsets, *options):
        launched.append((function_name(f.name), tuple(grid), params, "python"))
        clusters.append(tuple(cluster))

    monkeypatch.setattr(_core, "Launcher", Launcher)
    monkeypatch.setattr(_core, "launch", launch)

    def ready(compiled):
        monkeypatch.setattr(compiled, "_load", lambda: None)
        compiled._functions = {l.kernel: Function(l.kernel) for l in compiled.launches}
        return compiled

    ready.launched = launched
    ready.clusters = clusters  # the cluster of each launch of the Python path
    return ready
