"""`cutlass.base_dsl`: the DSL's base as CuTe DSL's extensions reach for it: `typing` (numeric types, `Vector`,
`get_mlir_types`), `arch` / `enums` (`Arch`, from the loaded backends), `ast_preprocessor` (the rewriter libraries
extend), and `BaseDSL._get_dsl()`, the running DSL, which tells the architecture code is generated for."""
import importlib

from .._dsl.registry.arch_enum import arch_enum, current_arch


class BaseDSL:
    """The running DSL as CuTe DSL exposes it to libraries: one per process."""
    _instance = None

    @classmethod
    def _get_dsl(cls) -> "BaseDSL":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get_arch_enum(self):
        """The Arch member of the target being compiled for (WARPWEAVE_ARCH / --arch, else the current GPU)."""
        return current_arch()

    @property
    def Arch(self):  # noqa: N802 - CuTe DSL's name
        return arch_enum()


_SUBMODULES = ("arch", "ast_preprocessor", "dsl", "enums", "typing", "runtime", "tvm_ffi_builder")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BaseDSL"]
