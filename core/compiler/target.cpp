// Default targets for the architectures the core ships with. Backends' manifests supply complete Targets; this is
// the one place in the compiler that knows anything per architecture (the PTX ISA version each one needs).
#include <charconv>

#include "internal.hpp"

namespace ww::compiler {

Target default_target(std::string_view name) {
  // "sm_<N>" with an optional "a" (architecture-specific) or "f" (family) suffix.
  auto bad = [&] {
    return CompileError(Stage::target, {detail::error_diag("unknown target '" + std::string(name) +
                                                           "': expected a name like sm_80, sm_90a or sm_100a")});
  };
  if (name.size() < 5 || name.substr(0, 3) != "sm_") throw bad();
  std::string_view rest = name.substr(3);
  char suffix = rest.back() == 'a' || rest.back() == 'f' ? rest.back() : '\0';
  if (suffix) rest.remove_suffix(1);
  int number = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), number);
  if (ec != std::errc() || end != rest.data() + rest.size() || number < 10) throw bad();

  // PTX 8.6 (CUDA 12.8) covers sm_80 .. sm_101a; newer architectures need the ISA version that introduced them.
  int ptx = 86;
  if (number == 120) ptx = 87;
  if (number == 103 || number == 121 || suffix == 'f') ptx = 88;
  if (number == 110) ptx = 90;

  Target target;
  target.name = std::string(name);
  target.llvm_cpu = target.name;
  target.jit_arch = target.name;
  target.ptx_features = "+ptx" + std::to_string(ptx);
  return target;
}

}  // namespace ww::compiler
