// The one source of libww_nvptxcompiler.so (core/compiler/CMakeLists.txt). A static archive's members enter a link
// only when something refers to them: this table refers to each entry point nvptxcompiler.cpp binds, so that the
// shared object holds them and what they need, and nothing else of the archive.
#include <nvPTXCompiler.h>

extern "C" __attribute__((visibility("default"), used)) const void* const ww_nvptxcompiler_entry_points[] = {
    reinterpret_cast<const void*>(&nvPTXCompilerCreate),
    reinterpret_cast<const void*>(&nvPTXCompilerDestroy),
    reinterpret_cast<const void*>(&nvPTXCompilerCompile),
    reinterpret_cast<const void*>(&nvPTXCompilerGetCompiledProgramSize),
    reinterpret_cast<const void*>(&nvPTXCompilerGetCompiledProgram),
    reinterpret_cast<const void*>(&nvPTXCompilerGetErrorLogSize),
    reinterpret_cast<const void*>(&nvPTXCompilerGetErrorLog),
    reinterpret_cast<const void*>(&nvPTXCompilerGetInfoLogSize),
    reinterpret_cast<const void*>(&nvPTXCompilerGetInfoLog),
    reinterpret_cast<const void*>(&nvPTXCompilerGetVersion),
};
