"""warpweave.pipeline: producer/consumer pipelines (PipelineAsync, PipelineCpAsync, ...), named barriers and
pipeline states. They live in the project's pipelines/ component (warpweave_pipelines); this module is their
public name. The component is a package of its own, installed with the wheel or on the path of a checkout
(scripts/setup.sh's warpweave.pth, or PYTHONPATH). CuTe DSL's submodules by generation and kind (pipeline.helpers,
pipeline.sm90, pipeline.sm100), which programs also import from, hold the same objects."""
import warpweave_pipelines as _impl
from warpweave_pipelines import *  # noqa: F401,F403
from .._dsl.base.errors import register_library_dir as _register_library_dir

_register_library_dir(_impl.__path__[0])  # a mistake caught inside a pipeline names the user's line

__all__ = list(_impl.__all__)
