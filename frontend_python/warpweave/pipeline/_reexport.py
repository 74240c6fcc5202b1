"""What CuTe DSL's pipeline submodules by generation and kind (pipeline.helpers, .sm90, .sm100) hold: the objects
of warpweave.pipeline among the names of that module (a name the package lacks is missing there as well)."""
import sys


def reexport(module_globals: dict, names: list) -> list:
    """Puts the package's objects among `names` into a submodule's globals; the submodule's __all__."""
    package = vars(sys.modules[module_globals["__package__"]])
    present = [n for n in names if n in package]
    module_globals.update({n: package[n] for n in present})
    return present
