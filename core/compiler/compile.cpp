// The driver: runs the stages, turns their failures into CompileError, picks the cubin tool. No MLIR or LLVM
// headers: the stages that need them report through detail::Failure, and exceptions are thrown only here, after
// their frames are gone.
#include <algorithm>
#include <cctype>
#include <mutex>

#include "internal.hpp"

namespace ww::compiler {
namespace {

// One compile at a time through MLIR and LLVM: they share the MLIR context and the cached TargetMachines. The cubin
// tools keep no shared state and run outside it, so one kernel's ptxas overlaps the next one's codegen.
std::mutex& pipeline_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

void require_fields(const Target& target, bool for_codegen) {
  std::string missing;
  if (for_codegen && target.llvm_cpu.empty()) missing += " llvm_cpu";
  if (for_codegen && target.triple.empty()) missing += " triple";
  if (!for_codegen && target.jit_arch.empty()) missing += " jit_arch";
  if (!missing.empty()) {
    throw CompileError(Stage::target,
                       {detail::error_diag("target '" + target.name + "' lacks the field(s):" + missing)});
  }
}

enum class CubinTool { automatic, nvptxcompiler, nvjitlink, ptxas };

CubinTool choose_tool(const CompileOptions& options) {
  std::string name = options.cubin_tool.empty() ? detail::getenv_str("WARPWEAVE_CUBIN_TOOL") : options.cubin_tool;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.empty() || name == "auto") return CubinTool::automatic;
  if (name == "nvptxcompiler") return CubinTool::nvptxcompiler;
  if (name == "nvjitlink") return CubinTool::nvjitlink;
  if (name == "ptxas") return CubinTool::ptxas;
  throw CompileError(Stage::ptxas, {detail::error_diag("unknown cubin tool '" + name +
                                                       "' (WARPWEAVE_CUBIN_TOOL / cubin_tool): use "
                                                       "nvptxcompiler, ptxas or nvjitlink")});
}

// ptxas and nvJitLink report "<file>, line 12; error   : <message>": keep the PTX line so that a caller can show it.
std::vector<Diagnostic> tool_diagnostics(const std::string& log, const std::string& summary) {
  std::vector<Diagnostic> out = {detail::error_diag(summary)};
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    std::string_view line(log.data() + start, end - start);
    start = end + 1;
    size_t at = line.find(", line ");
    size_t kind = line.find("; error");
    bool warning = false;
    if (kind == std::string_view::npos) {
      kind = line.find("; warning");
      warning = kind != std::string_view::npos;
    }
    size_t colon = kind == std::string_view::npos ? kind : line.find(':', kind);
    if (at == std::string_view::npos || kind == std::string_view::npos || colon == std::string_view::npos) continue;
    Diagnostic d;
    d.severity = warning ? Diagnostic::Severity::warning : Diagnostic::Severity::error;
    d.file = "<ptx>";
    d.line = std::atoi(std::string(line.substr(at + 7, kind - at - 7)).c_str());
    d.message = std::string(line.substr(colon + 1));
    d.message.erase(0, d.message.find_first_not_of(' '));
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

std::string mlir_to_ptx(std::string_view mlir_text, const Target& target, const CompileOptions& options,
                        CompileResult* extra) {
  require_fields(target, /*for_codegen=*/true);
  CompileResult local;
  CompileResult& result = extra ? *extra : local;
  std::string ptx;
  detail::Failure failure;
  Stage stage = Stage::target;
  bool ok = false;
  {
    std::lock_guard lock(pipeline_mutex());
    std::string reason;
    bool returned = detail::run_guarded(
        [&] { ok = detail::generate_ptx(mlir_text, target, options, result, ptx, failure, stage); }, &reason);
    if (!returned) {
      // LLVM gave up half-way: nothing it was working on can be trusted again.
      detail::abandon_mlir_context();
      detail::abandon_target_machines();
      failure.stage = stage;
      failure.diagnostics.insert(failure.diagnostics.begin(), detail::error_diag("LLVM fatal error: " + reason));
      ok = false;
    }
  }
  if (!ok) throw CompileError(failure.stage, std::move(failure.diagnostics));
  if (extra) extra->ptx = ptx;
  return ptx;
}

std::vector<uint8_t> ptx_to_cubin(std::string_view ptx, const Target& target, const CompileOptions& options,
                                  std::string* log, std::string* tool) {
  require_fields(target, /*for_codegen=*/false);
  CubinTool choice = choose_tool(options);
  detail::CubinRequest request;
  request.arch = target.jit_arch;
  request.opt_level = options.ptxas_opt_level;
  request.verbose = options.verbose_ptxas;
  request.line_info = options.line_info;
  request.ptxas_options = options.ptxas_options;

  auto finish = [&](detail::CubinOutput out, const char* name) {
    if (!out.ok) {
      throw CompileError(Stage::ptxas,
                         tool_diagnostics(out.log, std::string(name) + " rejected the PTX for " + request.arch),
                         out.log);
    }
    if (log) *log = std::move(out.log);
    if (tool) *tool = name;
    return std::move(out.cubin);
  };
  auto unavailable = [](const std::vector<std::string>& reasons) {
    std::vector<Diagnostic> diags;
    for (const std::string& why : reasons)
      if (!why.empty()) diags.push_back(detail::error_diag(why));
    return CompileError(Stage::ptxas, std::move(diags));
  };

  // Whole-program assembly first: nvJitLink assembles PTX as relocatable code (ptxas -c) so that it can link it,
  // and that costs registers (210 against 162 on CuTe DSL's nvfp4 GEMM) and drops some instructions "to maintain
  // compatibility across compilation units" (a warp-specialized kernel's register split, ptxas info C7504). So the
  // automatic choice takes ptxas as a library in process, then the ptxas program, and nvJitLink only without both.
  bool automatic = choice == CubinTool::automatic;
  std::string why_no_nvptxcompiler;
  if (automatic || choice == CubinTool::nvptxcompiler) {
    if (detail::nvptxcompiler_available(&why_no_nvptxcompiler))
      return finish(detail::nvptxcompiler_compile(ptx, request), "nvPTXCompiler");
    if (!automatic) throw unavailable({why_no_nvptxcompiler});
  }
  std::string why_no_ptxas;
  if (automatic || choice == CubinTool::ptxas) {
    if (std::string ptxas = detail::find_ptxas(&why_no_ptxas); !ptxas.empty())
      return finish(detail::ptxas_compile(ptxas, ptx, request), "ptxas");
    if (!automatic) throw unavailable({why_no_ptxas});
  }
  std::string why_no_nvjitlink;
  if (!detail::nvjitlink_available(&why_no_nvjitlink)) {
    throw unavailable({automatic ? why_no_nvptxcompiler : "", automatic ? why_no_ptxas : "", why_no_nvjitlink});
  }
  detail::CubinOutput out = detail::nvjitlink_compile(ptx, request);
  if (out.ok && options.prefer_ptxas) {
    out.log += "warning: nvJitLink assembled code that asks for ptxas (it holds an instruction nvJitLink drops): " +
               (automatic ? why_no_ptxas : std::string("nvJitLink was chosen explicitly")) + "\n";
  } else if (out.ok && automatic) {
    out.log += "note: nvJitLink assembled the PTX as relocatable code, which may take more registers than ptxas: " +
               why_no_nvptxcompiler + "\n";
  }
  return finish(std::move(out), "nvJitLink");
}

CompileResult compile(std::string_view mlir_text, const Target& target, const CompileOptions& options) {
  CompileResult result;
  mlir_to_ptx(mlir_text, target, options, &result);
  detail::Stopwatch watch;
  CompileOptions cubin_options = options;
  cubin_options.prefer_ptxas |= result.requested_cubin_tool == "ptxas";
  result.cubin = ptx_to_cubin(result.ptx, target, cubin_options, &result.jit_log, &result.cubin_tool);
  result.timings.cubin_ms = watch.lap_ms();
  return result;
}

}  // namespace ww::compiler
