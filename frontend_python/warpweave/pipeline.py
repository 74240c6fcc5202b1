"""warpweave.pipeline: producer/consumer pipelines (PipelineAsync, PipelineCpAsync, ...), named barriers and
pipeline states. They live in the project's pipelines/ component (warpweave_pipelines); this module is their
public name. The component is a package of its own, installed with the wheel or on the path of a checkout
(scripts/setup.sh's warpweave.pth, or PYTHONPATH)."""
import warpweave_pipelines as _impl
from warpweave_pipelines import *  # noqa: F401,F403
from ._dsl.base.errors import register_library_dir as _register_library_dir

_register_library_dir(_impl.__path__[0])  # a mistake caught inside a pipeline names the user's line

__all__ = list(_impl.__all__)

# CuTe DSL's pipelines that are not built here yet: importing one says so (an ImportError, so that
# `from warpweave.pipeline import PipelineTmaAsync` carries this message rather than Python's generic one).
_NOT_YET = {
    "PipelineTmaMultiConsumersAsync": "a TMA-load pipeline with several consumer groups",
}


def __getattr__(name):
    if name in _NOT_YET:
        raise ImportError(f"warpweave.pipeline.{name} ({_NOT_YET[name]}) is not implemented yet; the pipelines "
                          f"here: {', '.join(__all__)}", name=__name__)
    raise AttributeError(f"module 'warpweave.pipeline' has no attribute {name!r}")
