// warpweave compiler driver: MLIR text -> PTX -> cubin, all in process.
//
// Deliberately free of MLIR, LLVM and CUDA types: the Python extension and the runtime include this header, and
// only the compiler's own translation units pay for the toolchain headers.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ww::compiler {

// What to generate code for. The backends' manifests fill these fields; default_target() only covers the
// architectures the core ships with, so that the compiler itself needs no per-architecture knowledge.
struct Target {
  std::string name;          // "sm_90a": the user-facing name
  std::string llvm_cpu;      // NVPTX CPU for LLVM, usually == name
  std::string ptx_features;  // LLVM subtarget features, e.g. "+ptx86" (the PTX ISA version to emit)
  std::string triple = "nvptx64-nvidia-cuda";
  std::string jit_arch;      // -arch for nvJitLink / ptxas, usually == name
};

// A Target for "sm_80", "sm_89", "sm_90a", "sm_100a" and other "sm_<N>[a|f]" names. Throws CompileError
// (Stage::target) for a name of another shape; whether LLVM and ptxas know the architecture is checked when
// compiling.
Target default_target(std::string_view name);

struct CompileOptions {
  int opt_level = 3;            // LLVM optimisation level, 0..3
  int ptxas_opt_level = 3;      // ptxas / nvJitLink -O (nvJitLink accepts only 0 and 3)
  bool want_llvm_ir = false;    // fill CompileResult::llvm_ir (after LLVM's optimisation)
  bool want_optimized_mlir = false;  // fill CompileResult::mlir (LLVM dialect, after our passes)
  bool verbose_ptxas = false;   // fill CompileResult::jit_log with registers / spills / smem per kernel
  bool line_info = false;       // emit .loc from MLIR locations and ask ptxas for -lineinfo (profilers)
  std::string source_name = "<warpweave>";  // buffer name the diagnostics use when the IR has no locations
  // "", "nvptxcompiler", "ptxas" or "nvjitlink"; empty: $WARPWEAVE_CUBIN_TOOL, else the first there of
  // nvPTXCompiler (ptxas as a library, in process), the ptxas program, nvJitLink. The first two assemble the PTX
  // as a whole program; nvJitLink assembles it as relocatable code, which takes more registers.
  std::string cubin_tool;
  // The code holds an instruction that nvJitLink drops (only a whole-program assembler keeps it). A module says so
  // itself with the attribute `ww.cubin_tool = "ptxas"`, which the frontend sets when it emits a manifest entry
  // whose cubin_tool is "ptxas"; this option is for ptx_to_cubin on PTX text. nvJitLink then notes it in the log.
  bool prefer_ptxas = false;
  std::vector<std::string> ptxas_options;  // passed through, e.g. "-maxrregcount=128"
};

struct Diagnostic {
  enum class Severity { error, warning, note, remark };
  Severity severity = Severity::error;
  std::string message;
  std::string file;  // empty when unknown
  int line = 0;      // 1-based; 0 when unknown
  int col = 0;
  std::string str() const;  // "file:line:col: error: message"
};

struct CompileResult {
  std::string mlir;     // after our passes, if asked
  std::string llvm_ir;  // after LLVM's optimisation, if asked
  std::string ptx;
  std::vector<uint8_t> cubin;
  std::string jit_log;     // ptxas -v style resource report when verbose_ptxas, plus any tool warnings
  std::string cubin_tool;  // "nvPTXCompiler", "ptxas" or "nvJitLink"
  std::string requested_cubin_tool;  // the module's ww.cubin_tool attribute ("ptxas" or empty)
  std::vector<Diagnostic> warnings;  // non-fatal MLIR / LLVM diagnostics
  struct Timings {
    double parse_ms = 0, lower_ms = 0, llvm_opt_ms = 0, codegen_ms = 0, cubin_ms = 0;
  } timings;
};

// Where a compile failed. `ptxas` covers every cubin tool (nvPTXCompiler, the ptxas subprocess and nvJitLink).
enum class Stage { target, parse, verify, lower, translate, llvm, codegen, ptxas };
const char* stage_name(Stage stage) noexcept;

class CompileError : public std::runtime_error {
 public:
  CompileError(Stage stage, std::vector<Diagnostic> diagnostics, std::string log = {});
  Stage stage() const noexcept { return stage_; }
  const std::vector<Diagnostic>& diagnostics() const noexcept { return diagnostics_; }
  const std::string& log() const noexcept { return log_; }  // the cubin tool's output, if any

 private:
  Stage stage_;
  std::vector<Diagnostic> diagnostics_;
  std::string log_;
};

// All three are thread-safe. mlir_to_ptx serialises on one lock (it shares the MLIR context); ptx_to_cubin runs
// concurrently. `extra` receives the optional outputs, timings and warnings of the MLIR and LLVM stages.
std::string mlir_to_ptx(std::string_view mlir_text, const Target& target, const CompileOptions& options = {},
                        CompileResult* extra = nullptr);
std::vector<uint8_t> ptx_to_cubin(std::string_view ptx, const Target& target, const CompileOptions& options = {},
                                  std::string* log = nullptr, std::string* tool = nullptr);
CompileResult compile(std::string_view mlir_text, const Target& target, const CompileOptions& options = {});

// Extra places to look for CUDA pieces (libnvJitLink, ptxas, nvdisasm, cuobjdump): a Python environment's
// site-packages and bin directories, a toolkit root. Each directory D is searched as D, D/bin, D/lib, D/lib64,
// D/nvidia/cu13/{bin,lib}, D/nvidia/nvjitlink/lib. Replaces the previous list.
void set_search_dirs(std::vector<std::string> dirs);

// SASS of a cubin via nvdisasm or `cuobjdump -sass`. `search_dirs` (':'-separated, as in $PATH) and
// $WARPWEAVE_NVDISASM (a tool path or ':'-separated directories) come before set_search_dirs(), $PATH and the
// CUDA toolkit. Throws std::runtime_error if no tool is found or it fails.
std::string disassemble_sass(const std::vector<uint8_t>& cubin, std::string_view search_dirs = {});
bool sass_tool_available(std::string_view search_dirs = {});

}  // namespace ww::compiler
