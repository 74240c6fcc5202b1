"""`cutlass.base_dsl`: the DSL's base as CuTe DSL's extensions reach for it: `typing` (numeric types, `Vector`,
`get_mlir_types`), `arch` / `enums` (`Arch`, from the loaded backends), `ast_preprocessor` (the rewriter libraries
extend), and `BaseDSL._get_dsl()`, the running DSL, which tells the architecture code is generated for (and, by its
`envar.arch`, pins it)."""
import importlib
import os

from .._dsl.registry.arch_enum import arch_enum, current_arch
from .._dsl.registry.target import select_target, target_named
# the IR-values protocol's functions, which CuTe DSL's base module names too (`from cutlass.base_dsl import ...`)
from .._dsl.values.value_tree import extract_mlir_values, get_mlir_types, new_from_mlir_values  # noqa: F401


class EnvironmentSettings:
    """The settings the running DSL takes from the environment (CuTe DSL's `envar`): `arch`, the target code is
    generated for. Setting it pins the target for the rest of the process (a compile worker without a GPU), as
    WARPWEAVE_ARCH does."""

    @property
    def arch(self) -> str:
        return select_target().name

    @arch.setter
    def arch(self, name: str) -> None:
        target_named(name)  # an unknown target is refused here, not at the next compile
        os.environ["WARPWEAVE_ARCH"] = name


class BaseDSL:
    """The running DSL as CuTe DSL exposes it to libraries: one per process."""
    _instance = None

    @classmethod
    def _get_dsl(cls) -> "BaseDSL":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    envar = EnvironmentSettings()

    def get_arch_enum(self):
        """The Arch member of the target being compiled for (WARPWEAVE_ARCH / --arch, else the current GPU)."""
        return current_arch()

    @property
    def Arch(self):  # noqa: N802 - CuTe DSL's name
        return arch_enum()


_SUBMODULES = ("arch", "ast_preprocessor", "compiler", "dsl", "enums", "ffi", "typing", "runtime", "tvm_ffi_builder")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BaseDSL", "extract_mlir_values", "get_mlir_types", "new_from_mlir_values"]
