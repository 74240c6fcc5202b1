"""`cutlass.base_dsl.compiler`: cute.compile's option types under CuTe DSL's module name, the same objects as
cute.KeepPTX, cute.OptLevel, ... (warpweave._dsl.base.compile_options). `CompileOptions(options)` gathers option
objects once, to pass as `cute.compile(..., options=...)`.

CuTe DSL's options of its own compiler (NvdisasmOptions, LinkLibraries, RDC, DeviceTarget, HostTarget, the MLIR
remark and pass options, FrontendNext, EnablePYIR) and its Compiler / CompileCallable classes are not here: they
configure parts warpweave does not have, and an option object that changed nothing would mislead.
"""
from .._dsl.base.compile_options import (  # noqa: F401
    BooleanCompileOption, CompileOption, DumpDir, EnableAssertions, EnableTVMFFI, GenerateLineInfo, GPUArch,
    KeepCUBIN, KeepPTX, KeepSASS, OptLevel, OptionList as CompileOptions, PtxasOptions, StringCompileOption,
)

__all__ = ["BooleanCompileOption", "CompileOption", "CompileOptions", "DumpDir", "EnableAssertions", "EnableTVMFFI",
           "GenerateLineInfo", "GPUArch", "KeepCUBIN", "KeepPTX", "KeepSASS", "OptLevel", "PtxasOptions",
           "StringCompileOption"]
