// CompileError and Diagnostic: what a failed compile tells the user (and the Python layer, which maps
// file:line:col back to the kernel's source).
#include "internal.hpp"

namespace ww::compiler {
namespace {

const char* severity_name(Diagnostic::Severity severity) {
  switch (severity) {
    case Diagnostic::Severity::error: return "error";
    case Diagnostic::Severity::warning: return "warning";
    case Diagnostic::Severity::note: return "note";
    case Diagnostic::Severity::remark: return "remark";
  }
  return "error";
}

std::string describe(Stage stage, const std::vector<Diagnostic>& diagnostics, const std::string& log) {
  std::string text = std::string("warpweave compile error (") + stage_name(stage) + ")";
  for (const Diagnostic& diag : diagnostics) text += "\n" + diag.str();
  if (!log.empty()) text += "\n" + log;
  return text;
}

}  // namespace

const char* stage_name(Stage stage) noexcept {
  switch (stage) {
    case Stage::target: return "target";
    case Stage::parse: return "parse";
    case Stage::verify: return "verify";
    case Stage::lower: return "lower";
    case Stage::translate: return "translate";
    case Stage::llvm: return "llvm";
    case Stage::codegen: return "codegen";
    case Stage::ptxas: return "ptxas";
  }
  return "unknown";
}

std::string Diagnostic::str() const {
  std::string text;
  if (!file.empty() || line > 0) {
    text += file.empty() ? "<unknown>" : file;
    if (line > 0) text += ":" + std::to_string(line);
    if (line > 0 && col > 0) text += ":" + std::to_string(col);
    text += ": ";
  }
  return text + severity_name(severity) + ": " + message;
}

CompileError::CompileError(Stage stage, std::vector<Diagnostic> diagnostics, std::string log)
    : std::runtime_error(describe(stage, diagnostics, log)),
      stage_(stage),
      diagnostics_(std::move(diagnostics)),
      log_(std::move(log)) {}

}  // namespace ww::compiler
