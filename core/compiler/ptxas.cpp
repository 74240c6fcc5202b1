// PTX -> cubin with a ptxas subprocess: the fallback where libnvJitLink is missing, and a second opinion
// (WARPWEAVE_CUBIN_TOOL=ptxas) when nvJitLink misbehaves.
#include "internal.hpp"

namespace ww::compiler::detail {

std::string find_ptxas(std::string* why) {
  std::string forced = getenv_str("WARPWEAVE_PTXAS");
  if (!forced.empty()) {
    if (is_executable_file(forced)) return forced;
    if (why) *why = "WARPWEAVE_PTXAS=" + forced + " is not an executable file";
    return {};
  }
  std::string path = find_tool({"ptxas"}, configured_search_dirs());
  if (path.empty() && why) {
    *why = "no ptxas found (set WARPWEAVE_PTXAS; searched the configured directories, $PATH, $CUDA_HOME/bin, "
           "/usr/local/cuda/bin)";
  }
  return path;
}

CubinOutput ptxas_compile(const std::string& ptxas, std::string_view ptx, const CubinRequest& request) {
  CubinOutput out;
  TempDir dir;
  if (!dir.ok()) {
    out.log = "ptxas: cannot create a temporary directory";
    return out;
  }
  std::string input = dir.write("kernel.ptx", ptx);
  std::string output = dir.path() + "/kernel.cubin";
  if (input.empty()) {
    out.log = "ptxas: cannot write " + dir.path() + "/kernel.ptx";
    return out;
  }
  std::vector<std::string> argv = {ptxas, "-arch=" + request.arch, "-O" + std::to_string(request.opt_level)};
  if (request.verbose) argv.emplace_back("-v");
  if (request.line_info) argv.emplace_back("-lineinfo");
  argv.insert(argv.end(), request.ptxas_options.begin(), request.ptxas_options.end());
  argv.insert(argv.end(), {input, "-o", output});

  int status = run_process(argv, out.log);
  if (status != 0) {
    if (status > 0) out.log = "ptxas exited with status " + std::to_string(status) + "\n" + out.log;
    return out;
  }
  std::string bytes;
  if (!read_file(output, bytes)) {
    out.log += "\nptxas: no output file " + output;
    return out;
  }
  out.cubin.assign(bytes.begin(), bytes.end());
  out.ok = true;
  return out;
}

}  // namespace ww::compiler::detail
