// SASS listings for checks that need no GPU (e.g. "this atom really became HGMMA"). NVIDIA ships no library for
// this, only the nvdisasm and cuobjdump programs: from a toolkit or from the nvidia-cuda-nvdisasm /
// nvidia-cuda-cuobjdump wheels.
#include <stdexcept>

#include "internal.hpp"

namespace ww::compiler {
namespace {

// Directory list first, in priority order; an entry of $WARPWEAVE_NVDISASM may also name the tool itself.
std::string find_sass_tool(std::string_view search_dirs) {
  std::vector<std::string> dirs = detail::split_path_list(search_dirs);
  for (const std::string& entry : detail::split_path_list(detail::getenv_str("WARPWEAVE_NVDISASM"))) {
    if (detail::is_executable_file(entry)) return entry;
    dirs.push_back(entry);
  }
  for (std::string& dir : detail::configured_search_dirs()) dirs.push_back(std::move(dir));
  return detail::find_tool({"nvdisasm", "cuobjdump"}, dirs);
}

}  // namespace

bool sass_tool_available(std::string_view search_dirs) { return !find_sass_tool(search_dirs).empty(); }

std::string disassemble_sass(const std::vector<uint8_t>& cubin, std::string_view search_dirs) {
  std::string tool = find_sass_tool(search_dirs);
  if (tool.empty()) {
    throw std::runtime_error(
        "no nvdisasm or cuobjdump found: pip install nvidia-cuda-nvdisasm, or set WARPWEAVE_NVDISASM to the tool "
        "or its directory");
  }
  detail::TempDir dir;
  std::string input =
      dir.ok() ? dir.write("kernel.cubin", std::string_view(reinterpret_cast<const char*>(cubin.data()),
                                                            cubin.size()))
               : std::string();
  if (input.empty()) throw std::runtime_error("disassemble_sass: cannot write a temporary cubin");

  bool is_cuobjdump = tool.size() >= 9 && tool.compare(tool.size() - 9, 9, "cuobjdump") == 0;
  std::vector<std::string> argv = is_cuobjdump ? std::vector<std::string>{tool, "-sass", input}
                                               : std::vector<std::string>{tool, "-c", input};
  std::string output;
  int status = detail::run_process(argv, output);
  if (status != 0) throw std::runtime_error(tool + " failed (status " + std::to_string(status) + "):\n" + output);
  return output;
}

}  // namespace ww::compiler
